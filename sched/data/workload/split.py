"""The history in time: the bulk of its span, and the last ``workload.test_days`` UTC days
held out of the fit.

``sched calibrate-workload`` fits the days before them (``sched.data.workload.workload_fit``) and records
the split in the workload file (``split``); the studio setting is judged on the held-out days,
replayed as one stream (``sched.data.workload.replay.held_out_stream``). docs/workload.md, "Held-out days".
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


def held_out_split(t0, t1, test_days, measured_days=None):
    """The split of a history spanning [t0, t1] (s since 1970, UTC) in time: the last
    ``test_days`` UTC calendar days are held out (``workload.test_days``).

    Returns ``(cut, split)``: ``cut`` the first held-out second (UTC midnight; inf when
    nothing is held out) and ``split`` the workload file's ``split`` record (the fitted
    and held-out first and last days, the history's days, and a ``note`` when it is too
    short to hold out). Raises HistoryError naming ``workload.test_days`` when it is
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
    split = {
        "history_days": days,
        "test_days": test_days,
        "fitted": [span[0], _day((cut_day - 1) * DAY_S)],
        "held_out": held,
        "held_out_start": _iso(cut_day * DAY_S),
        "note": None,
    }
    if empty:
        split["note"] = (
            f"held-out day(s) {', '.join(_day(d * DAY_S) for d in empty)} hold no task with a measured "
            f"duration: sched replay --held-out skips them, {test_days - len(empty)} of the "
            f"{test_days} held-out days ({held[0]} to {held[1]}) judged"
        )
    return cut_day * DAY_S, split


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
    return {"history_days": days, "test_days": test_days, "fitted": span, "held_out": None, "note": note}
