"""Atomic file writing: a temporary file in the target folder, then a rename.

A reader (or a Snakemake job that is killed half-way) never sees a partial
artefact: the file is either the old one, absent, or complete. A command that
writes several files writes them as a set (:func:`write_set`): every
temporary first, then the renames, the set's last file (its marker:
``winner.json`` for the benchmark) removed before the first rename and renamed
last, so a kill never leaves new files beside an old marker.

The temporary of ``NAME`` is ``.NAME.<pid>-<random>.tmp`` beside it; every
write first removes the temporaries of ``NAME`` that a killed writer left
(those whose process is not running on this machine, and those of earlier
versions, which carry no process id). An ``--out`` that is a symbolic link
is written through: the file it points to is replaced, the link is kept.
Writing onto a folder, a pipe or a device is refused; a full disk (or any
other write error) is an :class:`OutputError` naming the path.
"""

import errno
import glob
import hashlib
import io
import json
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sched.errors import SchedError
from sched.formats.csv_input import check_header, safe_frame, scan_csv  # noqa: F401 (check_header: also from here)


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
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{path}: not a regular file (a pipe or a device?); not replaced")
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222:
        # checked on the mode bits, not os.access: root may write anything
        raise OutputError(
            f"{path}: the file is read-only; not replaced (chmod u+w it, or choose another --out)"
        )
    return mode


def _through_links(path):
    """The file ``path`` names, symbolic links followed (the link itself is kept)."""
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if target.is_symlink():  # a loop of links: realpath gives up
        raise OutputError(f"{path}: a loop of symbolic links")
    if not target.parent.is_dir():
        raise OutputError(f"{path}: a symbolic link to {target}, whose folder does not exist; not written")
    return target


def _write_error(path, exc):
    """The OutputError, naming ``path``, of an OSError met while writing it."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return OutputError(f"{path}: cannot write: no space left on device (the old file, if any, is kept)")
    return OutputError(f"{path}: cannot write: {exc.strerror or exc}")


def _prepare(path):
    """(the file to replace, its new mode, a fresh temporary beside it)."""
    target = _through_links(Path(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = _target_mode(target)
        remove_dead_temporaries(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}-", suffix=".tmp", dir=target.parent)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"{path}: a parent of it is a file, not a folder") from None
    except PermissionError:
        raise OutputError(f"{path}: cannot write in {target.parent} (permission denied)") from None
    except OSError as exc:
        raise _write_error(path, exc) from None
    os.close(fd)
    return target, mode, Path(tmp)


def _discard(tmp):
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


@contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    A symbolic link ``path`` is written through (its target is replaced); an
    OSError of the writing (a full disk) is an :class:`OutputError` naming ``path``.
    """
    target, mode, tmp = _prepare(path)
    try:
        try:
            yield tmp
            # mkstemp creates the file readable by its owner only: give the artefact
            # the old file's permissions, or those a plain open() would
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except OSError as exc:
            raise _write_error(path, exc) from None
    except BaseException:
        _discard(tmp)
        raise


def write_set(items):
    """Write several files as a set: ``items`` is a list of (path, write(tmp_path)).

    Every file is written to its temporary first (a failure removes them all
    and changes nothing); then the last item's file (the set's marker) is
    removed, the others are renamed in order, and the marker is renamed last.
    A kill at any point leaves either the old set, or the marker absent
    (the set incomplete, and seen to be: rank() and the report name the
    missing file, Snakemake reruns the job), or the new set.
    """
    prepared = []
    try:
        for path, write in items:
            target, mode, tmp = _prepare(path)
            prepared.append((path, target, tmp))
            try:
                write(tmp)
                os.chmod(tmp, mode)
            except OSError as exc:
                raise _write_error(path, exc) from None
        if not prepared:
            return
        marker_path, marker, _ = prepared[-1]
        try:
            os.unlink(marker)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _write_error(marker_path, exc) from None
        for path, target, tmp in prepared:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise _write_error(path, exc) from None
    except BaseException:
        for _, _, tmp in prepared:
            _discard(tmp)
        raise


def csv_writer(frame):
    """A :func:`write_set` writer of ``frame`` as CSV (as :func:`write_csv`)."""
    frame = safe_frame(frame)
    return lambda tmp: frame.to_csv(tmp, index=False)


