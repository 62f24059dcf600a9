"""ATC's look-ahead k, and the delayed rules' alpha, chosen on the validation seeds (``sched tune``)."""

import numpy as np

from sched import config as config_mod
from sched import setting
from sched.config import ConfigError
from sched.evaluate.per_scenario import schedule_metrics
from sched.evaluate.progress import bar
from sched.evaluate.runs import generate_scenarios
from sched.evaluate.seeds import benchmark_seeds, overlap, validation_seeds

#: A k tuned on generated scenarios is kept only when its weighted tardiness on the validation
#: days is at most this many times the default k's (issue 35's guard: 5 % worse at most).
DAYS_GUARD = 1.05


def tune_atc_k(cfg, progress=False, days=None):
    """ATC's k with the lowest mean total weighted tardiness on the validation seeds.

    Returns the record ``sched tune`` writes (``tuned.json``): the chosen k,
    the mean at each k of ``benchmark.atc_k_grid``, and what it was tuned on.

    ``days``: ``(stream, lean)``, the validation days replayed as one stream
    (``sched.data.workload.replay.held_out_stream``) and whether they decide alone
    (``sched.data.workload.fidelity``): see :func:`guard_on_days`.
    """
    from sched.sim.core import simulate_batch

    seeds = validation_seeds(cfg)
    if overlap(seeds, benchmark_seeds(cfg)):
        raise ConfigError("config: validation seeds overlap the test seeds")
    machines = cfg.scenario.machines
    scenarios = generate_scenarios(cfg, seeds, progress)
    arrays = [s.arrays for s in scenarios]
    grid = []
    for k in bar(cfg.benchmark.atc_k_grid, "atc k grid", progress):
        res = simulate_batch(arrays, "atc", machines=machines, k=float(k))
        twt = [
            schedule_metrics(a, s, e, sc.counted_from_s)["total_weighted_tardiness_s"]
            for sc, a, (s, e, _) in zip(scenarios, arrays, res)
        ]
        grid.append({"atc_k": float(k), "mean_twt_s": float(np.mean(twt))})
    best = min(range(len(grid)), key=lambda i: (grid[i]["mean_twt_s"], i))
    record_days = None
    if days is not None:
        best, record_days = guard_on_days(cfg, grid, best, *days)
    wait = cfg.benchmark.get("waiting") or {}
    record_wait = None
    if wait.get("rules"):
        record_wait = tune_waiting(cfg, scenarios, grid[best]["atc_k"], progress)
    return {
        "rule": "atc",
        "atc_k": grid[best]["atc_k"],
        "criterion": "lowest mean total weighted tardiness on the validation seeds "
        "(first in grid order on a tie)",
        "validation_seeds": {"first": seeds.start, "last": seeds.stop - 1, "count": len(seeds)},
        "scenario": {k: cfg.scenario[k] for k in ("tasks", "load", "machines")},
        "setting": setting.of_config(cfg),  # the farm rank() matches a call against
        "reference_atc_k": float(cfg.rules.atc_k),
        "grid": grid,
        "config_hash": config_mod.config_hash(cfg, ["scenario", "rules", "seeds", "benchmark"]),
        **({"validation_days": record_days} if record_days is not None else {}),
        **({"waiting": record_wait} if record_wait is not None else {}),
    }


