"""A scenario's schedule: its table (every scenario column, then the schedule's:
``sched.data.scenario.SCHEDULE_COLUMNS``) and its summary numbers. A chunked scenario's schedule,
one row a chunk: ``sched.data.chunked``.
"""

import numpy as np

from sched.data.objective import tardiness


def schedule_frame(scenario, start, end, machine):
    """The schedule table: every scenario column plus the schedule columns."""
    f = scenario.frame.copy()
    _, _, _, weight, due = scenario.arrays
    f["machine"] = np.asarray(machine, dtype=np.int64)
    f["start_s"] = np.asarray(start, dtype=np.float64)
    f["end_s"] = np.asarray(end, dtype=np.float64)
    f["tardiness_s"] = tardiness(f["end_s"].to_numpy(), due)
    f["weighted_tardiness_s"] = weight * f["tardiness_s"].to_numpy()
    return f


def summarize(schedule):
    """Summary numbers of a schedule table."""
    n = len(schedule)
    wt = schedule["weighted_tardiness_s"].to_numpy()
    tard = schedule["tardiness_s"].to_numpy()
    flow = schedule["end_s"].to_numpy() - schedule["arrival_s"].to_numpy()
    return {
        "tasks": n,
        "total_weighted_tardiness_s": float(wt.sum()),
        "mean_weighted_tardiness_s": float(wt.sum() / n),
        "mean_tardiness_s": float(tard.mean()),
        "max_tardiness_s": float(tard.max()),
        "tardy_fraction": float((tard > 0).mean()),
        "mean_flow_time_s": float(flow.mean()),
        "makespan_s": float(schedule["end_s"].max()),
    }
