"""The history in time: the bulk of its span, and three periods (rolling-origin evaluation).

The last ``workload.test_days`` UTC days are held out (the test days); the
``workload.validation_days`` days just before them are the validation days; the fit reads
only the days before both (``sched.data.workload.workload_fit``). ``sched calibrate-workload``
records the three periods in the workload file (``split``): the studio's verdict is chosen
on the validation days (with generated validation scenarios) and confirmed on the held-out
days, each replayed as one stream (``sched.data.workload.replay.held_out_stream``).
docs/workload.md, "Held-out days".
"""

from datetime import UTC, datetime

import numpy as np

from sched.data.workload.history import HistoryError
from sched.limits import MIN_HISTORY_SPAN_S

#: Share of the records trimmed at each end of the span to find its bulk (at least one record).
BULK_TRIM = 0.001


def _iso(t):
    return datetime.fromtimestamp(float(t), UTC).isoformat(timespec="seconds")


DAY_S = 86400.0
#: Fewest days of history that hold days out: with fewer, the fit reads them all and the
#: studio setting (held-out days) is skipped.
MIN_SPLIT_DAYS = 14


def _day(t):
    """The UTC calendar day of a time, as an ISO date."""
    return datetime.fromtimestamp(float(t), UTC).date().isoformat()


def held_out_split(t0, t1, test_days, measured_days=None, validation_days=0):
    """The split of a history spanning [t0, t1] (s since 1970, UTC) in time: the last
    ``test_days`` UTC calendar days are held out (``workload.test_days``), and the
    ``validation_days`` before them are the validation days (``workload.validation_days``).

    Returns ``(cut, split)``: ``cut`` the first second the fit does not read (UTC midnight of
    the first validation day, else of the first held-out day; inf when nothing is held out)
    and ``split`` the workload file's ``split`` record (the fitted, validation and held-out
    first and last days, the history's days, and a ``note`` when it is too short to hold
    days out, or to keep validation days before the held-out ones: one line each). Raises
    HistoryError naming ``workload.test_days`` when it is
    longer than the history or leaves less than a week to fit.

    ``measured_days``: the days (``floor(t / DAY_S)``) holding a task with a measured
    duration, the only ones the held-out replay can judge a policy on. A held-out day
    without one (a studio closed on Sundays) is skipped by the replay, and the ``note``
    names it; when no held-out day has one, nothing is held out (the studio could not be
    judged): the fit reads every day and the ``note`` says why, as for a short history.
    """
    first, last = int(np.floor(t0 / DAY_S)), int(np.floor(t1 / DAY_S))
    days = last - first + 1
    span = [_day(first * DAY_S), _day(last * DAY_S)]
    if test_days >= days:
        raise HistoryError(
            f"workload.test_days: {test_days} days held out, but the history spans {days} days "
            f"({span[0]} to {span[1]}): nothing would be left to fit"
        )
    if days < MIN_SPLIT_DAYS:
        note = (
            f"the history spans {days} days ({span[0]} to {span[1]}), fewer than {MIN_SPLIT_DAYS}: "
            "no days held out (workload.test_days), the fit reads them all and the studio setting is skipped"
        )
        return np.inf, _nothing_held(days, test_days, span, note)
    cut_day = last - test_days + 1
    if (cut_day - first) * DAY_S < MIN_HISTORY_SPAN_S:
        raise HistoryError(
            f"workload.test_days: {test_days} of the history's {days} days held out leaves "
            f"{cut_day - first} days to fit, less than a week"
        )
    held = [_day(cut_day * DAY_S), span[1]]
    empty = [] if measured_days is None else [d for d in range(cut_day, last + 1) if d not in measured_days]
    if len(empty) == test_days:
        note = (
            f"the {test_days} held-out days ({held[0]} to {held[1]}) hold no task with a measured "
            "duration (started_at and finished_at), nothing to judge the studio on: no days held out "
            "(workload.test_days), the fit reads them all and the studio setting is skipped"
        )
        return np.inf, _nothing_held(days, test_days, span, note)
    notes = []
    if empty:
        notes.append(
            f"held-out day(s) {', '.join(_day(d * DAY_S) for d in empty)} hold no task with a measured "
            f"duration: sched replay --held-out skips them, {test_days - len(empty)} of the "
            f"{test_days} held-out days ({held[0]} to {held[1]}) judged"
        )
    val_day, validation = _validation(first, cut_day, validation_days, measured_days, notes)
    split = {
        "history_days": days,
        "test_days": test_days,
        "validation_days": validation_days,
        "fitted": [span[0], _day((val_day - 1) * DAY_S)],
        "validation": validation,
        "held_out": held,
        "held_out_start": _iso(cut_day * DAY_S),
        "note": "; ".join(notes) or None,
    }
    return val_day * DAY_S, split


def _validation(first, cut_day, validation_days, measured_days, notes):
    """(first day the fit does not read, the validation period [FIRST_DAY, LAST_DAY] or None):
    the ``validation_days`` before ``cut_day`` (the first held-out day), when a week is left to
    fit before them and one of them holds a measured task; else None, and ``notes`` says why."""
    if validation_days <= 0:
        return cut_day, None
    val_day = cut_day - validation_days
    week = int(MIN_HISTORY_SPAN_S // DAY_S)
    if val_day - first < week:
        notes.append(
            f"no validation days (workload.validation_days = {validation_days}): the {cut_day - first} days "
            f"before the held-out ones leave fewer than {week} to fit before them; the studio's verdict is "
            "chosen on generated validation scenarios alone"
        )
        return cut_day, None
    if measured_days is not None and not any(d in measured_days for d in range(val_day, cut_day)):
        notes.append(
            f"no validation days: the {validation_days} days before the held-out ones "
            f"({_day(val_day * DAY_S)} to {_day((cut_day - 1) * DAY_S)}) hold no task with a measured "
            "duration; the studio's verdict is chosen on generated validation scenarios alone"
        )
        return cut_day, None
    return val_day, [_day(val_day * DAY_S), _day((cut_day - 1) * DAY_S)]


def bulk_window(times):
    """(first, last, why) of the records kept by the fit, or None when every record is kept.

    The bulk of the span runs from the (k+1)-th earliest to the (k+1)-th latest submission,
    k = ``BULK_TRIM`` of the records (at least one); a record more than the bulk's own span
    before or after it (a typo dated 2099, say) is malformed: it would stretch the span and
    dilute every hourly rate.
    """
    n = len(times)
    if n < 4:
        return None
    k = max(1, int(np.ceil(BULK_TRIM * n)))
    part = np.partition(times, [k, n - 1 - k])
    lo, hi = float(part[k]), float(part[n - 1 - k])
    first, last = lo - (hi - lo), hi + (hi - lo)
    if times.min() >= first and times.max() <= last:
        return None
    why = (
        f"is far outside the bulk of the history's span ({_iso(lo)} to {_iso(hi)}): more than "
        "the bulk's own span beyond it"
    )
    return first, last, why


def duration_text(seconds):
    """A span in words: seconds, hours or days."""
    if seconds < 3600:
        return f"{seconds:.0f} s"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 86400:.1f} days"


def _nothing_held(days, test_days, span, note):
    """The split of a history that holds no day out (``note``: why)."""
    return {
        "history_days": days,
        "test_days": test_days,
        "fitted": span,
        "validation": None,
        "held_out": None,
        "note": note,
    }
