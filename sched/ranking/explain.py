"""``rank(..., explain=True)``: the plan as a table, and as JSON-ready records.

One row per task, in start order: its planned machine, start and end,
lateness (end - due) and tardiness, the policy used (and ATC's k) and why it
was chosen (``why``: which benchmark verdict, for which GPUs); with
datetime input, also the start and end as datetimes in the input's time zone.
"""

import math
from datetime import UTC, datetime

import numpy as np

from sched.data.objective import tardiness
from sched.sim import rules

EXPLAIN_COLUMNS = ("id", "machine", "start_s", "end_s", "lateness_s", "tardiness_s", "policy", "atc_k", "why")


def explain_frame(q, choice, order, start, end, mach):
    """The plan as a table, in start order.

    ``q``: the :class:`~sched.ranking.tasks.Queue`; ``plan``: the policy run (name, rule id, k);
    ``order``: the rows in start order; ``start``, ``end``, ``mach``: in row order.
    """
    import pandas as pd

    order = np.asarray(order, np.int64)
    s, e = np.asarray(start, np.float64)[order], np.asarray(end, np.float64)[order]
    late = e - q.due[order]
    frame = pd.DataFrame(
        {
            "id": pd.Series([q.ids[i] for i in order.tolist()], dtype=object),
            "machine": np.asarray(mach, np.int64)[order],
            "start_s": s,
            "end_s": e,
            "lateness_s": late,
            "tardiness_s": tardiness(e, q.due[order]),
            "policy": choice.name,
            "atc_k": choice.k if choice.rule == rules.ATC else np.nan,
            "why": choice.why,
        },
        columns=list(EXPLAIN_COLUMNS),
    )
    if q.clock == "aware":
        frame["start_at"] = _datetimes(s, True).tz_convert(q.tz or UTC)
        frame["end_at"] = _datetimes(e, True).tz_convert(q.tz or UTC)
    elif q.clock == "naive":  # naive in, naive out: UTC without an offset
        frame["start_at"] = _datetimes(s, False)
        frame["end_at"] = _datetimes(e, False)
    return frame


def _datetimes(seconds, utc):
    """POSIX ``seconds`` as datetimes: nanosecond ones where they reach (1677 to 2262), else
    microsecond ones, which reach every time a call on a datetime clock accepts (years 1 to
    9999: sched.limits.DATETIME_FIRST_S and DATETIME_END_S)."""
    import pandas as pd

    try:
        return pd.to_datetime(seconds, unit="s", utc=utc)
    except pd.errors.OutOfBoundsDatetime:
        micro = np.round(np.asarray(seconds, np.float64) * 1e6).astype(np.int64)
        return pd.to_datetime(micro, unit="us", utc=utc)


def explain_records(frame):
    """The explain table as JSON-ready dicts (datetimes in ISO 8601, NaN as null)."""
    out = []
    for row in frame.to_dict("records"):
        rec = {}
        for k, v in row.items():
            if isinstance(v, datetime):
                v = v.isoformat()
            elif isinstance(v, (float, np.floating)) and not math.isfinite(v):
                v = None
            elif isinstance(v, np.generic):
                v = v.item()
            rec[k] = v
        out.append(rec)
    return out
