"""Reading GPU bench logs: one record per measured render, CSV or JSON Lines.

Malformed records (a missing field, a value that is not a number in ASCII, NaN, a
duration <= 0, a line that is not JSON or not a JSON object, a row with the
wrong number of fields, a CSV line that is no record: an unbalanced quote, a NUL)
are skipped, counted and kept with their line numbers in a :class:`BenchLog`; a
record is one physical line (``sched.formats.csv_input``), so a stray quote spoils its
own line only. A file that cannot be read, an empty file and a file
with more than ``calibration.max_bad_share`` malformed records raise
:class:`CalibrationError`, and so do a folder, a pipe and a CSV header naming
a column twice. A number above ``sched.limits.MAX_SECONDS`` (a duration or a
feature) makes its record malformed. The checks that need every file (kinds,
counts) are :func:`sched.data.bench.fit.calibrate`'s.
"""

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sched import files
from sched.errors import SchedError
from sched.formats import csv_input, json_input
from sched.limits import MAX_SECONDS

SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".json-lines": "jsonl"}
FIELDS = ("kind", "duration_s", "width", "height", "frames", "steps")
SHOWN = 5  # malformed records listed by line in messages


class CalibrationError(SchedError):
    """Bench logs cannot be calibrated; the message names the file, line and field."""


@dataclass
class BenchLog:
    """One bench file after parsing: its valid records and what was skipped."""

    path: Path
    format: str
    sha256: str
    records: list = field(default_factory=list)  # valid records (dicts)
    bad: list = field(default_factory=list)  # (line, reason)
    bad_kinds: dict = field(default_factory=dict)  # kind -> malformed records naming it
    ignored: int = 0  # records of kinds not calibrated
    total: int = 0

    def bad_summary(self):
        """The first SHOWN malformed records with their reasons, then the lines of the others:
        every skipped record is named by its line."""
        shown = "; ".join(f"line {line}: {why}" for line, why in self.bad[:SHOWN])
        rest = [line for line, _ in self.bad[SHOWN:]]
        more = f"; and {len(rest)} more (lines {line_ranges(rest)})" if rest else ""
        return f"{shown}{more}"


def line_ranges(lines):
    """Line numbers (ascending) in short: ``5, 7-9, 12``."""
    runs = []
    for n in lines:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


class _Bad(Exception):
    pass


def _number(value, name):
    if value is None or (isinstance(value, str) and value.strip() == ""):
        raise _Bad(f"{name}: missing value")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _Bad(f"{name}: {value!r} is not a number")
    # text in ASCII only (sched.formats.csv_input.number): float() alone takes 1_000 and Arabic digits
    try:
        x = csv_input.number(value) if isinstance(value, str) else float(value)
    except OverflowError:  # a JSON integer beyond any float
        x = math.inf
    if x is None:
        raise _Bad(f"{name}: {value!r} is not a number")
    if math.isnan(x):
        raise _Bad(f"{name}: NaN")
    if not math.isfinite(x):
        raise _Bad(f"{name}: {value!r} is not finite")
    if x <= 0:
        raise _Bad(f"{name}: must be > 0, got {value!r}")
    if x > MAX_SECONDS:  # a mean or a likelihood over such values is no longer finite
        raise _Bad(f"{name}: {value!r} is out of range (<= {MAX_SECONDS:g})")
    return x


def _parse_record(raw, columns):
    """A valid record from a raw {name: value} mapping, or raise _Bad."""
    kcol, dcol = columns["kind"], columns["duration_s"]
    if kcol not in raw:
        raise _Bad(f"{kcol}: missing field")
    kind = raw[kcol]
    if kind is None or (isinstance(kind, str) and kind.strip() == ""):
        raise _Bad(f"{kcol}: missing value")
    if not isinstance(kind, str):
        raise _Bad(f"{kcol}: {kind!r} is not text")
    kind = kind.strip()
    if dcol not in raw:
        raise _Bad(f"{dcol}: missing field", kind)
    try:
        rec = {"kind": kind, "duration_s": _number(raw[dcol], dcol)}
        for f in ("width", "height", "frames", "steps"):
            v = raw.get(columns[f])
            # an absent feature is allowed (the model leaves it out); a present one must be valid
            absent = v is None or (isinstance(v, str) and v.strip() == "")
            rec[f] = np.nan if absent else _number(v, columns[f])
    except _Bad as exc:
        raise _Bad(exc.args[0], kind) from None
    names = {columns[f] for f in FIELDS}
    for k, v in raw.items():
        if k not in names and k not in rec:
            rec[k] = v
    return rec


