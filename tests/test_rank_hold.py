"""rank() with a delayed rule (issue 60): held tasks start later than now, explain says why."""

import json

import pytest

from sched import RankInputError, rank
from sched.ranking.ranker import decide
from sched.sim import rules

from .test_rank import conf, static_queue, winner

NOW = 10_000.0
MAX_WAIT = 600.0


def tuned(tmp_path, alpha=0.5, max_wait=MAX_WAIT):
    data = {
        "atc_k": 0.7,
        "grid": [0.7],
        "waiting": {
            "max_wait_s": max_wait,
            "rules": {
                "wspt-wait": {"alpha": alpha, "atc_k": None},
                "atc-wait": {"alpha": alpha, "atc_k": 0.7},
            },
        },
    }
    (tmp_path / "tuned.json").write_text(json.dumps(data))


def two_long(**extra):
    """Two long tasks that arrived 100 s apart (an expected gap of 100 s)."""
    return [
        {"id": "a", "estimate_s": 1000.0, "weight": 1.0, "due": NOW + 5000, "arrival": NOW - 200, **extra},
        {"id": "b", "estimate_s": 1200.0, "weight": 1.0, "due": NOW + 5000, "arrival": NOW - 100},
    ]


def test_a_named_delayed_rule_needs_its_alpha(tmp_path):
    (tmp_path / "tuned.json").write_text(json.dumps({"atc_k": 0.7, "grid": [0.7]}))
    with pytest.raises(RankInputError, match="tuned.json.*waiting"):
        rank(two_long(), now=NOW, policy="wspt-wait", config=conf(tmp_path))


def test_held_task_starts_later_by_the_one_formula_and_explain_says_why(tmp_path):
    tuned(tmp_path)
    d = decide(two_long(), now=NOW, policy="wspt-wait", explain=True, config=conf(tmp_path))
    first = d.frame.iloc[0]
    assert first["id"] == "a"  # wspt's pick (1/1000 > 1/1200)
    # a free GPU counts as idle since the earliest arrival (NOW - 200); gap: 100 s
    want = rules.delayed_start(1000.0, 0.5, NOW - 200, 100.0, MAX_WAIT)
    assert want > NOW and first["start_s"] == pytest.approx(want)
    assert "held: estimate 1000 s > alpha 0.5" in first["why"] and "expected gap 100 s" in first["why"]
    assert d.held == {"a": pytest.approx(want)}
    assert d.ids == rank(two_long(), now=NOW, policy="wspt-wait", config=conf(tmp_path))


def test_no_hold_is_bit_for_bit_the_base_rule(tmp_path):
    tuned(tmp_path, alpha=1e9)  # p / alpha below the gap: never waits
    tasks = static_queue(seed=3, n=40)
    for i, t in enumerate(tasks):
        t["arrival"] = NOW - 10.0 * i
    got = rank(tasks, now=NOW, policy="wspt-wait", explain=True, machines=3, config=conf(tmp_path))
    base = rank(tasks, now=NOW, policy="wspt", explain=True, machines=3, config=conf(tmp_path))
    assert got.id.tolist() == base.id.tolist()
    assert (got.start_s.to_numpy() == base.start_s.to_numpy()).all()
    assert not got.why.str.contains("held").any()


def test_no_arrival_times_no_gap_nothing_held(tmp_path):
    tuned(tmp_path)
    tasks = [{k: v for k, v in t.items() if k != "arrival"} for t in two_long()]
    d = decide(tasks, now=NOW, policy="wspt-wait", explain=True, config=conf(tmp_path))
    assert d.held == {} and d.frame.start_s.iloc[0] == NOW


def test_no_task_held_past_max_wait_after_it_arrived(tmp_path):
    tuned(tmp_path)
    tasks = two_long()
    tasks[0]["arrival"] = NOW - MAX_WAIT - 1  # waited longer than max_wait: starts now, every call
    tasks[1]["arrival"] = NOW - MAX_WAIT + 99
    d = decide(tasks, now=NOW, policy="wspt-wait", explain=True, config=conf(tmp_path))
    assert d.frame.start_s.iloc[0] == NOW and "a" not in d.held


def test_auto_follows_a_delayed_winner_with_the_alpha_beside_it(tmp_path):
    tuned(tmp_path)
    (tmp_path / "winner.json").write_text(json.dumps(winner("wspt-wait", rule="wspt-wait")))
    d = decide(two_long(), now=NOW, explain=True, config=conf(tmp_path))
    assert d.policy == "wspt-wait" and d.held and d.frame.start_s.iloc[0] > NOW
    # without its alpha in tuned.json the verdict is not followed, and why says so
    (tmp_path / "tuned.json").write_text(json.dumps({"atc_k": 0.7, "grid": [0.7]}))
    d = decide(two_long(), now=NOW, config=conf(tmp_path))
    assert d.policy == "atc-tuned" and "cannot run" in d.why and d.held is None


def test_jobs_of_frames_refuse_a_named_delayed_rule(tmp_path):
    tuned(tmp_path)
    with pytest.raises(RankInputError, match="plans whole tasks"):
        rank(
            two_long(frame_s=10.0, frames=100, estimate_s=None),
            now=NOW,
            policy="wspt-wait",
            config=conf(tmp_path),
        )
