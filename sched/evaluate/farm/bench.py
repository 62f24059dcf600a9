"""The farm benchmark of a chunked setting (issue 59, points 3 to 5; ``sched farm-bench``).

A setting with ``scenario.chunks`` (:mod:`sched.data.jobs`) runs on the chunked farm
(:mod:`sched.sim.chunks`, :mod:`sched.sim.sync`), rules only (no training in the default run):

1. **ATC's k** is tuned on the validation seeds (``benchmark.validation_scenarios``) at frame
   level, at the setting's ``chunks.sync_s``: :func:`tune`, ``tuned.json`` (as ``sched tune``'s).
2. **The shipped decision** is chosen on ``chunks.selection_scenarios`` validation seeds from
   ``benchmark.selection_offset``: every rule, atc-tuned and the farm's own dispatchers run
   there; the incumbent, atc-tuned, is replaced only by a policy significantly better than it
   (paired interval below zero), the lowest mean of those (:func:`choose`,
   ``farm_verdict.json``; its ``setting.load`` per GPU, as config ``scenario.load``, and
   ``setting.offered_gpus`` the offered work in speed-1 GPUs). It is what ``rank()`` runs for a
   call of jobs of frames on that farm's GPUs (:mod:`sched.ranking.farm.plan`). The candidates
   include a parallelism limit (issue 60): ``atc-tuned-cap``, tuned ATC with every job at most
   ``cap`` chunks at once (``cap`` tuned after k on the same seeds, :mod:`.caps`), and
   ``farm-fifo-cap``, the farm's default with that limit (what the limit alone gives).
3. **The test scenarios** (``benchmark.scenarios``): every rule at frame level (fifo .. wmdd,
   atc-tuned), ``farm-fifo`` and ``farm-balanced``, the limited two, the same jobs run whole and
   non-preemptive (``atc-tuned-whole``: one chunk a job, today's model, with the tuned k), and the
   shipped decision and tuned ATC at the adapters' sync intervals (:data:`SYNCS`:
   ``<shipped>-sync-60s``, ...; at 0 they are their own rows). ``per_scenario.csv`` (one row a
   scenario x policy, the benchmark's columns, metrics per job) and ``farm.csv``
   (:func:`comparisons`: each policy against each reference, paired bootstrap intervals as the
   summary's).

The farm's dispatchers stand for: ``farm-fifo``, OpenCue's and Deadline's default (job priority,
then submission order); ``farm-balanced``, Deadline Cloud's ``priorityBalanced`` and OpenCue's
BALANCED (equal-priority jobs share the free hosts evenly). The clairvoyant headroom on chunks
(point 5): :mod:`sched.evaluate.farm.headroom`.
"""

import numpy as np
import pandas as pd

from sched import config as config_mod
from sched import setting
from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS, schedule_metrics
from sched.evaluate.policies import HEURISTICS
from sched.evaluate.progress import bar
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.sim import farm_limits, rules

#: The adapters' sync intervals the shipped decision is also run at (seconds; 0 is its own row).
SYNCS = (60.0, 300.0)
#: The row of the same jobs run whole (one chunk a job, non-preemptive) under tuned ATC.
WHOLE = "atc-tuned-whole"
#: Tuned ATC with a parallelism limit (:mod:`sched.sim.farm_limits`, the names' home): every job runs
#: at most ``cap`` chunks at once, ``cap`` tuned on the validation seeds after ATC's k (:mod:`.caps`);
#: FIFO_CAPPED: the farm's default dispatcher with the same limit (a job limit alone).
CAPPED, FIFO_CAPPED = farm_limits.CAPPED, farm_limits.FIFO_CAPPED
#: The policies that may be shipped, in table order.
CANDIDATES = HEURISTICS + rules.FARM_RULES + (CAPPED, FIFO_CAPPED)
#: The references every policy of ``farm.csv`` is compared with ("best-rule": the rule of lowest
#: mean on the test scenarios among :data:`CANDIDATES`; "shipped": the shipped decision at the
#: setting's sync interval; "atc-tuned-sync-<S>s": tuned ATC at sync S, the reference of the rows
#: run at that interval only).
REFERENCES = ("farm-fifo", "farm-balanced", "atc-tuned", WHOLE, "best-rule", "shipped") + tuple(
    f"atc-tuned-sync-{s:g}s" for s in SYNCS
)
FARM_COLUMNS = (
    "policy", "reference", "reference_policy", "scenarios", "mean_twt_k", "reference_mean_twt_k",
    "diff_pct", "ci_lo_pct", "ci_hi_pct", "wins", "ties", "losses",
)  # fmt: skip


def sync_name(policy, sync_s):
    """The row of ``policy`` run at the adapters' sync interval ``sync_s`` (> 0)."""
    return f"{policy}-sync-{sync_s:g}s"


