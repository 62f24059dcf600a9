"""Reading a queue history: one record per submitted task, CSV or JSON Lines, streamed.

A history file is read in chunks of ``CHUNK`` records (gzip-compressed files,
``.csv.gz`` or ``.jsonl.gz``, are decompressed on the fly), so a history of
millions of tasks is read in bounded memory: :func:`read_history` yields one
:class:`HistoryChunk` of valid records at a time, and
:class:`HistoryStats` counts what was skipped.

Fields (docs/workload.md): ``id``, ``kind``, ``submitted_at`` (ISO 8601,
UTC when no offset is given, or seconds since 1970-01-01 UTC), ``priority``
(a class of ``scenario.priorities``) or ``weight`` (a number > 0; it wins when
both are given), ``due`` (a time as ``submitted_at``; empty or absent: no
deadline), and optionally ``started_at``, ``finished_at``, ``gpu`` and the
duration model's features ``width``, ``height``, ``frames``, ``steps``.

A malformed record (a missing id, kind or submission time, a time or number
that cannot be read, an unknown priority class, a due date or a finish
before the submission or the start, a feature <= 0, a kind the calibration
does not know, a line that is not a JSON object, a CSV row with the wrong
number of fields) is skipped, counted and reported as ``sched calibrate``
does it (:class:`sched.data.bench_logs.BenchLog`'s conventions: the first
``SHOWN`` line numbers with their reasons); a file with more than
``max_bad_share`` malformed records raises :class:`HistoryError` naming the
file and the first bad lines, after the whole file has been read.
"""

import csv
import gzip
import hashlib
import io
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sched.config import shorten
from sched.data.bench_logs import SHOWN
from sched.errors import SchedError
from sched.limits import MAX_SECONDS, MAX_WEIGHT

SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".json-lines": "jsonl"}
CHUNK = 100_000
FEATURES = ("width", "height", "frames", "steps")
TIMES = ("submitted_at", "due", "started_at", "finished_at")
_EPOCH = pd.Timestamp(0, tz="UTC")


class HistoryError(SchedError):
    """A queue history cannot be read; the message names the file, line and field."""


@dataclass
class HistoryStats:
    """What reading one history file skipped and kept (BenchLog's conventions)."""

    path: Path
    format: str
    sha256: str = ""
    total: int = 0
    valid: int = 0
    bad: list = field(default_factory=list)  # the first SHOWN (line, reason)
    bad_count: int = 0

    def add_bad(self, line, why):
        self.bad_count += 1
        if len(self.bad) < SHOWN:
            self.bad.append((int(line), why))

    def bad_summary(self):
        shown = "; ".join(f"line {line}: {why}" for line, why in self.bad)
        more = f"; and {self.bad_count - len(self.bad)} more" if self.bad_count > len(self.bad) else ""
        return f"{shown}{more}"


@dataclass
class HistoryChunk:
    """Valid records of one chunk, as arrays (times in seconds since 1970-01-01 UTC; NaN: absent)."""

    line: np.ndarray
    id: np.ndarray
    kind: np.ndarray
    submitted: np.ndarray
    weight: np.ndarray
    due: np.ndarray
    started: np.ndarray
    finished: np.ndarray
    features: dict  # FEATURES -> float arrays (NaN: absent)

    def __len__(self):
        return len(self.line)


def history_format(path):
    """'csv' or 'jsonl' from the file name (a trailing .gz allowed), or HistoryError."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    fmt = SUFFIXES.get(suffixes[-1] if suffixes else "")
    if fmt is None:
        raise HistoryError(
            f"{path}: unknown history format {''.join(path.suffixes) or '(no extension)'!r}; "
            f"expected {', '.join(SUFFIXES)} (CSV or JSON Lines), optionally .gz"
        )
    return fmt


class _Hashing(io.RawIOBase):
    """A binary reader that hashes what passes through it (the file's SHA-256, in one pass)."""

    def __init__(self, fh):
        self.fh, self.sha = fh, hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, b):
        data = self.fh.read(len(b))
        self.sha.update(data)
        b[: len(data)] = data
        return len(data)


