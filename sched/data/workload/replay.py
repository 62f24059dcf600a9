"""Replay: the queue history cut into windows, each a scenario with its real tasks.

Each window (``window_hours`` long, 24 by default, aligned on UTC midnight)
holds the tasks submitted in it, with their real arrivals (seconds from the
window's start), priorities and deadlines, their measured durations
(``finished_at - started_at``) and the estimate the scheduler would have had
at submission (the calibration's duration model from the task's features,
as ``sched calibrate-workload`` computes it). A task without deadline gets
``arrival + NO_DEADLINE_S`` (sched/data/workload/workload.py), never late.

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

from sched.data.bench.calibration import load_calibration
from sched.data.scenario import Scenario, validate_frame
from sched.data.workload.history import HistoryError, HistoryStats, history_format, read_history
from sched.data.workload.workload import EPOCH_WEEK_OFFSET_S, NO_DEADLINE_S
from sched.data.workload.workload_fit import estimates
from sched.errors import shorten
from sched.formats.csv_input import normal_id

DAY_S = 86400.0


@dataclass
class Replay:
    """The replayed windows (scenarios, in time order) and what was left out."""

    scenarios: list
    stats: list
    unmeasured: int = 0
    small_windows: int = 0
    notes: list = field(default_factory=list)


def read_tasks(paths, cfg, calibration_path):
    """The history's valid tasks as one table (id, kind, submitted, weight, due, duration_s,
    estimate_s; NaN duration when unmeasured; ``file`` and ``line``, where each record is:
    the index of its file in ``paths`` and its line there) and the files' HistoryStats."""
    if not paths:
        raise HistoryError("no history file given (config workload.history is empty)")
    calibration = load_calibration(calibration_path)
    parts, stats, seen = [], [], {}  # ids across the files: the same task in two exports counts once
    for f, p in enumerate(paths):
        st = HistoryStats(Path(p), history_format(p))
        for ch in read_history(
            p, cfg.scenario.priorities, cfg.workload.max_bad_share, set(calibration["kinds"]), st, seen=seen
        ):
            parts.append(
                pd.DataFrame(
                    {
                        "file": f,
                        "line": ch.line,
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
    return pd.concat(parts, ignore_index=True), stats


def _day_of(t):
    return datetime.fromtimestamp(float(t), UTC).date().isoformat()


def check_ids(g, paths, where):
    """Refuse two tasks of one replayed scenario ``g`` (history rows, in stream order) with the
    same id (white space around it ignored, as a scenario's), naming both records where the
    user finds them: the history file, its line, and the day each was submitted on. ``where``
    says which scenario (a window, the held-out stream)."""
    ids = pd.Series([normal_id(v) for v in g["id"].to_numpy(dtype=object)], dtype=object)
    dup = ids.duplicated().to_numpy()
    if not dup.any():
        return
    i = int(np.argmax(dup))
    j = int(np.flatnonzero((ids == ids.iloc[i]).to_numpy())[0])

    def at(k):
        row = g.iloc[k]
        return f"{paths[int(row['file'])]}: line {int(row['line'])} (submitted {_day_of(row['submitted'])})"

    raise HistoryError(
        f"{at(i)}: field id: duplicate id {shorten(ids.iloc[i])} in {where}; first at {at(j)}: each task "
        "of a replayed day needs its own id"
    )


def _frame(g, start):
    """A scenario table of history tasks ``g``, times from ``start`` (s since 1970)."""
    arrival = g["submitted"].to_numpy() - start
    due = g["due"].to_numpy() - start
    due = np.where(np.isfinite(due), due, arrival + NO_DEADLINE_S)
    return pd.DataFrame(
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


def replay_scenarios(paths, cfg, calibration_path, window_hours=24.0, min_tasks=10):
    """The history files ``paths`` cut into windows of ``window_hours``: a :class:`Replay`."""
    if not (0 < window_hours <= 24 * 7 * 52):
        raise HistoryError(f"window_hours: must be in (0, 8736], got {window_hours!r}")
    tasks, stats = read_tasks(paths, cfg, calibration_path)
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
        frame = _frame(g, start)
        stamp = datetime.fromtimestamp(start, UTC)
        name = "replay-" + stamp.strftime("%Y-%m-%d" if window_hours % 24 == 0 else "%Y-%m-%dT%H%M")
        check_ids(g, paths, f"the window {name}")
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


@dataclass
class Stream:
    """The held-out days replayed as one continuous stream: ``scenario`` holds the tasks
    submitted from ``warm_up_days`` before the first held-out day to the end of the last
    (times from the stream's start), ``day`` the index in ``days`` of each task's day (-1 for
    the warm-up's, counted toward no day), ``days`` the held-out days judged (ISO dates),
    ``skipped`` those without a task with a measured duration (nothing to judge them on: a
    studio closed on Sundays; the stream runs on through them)."""

    scenario: Scenario
    day: np.ndarray
    days: list
    stats: list
    unmeasured: int = 0
    skipped: list = field(default_factory=list)


def held_out_stream(paths, cfg, calibration_path, held_out, warm_up_days=1, fitted_on=None, label="held-out"):
    """The held-out days ``held_out`` ([FIRST_DAY, LAST_DAY], ISO dates: the workload file's
    ``split.held_out``) of the history as one :class:`Stream`.

    Unlike :func:`replay_scenarios`, the queue is not emptied at midnight: a backlog carried
    over stays in the queue, and the stream starts ``warm_up_days`` earlier (the last fitted
    days) so that the first held-out day starts with the queue the history had, not an empty
    one. Each task's weighted tardiness counts toward the day it was submitted; a held-out
    day without a task with a measured duration is skipped (``Stream.skipped``), and none at
    all is a HistoryError.

    ``fitted_on``: ``(workload file, its sources)``, the history files the workload was fitted
    on (``sources``: path and sha256 of each); a history of other bytes is refused, naming
    both, since its days are not the ones the fit held out.

    ``label``: what the period is called in messages and in the stream's name (``held-out``, or
    ``validation`` for the validation days, ``split.validation``).
    """
    from datetime import date

    first, last = (
        datetime.combine(date.fromisoformat(d), datetime.min.time(), UTC).timestamp() for d in held_out
    )
    if last < first:
        raise HistoryError(f"{label} days: {held_out[0]} is after {held_out[1]}")
    tasks, stats = read_tasks(paths, cfg, calibration_path)
    if fitted_on is not None:
        _check_fitted_on(*fitted_on, stats)
    measured = np.isfinite(tasks["duration_s"].to_numpy())
    start, end = first - warm_up_days * DAY_S, last + DAY_S
    sub = tasks["submitted"].to_numpy()
    inside = (sub >= start) & (sub < end)
    unmeasured = int((inside & ~measured).sum())
    g = tasks[inside & measured].sort_values(["submitted", "id"], kind="stable")
    span = [
        datetime.fromtimestamp(first + i * DAY_S, UTC).date().isoformat()
        for i in range(int(round((last - first) / DAY_S)) + 1)
    ]
    day = np.floor((g["submitted"].to_numpy() - first) / DAY_S).astype(np.int64)
    day[day < 0] = -1
    counts = np.bincount(day[day >= 0], minlength=len(span))
    kept = np.flatnonzero(counts > 0)
    if not len(kept):
        raise HistoryError(
            f"{label} days {held_out[0]} to {held_out[1]}: no task with a measured duration (started_at "
            "and finished_at) in the history: nothing to judge the studio on"
        )
    # the days judged, numbered 0, 1, ... in order; the skipped ones hold no task to renumber
    index = np.full(len(span), -1, dtype=np.int64)
    index[kept] = np.arange(len(kept))
    day = np.where(day >= 0, index[np.maximum(day, 0)], -1)
    name = f"{label}-{span[0]}-to-{span[-1]}"
    check_ids(g, paths, f"the {label} stream ({held_out[0]} to {held_out[1]}, with the day before)")
    week_start = float((start + EPOCH_WEEK_OFFSET_S) % (7 * DAY_S))  # the stream's time of week
    scenario = Scenario(name, validate_frame(_frame(g, start), f"{label} stream {name}"), week_start)
    days = [span[i] for i in kept]
    skipped = [d for i, d in enumerate(span) if counts[i] == 0]
    return Stream(scenario, day, days, stats, unmeasured, skipped)


def _check_fitted_on(workload, sources, stats):
    """Refuse history files whose bytes are not those the workload was fitted on (its
    ``sources``' sha256), naming both; a workload recording no sha256 is not checked."""
    want = [s.get("sha256") for s in sources or [] if isinstance(s, dict)]
    if not want or not all(isinstance(h, str) and h for h in want):
        return
    have = [st.sha256 for st in stats]
    if sorted(want) == sorted(have):
        return

    def named(pairs):
        return ", ".join(f"{Path(str(p)).name} (sha256 {h[:12]}…)" for p, h in pairs)

    fitted = named((s.get("path"), s["sha256"]) for s in sources)
    given = named((st.path, st.sha256) for st in stats)
    raise HistoryError(
        f"workload file {workload} was fitted on {fitted}, not on the history given, {given}: its "
        "held-out days are not that history's; refit it (`sched calibrate-workload`) or replay the "
        "history it was fitted on"
    )
