"""The parallelism limit's tuning (:mod:`sched.sim.farm_limits`; issue 60, goal 2): the number of
chunks a job may run at once under tuned ATC, chosen on the validation seeds ATC's k is tuned on,
at the setting's sync interval, after k (k is kept: the limit is tuned at it).

The record goes into ``tuned.json`` beside k (``cap``, ``cap_grid``): each limit's mean total
weighted tardiness at the setting's sync interval and at the adapters' (``SYNCS``), so that the
file shows whether tuning at 60 s would pick another limit. The lowest mean at the setting's
interval wins, the first in grid order on a tie.
"""

import numpy as np

from sched.data.machines import speeds
from sched.evaluate.farm.bench import CAPPED, SYNCS, job_ends, spec
from sched.evaluate.per_scenario import schedule_metrics
from sched.evaluate.progress import bar
from sched.sim import farm_limits


def mean_twt(scs, sp, machines):
    """Mean total weighted tardiness of the policy spec ``sp`` over the scenarios ``scs``."""
    return float(
        np.mean(
            [
                schedule_metrics(sc.arrays, None, job_ends(sc, sp, machines), sc.counted_from_s)[
                    "total_weighted_tardiness_s"
                ]
                for sc in scs
            ]
        )
    )


def tune_cap(cfg, scs, atc_k, progress=False):
    """The limit of lowest mean on ``scs`` (the validation scenarios) for tuned ATC (``atc_k``), and
    its grid: {"cap", "cap_grid": [{"cap", "mean_twt_s": {sync: mean}}], "cap_criterion"} (0 when
    the farm has one GPU: no limit to tune)."""
    sync_s = float(cfg.scenario.chunks.get("sync_s", 0.0))
    machines = cfg.scenario.machines
    syncs = list(dict.fromkeys((sync_s, SYNCS[0])))
    grid = []
    for c in bar(farm_limits.cap_grid(len(speeds(machines))), "cap grid", progress):
        means = {f"{s:g}": mean_twt(scs, spec(CAPPED, atc_k, s, cap=c), machines) for s in syncs}
        grid.append({"cap": int(c), "mean_twt_s": means})
    key = f"{sync_s:g}"
    best = min(range(len(grid)), key=lambda i: (grid[i]["mean_twt_s"][key], i)) if grid else None
    return {
        "cap": grid[best]["cap"] if grid else 0,
        "cap_criterion": "the most chunks a job runs at once under atc-tuned: lowest mean total weighted "
        f"tardiness on the validation seeds at the setting's sync interval ({sync_s:g} s), k as tuned "
        "(first in grid order on a tie); the grid's means at each sync interval in seconds",
        "cap_grid": grid,
    }
