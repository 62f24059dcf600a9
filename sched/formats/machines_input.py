"""The one parser of every form of a farm's GPUs, how many and how fast (``sched.data.machines``
holds what is computed from them; ``sched.config`` checks the config's machines with it).

A GPU of speed ``v`` runs a task of duration ``p`` (at speed 1) in ``p / v``
(uniform parallel machines, docs/model.md). The forms accepted wherever
machines are given (``scenario.machines`` and the robustness settings of the
config, ``--machines`` of ``sched simulate``, ``sched scenario`` and ``sched
rank``, ``rank(machines=...)``, the simulators' ``machines`` argument):

* a count ``M`` (a whole number, or its text ``"4"``): M GPUs of speed 1;
* a spec ``NxSPEED[,NxSPEED...]`` such as ``"2x1.0,2x0.6"``: N GPUs of each
  speed, in the order written (the ``x`` tells a spec from ``sched rank``'s
  comma-separated free times);
* the path of a machines CSV, header ``name,speed``, one GPU a row (a record is one line,
  ``sched.formats.csv_input``: an unbalanced quote is refused naming its line, never two GPUs merged
  into one; names compared without the white space around them);
* in Python, a sequence of speeds (numbers), one per GPU.

Refused with a :class:`MachinesError` naming the field: a count below 1, a
speed that is not a number within [MIN_SPEED, MAX_SPEED] (so <= 0, NaN and
infinities), an empty spec or item, more than ``MAX_MACHINES`` GPUs (checked
before anything is allocated).
"""

import math
import os

import numpy as np

from sched import files
from sched.errors import SchedError, shorten
from sched.formats import csv_input
from sched.limits import MAX_MACHINES, MAX_SPEED, MIN_SPEED

#: Bytes of a machines CSV (name,speed rows of a few dozen bytes each).
MAX_CSV_BYTES = 64 * (MAX_MACHINES + 1)


class MachinesError(SchedError):
    """A machines value (count, spec, CSV or list of speeds) is invalid."""


def speeds(value, field="machines"):
    """The speed of every GPU described by ``value`` (float64 array, at least one GPU)."""
    if isinstance(value, (bool, np.bool_)):
        raise MachinesError(f"{field}: expected a count, a spec like 2x1.0,2x0.6 or a CSV, got {value!r}")
    if isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer()):
        return np.ones(_count(value, field))
    if isinstance(value, os.PathLike):
        return _read_csv(os.fspath(value), field)
    if isinstance(value, str):
        return _from_text(value, field)
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) > MAX_MACHINES:
            raise _too_many(field, len(value))
        if len(value) == 0:
            raise MachinesError(f"{field}: empty list (at least one GPU is needed)")
        return np.array([speed(v, f"{field}[{i}]") for i, v in enumerate(value)], dtype=np.float64)
    raise MachinesError(
        f"{field}: expected a count, a spec like 2x1.0,2x0.6 or a CSV path, got {shorten(value)}"
    )


def is_spec(text):
    """True if ``text`` is a spec (it holds an ``x``), not a count or a list of times."""
    return isinstance(text, str) and "x" in text.lower() and not os.path.isfile(text)


def speed(v, field):
    """One GPU's speed: a finite number within [MIN_SPEED, MAX_SPEED]."""
    if isinstance(v, str):
        f = csv_input.number(v)  # ASCII only (not 1_000, not ١٢), as a scenario's numbers
        if f is None:
            raise MachinesError(f"{field}: speed is not a number: {shorten(v)}")
        v = f
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise MachinesError(f"{field}: speed is not a number: {shorten(v)}")
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        f = math.inf
    if not (math.isfinite(f) and MIN_SPEED <= f <= MAX_SPEED):
        raise MachinesError(
            f"{field}: speed must be a finite number from {MIN_SPEED:g} to {MAX_SPEED:g}, got {shorten(v)}"
        )
    return f


def _is_count(text):
    """True if ``text`` is a whole number in ASCII digits (``str.isdigit`` also accepts ``"²"``,
    which ``int()`` refuses)."""
    return text.isascii() and text.isdecimal()


def _count(v, field):
    if not (1 <= v <= MAX_MACHINES):
        if v > MAX_MACHINES:
            raise _too_many(field, v)
        raise MachinesError(f"{field}: expected a whole count >= 1, got {shorten(v)}")
    return int(v)


def _too_many(field, n):
    return MachinesError(
        f"{field}: {shorten(n)} GPUs, more than the limit of {MAX_MACHINES} (sched.limits.MAX_MACHINES)"
    )


def _from_text(text, field):
    t = text.strip()
    if not t:
        raise MachinesError(f"{field}: empty (expected a count, a spec like 2x1.0,2x0.6 or a CSV)")
    if _is_count(t):
        return np.ones(_count(int(t[:12]) if len(t) > 12 else int(t), field))
    if os.path.isfile(t) or t.lower().endswith(".csv"):
        return _read_csv(t, field)
    return _from_spec(t, field)


def _from_spec(text, field):
    """``NxSPEED[,NxSPEED...]``: the speeds, in the order written."""
    parts = []
    n_total = 0
    for i, item in enumerate(text.split(",")):
        item = item.strip()
        where = f"{field} item {i + 1} {shorten(item)}"
        if not item:
            raise MachinesError(f"{field}: empty item {i + 1} in {shorten(text)}")
        n, sep, v = item.lower().partition("x")
        n = n.strip()
        if not sep or not _is_count(n):
            raise MachinesError(f"{where}: expected NxSPEED, such as 2x0.6")
        count = int(n) if len(n) <= 12 else MAX_MACHINES + 1
        if count < 1:
            raise MachinesError(f"{where}: count must be >= 1")
        n_total += count
        if n_total > MAX_MACHINES:
            raise _too_many(field, f"{n_total}+")
        parts.append((count, speed(v, where)))
    return np.concatenate([np.full(n, v) for n, v in parts])


def _read_csv(path, field):
    """A machines CSV: header ``name,speed``, one GPU a row."""
    where = f"{field} {path}"
    try:
        text = files.read_text(path, MachinesError, MAX_CSV_BYTES)
    except MachinesError as exc:  # it names the file; add the field
        raise MachinesError(f"{field} {exc}") from None
    rows = []
    for line, row in csv_input.line_records(text):  # a record is one line; blank lines skipped
        if isinstance(row, csv_input.BadLine):
            raise MachinesError(f"{where} line {line}: {row}")
        rows.append((line, row))  # a row of empty cells is refused below, never skipped
    if not rows or [c.strip() for c in rows[0][1]] != ["name", "speed"]:
        raise MachinesError(
            f"{where}: expected the header name,speed, got {shorten(rows[0][1] if rows else '')}"
        )
    if len(rows) == 1:
        raise MachinesError(f"{where}: no GPU rows (at least one GPU is needed)")
    if len(rows) - 1 > MAX_MACHINES:
        raise _too_many(where, len(rows) - 1)
    seen, out = set(), []
    for line, row in rows[1:]:
        name = csv_input.normal_id(row[0])
        if len(row) != 2 or not name:
            raise MachinesError(f"{where} row {line}: expected a name and a speed, got {shorten(row)}")
        if name in seen:
            raise MachinesError(f"{where} row {line}: name {shorten(name)} repeated")
        seen.add(name)
        out.append(speed(row[1], f"{where} row {line}: speed"))
    return np.array(out, dtype=np.float64)
