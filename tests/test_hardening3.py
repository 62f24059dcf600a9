"""Issue 23, items 6, 9 and 11: verdict files read as every other input, winner.json bound to its
policy file, and the smaller ones (calibrated speeds, output sets, temporaries, links, Unicode
digits, NaN deadlines, replay windows, a full disk, an empty queue's budget).

Commands that the original code hung or grew without bound run in a subprocess under a
memory cap and a time limit, so a regression fails here instead of bringing the machine down.
"""

import errno
import hashlib
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from sched import files, rank
from sched.errors import SchedError
from sched.files import OutputError
from sched.ranking.tasks import RankInputError

from .conftest import ROOT
from .test_hostile_input import _cap_memory, assert_one_line_error
from .test_rank import NOW, conf, static_queue, winner, write_json

TIME_LIMIT = 60


def probe(*args, cwd):
    """`sched ARGS` under the memory cap and TIME_LIMIT; (exit status, stdout, stderr)."""
    out = subprocess.run(
        [sys.executable, "-m", "sched", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
        preexec_fn=_cap_memory,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return out.returncode, out.stdout, out.stderr


def rank_project(tmp_path):
    """A config whose verdict files live in tmp_path, and a queue file: `sched rank` runs there."""
    (tmp_path / "c.yaml").write_text(
        "rank: {winner: winner.json, tuned: tuned.json, settings: robustness}\n", encoding="utf-8"
    )
    (tmp_path / "q.json").write_text(json.dumps(static_queue(seed=1, n=5)), encoding="utf-8")


# --------------------------------------------------------------------------- item 6


@pytest.mark.parametrize("name", ["winner.json", "tuned.json"])
def test_a_fifo_verdict_file_is_refused_at_once_not_waited_on(tmp_path, name):
    rank_project(tmp_path)
    os.mkfifo(tmp_path / name)
    code, _, err = probe("--config", "c.yaml", "rank", "q.json", "--now", NOW, cwd=tmp_path)
    assert_one_line_error(code, err, name, "not a regular file")


@pytest.mark.parametrize("name", ["winner.json", "tuned.json"])
def test_a_link_to_dev_zero_as_verdict_file_is_refused_in_bounded_memory(tmp_path, name):
    rank_project(tmp_path)
    os.symlink("/dev/zero", tmp_path / name)
    code, _, err = probe("--config", "c.yaml", "rank", "q.json", "--now", NOW, cwd=tmp_path)
    assert_one_line_error(code, err, name, "not a regular file")


def test_a_verdict_file_over_its_size_limit_is_refused_naming_it(tmp_path):
    from sched import limits

    MAX_VERDICT_BYTES = getattr(limits, "MAX_VERDICT_BYTES", 1024**2)  # (the original code: no limit)
    c = conf(tmp_path)
    (tmp_path / "tuned.json").write_text('{"atc_k": 2.0}' + " " * MAX_VERDICT_BYTES)
    with pytest.raises(RankInputError, match=rf"tuned.json: \d+ bytes, more than the {MAX_VERDICT_BYTES}"):
        rank(static_queue(seed=1, n=5), now=NOW, config=c)


# --------------------------------------------------------------------------- item 9


@pytest.fixture(scope="module")
def two_policies(tmp_path_factory):
    """Two valid policy files of the same architecture, the second with negated weights."""
    import torch

    from sched.config import validate_config
    from sched.learn.policy import policy_file as PF
    from sched.learn.policy.networks import build
    from sched.learn.ppo.loop import Args

    d = tmp_path_factory.mktemp("policies")
    meta = PF.policy_meta(validate_config({}), Args(seed=3))
    torch.manual_seed(0)
    net = build(meta["arch"])
    PF.save(d / "a.pt", net, meta)
    with torch.no_grad():
        for p in net.parameters():
            p.neg_()
    PF.save(d / "b.pt", net, meta)
    return d / "a.pt", d / "b.pt"


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def learned_winner(tmp_path, pfile, sha="same"):
    w = winner("ppo-3", policy_file=str(pfile))
    if sha is not None:
        w["policy_sha256"] = sha256(pfile) if sha == "same" else sha
    write_json(tmp_path / "winner.json", w)


def test_rank_refuses_a_policy_file_that_does_not_match_winner_json(tmp_path, two_policies):
    a, b = two_policies
    pfile = tmp_path / "politique.pt"
    pfile.write_bytes(a.read_bytes())
    learned_winner(tmp_path, pfile)
    c, q = conf(tmp_path), static_queue(seed=3, n=30)
    table = rank(q, now=NOW, explain=True, config=c)
    assert set(table.policy) == {"ppo-3"} and "does not match" not in table.why.iloc[0]
    # the file replaced by other valid weights: not run; ATC, then the tuned ATC, instead
    pfile.write_bytes(b.read_bytes())
    table = rank(q, now=NOW, explain=True, config=c)
    assert set(table.policy) == {"atc"}
    why = table.why.iloc[0]
    assert f"{pfile} does not match" in why and "policy_sha256" in why and "winner.json" in why
    assert table.id.tolist() == rank(q, now=NOW, policy="atc", config=c)
    write_json(
        tmp_path / "tuned.json", {"atc_k": 3.5, "setting": {"machines": 1, "speeds": None, "load": 0.85}}
    )
    table = rank(q, now=NOW, explain=True, config=c)
    assert set(table.policy) == {"atc-tuned"} and "does not match" in table.why.iloc[0]


def test_a_winner_json_without_policy_sha256_still_runs_and_says_so(tmp_path, two_policies):
    a, _ = two_policies
    learned_winner(tmp_path, a, sha=None)
    table = rank(static_queue(seed=3, n=10), now=NOW, explain=True, config=conf(tmp_path))
    assert set(table.policy) == {"ppo-3"}
    assert "records no policy_sha256" in table.why.iloc[0] and "not checked" in table.why.iloc[0]


def test_a_malformed_policy_sha256_is_refused_naming_the_field(tmp_path, two_policies):
    learned_winner(tmp_path, two_policies[0], sha="not-a-digest")
    with pytest.raises(RankInputError, match="winner.json: field policy_sha256: expected 64 hexadecimal"):
        rank(static_queue(seed=3, n=10), now=NOW, config=conf(tmp_path))


def test_the_benchmark_writes_the_winners_policy_sha256(tmp_path, monkeypatch, cfg, two_policies):
    from sched.evaluate.report.inputs import read_winner
    from sched.evaluate.summary import WINNER_KEYS, write_outputs

    from .test_selection import SPECS, frames

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p1.pt").write_bytes(two_policies[0].read_bytes())
    test, _ = frames(cfg, {"fifo": 3.0, "atc": 1.0, "ppo-1": 0.5}, {"fifo": 3.0, "atc": 1.0})
    write_outputs(tmp_path / "b", test, cfg, SPECS, full=True)
    w = json.loads((tmp_path / "b" / "winner.json").read_text())
    assert w["policy"] == "ppo-1" and w.get("policy_sha256") == sha256(tmp_path / "p1.pt")
    assert tuple(w) == WINNER_KEYS
    assert read_winner(tmp_path / "b" / "winner.json") == w
    # a rule winner: null; a file of an earlier version (no field): still read by the report
    test, _ = frames(cfg, {"fifo": 3.0, "atc": 1.0, "ppo-1": 1.5}, {"fifo": 3.0, "atc": 1.0})
    write_outputs(tmp_path / "r", test, cfg, SPECS, full=True)
    assert json.loads((tmp_path / "r" / "winner.json").read_text())["policy_sha256"] is None
    from sched.evaluate.summary import EARLIER_WINNER_KEYS

    old = {k: w[k] for k in EARLIER_WINNER_KEYS}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert read_winner(tmp_path / "old.json") == old
    # the winner's policy file gone: refused, naming it, nothing written
    (tmp_path / "p1.pt").unlink()
    test, _ = frames(cfg, {"fifo": 3.0, "atc": 1.0, "ppo-1": 0.5}, {"fifo": 3.0, "atc": 1.0})
    with pytest.raises(SchedError, match="ppo-1's policy file p1.pt: file not found"):
        write_outputs(tmp_path / "gone", test, cfg, SPECS, full=True)
    assert not (tmp_path / "gone").exists() or not list((tmp_path / "gone").iterdir())


# --------------------------------------------------------------------------- item 11


def test_calibrate_refuses_a_gpu_speed_outside_the_limits(tmp_path):
    f = pd.read_csv(ROOT / "resources/bench/example_bench_gpus.csv")
    for model, factor, shown in (("a5000", 1e7, "e-08"), ("l40s", 1e-7, "e+0")):
        g = f.copy()
        g.loc[g.gpu == model, "duration_s"] *= factor
        g.to_csv(tmp_path / "b.csv", index=False)
        code, _, err = probe("calibrate", "b.csv", "--out", "cal.json", cwd=tmp_path)
        assert_one_line_error(code, err, f"gpu '{model}'", "fitted speed", shown, "[0.001, 1000]")
        assert not (tmp_path / "cal.json").exists() and not (tmp_path / "cal.png").exists()


def _old_set(d):
    d.mkdir()
    for name in ("per_scenario.csv", "resume.csv", "winner.json"):
        (d / name).write_text("old\n")


def _bench_tables(cfg):
    from .test_selection import frames

    return frames(cfg, {"fifo": 3.0, "atc": 1.0, "wmdd": 1.1}, {"fifo": 3.0, "atc": 1.0})[0]


def test_a_kill_between_renames_never_leaves_new_tables_beside_an_old_winner(tmp_path, monkeypatch, cfg):
    from sched.evaluate.summary import write_outputs

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


def test_an_out_that_is_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "s.csv"
    target.write_text("old\n")
    os.symlink("real/s.csv", tmp_path / "link.csv")
    code, _, err = probe("scenario", "--seed", "1", "--tasks", "5", "--out", "link.csv", cwd=tmp_path)
    assert code == 0, err
    assert (tmp_path / "link.csv").is_symlink() and os.readlink(tmp_path / "link.csv") == "real/s.csv"
    assert pd.read_csv(target).shape[0] == 5
    assert not list((tmp_path / "real").glob(".*.tmp")) and not list(tmp_path.glob(".*.tmp"))
    # a link into a folder that does not exist, a pipe: refused, naming the path
    os.symlink("nowhere/s.csv", tmp_path / "dangling.csv")
    code, _, err = probe("scenario", "--seed", "1", "--tasks", "5", "--out", "dangling.csv", cwd=tmp_path)
    assert_one_line_error(code, err, "dangling.csv", "symbolic link", "does not exist")
    assert not (tmp_path / "nowhere").exists()
    os.mkfifo(tmp_path / "fifo.csv")
    code, _, err = probe("scenario", "--seed", "1", "--tasks", "5", "--out", "fifo.csv", cwd=tmp_path)
    assert_one_line_error(code, err, "fifo.csv", "not a regular file")
    assert not (tmp_path / "fifo.csv").is_file()


@pytest.mark.parametrize("machines", ["²", "²x1.0", "1x1.0,²x0.5", "١٢"])
def test_a_unicode_digit_in_machines_is_refused_naming_the_field(machines):
    with pytest.raises(RankInputError, match="^machines"):
        rank(static_queue(seed=1, n=5), now=NOW, machines=machines)


def test_sched_rank_names_the_option_of_a_unicode_digit_in_machines(tmp_path):
    rank_project(tmp_path)
    code, _, err = probe("rank", "q.json", "--now", NOW, "--machines", "²x1.0", cwd=tmp_path)
    assert_one_line_error(code, err, "--machines", "'²x1.0'")


def test_a_nan_due_in_json_lines_is_a_malformed_record(tmp_path, cfg):
    from sched.data.workload.history import HistoryStats, read_history

    p = tmp_path / "h.jsonl"
    rows = [
        {"id": f"t{i}", "kind": "image", "submitted_at": 1717372800 + 60 * i, "priority": "low"}
        for i in range(4)
    ]
    lines = [json.dumps(r) for r in rows]
    lines[2] = lines[2][:-1] + ', "due": NaN}'
    lines[3] = lines[3][:-1] + ', "due": null}'  # null: no deadline, as documented
    p.write_text("\n".join(lines) + "\n")
    stats = HistoryStats(p, "jsonl")
    chunks = list(read_history(p, cfg["scenario"]["priorities"], 0.5, stats=stats))
    assert sum(len(c.due) for c in chunks) == 3
    assert stats.bad_count == 1 and stats.bad[0][0] == 3 and stats.bad[0][1].startswith("due: NaN")


def test_replay_scenarios_out_removes_an_earlier_replays_windows_only(tmp_path, calibrated):
    from .test_workload_replay import _history

    path, _ = _history(tmp_path / "h.csv", days=2)
    scen = tmp_path / "scen"
    scen.mkdir()
    for name in ("replay-2024-05-01.csv", "replay-2024-05-01T1200.csv"):  # an earlier replay's
        (scen / name).write_text("old\n")
    for name in ("notes.csv", "replay-2024-05-01.csv.bak", "my-replay-2024-05-01.csv"):  # not ours
        (scen / name).write_text("mine\n")
    code, _, err = probe(
        "--config", calibrated.config, "replay", path, "--policies", "fifo,atc",
        "--out", tmp_path / "out", "--scenarios-out", scen, cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert "removed 2 window file(s) of an earlier replay" in err
    assert sorted(p.name for p in scen.iterdir()) == [
        "my-replay-2024-05-01.csv",
        "notes.csv",
        "replay-2024-05-01.csv.bak",
        "replay-2024-06-03.csv",
        "replay-2024-06-04.csv",
    ]


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


def test_an_empty_queue_still_checks_the_plan_budget():
    for bad in (-1, 0, float("nan")):
        with pytest.raises(RankInputError, match="budget_ms: expected"):
            rank([], policy="plan", budget_ms=bad)
    assert rank([], policy="plan", budget_ms=5) == []
