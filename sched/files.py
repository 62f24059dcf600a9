"""Atomic file writing: a temporary file in the target folder, then a rename.

A reader (or a Snakemake job that is killed half-way) never sees a partial
artefact: the file is either the old one, absent, or complete.
"""

import csv
import glob
import io
import json
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sched.errors import SchedError
from sched.limits import SHOWN_CHARS as SHOWN


class OutputError(SchedError):
    """An artefact cannot be written where it was asked for; the message names the path."""


def _target_mode(path):
    """The permission bits the new file gets: the old file's, or 0666 minus the umask."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a folder, not a file")
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222:
        # checked on the mode bits, not os.access: root may write anything
        raise OutputError(
            f"{path}: the file is read-only; not replaced (chmod u+w it, or choose another --out)"
        )
    return mode


@contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _target_mode(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"{path}: a parent of it is a file, not a folder") from None
    except PermissionError:
        raise OutputError(f"{path}: cannot write in {path.parent} (permission denied)") from None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror}") from None
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates the file readable by its owner only: give the artefact
        # the old file's permissions, or those a plain open() would
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def remove_stale_temporaries(path):
    """Remove the temporary files a killed writer of ``path`` left beside it.

    Call it only where no other process writes ``path`` at the same time (a
    training run resuming its own outputs, say). Returns the removed paths.
    """
    path = Path(path)
    removed = []
    for tmp in glob.glob(os.path.join(glob.escape(str(path.parent)), f".{glob.escape(path.name)}.*.tmp")):
        try:
            os.unlink(tmp)
            removed.append(tmp)
        except FileNotFoundError:
            pass
    return removed


def write_text(path, text):
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path, data):
    write_text(path, json.dumps(data, indent=2, sort_keys=False, default=_jsonable) + "\n")


def write_csv(path, frame):
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


def read_bytes(path, error, limit=None):
    """The bytes of a regular file, or ``error`` naming it.

    A folder, a pipe or a device is refused (opened without blocking, so a
    FIFO with no writer does not hang), and so is a file over ``limit`` bytes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except PermissionError:
        raise error(f"{path}: cannot read (permission denied)") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{path}: is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{path}: not a regular file (a pipe or a device?)")
        if limit is not None and st.st_size > limit:
            raise error(f"{path}: {st.st_size} bytes, more than the {limit} allowed")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def read_text(path, error, limit=None):
    """The text of a regular UTF-8 file (a byte-order mark dropped), or ``error`` naming it."""
    return decode_utf8(read_bytes(path, error, limit), path, error)


def decode_utf8(data, source, error):
    """``data`` as text (a byte-order mark dropped), or ``error`` naming ``source``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not a UTF-8 text file (byte {exc.start} cannot be decoded)") from None


def scan_csv(text, source, error, skipinitialspace=False, sep=",", max_rows=None):
    """Check a CSV text's shape: (header, the file line of each data row).

    Refused with ``error``, naming ``source``, the row (1 = the first data row)
    and the line (1 = the first line of the file, the header's when it has no
    blank line above it): a row whose field count differs from the header's,
    a column name given twice (compared stripped), more than ``max_rows`` rows,
    text that is no CSV, a file with no header. Blank lines are skipped, as
    pandas does; a row's line is where it starts (a quoted field may span lines).
    """
    header, header_line, lines = None, 0, []
    for start, record in _records(text, source, error, sep, skipinitialspace):
        if not record or (len(record) == 1 and not record[0].strip()):
            continue
        if header is None:
            header, header_line = record, start
            check_header(header, source, start, error)
        elif len(record) != len(header):
            raise error(
                f"{source}: row {len(lines) + 1} (line {start}): {len(record)} fields, "
                f"the header (line {header_line}) has {len(header)}"
            )
        else:
            lines.append(start)
            if max_rows is not None and len(lines) > max_rows:
                raise error(f"{source}: more than {max_rows} rows")
    if header is None:
        raise error(f"{source}: empty file (no header, no rows)")
    return header, lines


def _records(text, source, error, sep, skipinitialspace):
    """(first line, fields) of each record of a CSV text, blank lines included."""
    if '"' not in text:
        # no quoting: a record is a line (CRLF, LF or CR ended, as pandas reads them);
        # splitting lines is several times faster than the csv module
        for i, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
            yield i, line.split(sep)
        return
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, skipinitialspace=skipinitialspace)
    end = 0
    try:
        for record in reader:
            yield end + 1, record
            end = reader.line_num
    except csv.Error as exc:
        raise error(f"{source}: line {reader.line_num}: not a readable CSV file ({exc})") from None


def check_header(header, source, line, error):
    """Refuse a column name given twice (compared stripped; empty names may repeat)."""
    seen = {}
    for i, name in enumerate(header, start=1):
        name = name.strip()
        if name and name in seen:  # pandas names empty columns "Unnamed: i", all different
            raise error(
                f"{source}: line {line}: column {name[:SHOWN]!r} appears twice (fields {seen[name]} and {i})"
            )
        seen[name] = i


def read_csv_lines(path, error, limit=None, max_rows=None, **kwargs):
    """:func:`read_csv`, with the file line of each row: (frame, lines)."""
    import pandas as pd

    data = read_bytes(path, error, limit)
    _, lines = scan_csv(
        decode_utf8(data, path, error),
        path,
        error,
        kwargs.get("skipinitialspace", False),
        kwargs.get("sep", ","),
        max_rows,
    )
    try:
        # index_col=False: pandas never takes a column as the index (it would
        # for rows one field longer than the header, which scan_csv refuses);
        # from the bytes, not the text: twice as fast
        frame = pd.read_csv(io.BytesIO(data), index_col=False, encoding="utf-8", **kwargs)
    except pd.errors.EmptyDataError:
        raise error(f"{path}: empty file (no header, no rows)") from None
    except pd.errors.ParserError as exc:
        raise error(f"{path}: not a readable CSV file: {str(exc).strip()}") from None
    if len(frame) != len(lines):  # the csv module and pandas read the rows differently
        raise error(f"{path}: not a readable CSV file ({len(lines)} rows here, {len(frame)} by pandas)")
    return frame, lines


def read_csv(path, error, **kwargs):
    """pandas.read_csv of a checked file; every failure is ``error`` naming the file.

    The file must be a regular UTF-8 file whose rows all have the header's
    field count and whose column names are distinct (see :func:`scan_csv`).
    """
    return read_csv_lines(path, error, **kwargs)[0]


def _jsonable(value):
    # numpy scalars and arrays
    if hasattr(value, "tolist"):
        return value.tolist()
    raise OutputError(f"not JSON serialisable: {type(value).__name__}")