def json_writer(data):
    """A :func:`write_set` writer of ``data`` as JSON (as :func:`write_json`)."""
    text = _json_text(data)  # a value that is not JSON fails before anything is written
    return lambda tmp: tmp.write_text(text, encoding="utf-8")


def bytes_writer(data):
    """A :func:`write_set` writer of ``data`` (bytes)."""
    return lambda tmp: tmp.write_bytes(data)


def _temporaries(path):
    path = Path(path)
    return glob.glob(os.path.join(glob.escape(str(path.parent)), f".{glob.escape(path.name)}.*.tmp"))


def remove_stale_temporaries(path):
    """Remove every temporary file beside ``path`` that a writer of it left.

    Call it only where no other process writes ``path`` at the same time (a
    training run resuming its own outputs, say). Returns the removed paths.
    """
    removed = []
    for tmp in _temporaries(path):
        try:
            os.unlink(tmp)
            removed.append(tmp)
        except FileNotFoundError:
            pass
    return removed


def _writer_running(tmp, path):
    """Whether the process that made temporary ``tmp`` of ``path`` may still run (here)."""
    middle = os.path.basename(tmp)[len(path.name) + 2 : -len(".tmp")]
    pid, dash, _ = middle.partition("-")
    if not (dash and pid.isascii() and pid.isdecimal() and len(pid) <= 9):
        return False  # an earlier version's temporary (no process id)
    pid = int(pid)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process (EPERM), or cannot tell: kept
    return True


def remove_dead_temporaries(path):
    """Remove the temporaries of ``path`` whose writer no longer runs (every write does this
    first); those of a running writer (this process, another one) are kept. The removed paths."""
    path = Path(path)
    removed = []
    for tmp in _temporaries(path):
        if _writer_running(tmp, path):
            continue
        try:
            os.unlink(tmp)
            removed.append(tmp)
        except OSError:
            pass
    return removed


def write_text(path, text):
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _json_text(data):
    return json.dumps(data, indent=2, sort_keys=False, default=_jsonable) + "\n"


def write_json(path, data):
    write_text(path, _json_text(data))


def write_csv(path, frame):
    """``frame`` as CSV, its formula-like text cells quoted (:func:`sched.formats.csv_input.safe_frame`)."""
    frame = safe_frame(frame)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


#: The date every entry of a written .npz carries: numpy's savez stamps the time of writing,
#: so the same arrays would give other bytes on every run (issue 45).
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def write_npz(path, arrays):
    """Write ``arrays`` ({name: array}) as an uncompressed .npz, atomically, whose bytes depend
    on the arrays only: entries in the given order, each dated :data:`ZIP_EPOCH`. ``np.load``
    reads it as it reads ``np.savez``'s."""
    import zipfile

    import numpy as np

    with atomic_path(path) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, value in arrays.items():
                info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_EPOCH)
                info.external_attr = 0o644 << 16
                with zf.open(info, "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, np.asanyarray(value), allow_pickle=False)


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
    except ValueError:  # a NUL byte in the name
        raise error(f"{path}: cannot read: not a valid file name") from None
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


def file_problem(path):
    """Why ``path`` cannot be read as a regular file, in words ("not found", "is a folder, not a
    file", "not a regular file (a pipe or a device?)", "cannot read: ..."), or None when it can
    be tried. For a caller that must tell a missing file from a wrong one before reading it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "not found"
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a loop of links
        return f"cannot read: {getattr(exc, 'strerror', None) or exc}"
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a pipe or a device?)"
    return None


def sha256_file(path, error, limit=None):
    """The SHA-256 (hex) of a regular file's bytes (:func:`read_bytes`'s checks), or ``error``."""
    return hashlib.sha256(read_bytes(path, error, limit)).hexdigest()


def read_text(path, error, limit=None):
    """The text of a regular UTF-8 file (a byte-order mark dropped), or ``error`` naming it."""
    return decode_utf8(read_bytes(path, error, limit), path, error)


def decode_utf8(data, source, error):
    """``data`` as text (a byte-order mark dropped), or ``error`` naming ``source``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{source}: not a UTF-8 text file (byte {exc.start} cannot be decoded)") from None


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
