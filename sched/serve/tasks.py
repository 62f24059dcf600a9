"""``rank()``'s input: task records, times and machines, on one clock.

:func:`read_queue` validates the tasks (dicts, or a DataFrame's rows), ``now``
and ``machines`` into the planning arrays of a :class:`Queue`. A bad value
raises :class:`RankInputError` naming the task id (or position) and the field.

Times. ``due``, ``arrival``, ``now`` and busy machines' free times are either
numbers (seconds, all on one clock) or datetimes (``datetime`` objects or ISO
8601 text). Datetimes with a time zone are converted to POSIX seconds, and
numbers given alongside them are read as POSIX seconds too. Datetimes
without a time zone are accepted only when every time of the call is one
(they are then read on the local wall clock); mixed with numbers or with
zoned datetimes they are refused, since their offset is unknown. Without
``now``: the current time when datetimes are used, else 0 (numbers are then
seconds relative to the moment of the call).

Durations. The planned durations are the tasks' estimates (what a scheduler
knows); ``duration_s`` stands in for a missing ``estimate_s``, and when the
config names a calibration with a duration model, the model estimates a task
that has neither from its kind and features.
"""

import math
import sys
import time
from collections import namedtuple
from datetime import datetime

import numpy as np

from sched.errors import SchedError


class RankInputError(SchedError):
    """``rank`` refuses its input; the message names the task id and field, or the file."""


#: Fields rank reads; any other field of a task is a feature for the duration model.
KNOWN_FIELDS = frozenset(("id", "estimate_s", "duration_s", "weight", "priority", "due", "arrival", "kind"))

_NUMBER = (int, float, np.integer, np.floating)
_NAIVE_EPOCH = datetime(1970, 1, 1)

#: The validated queue. ``clock``: "seconds", "aware" (POSIX seconds) or "naive"
#: (local wall clock); ``tz``: the time zone to show the plan in.
Queue = namedtuple("Queue", "n ids arrival estimate weight due machine_free kinds clock tz")


# --------------------------------------------------------------------------- records


def task_records(tasks):
    """The tasks as a sequence of records: a DataFrame's rows, or ``tasks`` itself."""
    if _is_frame(tasks):
        return _frame_records(tasks)
    if isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__len__"):
        raise RankInputError(
            f"tasks: expected a list of task objects or a DataFrame, got {type(tasks).__name__}"
        )
    return tasks


