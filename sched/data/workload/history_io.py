"""The file side of reading a queue history: opening it (gzip, hashing), cutting it into lines
within bounds, and cutting CSV or JSON Lines text into chunks of text cells. The parsing of the
cells is sched/data/workload/history.py's.

Bounds (sched/limits.py, docs/reliability.md): a file holds at most ``MAX_HISTORY_BYTES`` bytes
(once decompressed, for a ``.gz``) and a line at most ``MAX_HISTORY_LINE`` bytes; past either
the file is refused, naming it (and the line), before the excess is held in memory. The file is
read in blocks of ``BLOCK`` bytes, and a block of blank lines only is counted, not split, so a
file of blank lines is read at the speed of decompression.
"""

import gzip
import hashlib
import io
import json
import os
import stat

import numpy as np
import pandas as pd

from sched.config import shorten
from sched.errors import SchedError
from sched.formats import csv_input, json_input
from sched.limits import MAX_HISTORY_BYTES, MAX_HISTORY_LINE

#: The documented fields of a record (docs/workload.md); a CSV column or JSON key not among
#: them is ignored.
FIELDS = (
    "id",
    "kind",
    "submitted_at",
    "priority",
    "weight",
    "due",
    "started_at",
    "finished_at",
    "gpu",
    "width",
    "height",
    "frames",
    "steps",
)
_FIELDS = frozenset(FIELDS)
BLOCK = 1 << 20
#: Text in one chunk at most (a chunk also holds at most ``size`` lines): a chunk of long
#: lines stays within memory.
CHUNK_BYTES = 32 * 1024**2
#: Digits of the longest integer a JSON value may have (Python's own limit on converting one).
MAX_DIGITS = 4300
BAD = "\0bad"  # a JSON value that is neither text, a number nor null: fails every parse
LONG = "\0long"  # a JSON integer of more than MAX_DIGITS digits: fails every parse


class HistoryError(SchedError):
    """A queue history cannot be read; the message names the file, line and field."""


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


def open_history(path):
    """(raw file, hashing reader, binary stream, decompressed) of a history file, or HistoryError."""
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
    gz = str(path).lower().endswith(".gz")
    if st.st_size > MAX_HISTORY_BYTES:
        raise HistoryError(_too_big(path, f"{st.st_size} bytes"))
    try:
        raw = open(path, "rb")  # noqa: SIM115 (closed by read_history)
    except PermissionError:
        raise HistoryError(f"{path}: cannot read (permission denied)") from None
    hashing = _Hashing(raw)
    binary = io.BufferedReader(hashing, BLOCK)
    if gz:
        binary = gzip.GzipFile(fileobj=binary)
    return raw, hashing, binary


def _too_big(path, size):
    return (
        f"{path}: {size}, more than the {MAX_HISTORY_BYTES} bytes allowed "
        "(sched.limits.MAX_HISTORY_BYTES); split the history into several files"
    )


def _too_long(path, line):
    return (
        f"{path}: line {line}: longer than {MAX_HISTORY_LINE} bytes (sched.limits.MAX_HISTORY_LINE); "
        "a record is one line of a few hundred bytes"
    )


def history_lines(binary, path):
    """Yield (number of the first line, lines without their line ends) of a binary stream.

    Lines end with LF, CRLF or CR (as Python's universal newlines); a UTF-8 byte-order mark
    is dropped. Blocks of blank lines are skipped (the numbers count them). HistoryError
    past ``MAX_HISTORY_BYTES`` bytes in all, a line longer than ``MAX_HISTORY_LINE`` bytes,
    or text that is not UTF-8, naming the line.
    """
    number, tail, total, start = 1, b"", 0, True
    while True:
        block = binary.read(BLOCK)
        total += len(block)
        if total > MAX_HISTORY_BYTES:
            raise HistoryError(_too_big(path, "once decompressed"))
        data = tail + block
        if start and (len(data) >= 3 or not block):
            start = False
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
        if not block:  # end of file: the last line may have no line end
            if data:
                yield from _split(data + b"\n", number, path)
            return
        cut = data.rfind(b"\n")
        bare = data.rfind(b"\r", cut + 1, len(data) - 1)  # a CR line end after the last LF
        cut = max(cut, bare)
        if cut < 0:
            tail = data
        else:
            done, tail = data[: cut + 1], data[cut + 1 :]
            yield from _split(done, number, path)
            number += _count_lines(done)
        if len(tail) > MAX_HISTORY_LINE:
            raise HistoryError(_too_long(path, number))


