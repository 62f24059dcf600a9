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


def test_a_new_artefact_gets_the_umask_permissions(tmp_path):
    p = tmp_path / "new.csv"
    old = os.umask(0o022)
    try:
        files.write_csv(p, pd.DataFrame({"x": [1]}))
    finally:
        os.umask(old)
    assert oct(p.stat().st_mode & 0o777) == oct(0o644)  # not mkstemp's 0600


def test_atomic_write_replaces_and_keeps_the_old_files_mode(tmp_path):
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
    assert oct(p.stat().st_mode & 0o777) == oct(0o600)  # the old file's mode, kept
    assert [q.name for q in p.parent.iterdir()] == ["t.csv"]  # no temporary file left


def test_a_read_only_file_is_not_replaced(tmp_path):
    p = tmp_path / "keep.csv"
    p.write_text("precious\n")
    p.chmod(0o444)
    with pytest.raises(files.OutputError, match="read-only"):
        files.write_text(p, "new\n")
    assert p.read_text() == "precious\n"
    assert oct(p.stat().st_mode & 0o777) == oct(0o444)
    assert [q.name for q in tmp_path.iterdir()] == ["keep.csv"]


@pytest.mark.parametrize("where", ["folder", "under-a-file"])
def test_an_unwritable_target_is_one_error_naming_it(tmp_path, where):
    (tmp_path / "good.csv").write_text("x\n")
    target = tmp_path if where == "folder" else tmp_path / "good.csv" / "x.csv"
    with pytest.raises(files.OutputError, match=str(target).replace("\\", "\\\\")):
        files.write_text(target, "new\n")


def test_stale_temporaries_of_a_killed_writer_are_removed(tmp_path):
    p = tmp_path / "train_log.csv"
    p.write_text("x\n")
    stale = [tmp_path / ".train_log.csv.abc123.tmp", tmp_path / ".train_log.csv.zz.tmp"]
    for s in stale:
        s.write_text("half")
    other = tmp_path / ".other.csv.abc.tmp"
    other.write_text("not ours")
    removed = files.remove_stale_temporaries(p)
    assert sorted(removed) == sorted(map(str, stale))
    assert sorted(q.name for q in tmp_path.iterdir()) == [".other.csv.abc.tmp", "train_log.csv"]