def candidates(cap):
    """The policies that may be shipped: :data:`CANDIDATES`, without the limited ones when there is
    no limit (``cap`` 0: a farm of one GPU, where they are the unlimited rules)."""
    return CANDIDATES if cap else tuple(p for p in CANDIDATES if p not in (CAPPED, FIFO_CAPPED))


def spec(name, atc_k, sync_s=0.0, whole=False, cap=0):
    """How a farm policy runs: its rule, k, sync interval, whether jobs run whole, and the limit
    of chunks a job runs at once (``cap``: read by :data:`CAPPED` and :data:`FIFO_CAPPED` only)."""
    tuned = name in ("atc-tuned", WHOLE, CAPPED)
    rule = "atc" if tuned else {FIFO_CAPPED: "farm-fifo"}.get(name, name)
    if rule not in rules.ALL_RULES:
        raise BenchmarkError(f"farm benchmark: unknown policy {name!r:.40}")
    k = float(atc_k) if tuned else rules.ATC_K_DEFAULT
    limit = int(cap) if name in (CAPPED, FIFO_CAPPED) else 0
    return {"rule": rule, "atc_k": k, "sync_s": float(sync_s), "whole": bool(whole), "cap": limit}


def policy_specs(atc_k, shipped, sync_s=0.0, cap=0):
    """{name: spec} of the test table (module docstring, point 3); tuned ATC at each sync interval
    too, the reference of the shipped decision at that interval."""
    out = {n: spec(n, atc_k, sync_s, cap=cap) for n in candidates(cap)}
    out[WHOLE] = spec(WHOLE, atc_k, 0.0, whole=True)
    for s in SYNCS:
        if s != sync_s:
            for p in dict.fromkeys((shipped["policy"], "atc-tuned")):
                out[sync_name(p, s)] = {**out[p], "sync_s": s}
    return out


def selection_seeds(cfg):
    """The validation seeds the shipped decision is chosen on: ``chunks.selection_scenarios``
    from ``benchmark.selection_offset`` (after the tuning seeds)."""
    from sched.evaluate.seeds import selection_seeds as chosen

    count = int(cfg.scenario.chunks.get("selection_scenarios", 100))
    return chosen(cfg.replace(benchmark={"selection_scenarios": count}))


def scenarios(cfg, seeds, progress=False):
    """The chunked scenarios of ``seeds`` (the config must have ``scenario.chunks``)."""
    from sched.evaluate.runs import generate_scenarios

    if not cfg.scenario.get("chunks"):
        raise BenchmarkError("the farm benchmark needs scenario.chunks (a chunked setting)")
    return generate_scenarios(cfg, seeds, progress)


def job_ends(sc, sp, machines):
    """Each job's completion (row order) of scenario ``sc`` under the policy spec ``sp``."""
    from sched.sim import chunks, sync

    frames, per, limit, setup = sc.chunks
    limit = farm_limits.capped(limit, sp.get("cap", 0))
    if sp["whole"]:  # one chunk a job: today's non-preemptive task (its setup once)
        per = np.zeros_like(per)
    job, _chunk, _start, end, _m = sync.simulate(
        *sc.arrays, sp["rule"], machines, sp["atc_k"], None, frames, per, limit, setup, None, sp["sync_s"]
    )  # fmt: skip
    return chunks.job_ends(job, end, len(sc))


def run(cfg, keys, scs, specs, progress=False):
    """The per-scenario table (the benchmark's columns) of every policy of ``specs``."""
    machines = cfg.scenario.machines
    rows = []
    for name in bar(list(specs), "policies", progress):
        for seed, sc in zip(keys, scs):
            ends = job_ends(sc, specs[name], machines)
            metrics = schedule_metrics(sc.arrays, None, ends, sc.counted_from_s)
            rows.append({"scenario_seed": int(seed), "policy": name, **metrics})
    frame = pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS))
    rank = frame["policy"].map({n: i for i, n in enumerate(specs)})
    frame = frame.assign(_order=rank).sort_values(["_order", "scenario_seed"], kind="stable")
    return frame.drop(columns="_order").reset_index(drop=True)


def totals(frame):
    """(seeds, {policy: total weighted tardiness per scenario, in seed order})."""
    table = frame.pivot(index="scenario_seed", columns="policy", values="total_weighted_tardiness_s")
    table = table.sort_index()
    return table.index.to_numpy(), {p: table[p].to_numpy(float) for p in table.columns}


