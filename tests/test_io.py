"""Atomic writes: complete file or nothing, usual permissions."""

import os

import pandas as pd
import pytest

from sched import files


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with files.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_atomic_write_replaces_and_uses_the_umask(tmp_path):
    p = tmp_path / "a" / "t.csv"
    p.parent.mkdir()
    p.write_text("old,file\nwith,more\nlines,here\n")
    p.chmod(0o600)
    before = p.stat().st_ino
    old = os.umask(0o022)
    try:
        files.write_csv(p, pd.DataFrame({"x": [1, 2]}))
    finally:
        os.umask(old)
    assert p.read_text() == "x\n1\n2\n"  # the new content, nothing of the old
    assert p.stat().st_ino != before  # a new file renamed onto it
    assert oct(p.stat().st_mode & 0o777) == oct(0o644)  # the umask's, not the old file's
    assert [q.name for q in p.parent.iterdir()] == ["t.csv"]  # no temporary file left