def _open(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise HistoryError(f"{path}: file not found") from None
    except OSError as exc:
        raise HistoryError(f"{path}: cannot read: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise HistoryError(f"{path}: is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise HistoryError(f"{path}: not a regular file (a pipe or a device?)")
    try:
        raw = open(path, "rb")  # noqa: SIM115 (closed by read_history)
    except PermissionError:
        raise HistoryError(f"{path}: cannot read (permission denied)") from None
    hashing = _Hashing(raw)
    binary = io.BufferedReader(hashing, 1 << 20)
    if str(path).lower().endswith(".gz"):
        binary = gzip.GzipFile(fileobj=binary)
    return raw, hashing, io.TextIOWrapper(binary, encoding="utf-8-sig", newline="")


def _csv_chunks(text, path, stats, size):
    """(lines, frame of str, list of (line, reason)) per chunk of a CSV file."""
    reader = csv.reader(text)
    header = next(reader, None)
    if header is None:
        return
    header = [h.strip() for h in header]
    from sched.files import check_header

    check_header(header, path, reader.line_num, HistoryError)
    for name in ("id", "kind", "submitted_at"):
        if name not in header:
            raise HistoryError(f"{path}: no column {name!r} (columns: {shorten(', '.join(header), 80)})")
    if "priority" not in header and "weight" not in header:
        raise HistoryError(f"{path}: no column 'priority' or 'weight' (one of them is required)")
    width = len(header)
    rows, lines, bad = [], [], []
    for row in reader:
        if not row:
            continue
        stats.total += 1
        if len(row) != width:
            bad.append((reader.line_num, f"{len(row)} fields, the header has {width}"))
        else:
            rows.append(row)
            lines.append(reader.line_num)
        if len(rows) + len(bad) >= size:
            yield np.array(lines), pd.DataFrame(rows, columns=header, dtype=object), bad
            rows, lines, bad = [], [], []
    if rows or bad:
        yield np.array(lines, dtype=np.int64), pd.DataFrame(rows, columns=header, dtype=object), bad


def _jsonl_chunks(text, path, stats, size):
    rows, lines, bad = [], [], []
    for line, s in enumerate(text, start=1):
        if not s.strip():
            continue
        stats.total += 1
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as exc:
            bad.append((line, f"not valid JSON ({exc.msg})"))
        except RecursionError:
            bad.append((line, "nested too deeply"))
        else:
            if isinstance(obj, dict):
                rows.append(obj)
                lines.append(line)
            else:
                bad.append((line, f"not a JSON object (a {type(obj).__name__})"))
        if len(rows) + len(bad) >= size:
            yield np.array(lines, dtype=np.int64), pd.DataFrame(rows, dtype=object), bad
            rows, lines, bad = [], [], []
    if rows or bad:
        yield np.array(lines, dtype=np.int64), pd.DataFrame(rows, dtype=object), bad


def _empty(col):
    text = col.astype(str).str.strip()
    return col.isna().to_numpy() | (text == "").to_numpy() | (text == "None").to_numpy()


def _as_text(col):
    # JSON may hold a number where text is expected: a nested value is refused
    return col.map(lambda v: v if isinstance(v, str) else (str(v) if isinstance(v, (int, float)) else None))


def parse_times(col):
    """(seconds since 1970-01-01 UTC, NaN where empty; mask of values that are not a time)."""
    empty = _empty(col)
    kinds = col.map(lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool)).to_numpy()
    num = pd.to_numeric(col.where(kinds), errors="coerce").to_numpy(dtype=np.float64, copy=True)
    need = np.isnan(num) & ~empty & kinds
    if need.any():
        text = col[need].astype(str).str.strip()
        stamps = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        num[need] = ((stamps - _EPOCH).dt.total_seconds()).to_numpy(dtype=np.float64)
    num[empty] = np.nan
    bad = ~empty & ~(np.abs(num) <= MAX_SECONDS)  # NaN and out of range alike
    return num, bad


def _numbers(col):
    kinds = col.map(lambda v: isinstance(v, (str, int, float)) and not isinstance(v, bool)).to_numpy()
    return pd.to_numeric(col.where(kinds), errors="coerce").to_numpy(dtype=np.float64, copy=True)


def _parse(frame, lines, priorities, kinds):
    """(HistoryChunk of the valid rows, list of (line, reason) of the others)."""
    n = len(frame)
    reason = np.full(n, None, dtype=object)

    def flag(mask, why):
        mask = np.asarray(mask) & (reason == None)  # noqa: E711 (element-wise)
        if mask.any():
            reason[mask] = [why(i) for i in np.flatnonzero(mask)] if callable(why) else why

    def column(name):
        return frame[name] if name in frame.columns else pd.Series([None] * n, dtype=object)

    ids, kind = _as_text(column("id")), _as_text(column("kind"))
    flag(_empty(column("id")) | ids.isna().to_numpy(), "id: missing value")
    flag(_empty(column("kind")) | kind.isna().to_numpy(), "kind: missing value")
    kind = kind.fillna("").str.strip()
    if kinds is not None:
        flag(~kind.isin(kinds).to_numpy(), lambda i: f"kind: {shorten(kind.iloc[i])} is not in the calibration")
    times = {}
    for name in TIMES:
        values, bad = parse_times(column(name))
        if name == "submitted_at":
            flag(np.isnan(values) & ~bad, "submitted_at: missing value")
        flag(bad, lambda i, name=name: f"{name}: {shorten(column(name).iloc[i])} is not a time")
        times[name] = values
    w = _numbers(column("weight"))
    w_given = ~_empty(column("weight"))
    flag(w_given & ~((w > 0) & (w <= MAX_WEIGHT)), lambda i: f"weight: {shorten(column('weight').iloc[i])} "
         f"is not a number in (0, {MAX_WEIGHT:g}]")
    prio = _as_text(column("priority")).fillna("").str.strip()
    mapped = prio.map({k: float(v["weight"]) for k, v in priorities.items()}).to_numpy(dtype=np.float64)
    need = ~w_given
    flag(need & (prio == "").to_numpy(), "priority: missing value (and no weight)")
    flag(need & np.isnan(mapped), lambda i: f"priority: {shorten(prio.iloc[i])} is not a class of "
         "scenario.priorities")
    weight = np.where(w_given, w, mapped)
    sub, due, st, fin = (times[k] for k in TIMES)
    flag(due < sub, "due: before submitted_at")
    flag(st < sub, "started_at: before submitted_at")
    flag(fin <= st, "finished_at: not after started_at")
    feats = {}
    for name in FEATURES:
        v = _numbers(column(name))
        given = ~_empty(column(name))
        flag(given & ~((v > 0) & (v <= MAX_SECONDS)), lambda i, name=name: f"{name}: "
             f"{shorten(column(name).iloc[i])} is not a number > 0")
        feats[name] = np.where(given, v, np.nan)
    ok = reason == None  # noqa: E711
    bad = [(int(lines[i]), reason[i]) for i in np.flatnonzero(~ok)]
    chunk = HistoryChunk(
        line=lines[ok],
        id=ids[ok].to_numpy(dtype=object),
        kind=kind[ok].to_numpy(dtype=object),
        submitted=sub[ok],
        weight=weight[ok],
        due=due[ok],
        started=st[ok],
        finished=fin[ok],
        features={k: v[ok] for k, v in feats.items()},
    )
    return chunk, bad


def read_history(path, priorities, max_bad_share, kinds=None, stats=None, chunk_size=CHUNK):
    """Yield :class:`HistoryChunk` of valid records of one history file, in file order.

    ``priorities``: the config's ``scenario.priorities`` (class -> weight);
    ``kinds``: the kinds a record may have (None: any). ``stats`` (a
    :class:`HistoryStats`, filled in place) counts the records; once the file
    is read, an empty file or more than ``max_bad_share`` malformed records
    raise :class:`HistoryError`.
    """
    path = Path(path)
    fmt = history_format(path)
    stats = stats if stats is not None else HistoryStats(path, fmt)
    raw, hashing, text = _open(path)
    chunks = _csv_chunks if fmt == "csv" else _jsonl_chunks
    try:
        for lines, frame, bad in chunks(text, path, stats, chunk_size):
            for line, why in bad:
                stats.add_bad(line, why)
            if len(frame):
                chunk, bad = _parse(frame, lines, priorities, kinds)
                for line, why in bad:
                    stats.add_bad(line, why)
                stats.valid += len(chunk)
                if len(chunk):
                    yield chunk
    except UnicodeDecodeError as exc:
        raise HistoryError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise HistoryError(f"{path}: cannot read: {shorten(str(exc), 80)}") from None
    except csv.Error as exc:
        raise HistoryError(f"{path}: not a readable CSV file ({exc})") from None
    finally:
        raw.close()
    stats.sha256 = hashing.sha.hexdigest()
    if stats.total == 0:
        raise HistoryError(f"{path}: empty file (no task record)")
    share = stats.bad_count / stats.total
    if share > max_bad_share:
        raise HistoryError(
            f"{path}: {stats.bad_count} of {stats.total} records are malformed ({share:.1%}), more "
            f"than workload.max_bad_share ({max_bad_share:.1%}): {stats.bad_summary()}"
        )
