"""Atomic writes: complete file or nothing, usual permissions."""
import os

import pandas as pd
import pytest

from sched import io


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_atomic_write_replaces_and_uses_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        io.write_csv(tmp_path / "a" / "t.csv", pd.DataFrame({"x": [1, 2]}))
    finally:
        os.umask(old)
    p = tmp_path / "a" / "t.csv"
    assert p.read_text() == "x\n1\n2\n"
    assert oct(p.stat().st_mode & 0o777) == oct(0o644)
