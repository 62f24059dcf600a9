"""``plan``'s candidacy on a chunked setting (issue 60, point 3; ``sched farm-bench --plan``).

The rule of issue 46 (docs/plan.md, "The candidacy") on the farm: ``plan`` on its base, tuned ATC
at frame level (:mod:`sched.learn.search.plan_chunks`), runs on the setting's selection seeds,
the validation scenarios its shipped decision is chosen on, paired with tuned ATC there. It joins
the test table (policy ``plan``) only when that paired interval lies entirely below zero; the test
scenarios only confirm, and the shipped decision is not changed by it (``rank()`` has no chunked
plan). Its settings: ``scenario.chunks.plan`` (:data:`DEFAULTS`). ``plan_candidacy.json`` holds
the record, also when the candidacy was not run (``run`` false: the default run; the longer run,
``profile: full``, runs it; a farm-32 scenario costs tens of CPU seconds, hence
``chunks.plan.scenarios``: the first this many selection seeds only, :func:`seeds`).
"""

import numpy as np
import pandas as pd

from sched.evaluate.farm import bench
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS, schedule_metrics
from sched.evaluate.progress import bar
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.formats.json_input import is_number
from sched.learn.search import plan_chunks as pc

NAME = "plan"
#: The candidacy's settings unless ``scenario.chunks.plan`` says otherwise.
DEFAULTS = {"candidates": 4, "samples": 8, "z": 2.0, "seed": 0, "depth": 2}


#: The selection seeds the candidacy runs on unless ``chunks.plan.scenarios`` says otherwise.
SCENARIOS = 30


def seeds(cfg, sel):
    """The selection seeds the candidacy runs on: the first ``chunks.plan.scenarios``
    (:data:`SCENARIOS` when absent)."""
    n = (cfg.scenario.chunks.get("plan") or {}).get("scenarios", SCENARIOS)
    return sel[: int(n)]


def settings(cfg):
    """The planner's :class:`plan_chunks.Settings` of the setting."""
    st = {
        **DEFAULTS,
        **{k: v for k, v in dict(cfg.scenario.chunks.get("plan") or {}).items() if k != "scenarios"},
    }
    return pc.Settings(
        int(st["candidates"]), int(st["samples"]), float(st["z"]), int(st["seed"]), int(st["depth"])
    )


def run(cfg, keys, scs, atc_k, progress=False):
    """(the per-scenario table of ``plan`` on ``scs``, its summed counts: decisions, planned and
    deviations). The scenarios run side by side on ``sched.threads.allowed()`` threads (the
    planner's loop releases the GIL), each whole on one thread, and are joined in seed order: the
    thread count changes the speed, never a bit."""
    from concurrent.futures import ThreadPoolExecutor

    from sched.data.model import scenario_model
    from sched.threads import allowed

    sigma = float(scenario_model(cfg).sigma)
    plan = settings(cfg)

    def one(sc):
        return pc.simulate(sc.arrays, sc.chunks, cfg.scenario.machines, atc_k, plan, sigma)

    rows, counts = [], {"decisions": 0, "planned": 0, "deviations": 0}
    with ThreadPoolExecutor(max_workers=max(1, allowed())) as pool:
        done = list(bar(pool.map(one, scs), "plan on chunks", progress, total=len(scs)))
    for seed, sc, (ends, st) in zip(keys, scs, done):
        rows.append(
            {
                "scenario_seed": int(seed),
                "policy": NAME,
                **schedule_metrics(sc.arrays, None, ends, sc.counted_from_s),
            }
        )
        counts = {k: counts[k] + st[k] for k in counts}
    return pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS)), counts


def judge(cfg, selection, plan_frame, seeds, counts, against="atc-tuned"):
    """The candidacy's record: plan (on tuned ATC) against ``against``, the setting's shipped
    decision, on the selection scenarios, paired, and whether it pays (the interval entirely below
    zero): plan runs on the test seeds only when it could beat what ships (on farm-32 the shipped
    job limit is far ahead of tuned ATC, and plan's test rows cost tens of CPU-seconds a scenario)."""
    b = cfg.benchmark
    mine = selection[selection["scenario_seed"].isin(plan_frame["scenario_seed"])]
    _keys, twt = bench.totals(pd.concat([mine, plan_frame], ignore_index=True))
    n = len(_keys)
    boot = bootstrap_counts(n, b["bootstrap_resamples"], b["bootstrap_seed"])
    d = paired_difference(twt[NAME], twt[against], boot, b["ci_level"])
    w = win_tie_loss(twt[NAME], twt[against], b["tie_relative"], b["tie_absolute_s"])
    pays = bool(np.isfinite(d[2]) and d[2] < 0)
    return {
        "run": True,
        "pays": pays,
        "base": "atc-tuned",
        "against": against,
        "settings": settings(cfg)._asdict(),
        "validation": {
            "seeds": [int(seeds.start), len(seeds)],
            "diff_pct": d[0], "ci_lo_pct": d[1], "ci_hi_pct": d[2],
            "wins": w[0], "ties": w[1], "losses": w[2],
            "mean_twt_s": float(twt[NAME].mean()), "base_mean_twt_s": float(twt[against].mean()),
        },
        "counts": counts,
        "reason": (
            f"plan's paired interval against {against} (shipped) on the validation scenarios lies below "
            f"zero: it joins the test table" if pays else
            f"plan's paired interval against {against} (shipped) on the validation scenarios does not lie "
            f"below zero: it does not join the test table"
        ),
    }  # fmt: skip


def not_run(cfg):
    """The record of a run without the candidacy (the default profile)."""
    return {
        "run": False,
        "pays": False,
        "settings": settings(cfg)._asdict(),
        "reason": "not run: plan's candidacy on the chunked farm runs in the longer run (profile: full, "
        "`sched farm-bench --plan`)",
    }


def check(record, path, error):
    """``record`` (a parsed ``plan_candidacy.json``) when every field a reader formats has its
    type, else ``error`` naming the file and field: ``run`` and ``pays`` booleans, ``reason`` a
    string, ``settings.candidates`` and ``samples`` integers; when run, ``against`` a string, and
    ``validation``'s seeds [first, count], its wins/ties/losses integers >= 0, its percentages and
    means numbers (NaN allowed: a reference without tardiness)."""

    def need(ok, field, value):
        if not ok:
            raise error(f"{path}: field {field}: unexpected value {str(value)[:40]!r}")

    need(isinstance(record, dict), "(the file)", type(record).__name__)
    for f in ("run", "pays"):
        need(isinstance(record.get(f), bool), f, record.get(f))
    need(isinstance(record.get("reason"), str), "reason", record.get("reason"))
    st = record.get("settings")
    need(isinstance(st, dict), "settings", st)
    for f in ("candidates", "samples"):
        need(is_number(st.get(f), integer=True, minimum=1), f"settings.{f}", st.get(f))
    if not record["run"]:
        return record
    need(isinstance(record.get("against", "atc-tuned"), str), "against", record.get("against"))
    v = record.get("validation")
    need(isinstance(v, dict), "validation", v)
    seeds = v.get("seeds")
    need(
        isinstance(seeds, list) and len(seeds) == 2 and all(is_number(x, integer=True) for x in seeds),
        "validation.seeds",
        seeds,
    )
    for f in ("wins", "ties", "losses"):
        need(is_number(v.get(f), integer=True, minimum=0), f"validation.{f}", v.get(f))
    for f in ("diff_pct", "ci_lo_pct", "ci_hi_pct", "mean_twt_s", "base_mean_twt_s"):
        need(is_number(v.get(f)), f"validation.{f}", v.get(f))
    return record
