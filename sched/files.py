"""Atomic file writing: a temporary file in the target folder, then a rename.

A reader (or a Snakemake job that is killed half-way) never sees a partial
artefact: the file is either the old one, absent, or complete.
"""

import glob
import json
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sched.errors import SchedError


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


def read_csv(path, error, **kwargs):
    """pandas.read_csv with the usual failures turned into ``error`` naming the file."""
    import pandas as pd

    try:
        return pd.read_csv(path, **kwargs)
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except pd.errors.EmptyDataError:
        raise error(f"{path}: empty file (no header, no rows)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not a readable CSV file: {exc}") from None


def _jsonable(value):
    # numpy scalars and arrays
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
