"""``rank()``'s times: numbers or datetimes, read on one clock.

Times. ``due``, ``arrival``, ``now`` and busy machines' free times are either
numbers (seconds, all on one clock) or datetimes (``datetime`` objects or ISO
8601 text). Datetimes with a time zone are converted to POSIX seconds, and
numbers given alongside them are read as POSIX seconds too. Datetimes
without a time zone (naive) are read in UTC, never on the machine's local
clock: the same call gives the same plan whatever the machine's ``TZ``, and
a naive time has no daylight-saving gap or overlap (02:30 on a spring-forward
day is 02:30 UTC). They are accepted only when every time of the call is one;
mixed with numbers or with zoned datetimes they are refused (a naive time
next to zoned ones is most likely a local time, whose offset is unknown).
Without ``now``: the current time when datetimes are used (for naive ones,
the current UTC time), else 0 (numbers are then seconds relative to the
moment of the call).

Time of week. Every time is then seconds since the Unix epoch on its clock
(POSIX seconds, naive datetimes in UTC, bare numbers taken as epoch seconds:
0, without ``now``, is Thursday 1970-01-01 00:00 UTC), so a learned policy's
time of week at time ``t`` is ``(t + WEEK_START_S) mod one week``.

A function here raises ``TimeValueError`` (a ``SchedError``) with the reason;
:mod:`sched.ranking.tasks` turns it into a ``RankInputError`` naming the task and the field.
"""

import math
import time
from datetime import datetime

import numpy as np

from sched.config import shorten
from sched.data.workload.workload import EPOCH_WEEK_OFFSET_S
from sched.errors import SchedError
from sched.limits import MAX_SECONDS

NUMBER = (int, float, np.integer, np.floating)
#: The week start a learned policy is given for rank()'s clock: the seconds from Monday 00:00 UTC
#: to the epoch, a Thursday.
WEEK_START_S = EPOCH_WEEK_OFFSET_S
NAIVE_EPOCH = datetime(1970, 1, 1)


class TimeValueError(SchedError):
    """A time value that is not finite seconds within range, nor a readable datetime."""


def where(task_id, pos):
    """How an error names a task: its id (cut short), else its position."""
    return f"task {shorten(task_id)}" if task_id is not None else f"task #{pos + 1} (no id)"


def number(v):
    """v as a float if it is a number (not a bool), else None."""
    t = type(v)
    if t is float:
        return v
    if t is int and -(2**53) <= v <= 2**53:
        return float(v)
    if isinstance(v, NUMBER) and not isinstance(v, (bool, np.bool_)):
        try:
            return float(v)
        except OverflowError:  # an int beyond any float
            return math.inf if v > 0 else -math.inf
    return None


def when(v):
    """A time value: a float (seconds) or a datetime. Raises TimeValueError with the reason."""
    f = number(v)
    if f is not None:
        if not math.isfinite(f) and isinstance(v, (float, np.floating)):  # ints are finite
            raise TimeValueError(f"not finite: {shorten(v)}")
        if not -MAX_SECONDS <= f <= MAX_SECONDS:
            raise TimeValueError(
                f"must be within {MAX_SECONDS:g} s of 0 (sched.limits.MAX_SECONDS), got {shorten(v)}"
            )
        return f
    if isinstance(v, datetime):
        if v != v:  # NaT
            raise TimeValueError(f"not a date: {shorten(v)}")
        return v
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.strip())
        except ValueError:
            raise TimeValueError(
                f"unparsable date {shorten(v)} (expected ISO 8601, e.g. 2026-05-09T14:30:00+02:00)"
            ) from None
    raise TimeValueError(f"expected seconds or an ISO 8601 datetime, got {type(v).__name__} {shorten(v)}")


def clock_of(dates, now, free, due, arrival):
    """'aware' (POSIX seconds) or 'naive' (UTC without an offset), and the time zone to show."""
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
    raise TimeValueError(
        f"{_label(d)}: date {d[0].isoformat()} has no time zone and cannot be "
        f"mixed with {mixed}; add a time zone, e.g. +00:00"
    )


def _label(d):
    value, tid, pos, field = d
    return f"{where(tid, pos)}: field {field}" if pos is not None else field


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


def to_seconds(clock, due, arrival, free, now):
    """The datetimes among the times as seconds on ``clock`` ("aware" or "naive")."""
    conv = seconds_naive if clock == "naive" else seconds_aware
    due = [conv(x) if type(x) is not float else x for x in due]
    arrival = [conv(x) if x is not None and type(x) is not float else x for x in arrival]
    free = [conv(x) if type(x) is not float else x for x in free]
    if now is not None and type(now) is not float:
        now = conv(now)
    return due, arrival, free, now


def seconds_aware(d):
    return d.timestamp()


def seconds_naive(d):
    """A naive datetime read in UTC: POSIX seconds (no local clock, no daylight saving)."""
    return (d - NAIVE_EPOCH).total_seconds()


def now_naive():
    """The current time on the naive clock: UTC, whatever the machine's time zone."""
    return time.time()
