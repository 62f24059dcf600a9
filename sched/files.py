"""Atomic file writing: a temporary file in the target folder, then a rename.

A reader (or a Snakemake job that is killed half-way) never sees a partial
artefact: the file is either the old one, absent, or complete.
"""

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates the file readable by its owner only; give the artefact
        # the permissions a plain open() would (0666 minus the umask)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


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
