"""``rank()``'s machines: when each GPU of a call is free, and how fast it is.

``machines`` is a count of GPUs free now; a spec (``"2x1.0,2x0.6"``) or a machines CSV, all
free now (:mod:`sched.data.machines`, the one parser of those forms); or a list with, per GPU,
its free time (a number or a datetime, on the call's clock: :mod:`sched.ranking.times`) or
``{"free_at", "speed"}``. At most ``MAX_MACHINES`` GPUs, counted before anything is allocated
for them (an iterator as it goes). A bad value is a :class:`~sched.data.machines.MachinesError`
naming the field, which :func:`sched.ranking.tasks.read_queue` raises as a ``RankInputError``.
"""

import math
import os

import numpy as np

from sched.config import shorten
from sched.data.machines import MachinesError, speeds
from sched.data.machines import speed as machine_speed
from sched.limits import MAX_MACHINES
from sched.ranking.times import number, when


def read(machines, dates):
    """Free times (floats or datetimes; -inf: free at any time) and speeds of the machines; a
    datetime met is noted in ``dates`` as ``(value, None, None, field)``.

    ``machines``: a count; a spec (``"2x1.0,2x0.6"``) or machines CSV, all free now
    (:mod:`sched.data.machines`); or per GPU its free time or ``{"free_at", "speed"}``.
    """
    f = number(machines)
    if f is not None:
        if f > MAX_MACHINES:
            raise _too_many_machines(f"{shorten(machines)} GPUs")
        if not (math.isfinite(f) and f == int(f) and f >= 1):
            raise MachinesError(f"machines: expected a whole count >= 1, got {shorten(machines)}")
        return [-math.inf] * int(f), np.ones(int(f))
    if isinstance(machines, (str, os.PathLike)):
        sp = speeds(machines, "machines")
        return [-math.inf] * len(sp), sp
    if isinstance(machines, (bytes, dict)) or not hasattr(machines, "__iter__"):
        raise MachinesError(
            "machines: expected a count of free GPUs, a spec like 2x1.0,2x0.6, or a list of the "
            f"times at which each becomes free, got {shorten(machines)}"
        )
    if hasattr(machines, "__len__") and len(machines) > MAX_MACHINES:
        raise _too_many_machines(f"a list of {len(machines)} free times")
    free, sp = [], []
    for m, v in enumerate(machines):
        if m == MAX_MACHINES:  # an iterator: counted as it goes
            raise _too_many_machines(f"more than {MAX_MACHINES} free times")
        t, v_m = _machine(m, v, dates)
        free.append(t)
        sp.append(v_m)
    if not free:
        raise MachinesError("machines: empty list (at least one GPU is needed)")
    return free, np.array(sp, dtype=np.float64)


def _machine(m, v, dates):
    """One item of a machines list: (free time, speed)."""
    speed_m, field = 1.0, f"machines[{m}]"
    if isinstance(v, dict):
        extra = sorted(str(k) for k in v if k not in ("free_at", "speed", "name"))
        if extra:
            raise MachinesError(f"{field}: unknown field {shorten(extra[0])} (expected free_at, speed)")
        speed_m = machine_speed(v.get("speed", 1.0), f"{field}.speed")
        if v.get("free_at") is None:
            return -math.inf, speed_m  # free now
        field += ".free_at"
        v = v["free_at"]
    try:
        t = when(v)
    except ValueError as exc:
        raise MachinesError(f"{field}: {exc}") from None
    if type(t) is not float:
        dates.append((t, None, None, field))
    return t, speed_m


def _too_many_machines(what):
    return MachinesError(
        f"machines: {what}, more than the limit of {MAX_MACHINES} GPUs (sched.limits.MAX_MACHINES)"
    )
