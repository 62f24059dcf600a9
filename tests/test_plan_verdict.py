"""Lookahead as a verdict (issue 34): the truncated rollout's terminal estimate against a plain
Python reference, plan on GPUs of different speeds, the plan gate that makes plan the verdict
only on validation evidence, and rank() / sched serve's fallback under a plan verdict."""

import json

import numpy as np
import pandas as pd
import pytest

from sched.config import validate_config
from sched.evaluate.errors import BenchmarkError
from sched.learn.search import lookahead as L
from sched.learn.search.planner import PlanError, Planner, check_settings, rule_base
from sched.sim import core as S
from sched.sim import rules
from sched.verdict.candidacy import plan_gate

SETTINGS = dict(candidates=3, samples=6, horizon=12, z=1.0, seed=3, futures=40, budget_ms=None)


@pytest.fixture(scope="module")
def pcfg():
    c = validate_config({"scenario": {"estimate_noise_sigma": 0.4, "tasks": 60}}, "test")
    return c.replace(plan=dict(SETTINGS))


def _scenario(cfg, seed, tasks=60):
    from sched.data.scenario import draw, scenario_model

    d = draw(scenario_model(cfg), seed, tasks=tasks)
    return d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"]


def _terminal_reference(s, k):
    """terminal() written plainly: ATC frozen now, sorted (highest first, then index), list-scheduled."""
    t = float(s.t[0])
    rest = [int(j) for j in s.queue[0, : s.qlen[0]]] + list(range(int(s.nxt[0]), int(s.n[0])))
    pbar = np.mean([s.est[0, j] for j in rest])
    at = rules.Decision(t, pbar, 1.0)

    def key(j):
        e, w = s.est[0, j], s.w[0, j]
        return rules.priority(
            rules.ATC, k, at, s.arr[0, j], e, w, s.due[0, j], rules.static_part(rules.ATC, e, w)
        )

    free = list(s.mfree[0].astype(float))
    cost = 0.0
    for j in sorted(rest, key=lambda j: (-key(j), j)):
        ends = [max(free[m], s.arr[0, j], t) + s.dur[0, j] / s.speed[0, m] for m in range(len(free))]
        m = int(np.argmin(ends))
        free[m] = ends[m]
        cost += s.w[0, j] * max(0.0, ends[m] - s.due[0, j])
    return cost


@pytest.mark.parametrize("machines, steps", [(1, 5), (1, 30), ("1x0.5,2x0.25", 12)])
def test_the_terminal_estimate_is_its_plain_reference(pcfg, machines, steps):
    arr, dur, est, w, due = _scenario(pcfg, 11)
    tight = arr + 0.2 * (due - arr)  # deadlines tight enough that the rest is late
    state, _ = S.pack([(arr, dur, est, w, tight)], machines)
    S.set_rule(state, 0, rules.ATC)
    for _ in range(steps):
        assert S._advance(state, 0, True)
        S._start(state, 0, S.pick(state, 0, rules.ATC, 2.0), state.pending[0])
    assert S._advance(state, 0, True)
    n = state.arr.shape[1]
    want = _terminal_reference(state, 2.0)
    got = L.terminal(state, 2.0, np.empty(n), np.empty(n, np.int64))
    assert want > 0 and got == pytest.approx(want, rel=1e-12)


def test_a_depth_beyond_every_decision_is_the_full_rollout_and_a_short_one_differs(pcfg):
    sc = _scenario(pcfg, 5)
    full = Planner(pcfg, rule_base("atc", 2.0), pcfg.plan).schedule(sc)
    deep = Planner(pcfg, rule_base("atc", 2.0), {**pcfg.plan, "depth": 10000}).schedule(sc)
    for x, y in zip(full, deep):
        np.testing.assert_array_equal(x, y)
    # a short depth estimates the rest: other costs for the same candidates on the same futures
    assert not np.array_equal(_first_costs(pcfg, sc, None), _first_costs(pcfg, sc, 2))
    np.testing.assert_array_equal(_first_costs(pcfg, sc, None), _first_costs(pcfg, sc, 10000))


