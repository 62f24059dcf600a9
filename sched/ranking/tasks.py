"""``rank()``'s input: task records, times and machines, on one clock.

:func:`read_queue` validates the tasks (dicts, or a DataFrame's rows), ``now``
and ``machines`` into the planning arrays of a :class:`Queue`. A bad value
raises :class:`RankInputError` naming the task id (or position) and the field.

Times (numbers or datetimes, on one clock): :mod:`sched.ranking.times`. Machines (GPUs, their
free times and speeds): :mod:`sched.ranking.gpus`.

Durations. The planned durations are the tasks' estimates (what a scheduler
knows); ``duration_s`` stands in for a missing ``estimate_s``, and when the
config names a calibration with a duration model, the model estimates a task
that has neither from its kind and features.

Ids. An id is a string or a number, returned exactly as given. Ids are
compared with the white space around them stripped: ``"a"`` and ``"a  "``
are the same task, so a queue holding both is refused as a duplicate; an id
of white space only, or a number that is not finite, is refused.

Limits (``sched.limits``), so that every start, end and lateness of the plan
is a finite number and memory stays bounded: at most ``MAX_RANK_TASKS``
tasks and ``MAX_MACHINES`` GPUs (checked before anything is allocated for
them); every time within ``MAX_SECONDS`` of 0 (datetimes always are);
estimates in (0, ``MAX_SECONDS``]; weights in (0, ``MAX_WEIGHT``]; and the
plan's reach (the latest time given + the total estimated work) at most
``MAX_SECONDS``; with datetimes, ``now`` from 0001-01-02 and the reach by 9999-12-31
(``DATETIME_FIRST_S``, ``DATETIME_END_S``), so that explain shows every start and end.
"""

import math
import sys
import time
from collections import namedtuple

import numpy as np

from sched.config import shorten
from sched.data.machines import MachinesError
from sched.errors import SchedError
from sched.limits import (
    DATETIME_END_S,
    DATETIME_FIRST_S,
    MAX_RANK_TASKS,
    MAX_SECONDS,
    MAX_WEIGHT,
)
from sched.ranking import gpus
from sched.ranking.farm import frames
from sched.ranking.times import clock_of, now_naive, number, to_seconds, when, where


class RankInputError(SchedError):
    """``rank`` refuses its input; the message names the task id and field, or the file."""


class RankSetupError(RankInputError):
    """The files a decision reads on the caller's behalf cannot be used: the config, a verdict
    (``winner.json``, ``tuned.json``), a policy file, the planner's settings. In process it is a
    :class:`RankInputError` as any other; ``sched serve`` tells it apart, because there it is the
    service's fault, not the client's (docs/serve.md)."""


#: Fields rank reads; any other field of a task is a feature for the duration model.
#: (``frames`` stays a feature: the duration model reads it; the other fields of a job of frames,
#: :data:`sched.ranking.farm.frames.CHUNK_FIELDS`, are not.)
KNOWN_FIELDS = frozenset(
    ("id", "estimate_s", "duration_s", "weight", "priority", "due", "arrival", "kind", *frames.CHUNK_FIELDS)
)


#: The validated queue. ``clock``: "seconds", "aware" (POSIX seconds) or "naive"
#: (datetimes without a time zone, read in UTC); ``tz``: the time zone to show the plan in.
#: ``speed``: each GPU's speed (a task of estimate p takes p / speed on it).
#: ``chunks``: the call's jobs of frames (:class:`sched.ranking.farm.frames.Chunks`), None when it has none.
Queue = namedtuple("Queue", "n ids arrival estimate weight due machine_free speed kinds clock tz chunks now")


# --------------------------------------------------------------------------- records