def _count_lines(done):
    if b"\r" in done:
        done = done.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return done.count(b"\n")


def _split(done, number, path):
    """The lines of ``done`` (bytes ending with a line end) as text; nothing for blank lines only."""
    if b"\r" in done:
        done = done.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if not done.strip(b" \t\n"):  # blank lines only (sched.formats.csv_input.is_blank)
        return
    ends = np.flatnonzero(np.frombuffer(done, dtype=np.uint8) == 10)
    lengths = np.diff(ends, prepend=-1) - 1
    if lengths.max() > MAX_HISTORY_LINE:
        raise HistoryError(_too_long(path, number + int(np.argmax(lengths > MAX_HISTORY_LINE))))
    try:
        text = done.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = number + done.count(b"\n", 0, exc.start)
        raise HistoryError(f"{path}: line {line}: not UTF-8 text ({exc.reason})") from None
    lines = text.split("\n")
    lines.pop()  # after the last line end
    yield number, lines


def _chunks(segments, size):
    """(line numbers, lines) of at most ``size`` lines and about ``CHUNK_BYTES`` bytes each."""
    nums, lines, n, nbytes = [], [], 0, 0
    for first, seg in segments:
        i = 0
        while i < len(seg):
            take = min(size - n, len(seg) - i)
            part = seg[i : i + take]
            lines.extend(part)
            nums.append(np.arange(first + i, first + i + take, dtype=np.int64))
            n, i = n + take, i + take
            nbytes += sum(map(len, part))
            if n >= size or nbytes >= CHUNK_BYTES:
                yield np.concatenate(nums), lines
                nums, lines, n, nbytes = [], [], 0, 0
    if n:
        yield np.concatenate(nums), lines


def _check_columns(header, path):
    for name in ("id", "kind", "submitted_at"):
        if name not in header:
            raise HistoryError(f"{path}: no column {name!r} (columns: {shorten(', '.join(header), 80)})")
    if "priority" not in header and "weight" not in header:
        raise HistoryError(f"{path}: no column 'priority' or 'weight' (one of them is required)")


def _header(segments, path):
    """(its line, the lines of its segment from it on, its names) of the header of a CSV history:
    its first line that is not blank, as every CSV reader finds it ((None, None, None) if none);
    HistoryError naming the line for a header that is no record, a column twice or missing."""
    for first, lines in segments:
        k = next((k for k, s in enumerate(lines) if not csv_input.is_blank(s)), None)
        if k is not None:
            at = first + k
            break
    else:
        return None, None, None
    try:
        header = [h.strip() for h in csv_input.split_line(lines[k])]
    except csv_input.BadLine as exc:
        raise HistoryError(f"{path}: line {at}: the header: {exc}") from None
    csv_input.check_header(header, path, at, HistoryError)
    _check_columns(header, path)
    return at, lines[k:], header


