"""The GPUs of a farm, how many and how fast: their capacity and their text in reports.

The forms a farm is given in (a count, a spec ``NxSPEED,...``, a machines CSV, a list of speeds)
and their one parser, :func:`speeds`: ``sched.formats.machines_input``.
"""

import numpy as np

from sched.formats.machines_input import MAX_CSV_BYTES, MachinesError, is_spec, speed, speeds  # noqa: F401


def total(value, field="machines"):
    """Sum of the speeds: the farm's capacity in speed-1 GPUs (the load's denominator)."""
    return float(speeds(value, field).sum())


def describe(sp):
    """Short text for reports: ``4 identical GPUs`` or ``2x1,2x0.6`` (runs of equal speeds)."""
    sp = np.asarray(sp, dtype=np.float64)
    if np.all(sp == 1.0):
        return f"{len(sp)} identical GPU{'s' if len(sp) > 1 else ''}"
    return spec_of(sp)


def spec_of(sp):
    """The spec string of speeds ``sp`` (runs of equal speeds in order): ``speeds(spec_of(s)) == s``."""
    runs = []
    for v in np.asarray(sp, dtype=np.float64).tolist():
        if runs and runs[-1][1] == v:
            runs[-1][0] += 1
        else:
            runs.append([1, v])
    return ",".join(f"{n}x{v!r}" for n, v in runs)
