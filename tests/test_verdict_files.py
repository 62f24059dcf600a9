"""rank()'s verdict files (sched/ranking/verdict_files.py, verdicts.py) read as every other
input (a pipe, a link to /dev/zero, a file over its size limit), and winner.json bound to its
policy file by the file's sha256.

Commands that the original code hung or grew without bound run in a subprocess under a
memory cap and a time limit, so a regression fails here instead of bringing the machine down.
"""

import hashlib
import json
import os

import pytest

from sched import rank
from sched.errors import SchedError
from sched.ranking.tasks import RankInputError

from .test_hostile_input import assert_one_line_error, probe
from .test_rank import NOW, conf, static_queue, winner, write_json


def rank_project(tmp_path):
    """A config whose verdict files live in tmp_path, and a queue file: `sched rank` runs there."""
    (tmp_path / "c.yaml").write_text(
        "rank: {winner: winner.json, tuned: tuned.json, settings: robustness}\n", encoding="utf-8"
    )
    (tmp_path / "q.json").write_text(json.dumps(static_queue(seed=1, n=5)), encoding="utf-8")


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
    from sched.learn.settings import Training

    d = tmp_path_factory.mktemp("policies")
    meta = PF.policy_meta(validate_config({}), Training.of(seed=3))
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
    from sched.report.inputs import read_winner
    from sched.verdict.outputs import write_outputs
    from sched.verdict.winner import WINNER_KEYS

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
    from sched.verdict.winner import EARLIER_WINNER_KEYS

    old = {k: w[k] for k in EARLIER_WINNER_KEYS}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert read_winner(tmp_path / "old.json") == old
    # the winner's policy file gone: refused, naming it, nothing written
    (tmp_path / "p1.pt").unlink()
    test, _ = frames(cfg, {"fifo": 3.0, "atc": 1.0, "ppo-1": 0.5}, {"fifo": 3.0, "atc": 1.0})
    with pytest.raises(SchedError, match="ppo-1's policy file p1.pt: file not found"):
        write_outputs(tmp_path / "gone", test, cfg, SPECS, full=True)
    assert not (tmp_path / "gone").exists() or not list((tmp_path / "gone").iterdir())