def _is_frame(obj):
    """Whether ``obj`` is a pandas DataFrame (without importing pandas)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def _frame_records(df):
    """DataFrame rows as task dicts; NaN / NaT / None cells count as absent."""
    if "id" not in df.columns and df.index.name == "id":
        df = df.reset_index()
    cols = list(df.columns)
    absent = df.isna().to_numpy()
    return [
        {c: v for c, v, a in zip(cols, row, skip) if not a}
        for row, skip in zip(df.itertuples(index=False, name=None), absent)
    ]


def _where(task_id, pos):
    return f"task {task_id!r}" if task_id is not None else f"task #{pos + 1} (no id)"


def _bad(task_id, pos, field, why):
    return RankInputError(f"{_where(task_id, pos)}: field {field}: {why}")


def _number(v):
    """v as a float if it is a number (not a bool), else None."""
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    if isinstance(v, _NUMBER) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    return None


# --------------------------------------------------------------------------- the queue


def read_queue(tasks, now, machines, st):
    """Validate the tasks, now and machines; the planning arrays on one clock.

    ``st``: rank's settings (priority class weights, calibration).
    """
    ids, est, weight, due, arrival, kinds, dates = _read_tasks(tasks, st)
    if now is not None:
        try:
            now = _when(now)
        except ValueError as exc:
            raise RankInputError(f"now: {exc}") from None
        if type(now) is not float:
            dates.append((now, None, None, "now"))
    free = _machines(machines, dates)

    clock, tz = "seconds", None
    if dates:
        clock, tz = _clock(dates, now, free, due, arrival)
        if clock != "seconds":
            due, arrival, free, now = _to_seconds(clock, due, arrival, free, now)
    if now is None:
        now = (
            time.time()
            if clock == "aware"
            else _to_seconds_naive(datetime.now())
            if clock == "naive"
            else 0.0
        )
    arrival = [now if a is None else a for a in arrival]
    mfree = np.array(free, dtype=np.float64)
    np.maximum(mfree, now, out=mfree)
    columns = [np.array(c, dtype=np.float64) for c in (arrival, est, weight, due)]
    return Queue(len(ids), ids, *columns, mfree, kinds, clock, tz)


def _read_tasks(tasks, st):
    """Columns of the task fields (times as given: floats or datetimes) and the datetimes met."""
    n = len(tasks)
    ids, arrival, kinds = [None] * n, [None] * n, [None] * n
    est, weight, due = [0.0] * n, [0.0] * n, [0.0] * n
    seen = {}
    dates = []  # (value, task id, pos, field) of every datetime met
    weights = st.weights
    model = None
    isfinite, inf = math.isfinite, math.inf
    # the common case (a float) is checked inline, errors are built in functions: speed
    for pos, task in enumerate(tasks):
        try:
            get = task.get
        except AttributeError:
            raise RankInputError(
                f"task #{pos + 1}: expected an object with fields, got {type(task).__name__}"
            ) from None
        tid = get("id")
        try:
            first = seen.setdefault(tid, pos)
        except TypeError:
            first = None
        if tid is None or first != pos:
            raise _id_error(tid, pos, first)
        ids[pos] = tid

        field, v = "estimate_s", get("estimate_s")
        if v is None:
            field, v = "duration_s", get("duration_s")
        if v is None:
            if model is None:
                model = _duration_model(st.calibration)
            v = model(task, tid, pos)
            field = "estimate_s"
        f = v if type(v) is float else _number(v)
        if f is None or not (f > 0.0 and f < inf):
            raise _not_positive(v, tid, pos, field)
        est[pos] = f

        v = get("weight")
        if v is None:
            f = _class_weight(get("priority"), weights, tid, pos)
        else:
            f = v if type(v) is float else _number(v)
            if f is None or not (f > 0.0 and f < inf):
                raise _not_positive(v, tid, pos, "weight")
        weight[pos] = f

        v = get("due")
        if v is None:
            raise _bad(tid, pos, "due", "missing")
        due[pos] = v if type(v) is float and isfinite(v) else _time(v, tid, pos, "due", dates)
        v = get("arrival")
        if v is not None:
            arrival[pos] = v if type(v) is float and isfinite(v) else _time(v, tid, pos, "arrival", dates)
        kinds[pos] = get("kind")
    return ids, est, weight, due, arrival, kinds, dates


def _id_error(tid, pos, first):
    """Why a task's id is refused: missing, not hashable (``first`` None), or a duplicate
    of task ``first``."""
    if tid is None:
        return _bad(None, pos, "id", "missing")
    if first is None:
        return _bad(tid, pos, "id", f"must be a string or a number, got {type(tid).__name__}")
    return _bad(tid, pos, "id", f"duplicate id (also task #{first + 1})")


def _not_positive(v, tid, pos, field):
    """The error for an estimate or weight ``v`` that is not a finite number > 0."""
    if _number(v) is None:
        return _bad(tid, pos, field, f"not a number: {v!r}")
    return _bad(tid, pos, field, f"must be finite and > 0, got {v!r}")


def _class_weight(cls, weights, tid, pos):
    """The weight of priority class ``cls`` (config scenario.priorities)."""
    if cls is None:
        raise _bad(tid, pos, "weight", "missing (give weight or priority)")
    try:
        return weights[cls]
    except (KeyError, TypeError):
        raise _bad(
            tid,
            pos,
            "priority",
            f"unknown priority class {cls!r}; expected one of "
            f"{', '.join(weights)} (config scenario.priorities)",
        ) from None


# --------------------------------------------------------------------------- times and machines


def _when(v):
    """A time value: a float (seconds) or a datetime. Raises ValueError with the reason."""
    f = _number(v)
    if f is not None:
        if not math.isfinite(f):
            raise ValueError(f"not finite: {v!r}")
        return f
    if isinstance(v, datetime):
        if v != v:  # NaT
            raise ValueError(f"not a date: {v!r}")
        return v
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.strip())
        except ValueError:
            raise ValueError(
                f"unparsable date {v!r} (expected ISO 8601, e.g. 2026-05-09T14:30:00+02:00)"
            ) from None
    raise ValueError(f"expected seconds or an ISO 8601 datetime, got {type(v).__name__} {v!r}")


def _time(v, tid, pos, field, dates):
    """A task's time field: seconds, or a datetime noted in ``dates``."""
    try:
        f = _when(v)
    except ValueError as exc:
        raise _bad(tid, pos, field, str(exc)) from None
    if type(f) is not float:
        dates.append((f, tid, pos, field))
    return f


