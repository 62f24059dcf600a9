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
duration model's features ``width``, ``height``, ``frames``, ``steps`` (``frames``, a job's
frames, a whole number from 1 to ``MAX_FRAMES``: the frames fit reads it, ``sched.data.frames_fit``).

A malformed record (a missing id, kind or submission time, a time or number
that cannot be read, an unknown priority class, a due date or a finish
before the submission or the start, a feature <= 0, a kind the calibration
does not know, a line that is not a JSON object, a CSV row with the wrong
number of fields) is skipped, counted and reported as ``sched calibrate``
does it (:class:`sched.data.bench.bench_logs.BenchLog`'s conventions: the first
``SHOWN`` line numbers with their reasons); a file with more than
``max_bad_share`` malformed records raises :class:`HistoryError` naming the
file and the first bad lines, after the whole file has been read.
"""

import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sched.config import shorten
from sched.data.bench.bench_logs import SHOWN
from sched.data.workload.history_io import (
    BAD,
    LONG,
    MAX_DIGITS,
    HistoryError,
    csv_chunks,
    history_lines,
    jsonl_chunks,
    open_history,
)
from sched.formats.csv_input import normal_id
from sched.limits import HISTORY_END_TIME, HISTORY_FIRST_TIME, MAX_FRAMES, MAX_SECONDS, MAX_WEIGHT

SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".json-lines": "jsonl"}
CHUNK = 100_000
FEATURES = ("width", "height", "frames", "steps")
TIMES = ("submitted_at", "due", "started_at", "finished_at")
_SECOND = np.timedelta64(1, "s")


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

    def rows(self, mask):
        """The records where ``mask`` is true, as a chunk."""
        return HistoryChunk(
            *(
                getattr(self, f)[mask]
                for f in ("line", "id", "kind", "submitted", "weight", "due", "started", "finished")
            ),
            features={k: v[mask] for k, v in self.features.items()},
        )


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


def _strip(col):
    """Text stripped of surrounding spaces, for low-cardinality columns (kind, priority): each
    distinct value is stripped once."""
    codes, uniques = pd.factorize(col)
    return pd.Series(
        np.asarray([u.strip() for u in uniques], dtype=object)[codes] if len(uniques) else col,
        index=col.index,
        dtype=object,
    )


def _shown(value):
    if value == BAD:
        return "a JSON list, object or boolean"
    if value == LONG:
        return f"a number of more than {MAX_DIGITS} digits"
    return shorten(value)


def _empty(col):
    return col.to_numpy(dtype=object) == ""


def parse_times(col):
    """(seconds since 1970-01-01 UTC, NaN where empty; mask of values that are not a time).

    ``col``: text. A number is seconds since the epoch; anything else is read as ISO 8601
    (UTC when it gives no offset). A time before ``HISTORY_FIRST_TIME`` (1970-01-01) or from
    ``HISTORY_END_TIME`` (2262-01-01) on is not a time of a history (see :func:`time_range`).
    """
    empty = _empty(col)
    num = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, copy=True)
    need = ~empty & np.isnan(num)
    if need.any():
        stamps = pd.to_datetime(col[need], format="ISO8601", utc=True, errors="coerce")
        # seconds in the stamps' own unit: never through nanoseconds (which end in 2262)
        naive = stamps.dt.tz_localize(None).to_numpy()
        num[need] = (naive - np.datetime64(0, "s")) / _SECOND
    num[empty] = np.nan
    bad = ~empty & ~((num >= HISTORY_FIRST_TIME) & (num < HISTORY_END_TIME))  # NaN and out of range
    return num, bad


def time_range():
    """The documented range of a history's times, in words."""
    return "a time from 1970-01-01 to 2261-12-31 UTC"


def _numbers(col):
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, copy=True)


class _Checks:
    """The first reason each row of a chunk's frame is malformed for (None: valid so far), flagged
    check by check in the order the contract lists the fields: a row keeps its first reason."""

    def __init__(self, frame):
        self.frame, self.n = frame, len(frame)
        self.reason = np.full(self.n, None, dtype=object)

    def flag(self, mask, why):
        """``why`` (a text, or a function of the row) for the rows of ``mask`` not flagged yet."""
        reason = self.reason
        mask = np.asarray(mask) & (reason == None)  # noqa: E711 (element-wise)
        if mask.any():
            reason[mask] = [why(i) for i in np.flatnonzero(mask)] if callable(why) else why

    def column(self, name):
        """The field ``name`` (empty text in every row where the chunk has no such field)."""
        frame = self.frame
        return frame[name] if name in frame.columns else pd.Series([""] * self.n, dtype=object)

    def text(self, name):
        """The field ``name``, a row whose value is not text flagged."""
        col = self.column(name)
        self.flag(col.to_numpy(dtype=object) == BAD, f"{name}: not text")
        return col