def tune_waiting(cfg, scenarios, atc_k, progress=False):
    """tuned.json's ``waiting``: for each delayed rule of config ``benchmark.waiting.rules``, the
    alpha of ``alpha_grid`` with the lowest mean total weighted tardiness on ``scenarios`` (the
    validation seeds ATC's k is tuned on; first in grid order on a tie), atc-wait at ATC's tuned
    ``atc_k``, every GPU held at most ``max_wait_s`` (``sched.sim.waiting``)."""
    from sched.sim import waiting

    w = cfg.benchmark.waiting
    max_wait = float(w["max_wait_s"])
    arrays = [s.arrays for s in scenarios]
    out = {}
    for rule in w["rules"]:
        k = float(atc_k) if rule == "atc-wait" else None
        grid = []
        for alpha in bar(w["alpha_grid"], f"{rule} alpha grid", progress):
            res = waiting.simulate_batch(
                arrays, rule, float(alpha), max_wait, cfg.scenario.machines, k if k is not None else 2.0
            )
            twt = [
                schedule_metrics(a, s, e, sc.counted_from_s)["total_weighted_tardiness_s"]
                for sc, a, (s, e, _) in zip(scenarios, arrays, res)
            ]
            grid.append({"alpha": float(alpha), "mean_twt_s": float(np.mean(twt))})
        best = min(range(len(grid)), key=lambda i: (grid[i]["mean_twt_s"], i))
        out[rule] = {"alpha": grid[best]["alpha"], "atc_k": k, "grid": grid}
    return {"max_wait_s": max_wait, "rules": out}


def guard_on_days(cfg, grid, best, stream, lean=False):
    """(index of the chosen k in ``grid``, the record ``tuned.json``'s ``validation_days`` holds).

    Each k of the grid, and the default k (``rules.atc_k``), runs ATC on the validation days
    (``stream``, counted after its warm-up day). The k the generated scenarios chose is kept when
    its weighted tardiness there is at most :data:`DAYS_GUARD` times the default k's; else the
    k of lowest generated mean among those within the guard (the default k always is, when it
    is in the grid). With ``lean`` (the generator ranks the rules unlike the real days), the k
    of lowest tardiness on the days is chosen."""
    from sched.sim.core import simulate

    arrays = stream.scenario.arrays
    counted = np.asarray(stream.day) >= 0
    _arr, _dur, _est, w, due = arrays
    ndays = max(1, len(stream.days))

    def on_days(k):
        _start, end, _m = simulate(*arrays, "atc", machines=cfg.scenario.machines, k=float(k))
        return float(np.sum(w[counted] * np.maximum(0.0, end[counted] - due[counted]))) / ndays

    default_k = float(cfg.rules.atc_k)
    real = [on_days(g["atc_k"]) for g in grid]
    ref = on_days(default_k)
    generated_k = grid[best]["atc_k"]
    chosen, why = choose_k([g["mean_twt_s"] for g in grid], real, ref, best, lean)
    if why is None:
        why = (
            f"the generated scenarios' k = {generated_k:g} is {real[best] / ref - 1:+.1%} against the "
            f"default k = {default_k:g} on the validation days, beyond the guard ({DAYS_GUARD:g} x): the "
            "best k on the generated scenarios among those within it"
        )
    record = {
        "period": [stream.days[0], stream.days[-1]] if stream.days else None,
        "days": len(stream.days),
        "default_atc_k": default_k,
        "default_twt_s_per_day": ref,
        "grid": [{"atc_k": g["atc_k"], "twt_s_per_day": r} for g, r in zip(grid, real)],
        "guard": DAYS_GUARD,
        "leaned_on_days": bool(lean),
        "generated_atc_k": generated_k,
        "reason": why,
    }
    return chosen, record


def choose_k(generated, real, ref, best, lean=False):
    """(index of the chosen k, why; None when it replaced the generated scenarios' choice by the
    best within the guard, whose words need the k values) from the grid's means on the
    generated scenarios and its tardiness on the validation days (``real``; ``ref``: the default
    k's there); ``best``: the generated scenarios' choice. See :func:`guard_on_days`."""
    if lean:
        return min(range(len(real)), key=lambda i: (real[i], i)), (
            "the generator ranks the rules unlike the real days: the lowest tardiness on the days"
        )
    within = [i for i in range(len(real)) if real[i] <= DAYS_GUARD * ref]
    if best in within:
        return (
            best,
            f"the generated scenarios' k, within {DAYS_GUARD:g} x the default k's on the validation days",
        )
    if within:
        return min(within, key=lambda i: (generated[i], i)), None
    # the default k is not in the grid, and no k of it is within the guard
    return best, f"no k of the grid within {DAYS_GUARD:g} x the default k's on the validation days: kept"
