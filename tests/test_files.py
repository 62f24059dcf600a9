"""Atomic writes: complete file or nothing, usual permissions; sets of files, killed writers,
links, pipes and a full disk."""

import errno
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from sched import files
from sched.files import OutputError

from .conftest import ROOT, run_here
from .test_hostile_input import assert_one_line_error


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


def _old_set(d):
    d.mkdir()
    for name in ("per_scenario.csv", "resume.csv", "winner.json"):
        (d / name).write_text("old\n")


def _bench_tables(cfg):
    from .test_selection import frames

    return frames(cfg, {"fifo": 3.0, "atc": 1.0, "wmdd": 1.1}, {"fifo": 3.0, "atc": 1.0})[0]


def test_a_kill_between_renames_never_leaves_new_tables_beside_an_old_winner(tmp_path, monkeypatch, cfg):
    from sched.verdict.outputs import write_outputs

    from .test_selection import SPECS

    frame = _bench_tables(cfg)
    real = os.replace
    for kill_at in (1, 2, 3):
        d = tmp_path / f"k{kill_at}"
        _old_set(d)
        calls = []

        def killed(src, dst, kill_at=kill_at, calls=calls):
            calls.append(dst)
            if len(calls) == kill_at:
                raise KeyboardInterrupt  # the process killed before this rename
            return real(src, dst)

        monkeypatch.setattr(os, "replace", killed)
        with pytest.raises(KeyboardInterrupt):
            write_outputs(d, frame, cfg, SPECS, full=True)
        monkeypatch.setattr(os, "replace", real)
        new = {p.name for p in d.iterdir() if p.read_text() != "old\n"}
        # new tables only where winner.json is absent: the set seen to be incomplete
        assert not new or not (d / "winner.json").exists(), (kill_at, new)
    # a failure while writing the temporaries (the winner's, the last) changes nothing
    d = tmp_path / "fail"
    _old_set(d)

    def broken(data):
        def write(tmp):
            raise OSError(errno.EIO, "I/O error")

        return write

    monkeypatch.setattr(files, "json_writer", broken)
    with pytest.raises(OutputError, match="winner.json: cannot write: I/O error"):
        write_outputs(d, frame, cfg, SPECS, full=True)
    assert sorted(p.name for p in d.iterdir()) == ["per_scenario.csv", "resume.csv", "winner.json"]
    assert all(p.read_text() == "old\n" for p in d.iterdir())


def test_a_killed_writes_temporary_is_removed_by_the_next_write(tmp_path):
    out = tmp_path / "winner.json"
    # a writer killed with SIGKILL half-way through its write
    script = (
        "import os, sys\n"
        "from sched import files\n"
        "with files.atomic_path(sys.argv[1]) as tmp:\n"
        "    tmp.write_text('half')\n"
        "    os.kill(os.getpid(), 9)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script, str(out)], env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path
    )
    assert r.returncode == -9
    left = list(tmp_path.glob(".winner.json.*.tmp"))
    assert len(left) == 1 and not out.exists()
    (tmp_path / ".winner.json.k2x9q1.tmp").write_text("an earlier version's")
    running = tmp_path / f".winner.json.{os.getppid()}-live.tmp"  # a writer that still runs
    running.write_text("in progress")
    files.write_json(out, {"a": 1})
    assert json.loads(out.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["winner.json", running.name])


def _here(*args, cwd):
    """(exit status, stdout, stderr) of `sched ARGS` in this process (conftest.run_here)."""
    r = run_here(*args, cwd=cwd)
    return r.returncode, r.stdout, r.stderr


def test_an_out_that_is_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "s.csv"
    target.write_text("old\n")
    os.symlink("real/s.csv", tmp_path / "link.csv")
    code, _, err = _here("scenario", "--seed", "1", "--tasks", "5", "--out", "link.csv", cwd=tmp_path)
    assert code == 0, err
    assert (tmp_path / "link.csv").is_symlink() and os.readlink(tmp_path / "link.csv") == "real/s.csv"
    assert pd.read_csv(target).shape[0] == 5
    assert not list((tmp_path / "real").glob(".*.tmp")) and not list(tmp_path.glob(".*.tmp"))
    # a link into a folder that does not exist, a pipe: refused, naming the path
    os.symlink("nowhere/s.csv", tmp_path / "dangling.csv")
    code, _, err = _here("scenario", "--seed", "1", "--tasks", "5", "--out", "dangling.csv", cwd=tmp_path)
    assert_one_line_error(code, err, "dangling.csv", "symbolic link", "does not exist")
    assert not (tmp_path / "nowhere").exists()
    os.mkfifo(tmp_path / "fifo.csv")
    code, _, err = _here("scenario", "--seed", "1", "--tasks", "5", "--out", "fifo.csv", cwd=tmp_path)
    assert_one_line_error(code, err, "fifo.csv", "not a regular file")
    assert not (tmp_path / "fifo.csv").is_file()


@pytest.mark.parametrize("how", ["json", "csv"])
def test_a_full_disk_names_the_path(tmp_path, monkeypatch, how):
    from pathlib import Path

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    out = tmp_path / "sub" / f"out.{how}"
    if how == "json":
        monkeypatch.setattr(Path, "write_text", full)
        write = lambda: files.write_json(out, {"a": 1})  # noqa: E731
    else:
        monkeypatch.setattr(pd.DataFrame, "to_csv", full)
        write = lambda: files.write_csv(out, pd.DataFrame({"a": [1]}))  # noqa: E731
    with pytest.raises(OutputError, match="^" + re.escape(f"{out}: cannot write: no space left on device")):
        write()
    assert list(out.parent.iterdir()) == []  # nothing left: neither the file nor its temporary