def _parse(frame, lines, priorities, kinds, window=None):
    """(HistoryChunk of the valid rows, list of (line, reason) of the others).

    ``window``: None, or (first, last, why): a record submitted before ``first`` or after
    ``last`` is malformed, for ``why`` (the fit's records far outside the bulk of the span).
    """
    c = _Checks(frame)
    for name in frame.columns:  # a JSON integer too long to convert, in any field
        c.flag(frame[name].to_numpy(dtype=object) == LONG, f"{name}: {_shown(LONG)}")
    ids, kind, prio = _texts(c, kinds)
    times = {}
    for name in TIMES:
        values, bad = parse_times(c.column(name))
        if name == "submitted_at":
            c.flag(np.isnan(values) & ~bad, "submitted_at: missing value")
        c.flag(
            bad,
            lambda i, name=name: f"{name}: {_shown(c.column(name).iloc[i])} is not {time_range()}",
        )
        times[name] = values
    weight = _weights(c, prio, priorities)
    sub, due, st, fin = (times[k] for k in TIMES)
    if window is not None:
        first, last, why = window
        c.flag(
            (sub < first) | (sub > last),
            lambda i: f"submitted_at: {_shown(c.column('submitted_at').iloc[i])} {why}",
        )
    c.flag(due < sub, "due: before submitted_at")
    c.flag(st < sub, "started_at: before submitted_at")
    c.flag(fin <= st, "finished_at: not after started_at")
    feats = {}
    for name in FEATURES:
        v = _numbers(c.column(name))
        given = ~_empty(c.column(name))
        c.flag(
            given & ~((v > 0) & (v <= MAX_SECONDS)),
            lambda i, name=name: f"{name}: {_shown(c.column(name).iloc[i])} is not a number > 0",
        )
        if name == "frames":  # a job's frames (issue 59): a whole number, at most MAX_FRAMES
            c.flag(
                given & ((v != np.floor(v)) | (v > MAX_FRAMES)),
                lambda i: (
                    f"frames: {_shown(c.column('frames').iloc[i])} is not a whole number from 1 to "
                    f"{MAX_FRAMES}"
                ),
            )
        feats[name] = np.where(given, v, np.nan)
    ok = c.reason == None  # noqa: E711
    bad = [(int(lines[i]), c.reason[i]) for i in np.flatnonzero(~ok)]
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


def _texts(c, kinds):
    """The ids, kinds and priority classes of the rows (stripped), the text fields checked."""
    raw_ids = c.text("id")
    # ids without the white space around them (sched.formats.csv_input.normal_id), as scenarios and
    # `sched replay` compare them: "a " and "a" are the same task, counted once
    ids = pd.Series([normal_id(v) for v in raw_ids.to_numpy(dtype=object)], index=raw_ids.index, dtype=object)
    kind = _strip(c.text("kind"))
    prio = _strip(c.text("priority"))
    c.flag(_empty(ids), "id: missing value")
    c.flag(_empty(kind), "kind: missing value")
    if kinds is not None:
        c.flag(
            ~kind.isin(kinds).to_numpy(), lambda i: f"kind: {shorten(kind.iloc[i])} is not in the calibration"
        )
    return ids, kind, prio


def _weights(c, prio, priorities):
    """Each row's weight: its own ``weight`` if given, else its priority class's."""
    w = _numbers(c.column("weight"))
    w_given = ~_empty(c.column("weight"))
    c.flag(
        w_given & ~((w > 0) & (w <= MAX_WEIGHT)),
        lambda i: f"weight: {_shown(c.column('weight').iloc[i])} is not a number in (0, {MAX_WEIGHT:g}]",
    )
    mapped = prio.map({k: float(v["weight"]) for k, v in priorities.items()}).to_numpy(dtype=np.float64)
    need = ~w_given
    c.flag(need & _empty(prio), "priority: missing value (and no weight)")
    c.flag(
        need & np.isnan(mapped),
        lambda i: f"priority: {shorten(prio.iloc[i])} is not a class of scenario.priorities",
    )
    return np.where(w_given, w, mapped)


def read_history(
    path, priorities, max_bad_share, kinds=None, stats=None, chunk_size=CHUNK, window=None, seen=None
):
    """Yield :class:`HistoryChunk` of valid records of one history file, in file order.

    ``priorities``: the config's ``scenario.priorities`` (class -> weight);
    ``kinds``: the kinds a record may have (None: any); ``window``: see :func:`_parse`.
    ``seen`` ({id: "file:line"}, filled in place; pass one to several files' reads): a record
    whose id an earlier valid record has is malformed ("id: ... repeats ..."): the same task
    exported twice would count twice in the fit. It holds every valid id read, about 150 bytes
    a task (150 MB for a million: the one part of the read that grows with the history).
    ``stats`` (a :class:`HistoryStats`, filled in place) counts the records; once the file
    is read, an empty file or more than ``max_bad_share`` malformed records raise
    :class:`HistoryError`. So do, at once, a line or a file over the limits of
    ``sched.data.workload.history_io`` (naming the line).
    """
    path = Path(path)
    fmt = history_format(path)
    stats = stats if stats is not None else HistoryStats(path, fmt)
    seen = {} if seen is None else seen
    raw, hashing, binary = open_history(path)
    chunks = csv_chunks if fmt == "csv" else jsonl_chunks
    try:
        for lines, frame, bad in chunks(history_lines(binary, path), path, stats, chunk_size):
            for line, why in bad:
                stats.add_bad(line, why)
            if len(frame):
                chunk, bad = _parse(frame, lines, priorities, kinds, window)
                chunk, repeated = _first_of_each_id(chunk, path, seen)
                for line, why in sorted(bad + repeated):
                    stats.add_bad(line, why)
                stats.valid += len(chunk)
                if len(chunk):
                    yield chunk
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise HistoryError(f"{path}: cannot read: {shorten(str(exc), 80)}") from None
    except MemoryError:
        raise HistoryError(f"{path}: out of memory while reading it") from None
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


def _first_of_each_id(chunk, path, seen):
    """(the chunk without the records whose id ``seen`` or an earlier record of the chunk has,
    [(line, reason)] of those), ``seen`` updated with the others ("file:line")."""
    keep = np.ones(len(chunk), dtype=bool)
    repeated = []
    for i, (tid, line) in enumerate(zip(chunk.id, chunk.line)):
        first = seen.get(tid)
        if first is None:
            seen[tid] = f"{path.name}:{int(line)}"
        else:
            keep[i] = False
            repeated.append((int(line), f"id: {shorten(tid)} repeats {first} (the same task twice)"))
    return (chunk if keep.all() else chunk.rows(keep)), repeated
