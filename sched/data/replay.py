"""Replay: the queue history cut into windows, each a scenario with its real tasks.

Each window (``window_hours`` long, 24 by default, aligned on UTC midnight)
holds the tasks submitted in it, with their real arrivals (seconds from the
window's start), priorities and deadlines, their measured durations
(``finished_at - started_at``) and the estimate the scheduler would have had
at submission (the calibration's duration model from the task's features,
as ``sched calibrate-workload`` computes it). A task without deadline gets
``arrival + NO_DEADLINE_S`` (sched/data/workload.py), never late.

What a replay leaves out, on purpose: each window starts with an empty
queue and idle GPUs (the backlog of the day before is not carried over), and
tasks without a measured duration (no ``started_at``/``finished_at``) cannot
be replayed: they are left out and counted. Windows with fewer than
``min_tasks`` tasks are left out too (a quiet Sunday morning says little).

The history is read in memory here (six numbers a task: a few tens of MB for
a million tasks), unlike the streamed calibration.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from sched.data.calibration import load_calibration
from sched.data.history import HistoryError, HistoryStats, history_format, read_history
from sched.data.scenario import Scenario, validate_frame
from sched.data.workload import EPOCH_WEEK_OFFSET_S, NO_DEADLINE_S
from sched.data.workload_fit import estimates


@dataclass
class Replay:
    """The replayed windows (scenarios, in time order) and what was left out."""

    scenarios: list
    stats: list
    unmeasured: int = 0
    small_windows: int = 0
    notes: list = field(default_factory=list)


def replay_scenarios(paths, cfg, calibration_path, window_hours=24.0, min_tasks=10):
    """The history files ``paths`` cut into windows of ``window_hours``: a :class:`Replay`."""
    if not paths:
        raise HistoryError("no history file given (config workload.history is empty)")
    if not (0 < window_hours <= 24 * 7 * 52):
        raise HistoryError(f"window_hours: must be in (0, 8736], got {window_hours!r}")
    calibration = load_calibration(calibration_path)
    parts, stats = [], []
    for p in paths:
        st = HistoryStats(Path(p), history_format(p))
        for ch in read_history(
            p, cfg["scenario"]["priorities"], cfg["workload"]["max_bad_share"], set(calibration["kinds"]), st
        ):
            parts.append(
                pd.DataFrame(
                    {
                        "id": ch.id,
                        "kind": ch.kind,
                        "submitted": ch.submitted,
                        "weight": ch.weight,
                        "due": ch.due,
                        "duration_s": ch.finished - ch.started,
                        "estimate_s": estimates(calibration, ch.kind, ch.features),
                    }
                )
            )
        stats.append(st)
    tasks = pd.concat(parts, ignore_index=True)
    measured = np.isfinite(tasks["duration_s"].to_numpy())
    out = Replay([], stats, unmeasured=int((~measured).sum()))
    tasks = tasks[measured]
    if tasks.empty:
        raise HistoryError(
            f"{', '.join(map(str, paths))}: no task with a measured duration (started_at and finished_at): "
            "nothing to replay"
        )
    width = window_hours * 3600.0
    # windows aligned on Monday 00:00 UTC, so that 24-hour windows are UTC days
    origin = np.floor((tasks["submitted"].min() + EPOCH_WEEK_OFFSET_S) / (7 * 86400.0)) * 7 * 86400.0
    origin -= EPOCH_WEEK_OFFSET_S
    tasks = tasks.assign(window=np.floor((tasks["submitted"] - origin) / width).astype(np.int64))
    tasks = tasks.sort_values(["submitted", "id"], kind="stable")
    for w, g in tasks.groupby("window", sort=True):
        if len(g) < min_tasks:
            out.small_windows += 1
            continue
        start = origin + w * width
        arrival = g["submitted"].to_numpy() - start
        due = g["due"].to_numpy() - start
        due = np.where(np.isfinite(due), due, arrival + NO_DEADLINE_S)
        frame = pd.DataFrame(
            {
                "id": g["id"].to_numpy(),
                "kind": g["kind"].to_numpy(),
                "arrival_s": arrival,
                "duration_s": g["duration_s"].to_numpy(),
                "weight": g["weight"].to_numpy(),
                "due_s": due,
                "estimate_s": g["estimate_s"].to_numpy(),
            }
        )
        stamp = datetime.fromtimestamp(start, UTC)
        name = "replay-" + stamp.strftime("%Y-%m-%d" if window_hours % 24 == 0 else "%Y-%m-%dT%H%M")
        week_start = float((start + EPOCH_WEEK_OFFSET_S) % (7 * 86400.0))  # the window's time of week
        out.scenarios.append(Scenario(name, validate_frame(frame, f"history window {name}"), week_start))
    if not out.scenarios:
        raise HistoryError(
            f"no window of {window_hours:g} h holds {min_tasks} measured tasks: nothing to replay"
        )
    if out.unmeasured:
        out.notes.append(f"{out.unmeasured} tasks without a measured duration were left out")
    if out.small_windows:
        out.notes.append(f"{out.small_windows} windows with fewer than {min_tasks} tasks were left out")
    return out