def _first_costs(cfg, sc, depth):
    """The sampled costs of the first decision's candidates (15 tasks waiting) at ``depth``."""
    from tests.test_plan import _costs

    planner = Planner(cfg, rule_base("atc", 2.0), {**cfg.plan, "depth": depth})
    arr, dur, est, w, due = (a[:15] for a in sc)
    return _costs(planner, np.zeros(15), dur, est, w, due - arr)[1]


@pytest.mark.parametrize("depth", [0, -1, 1.5, True, "3"])
def test_a_bad_depth_is_refused_naming_it(depth):
    with pytest.raises(PlanError, match="plan.depth"):
        check_settings({**SETTINGS, "depth": depth})


def test_plan_schedules_gpus_of_different_speeds_and_reads_their_speeds(pcfg):
    sc = _scenario(pcfg, 8)
    start, end, mach = Planner(pcfg, rule_base("atc", 2.0), pcfg.plan).schedule(sc, machines="1x1.0,2x0.5")
    dur = sc[1]
    speed = np.array([1.0, 0.5, 0.5])[mach]
    np.testing.assert_allclose(end - start, dur / speed)
    # a busy GPU frees, as a scheduler knows it, at its start plus its estimate at its own speed
    state, _ = S.pack([sc], "1x1.0,1x0.5")
    S.set_rule(state, 0, rules.ATC)
    assert S._advance(state, 0, True)
    S._start(state, 0, 0, 1)  # the slow GPU
    j = int(state.mtask[0, 1])
    free = L.known_free(state)
    assert free[1] == pytest.approx(state.start[0, j] + state.est[0, j] / 0.5)


def _table(policy, seeds, totals):
    return pd.DataFrame(
        {
            "scenario_seed": seeds,
            "policy": policy,
            "total_weighted_tardiness_s": totals,
        }
    )


