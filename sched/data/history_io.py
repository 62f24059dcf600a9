"""The file side of reading a queue history: opening it (gzip, hashing), and cutting CSV or
JSON Lines text into chunks of text cells. The parsing of the cells is sched/data/history.py's."""

import csv
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
    """(raw file, hashing reader, text stream) of a history file, or HistoryError naming it."""
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


def _check_columns(header, path):
    for name in ("id", "kind", "submitted_at"):
        if name not in header:
            raise HistoryError(f"{path}: no column {name!r} (columns: {shorten(', '.join(header), 80)})")
    if "priority" not in header and "weight" not in header:
        raise HistoryError(f"{path}: no column 'priority' or 'weight' (one of them is required)")


def csv_chunks(text, path, stats, size):
    """(lines, frame of str, list of (line, reason)) per chunk of a CSV file.

    A chunk without a double quote is split line by line (one record a line),
    and its rows with the header's field count are parsed by pandas' C
    reader, several times faster than the csv module; a chunk holding quotes
    goes through the csv module (a quoted field spanning two chunks then
    makes its record malformed: counted and reported, never silently wrong).
    """
    first = text.readline()
    if not first.strip():
        return
    header = [h.strip() for h in next(csv.reader([first]))]
    from sched.files import check_header

    check_header(header, path, 1, HistoryError)
    _check_columns(header, path)
    width = len(header)
    number = 1
    while True:
        raw = []
        for _ in range(size):
            s = text.readline()
            if not s:
                break
            raw.append(s)
        if not raw:
            return
        lines, good, bad = [], [], []
        if any('"' in s for s in raw):
            reader = csv.reader(raw, skipinitialspace=True)
            end = number
            for row in reader:
                line = end + 1
                end = number + reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                stats.total += 1
                if len(row) != width:
                    bad.append((line, f"{len(row)} fields, the header has {width}"))
                else:
                    good.append(row)
                    lines.append(line)
            frame = pd.DataFrame(good, columns=header, dtype=object)
        else:
            for i, s in enumerate(raw, start=number + 1):
                if not s.strip():
                    continue
                stats.total += 1
                k = s.count(",") + 1
                if k != width:
                    bad.append((i, f"{k} fields, the header has {width}"))
                else:
                    good.append(s)
                    lines.append(i)
            frame = (
                pd.read_csv(
                    io.StringIO("".join(good)),
                    header=None,
                    names=header,
                    dtype=str,
                    na_filter=False,
                    skipinitialspace=True,
                    index_col=False,
                )
                if good
                else pd.DataFrame(columns=header, dtype=object)
            )
            if len(frame) != len(good):  # pandas and the line split disagree: refuse, never guess
                raise HistoryError(
                    f"{path}: lines {number + 1}-{number + len(raw)}: not a readable CSV chunk"
                )
        number += len(raw)
        yield np.array(lines, dtype=np.int64), frame, bad


BAD = "\0bad"  # a JSON value that is neither text, a number nor null: fails every parse


def _text_cell(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(v)
    return BAD


def _nan_field(obj):
    """The first field of a JSON Lines record whose value is NaN (None if none)."""
    for key, value in obj.items():
        if isinstance(value, float) and value != value:
            return key
    return None


def jsonl_chunks(text, path, stats, size):
    rows, lines, bad = [], [], []

    def frame():
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
            nan = _nan_field(obj) if isinstance(obj, dict) else None
            if nan is not None:  # not "absent": NaN is no JSON value (a missing due is null)
                bad.append((line, f"{nan[:40]}: NaN is not a value (write null, or leave the field out)"))
            elif isinstance(obj, dict):
                rows.append(obj)
                lines.append(line)
            else:
                bad.append((line, f"not a JSON object (a {type(obj).__name__})"))
        if len(rows) + len(bad) >= size:
            yield np.array(lines, dtype=np.int64), frame(), bad
            rows, lines, bad = [], [], []
    if rows or bad:
        yield np.array(lines, dtype=np.int64), frame(), bad
