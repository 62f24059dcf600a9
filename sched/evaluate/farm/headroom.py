"""The clairvoyant headroom of a chunked setting (issue 59, point 5; ``sched farm-bench``).

On the first ``scenario.chunks.clairvoyant.scenarios`` test seeds (default
``benchmark.clairvoyant.scenarios``), the search of
:mod:`sched.sim.farm_clairvoyant` (the best job priority list found knowing the future,
dispatched by the chunked loop) starts from the better of two lists: the jobs by completion in
the schedule of the scenario's best rule (the policy of :data:`bench.CANDIDATES` of lowest total
there) and the jobs by due date (EDD's own list). The clairvoyant total of a scenario is the
lower of the list found and that best rule's: a schedule knowing the future may be either, so the
reference is never above a rule. Its budget is ``scenario.chunks.clairvoyant``: ``evaluations``
moves per scenario (a count: the same result on any machine), ``window`` the farthest a move
takes a job in the list; 0 evaluations: not computed.

``clairvoyant.csv`` holds one row a scenario (:data:`COLUMNS`); :func:`comparisons` gives
``farm.csv``'s rows of the policy ``clairvoyant`` on those scenarios, paired with each reference.
"""

import numpy as np
import pandas as pd

from sched.evaluate.farm import bench
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS, schedule_metrics
from sched.evaluate.progress import bar
from sched.sim.farm_clairvoyant import search as cc

#: The policy name of the clairvoyant rows of ``farm.csv``.
NAME = "clairvoyant"
#: The references its rows of ``farm.csv`` are paired with (the best rule is its own start).
REFERENCES = ("shipped", "atc-tuned", "farm-fifo", "farm-balanced")
COLUMNS = (
    "scenario_seed", "best_rule", "best_rule_twt_s", "start_list", "start_twt_s", "list_twt_s",
    "clairvoyant_twt_s", "improvement_vs_best_rule_pct", "evaluations", "budget_evaluations", "window",
)  # fmt: skip


def budget(cfg):
    """(scenarios, evaluations, window) of the setting's clairvoyant run; 0 scenarios: none."""
    c = dict(cfg.scenario.chunks.get("clairvoyant") or {})
    evaluations = int(c.get("evaluations", 2000))
    window = int(c.get("window", 64))
    scenarios = c.get("scenarios", cfg.benchmark.get("clairvoyant", {}).get("scenarios", 30))
    scenarios = int(scenarios) if evaluations > 0 else 0
    return scenarios, evaluations, window


def run(cfg, seeds, scs, frame, atc_k, progress=False):
    """The table :data:`COLUMNS` of the scenarios ``scs`` of ``seeds`` (``frame``: the test
    table of every rule on them, ``atc_k``: the tuned k)."""
    _n, evaluations, window = budget(cfg)
    machines = cfg.scenario.machines
    keys, twt = bench.totals(frame[frame["scenario_seed"].isin([int(s) for s in seeds])])
    at = {int(s): i for i, s in enumerate(keys)}
    rows = []
    for seed, sc in bar(list(zip(seeds, scs)), "clairvoyant", progress):
        b = at[int(seed)]
        rule = min(
            (p for p in bench.CANDIDATES if p in twt), key=lambda p: (twt[p][b], bench.CANDIDATES.index(p))
        )
        rule_twt = float(twt[rule][b])
        ends = bench.job_ends(sc, bench.spec(rule, atc_k), machines)
        arrival, due = sc.arrays[0], sc.arrays[4]
        starts = {
            f"{rule} by completion": cc.completion_order(ends, arrival),
            "edd": cc.completion_order(due, arrival),
        }
        costs = {
            k: cc.list_ends(sc.arrays, sc.chunks, machines, v, sc.counted_from_s)[1]
            for k, v in starts.items()
        }
        start = min(costs, key=lambda k: (costs[k], list(starts).index(k)))
        res = cc.search(sc.arrays, sc.chunks, machines, starts[start], window, evaluations, sc.counted_from_s)
        found = schedule_metrics(sc.arrays, None, res["ends"], sc.counted_from_s)[
            "total_weighted_tardiness_s"
        ]
        best = min(found, rule_twt)
        rows.append(
            dict(
                zip(
                    COLUMNS,
                    (
                        int(seed), rule, rule_twt, start, costs[start], found, best,
                        (rule_twt - best) / rule_twt * 100.0 if rule_twt > 0 else 0.0,
                        res["evaluations"], evaluations, window,
                    ),
                )
            )
        )  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def comparisons(table, frame, cfg, shipped):
    """``farm.csv``'s rows of :data:`NAME` (on the scenarios of ``table``) against
    :data:`REFERENCES`, paired as every other row (``frame``: the test table)."""
    if table.empty:
        return pd.DataFrame(columns=list(bench.FARM_COLUMNS))
    keep = frame[frame["scenario_seed"].isin(table["scenario_seed"])]
    mine = keep[keep["policy"] == shipped].copy()
    by_seed = table.set_index("scenario_seed")["clairvoyant_twt_s"]
    mine["policy"] = NAME
    mine["total_weighted_tardiness_s"] = mine["scenario_seed"].map(by_seed).to_numpy(float)
    other = [
        c for c in PER_SCENARIO_COLUMNS if c not in ("scenario_seed", "policy", "total_weighted_tardiness_s")
    ]
    mine[other] = np.nan  # only the total is the clairvoyant's
    rows = bench.comparisons(pd.concat([keep, mine], ignore_index=True), cfg, shipped)
    return rows[(rows["policy"] == NAME) & rows["reference"].isin(REFERENCES)].reset_index(drop=True)