def _gate_inputs(gain, n=40):
    rng = np.random.default_rng(0)
    seeds = np.arange(1000, 1000 + n)
    base = rng.uniform(100, 200, n)
    plan = base * (1 - gain) + rng.normal(0, 1, n)
    sel = pd.concat([_table("atc", seeds, base * 1.1), _table("wmdd", seeds, base)])
    test = pd.concat([_table("wmdd", seeds + 10**6, base), _table("plan", seeds + 10**6, plan)])
    run = {"base": "wmdd", "setting": None, "settings": {"candidates": 4}, "budget_ms": None}
    return _table("plan", seeds[: n // 2], plan[: n // 2]), run, sel, test


def _winner():
    return {"policy": "wmdd", "rule": "wmdd", "atc_k": None, "policy_file": None, "reason": "chosen."}


def _complete(monkeypatch):
    """The gate's tables are complete by construction; check_complete reads more columns."""
    from sched.verdict import candidacy, periods

    for module in (candidacy, periods):
        monkeypatch.setattr(module, "check_complete", lambda *a, **k: None)


def test_plan_becomes_the_verdict_only_when_significantly_better_on_validation(pcfg, monkeypatch):
    _complete(monkeypatch)
    table, run, sel, test = _gate_inputs(0.05)
    w = plan_gate(_winner(), [(table, run)], sel, test, pcfg.benchmark)
    assert w["policy"] == "plan" and w["rule"] == "wmdd" and w["runner_up"] == "wmdd"
    p = w["plan"]
    assert p["chosen"] and p["base"] == "wmdd" and p["validation"]["seeds"] == [1000, 20]
    assert p["validation"]["ci95_pct"][1] < 0 and p["test"]["scenarios"] == 40
    assert "plan on wmdd is the verdict" in w["reason"]
    table, run, sel, test = _gate_inputs(-0.05)  # worse: the base stays, the record says by how much
    w = plan_gate(_winner(), [(table, run)], sel, test, pcfg.benchmark)
    assert (
        w["policy"] == "wmdd"
        and not w["plan"]["chosen"]
        and w["plan"]["validation"]["mean_difference_pct"] > 0
    )
    assert "wmdd stays" in w["reason"]


def test_the_plan_gate_refuses_a_run_on_another_base(pcfg, monkeypatch):
    _complete(monkeypatch)
    table, run, sel, test = _gate_inputs(0.05)
    with pytest.raises(BenchmarkError, match="plan ran on 'atc'"):
        plan_gate(_winner(), [(table, {**run, "base": "atc"})], sel, test, pcfg.benchmark)


def _plan_winner(tmp_path, d=-3.25):
    cfg = validate_config({"scenario": {"tasks": 60}}, "test").to_dict()
    cfg["plan"] = {**cfg["plan"], **SETTINGS}
    winner = {
        "policy": "plan",
        "rule": "wmdd",
        "atc_k": None,
        "policy_file": None,
        "policy_sha256": None,
        "significant": True,
        "runner_up": "wmdd",
        "mean_difference_pct": d,
        "ci95_pct": [-4.0, -2.0],
        "reason": "r",
        "setting": {"machines": 1, "speeds": None, "load": 0.85},
        "plan": {
            "base": "wmdd",
            "chosen": True,
            "settings": {k: v for k, v in SETTINGS.items() if k != "budget_ms"}
            | {"rollout": "base", "depth": 8},
            "budget_ms": None,
            "decision_ms": {"p50": 1.0, "p99": 2.0},
            "validation": {"seeds": [1, 300], "mean_difference_pct": d, "ci95_pct": [-4.0, -2.0]},
            "test": None,
        },
    }
    path = tmp_path / "winner.json"
    path.write_text(json.dumps(winner))
    cfg["rank"] = {
        **cfg["rank"],
        "winner": str(path),
        "tuned": str(tmp_path / "tuned.json"),
        "settings": None,
    }
    return cfg, winner, path


def _tasks(n=12, seed=2):
    rng = np.random.default_rng(seed)
    return [
        {"id": f"t{i}", "estimate_s": float(rng.uniform(10, 300)), "weight": int(rng.choice([1, 2, 4])),
         "due": float(rng.uniform(100, 2000)), "arrival": 0.0}
        for i in range(n)
    ]  # fmt: skip


def test_rank_auto_runs_the_plan_verdict_on_its_base_and_says_so(tmp_path):
    from sched.ranking import ranker

    cfg, _, _ = _plan_winner(tmp_path)
    call = ranker.prepare(_tasks(), now=0.0, config=cfg)
    assert call.choice.name == "plan" and call.choice.plan["settings"]["depth"] == 8
    d = ranker.run(call)
    assert d.policy == "plan" and "plan on wmdd, chosen on validation: -3.2 % against wmdd" in d.why
    assert sorted(d.ids) == sorted(t["id"] for t in _tasks())
    # past its deadline the service answers with the base's order, named
    fb, how = ranker.fallback(call)
    assert fb.policy == "wmdd" and "plan's base policy, wmdd" == how
    want = ranker.decide(_tasks(), now=0.0, policy="wmdd", config=cfg)
    assert fb.ids == want.ids


def test_a_plan_verdict_with_a_bad_record_is_refused_naming_the_field(tmp_path):
    from sched.ranking.tasks import RankInputError
    from sched.ranking.verdict_files import check_winner

    _, winner, path = _plan_winner(tmp_path)
    bad_settings = {**winner["plan"], "settings": {"candidates": 99}}
    cases = (
        ({**winner, "plan": None}, "field plan"),
        ({**winner, "plan": {**winner["plan"], "base": 3}}, "plan.base"),
        ({**winner, "plan": bad_settings}, "plan.settings"),
    )
    for bad, field in cases:
        with pytest.raises(RankInputError, match=field):
            check_winner(bad, path)