def _raw_records(text, fmt, path, columns):
    """Yield (line, raw mapping or _Bad) for every record of a file's text."""
    if fmt == "csv":
        # a record is one physical line (sched.formats.csv_input): a stray quote spoils its line only
        records = csv_input.line_records(text)
        line, header = next(records, (0, None))
        if header is None:
            return
        if isinstance(header, csv_input.BadLine):
            raise CalibrationError(f"{path}: line {line}: the header: {header}")
        header = [h.strip() for h in header]
        files.check_header(header, path, line, CalibrationError)
        for f in ("kind", "duration_s"):
            if columns[f] not in header:
                raise CalibrationError(
                    f"{path}: no column {columns[f]!r} (columns: {', '.join(header)}); "
                    f"name the {f} column in calibration.columns.{f}"
                )
        for line, row in records:
            if isinstance(row, csv_input.BadLine):
                yield line, _Bad(str(row))
            elif len(row) != len(header):
                yield line, _Bad(f"{len(row)} fields, the header has {len(header)}")
            else:
                yield line, dict(zip(header, row))
    else:
        for line, s in enumerate(csv_input.physical_lines(text), start=1):
            if csv_input.is_blank(s):
                continue
            try:
                obj = json.loads(s, object_pairs_hook=json_input.unique_object)
            except json.JSONDecodeError as exc:
                yield line, _Bad(f"not valid JSON ({exc.msg})")
                continue
            except ValueError as exc:  # a key given twice (sched.formats.json_input)
                yield line, _Bad(f"not valid JSON ({exc})")
                continue
            if not isinstance(obj, dict):
                yield line, _Bad(f"not a JSON object (a {type(obj).__name__})")
                continue
            yield line, obj


def _read_file(path):
    """(format, bytes, text) of a bench file, or CalibrationError naming the file."""
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise CalibrationError(
            f"{path}: unknown bench log format {path.suffix or '(no extension)'!r}; "
            f"expected {', '.join(SUFFIXES)} (CSV or JSON Lines)"
        )
    data = files.read_bytes(path, CalibrationError)  # a folder, a pipe, an unreadable file: refused
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CalibrationError(f"{path}: not UTF-8 text ({exc})") from None
    return fmt, data, text


def read_bench(path, options):
    """Parse one bench file under the ``calibration`` config section ``options``."""
    path = Path(path)
    fmt, data, text = _read_file(path)
    log = BenchLog(path, fmt, hashlib.sha256(data).hexdigest())
    columns, wanted = options["columns"], options.get("kinds")
    for line, raw in _raw_records(text, fmt, path, columns):
        log.total += 1
        try:
            if isinstance(raw, _Bad):
                raise raw
            rec = _parse_record(raw, columns)
        except _Bad as exc:
            log.bad.append((line, exc.args[0]))
            if len(exc.args) > 1:
                log.bad_kinds[exc.args[1]] = log.bad_kinds.get(exc.args[1], 0) + 1
            continue
        if wanted is not None and rec["kind"] not in wanted:
            log.ignored += 1
            continue
        rec["source"], rec["line"] = str(path), line
        log.records.append(rec)
    if log.total == 0:
        raise CalibrationError(f"{path}: empty file (no bench record)")
    share = len(log.bad) / log.total
    if share > options["max_bad_share"]:
        raise CalibrationError(
            f"{path}: {len(log.bad)} of {log.total} records are malformed ({share:.1%}), more "
            f"than calibration.max_bad_share ({options['max_bad_share']:.1%}): {log.bad_summary()}"
        )
    return log