def task_records(tasks):
    """The tasks as a sequence of records: a DataFrame's rows, or ``tasks`` itself.

    More than ``MAX_RANK_TASKS`` tasks are refused before any is read.
    """
    frame = _is_frame(tasks)
    if not frame and (isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__len__")):
        raise RankInputError(
            f"tasks: expected a list of task objects or a DataFrame, got {type(tasks).__name__}"
        )
    if len(tasks) > MAX_RANK_TASKS:
        raise RankInputError(
            f"tasks: {len(tasks)} tasks, more than the limit of {MAX_RANK_TASKS} "
            "(sched.limits.MAX_RANK_TASKS)"
        )
    return _frame_records(tasks) if frame else tasks


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


def _bad(task_id, pos, field, why):
    return RankInputError(f"{where(task_id, pos)}: field {field}: {why}")


# --------------------------------------------------------------------------- the queue


def read_queue(tasks, now, machines, st):
    """Validate the tasks, now and machines; the planning arrays on one clock.

    ``st``: rank's settings (priority class weights, calibration).
    """
    ids, est, weight, due, arrival, kinds, dates = _read_tasks(tasks, st)
    if now is not None:
        try:
            now = when(now)
        except ValueError as exc:
            raise RankInputError(f"now: {exc}") from None
        if type(now) is not float:
            dates.append((now, None, None, "now"))
    try:
        free, speed = gpus.read(machines, dates)
    except MachinesError as exc:
        raise RankInputError(str(exc)) from None

    clock, tz = "seconds", None
    if dates:
        try:
            clock, tz = clock_of(dates, now, free, due, arrival)
        except ValueError as exc:
            raise RankInputError(str(exc)) from None
        if clock != "seconds":
            due, arrival, free, now = to_seconds(clock, due, arrival, free, now)
    if now is None:
        now = time.time() if clock == "aware" else now_naive() if clock == "naive" else 0.0
    arrival = [now if a is None else a for a in arrival]
    mfree = np.array(free, dtype=np.float64)
    np.maximum(mfree, now, out=mfree)
    columns = [np.array(c, dtype=np.float64) for c in (arrival, est, weight, due)]
    end = DATETIME_END_S if clock != "seconds" else MAX_SECONDS
    if clock != "seconds" and not now >= DATETIME_FIRST_S:
        raise RankInputError(
            f"now: {now:.6g} s is before 0001-01-02, the first date a datetime shows "
            "(sched.limits.DATETIME_FIRST_S)"
        )
    if len(ids) > 200:  # numpy's reductions: faster on long queues, slower on short ones
        _check_reach(max(float(columns[0].max()), float(mfree.max())), float(columns[1].sum()), end)
    elif ids:
        _check_reach(max(max(arrival), max(free), now), sum(est), end)
    chunks = frames.read(tasks, ids, est, mfree, speed, now, _bad) if ids else None
    if chunks is not None:  # setups and running chunks are work too
        _check_reach(max(float(columns[0].max()), float(mfree.max())), chunks.work, end)
    return Queue(len(ids), ids, *columns, mfree, speed, kinds, clock, tz, chunks, now)


def _check_reach(latest, work, end=MAX_SECONDS):
    """RankInputError unless the plan ends within ``end`` (MAX_SECONDS; DATETIME_END_S on a
    datetime clock): every task starts by the latest free time or arrival (``latest``) plus the
    work planned before it."""
    if not latest + work <= end:
        limit = "MAX_SECONDS" if end == MAX_SECONDS else "DATETIME_END_S: 9999-12-31, the last date shown"
        raise RankInputError(
            f"tasks: the plan could end at {latest + work:.6g} s (latest start or arrival "
            f"{latest:.6g} s + total estimated work {work:.6g} s), beyond {end:g} s "
            f"(sched.limits.{limit})"
        )


def _read_tasks(tasks, st):
    """Columns of the task fields (times as given: floats or datetimes) and the datetimes met."""
    n = len(tasks)
    ids, arrival, kinds = [None] * n, [None] * n, [None] * n
    est, weight, due = [0.0] * n, [0.0] * n, [0.0] * n
    seen = {}
    dates = []  # (value, task id, pos, field) of every datetime met
    weights = st.weights
    model = None
    low, big, heavy = -MAX_SECONDS, MAX_SECONDS, MAX_WEIGHT  # locals: speed
    # the common case (a float) is checked inline, errors are built in functions: speed
    for pos, task in enumerate(tasks):
        try:
            get = task.get
        except AttributeError:
            raise RankInputError(
                f"task #{pos + 1}: expected an object with fields, got {type(task).__name__}"
            ) from None
        tid = get("id")
        t = type(tid)
        key = tid if t is int else tid.strip() if t is str else _id_key(tid, pos)
        if not key and t is str:
            raise _bad(tid, pos, "id", "empty")
        try:
            first = seen.setdefault(key, pos)
        except TypeError:
            first = None
        if tid is None or first != pos:
            raise _id_error(tid, pos, first, ids)
        ids[pos] = tid

        field, v = "estimate_s", get("estimate_s")
        if v is None:
            field, v = "duration_s", get("duration_s")
        if v is None and get("frame_s") is not None:  # a job of frames: frames x frame_s
            field, v = "frame_s", frames.frame_work(task, tid, pos, _bad)
        if v is None:
            if model is None:
                model = _duration_model(st.calibration)
            v = model(task, tid, pos)
            field = "estimate_s"
        f = v if type(v) is float else number(v)
        if f is None or not (f > 0.0 and f <= big):
            raise _not_positive(v, tid, pos, field, MAX_SECONDS, "MAX_SECONDS")
        est[pos] = f

        v = get("weight")
        if v is None:
            f = _class_weight(get("priority"), weights, tid, pos)
        else:
            f = v if type(v) is float else number(v)
            if f is None or not (f > 0.0 and f <= heavy):
                raise _not_positive(v, tid, pos, "weight", MAX_WEIGHT, "MAX_WEIGHT")
        weight[pos] = f

        v = get("due")
        if v is None:
            raise _bad(tid, pos, "due", "missing")
        due[pos] = v if type(v) is float and low <= v <= big else _time(v, tid, pos, "due", dates)
        v = get("arrival")
        if v is not None:
            arrival[pos] = v if type(v) is float and low <= v <= big else _time(v, tid, pos, "arrival", dates)
        kinds[pos] = get("kind")
    return ids, est, weight, due, arrival, kinds, dates


def _id_key(tid, pos):
    """What an id that is neither an int nor a str is compared by: a str subclass
    stripped; a float if finite; anything else as it is."""
    if isinstance(tid, str):
        key = tid.strip()
        if not key:
            raise _bad(tid, pos, "id", "empty")
        return key
    if isinstance(tid, (bool, np.bool_)):  # JSON true is no id (and would equal the id 1)
        raise _bad(tid, pos, "id", f"must be a string or a number, got {type(tid).__name__}")
    if isinstance(tid, (float, np.floating)) and not math.isfinite(tid):
        raise _bad(tid, pos, "id", "not a finite number")
    return tid


def _id_error(tid, pos, first, ids):
    """Why a task's id is refused: missing, not hashable (``first`` None), or a duplicate
    of task ``first`` (``ids``: the ids read so far)."""
    if tid is None:
        return _bad(None, pos, "id", "missing")
    if first is None:
        return _bad(tid, pos, "id", f"must be a string or a number, got {type(tid).__name__}")
    if ids[first] == tid:
        return _bad(tid, pos, "id", f"duplicate id (also task #{first + 1})")
    return _bad(
        tid,
        pos,
        "id",
        f"duplicate id (task #{first + 1} is {shorten(ids[first])}; white space around ids is ignored)",
    )


def _not_positive(v, tid, pos, field, most, name):
    """The error for an estimate or weight ``v`` that is not a number in (0, ``most``]
    (``name``: that limit's name in sched.limits)."""
    f = number(v)
    if f is None:
        return _bad(tid, pos, field, f"not a number: {shorten(v)}")
    if f > most and not (isinstance(v, (float, np.floating)) and math.isinf(v)):  # ints are finite
        unit = " s" if name == "MAX_SECONDS" else ""
        return _bad(
            tid, pos, field, f"must be at most {most:g}{unit} (sched.limits.{name}), got {shorten(v)}"
        )
    return _bad(tid, pos, field, f"must be finite and > 0, got {shorten(v)}")


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


# --------------------------------------------------------------------------- times


def _time(v, tid, pos, field, dates):
    """A task's time field: seconds, or a datetime noted in ``dates``."""
    try:
        f = when(v)
    except ValueError as exc:
        raise _bad(tid, pos, field, str(exc)) from None
    if type(f) is not float:
        dates.append((f, tid, pos, field))
    return f


# --------------------------------------------------------------------------- duration model


def _duration_model(calibration):
    """A function estimating a task's duration from its kind and features.

    Needs ``sched.data.bench.calibration.predict_duration`` (issue 3) and a config
    that names a calibration; without them a task with no estimate is refused.
    """
    predict = None
    if calibration:
        try:
            from sched.data.bench.calibration import predict_duration as predict
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
        except (ValueError, ArithmeticError, KeyError, TypeError) as exc:  # exp() past a float
            raise _bad(
                tid, pos, "estimate_s", f"missing, and the duration model cannot estimate it: {exc}"
            ) from None
        return value

    return estimate