def csv_chunks(segments, path, stats, size):
    """(lines, frame of str, list of (line, reason)) per chunk of a CSV file.

    A record is one line (``sched.formats.csv_input``): a quoted field may not span lines in a
    history. A line that leaves a quoted field open, holds text after a closing quote or a
    NUL byte is malformed, counted and named; the lines after it are records of their own
    (a CSV reader would have swallowed them into the open field). A chunk without a double
    quote or a NUL is split line by line and parsed by pandas' C reader, several times faster
    than the csv module; any other goes line by line through the csv module (strict). Only
    the documented columns (``FIELDS``) are kept.
    """
    segments = iter(segments)
    at, lines, header = _header(segments, path)
    if header is None:
        return
    width = len(header)
    keep = [i for i, h in enumerate(header) if h in _FIELDS]
    names = [header[i] for i in keep]

    def rest():
        if len(lines) > 1:
            yield at + 1, lines[1:]
        yield from segments

    for nums, chunk in _chunks(rest(), size):
        good_lines, bad = [], []
        if not any('"' in s or "\0" in s for s in chunk):
            good = []
            for i, s in zip(nums.tolist(), chunk):
                if csv_input.is_blank(s):
                    continue
                stats.total += 1
                k = s.count(",") + 1
                if k != width:
                    bad.append((i, f"{k} fields, the header has {width}"))
                else:
                    good.append(s)
                    good_lines.append(i)
            if good:
                frame = pd.read_csv(
                    io.StringIO("\n".join(good) + "\n"),
                    header=None,
                    names=list(range(width)),
                    usecols=keep,
                    dtype=str,
                    na_filter=False,
                    skipinitialspace=True,
                    index_col=False,
                )
                frame.columns = names
            else:
                frame = pd.DataFrame(columns=names, dtype=object)
            if len(frame) != len(good):  # pandas and the line split disagree: refuse, never guess
                raise HistoryError(f"{path}: lines {nums[0]}-{nums[-1]}: not a readable CSV chunk")
        else:
            rows = []
            for i, s in zip(nums.tolist(), chunk):
                if csv_input.is_blank(s):
                    continue
                stats.total += 1
                try:  # malformed at its line; the next line is a record of its own
                    row = csv_input.split_line(s, skipinitialspace=True)
                except csv_input.BadLine as exc:
                    bad.append((i, str(exc)))
                    continue
                if len(row) != width:
                    bad.append((i, f"{len(row)} fields, the header has {width}"))
                else:
                    rows.append([row[j] for j in keep])
                    good_lines.append(i)
            frame = pd.DataFrame(rows, columns=names, dtype=object)
        yield np.array(good_lines, dtype=np.int64), frame, bad


def _int(text):
    return int(text) if len(text) <= MAX_DIGITS else LONG


def _text_cell(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(v)
    return BAD


def _frame(rows):
    f = pd.DataFrame(rows, dtype=object)
    for c in f.columns:  # every cell as text, as a CSV would hold it ("" for absent)
        col = f[c]
        missing = col.isna().to_numpy()
        kind = pd.api.types.infer_dtype(col, skipna=True)
        if kind == "string":
            f[c] = col.where(~missing, "")
        elif kind in ("integer", "floating", "mixed-integer-float"):
            f[c] = col.astype(str).where(~missing, "")
        else:  # mixed types: cell by cell (a list, an object or a boolean fails every parse)
            f[c] = [_text_cell(v) if v == v else "" for v in col.to_numpy()]
    return f


def _nan_field(obj):
    """The first documented field of a JSON Lines record whose value is NaN (None if none)."""
    for key, value in obj.items():
        if key in _FIELDS and isinstance(value, float) and value != value:
            return key
    return None


def jsonl_chunks(segments, path, stats, size):
    """(lines, frame of str, list of (line, reason)) per chunk of a JSON Lines file.

    Only the documented keys (``FIELDS``) of each object are kept: stray keys never become
    columns. An integer of more than ``MAX_DIGITS`` digits fails every parse of its field.
    """
    decoder = json.JSONDecoder(parse_int=_int, object_pairs_hook=json_input.unique_object)
    for nums, chunk in _chunks(segments, size):
        rows, lines, bad = [], [], []
        for line, s in zip(nums.tolist(), chunk):
            if csv_input.is_blank(s):
                continue
            stats.total += 1
            try:
                obj = decoder.decode(s)
            except json.JSONDecodeError as exc:
                bad.append((line, f"not valid JSON ({exc.msg})"))
            except RecursionError:
                bad.append((line, "nested too deeply"))
            except ValueError as exc:  # a number Python refuses to convert, say
                bad.append((line, f"not valid JSON ({shorten(str(exc), 60)})"))
            else:
                nan = _nan_field(obj) if isinstance(obj, dict) else None
                if nan is not None:  # not "absent": NaN is no JSON value (a missing due is null)
                    bad.append((line, f"{nan}: NaN is not a value (write null, or leave the field out)"))
                elif isinstance(obj, dict):
                    rows.append({k: v for k, v in obj.items() if k in _FIELDS})
                    lines.append(line)
                else:
                    bad.append((line, f"not a JSON object (a {type(obj).__name__})"))
        yield np.array(lines, dtype=np.int64), _frame(rows), bad