def tune(cfg, scs, seeds, progress=False):
    """ATC's k of lowest mean total weighted tardiness on ``scs`` (the validation scenarios) at
    frame level and the setting's sync interval: the record ``tuned.json`` holds."""
    sync_s = float(cfg.scenario.chunks.get("sync_s", 0.0))
    grid = []
    for k in bar(cfg.benchmark.atc_k_grid, "atc k grid", progress):
        sp = spec("atc-tuned", float(k), sync_s)
        twt = [
            schedule_metrics(sc.arrays, None, job_ends(sc, sp, cfg.scenario.machines), sc.counted_from_s)[
                "total_weighted_tardiness_s"
            ]
            for sc in scs
        ]
        grid.append({"atc_k": float(k), "mean_twt_s": float(np.mean(twt))})
    best = min(range(len(grid)), key=lambda i: (grid[i]["mean_twt_s"], i))
    return {
        "rule": "atc",
        "atc_k": grid[best]["atc_k"],
        "criterion": "lowest mean total weighted tardiness on the validation seeds, jobs of frames at "
        f"the setting's sync interval ({sync_s:g} s) (first in grid order on a tie)",
        "validation_seeds": {"first": seeds.start, "last": seeds.stop - 1, "count": len(seeds)},
        "scenario": {k: cfg.scenario[k] for k in ("tasks", "load", "machines")},
        "setting": setting.of_config(cfg),
        "reference_atc_k": float(cfg.rules.atc_k),
        "grid": grid,
        "config_hash": config_mod.config_hash(cfg, ["scenario", "rules", "seeds", "benchmark"]),
    }


def incumbent_rule(cfg, selection, names):
    """The shipped-decision rule's one home: (winner, its paired difference with atc-tuned or None,
    {policy: mean}) over the policies ``names`` of the selection table. The incumbent, atc-tuned, is
    replaced only by a policy significantly better than it (paired interval below zero), the lowest
    mean of those (the first in ``names`` on a tie)."""
    b = cfg.benchmark
    _seeds, twt = totals(selection)
    counts = bootstrap_counts(len(_seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    means = {p: float(v.mean()) for p, v in twt.items()}
    inc = "atc-tuned"
    better = []
    for p in names:
        if p in means and p != inc and means[p] < means[inc]:
            d = paired_difference(twt[p], twt[inc], counts, b["ci_level"])
            if np.isfinite(d[2]) and d[2] < 0:
                better.append((means[p], names.index(p), p, d))
    if not better:
        return inc, None, means
    _, _, winner, d = min(better)
    return winner, d, means


def choose(cfg, selection, atc_k, seeds, cap=0):
    """The shipped decision from the selection table (module docstring, point 2): the record
    ``farm_verdict.json`` holds."""
    winner, d, means = incumbent_rule(cfg, selection, CANDIDATES)
    inc = "atc-tuned"
    if winner != inc:
        reason = (
            f"{winner} is significantly better than the incumbent atc-tuned on the selection "
            f"(validation) scenarios: {d[0]:+.2f} % [{d[1]:+.2f} %, {d[2]:+.2f} %]; the lowest mean of those"
        )
    else:
        winner = inc
        reason = (
            "the incumbent, atc-tuned, is kept: no policy is significantly better than it on the "
            "selection (validation) scenarios"
        )
    sp = spec(winner, atc_k, cap=cap)
    where = setting.of_config(cfg)  # load: per GPU, as config scenario.load
    capacity = float(sum(setting.speeds_of_config(cfg)))
    return {
        "policy": winner,
        "rule": sp["rule"],
        "atc_k": sp["atc_k"] if sp["rule"] == "atc" else None,
        "cap": sp["cap"] or None,
        "sync_s": float(cfg.scenario.chunks.get("sync_s", 0.0)),
        "reason": reason,
        "selection": {"on": "validation", "seeds": [int(seeds.start), len(seeds)], "means": means},
        "setting": {
            **where,
            "offered_gpus": where["load"] * capacity,  # the offered work in speed-1 GPUs
            "chunks": config_mod.thawed(cfg.scenario.chunks),
        },
    }


def best_rule(twt):
    """The candidate of lowest mean (first in table order on a tie)."""
    return min((p for p in CANDIDATES if p in twt), key=lambda p: (twt[p].mean(), CANDIDATES.index(p)))


def comparisons(frame, cfg, shipped=None):
    """``farm.csv``: every policy against every reference of :data:`REFERENCES` present, paired
    (``shipped``: the shipped policy's name; None leaves "shipped" out)."""
    b = cfg.benchmark
    seeds, twt = totals(frame)
    counts = bootstrap_counts(len(seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    order = list(dict.fromkeys(frame["policy"]))
    refs = {r: {"best-rule": best_rule(twt), "shipped": shipped}.get(r, r) for r in REFERENCES}
    rows = []
    for p in order:
        for r, rp in refs.items():
            if rp not in twt or (r.startswith("atc-tuned-sync-") and not p.endswith(r[len("atc-tuned") :])):
                continue
            d = paired_difference(twt[p], twt[rp], counts, b["ci_level"])
            w = win_tie_loss(twt[p], twt[rp], b["tie_relative"], b["tie_absolute_s"])
            means = (twt[p].mean() / 1e3, twt[rp].mean() / 1e3)
            rows.append(dict(zip(FARM_COLUMNS, (p, r, rp, len(seeds), *means, *d, *w))))
    return pd.DataFrame(rows, columns=list(FARM_COLUMNS))