def _machines(machines, dates):
    """Free times of the machines (floats or datetimes; -inf: free at any time)."""
    f = _number(machines)
    if f is not None:
        if not (math.isfinite(f) and f == int(f) and f >= 1):
            raise RankInputError(f"machines: expected a whole count >= 1, got {machines!r}")
        return [-math.inf] * int(f)
    if isinstance(machines, (str, bytes, dict)) or not hasattr(machines, "__iter__"):
        raise RankInputError(
            "machines: expected a count of free GPUs or a list of the times "
            f"at which each becomes free, got {machines!r}"
        )
    free = []
    for m, v in enumerate(machines):
        try:
            t = _when(v)
        except ValueError as exc:
            raise RankInputError(f"machines[{m}]: {exc}") from None
        if type(t) is not float:
            dates.append((t, None, None, f"machines[{m}]"))
        free.append(t)
    if not free:
        raise RankInputError("machines: empty list (at least one GPU is needed)")
    return free


def _clock(dates, now, free, due, arrival):
    """'aware' (POSIX seconds) or 'naive' (local wall clock), and the time zone to show."""
    naive = [d for d in dates if d[0].utcoffset() is None]
    aware = [d for d in dates if d[0].utcoffset() is not None]
    if not naive:
        return "aware", (now if isinstance(now, datetime) else aware[0][0]).tzinfo
    if aware:
        other = aware[0]
        mixed = f"a date with one ({_label(other)} {other[0].isoformat()})"
    else:
        num = _first_number(now, free, due, arrival)
        if num is None:
            return "naive", None
        mixed = f"numbers ({num})"
    d = naive[0]
    raise RankInputError(
        f"{_label(d)}: date {d[0].isoformat()} has no time zone and cannot be "
        f"mixed with {mixed}; add a time zone, e.g. +00:00"
    )


def _label(d):
    value, tid, pos, field = d
    return f"{_where(tid, pos)}: field {field}" if pos is not None else field


def _first_number(now, free, due, arrival):
    if type(now) is float:
        return f"now = {now:g}"
    for m, t in enumerate(free):
        if type(t) is float and math.isfinite(t):
            return f"machines[{m}] = {t:g}"
    for name, col in (("due", due), ("arrival", arrival)):
        for pos, t in enumerate(col):
            if type(t) is float:
                return f"task #{pos + 1} {name} = {t:g}"
    return None


def _to_seconds(clock, due, arrival, free, now):
    """The datetimes among the times as seconds on ``clock`` ("aware" or "naive")."""
    conv = _to_seconds_naive if clock == "naive" else _to_seconds_aware
    due = [conv(x) if type(x) is not float else x for x in due]
    arrival = [conv(x) if x is not None and type(x) is not float else x for x in arrival]
    free = [conv(x) if type(x) is not float else x for x in free]
    if now is not None and type(now) is not float:
        now = conv(now)
    return due, arrival, free, now


def _to_seconds_aware(d):
    return d.timestamp()


def _to_seconds_naive(d):
    return (d - _NAIVE_EPOCH).total_seconds()


# --------------------------------------------------------------------------- duration model


def _duration_model(calibration):
    """A function estimating a task's duration from its kind and features.

    Needs ``sched.data.calibration.predict_duration`` (issue 3) and a config
    that names a calibration; without them a task with no estimate is refused.
    """
    predict = None
    if calibration:
        try:
            from sched.data.calibration import predict_duration as predict
        except ImportError:
            predict = None

    def estimate(task, tid, pos):
        if predict is None:
            why = (
                "no calibration with a duration model is configured (scenario.calibration)"
                if not calibration
                else "this version cannot read duration models"
            )
            raise _bad(tid, pos, "estimate_s", f"missing (give estimate_s or duration_s; {why})")
        kind = task.get("kind")
        if kind is None:
            raise _bad(
                tid,
                pos,
                "kind",
                "missing (the duration model needs it when estimate_s and duration_s are absent)",
            )
        features = {k: v for k, v in task.items() if k not in KNOWN_FIELDS}
        try:
            value = predict(calibration, kind, features)
        except (ValueError, KeyError, TypeError) as exc:
            raise _bad(
                tid, pos, "estimate_s", f"missing, and the duration model cannot estimate it: {exc}"
            ) from None
        return value

    return estimate
