"""plan with waiting as a candidate (config ``plan.wait_s``, issue 60; sched/learn/search/plan.py):
off, plan never leaves a GPU idle while work waits; on, holding the GPU until the next arrival is one
more candidate judged by the same paired rollouts: held when the sampled futures bring an urgent task
soon, not when holding makes the waiting task late, and never beyond the bound."""

import numpy as np
import pytest

from sched.config import validate_config
from sched.learn.search import lookahead as L
from sched.learn.search.planner import PlanError, Planner, check_settings, rule_base

SETTINGS = dict(candidates=3, samples=4, horizon=1, z=1.0, seed=3, futures=2, budget_ms=None, depth=None)


@pytest.fixture(scope="module")
def cfg():
    c = validate_config({"scenario": {"estimate_noise_sigma": 0.3, "tasks": 40}}, "test")
    return c.replace(plan=dict(SETTINGS))


def _planner(cfg, wait_s, urgent=True, rollout=None):
    """plan on ATC whose every sampled future brings one task 10 s after now: urgent (weight 8,
    due 15 s after now) or not (weight 1, due in 5,000 s); 10 s long."""
    settings = {**SETTINGS} if wait_s is None else {**SETTINGS, "wait_s": wait_s}
    p = Planner(cfg, rule_base("atc", 2.0), settings, rollout)
    one = np.ones((2, 1))
    w, due = (8, 15) if urgent else (1, 5000)
    p.pool = L.Futures(10 * one, 10 * one, 10 * one, w * one, due * one)
    return p


def _start(planner, arrival, dur, w, due):
    arrival, dur = np.asarray(arrival, float), np.asarray(dur, float)
    start, end, _ = planner.schedule((arrival, dur, dur, np.asarray(w, float), np.asarray(due, float)))
    return start


def _idle_with_work(arrival, start, dur):
    """Seconds the single GPU stood idle while a task waited."""
    idle, free = 0.0, -np.inf
    for j in np.argsort(start, kind="stable"):
        idle += start[j] - max(free, arrival[j])
        free = start[j] + dur[j]
    return idle


def test_off_plan_never_idles_with_work_and_absent_equals_null(cfg):
    from sched.data.scenario import draw, scenario_model

    d = draw(scenario_model(cfg), 11, tasks=40)
    sc = (d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])
    a = Planner(cfg, rule_base("atc", 2.0), SETTINGS).schedule(sc)
    b = Planner(cfg, rule_base("atc", 2.0), {**SETTINGS, "wait_s": None}).schedule(sc)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert _idle_with_work(d["arrival"], a[0], d["duration"]) == pytest.approx(0.0, abs=1e-9)
    # the hand case below, where holding pays, is started at once without wait_s
    assert _start(_planner(cfg, None), [0, 10], [1000, 10], [1, 8], [5000, 25])[0] == 0.0


def test_holds_when_an_urgent_task_is_due_soon(cfg):
    start = _start(_planner(cfg, 3600), [0, 10], [1000, 10], [1, 8], [5000, 25])
    # the GPU held until the urgent task arrived (after it, the futures still promise one: the
    # long task may be held again, within the bound)
    assert start[1] == 10.0 and 20.0 <= start[0] <= 20.0 + 3600


def test_starts_when_holding_makes_the_waiting_task_late(cfg):
    # the long task is due at 1,005 s: held 10 s it is late; the arrival is not urgent
    start = _start(_planner(cfg, 3600, urgent=False), [0, 10], [1000, 10], [8, 1], [1005, 5000])
    assert start[0] == 0.0


def test_a_hold_never_lasts_beyond_the_bound(cfg):
    # the futures promise an urgent task at 10 s, the real one comes at 100 s: a hold ends at the
    # next arrival, and the GPU idles at most wait_s seconds with work waiting
    loose = _start(_planner(cfg, 3600), [0, 100], [1000, 10], [1, 8], [5000, 115])
    assert loose[1] == 100.0 and loose[0] >= 110.0
    start = _start(_planner(cfg, 30.0), [0, 100], [1000, 10], [1, 8], [5000, 115])
    assert start[0] == 30.0  # held from 0 until the bound, then started
    # a bound of 4 s cannot reach the promised arrival: holding only delays, the task starts now
    assert _start(_planner(cfg, 4.0), [0, 100], [1000, 10], [1, 8], [5000, 115])[0] == 0.0


def test_a_delayed_continuation_that_never_holds_is_its_rule(cfg):
    sc = ([0, 10], [1000, 10], [1, 8], [5000, 25])
    never = rule_base("atc-wait", 2.0, 1e12, 3600.0)  # p / alpha ~ 0: it starts at once
    assert _planner(cfg, 3600, rollout=never)._lookahead().alpha == 1e12
    a = _start(_planner(cfg, 3600, rollout=never), *sc)
    b = _start(_planner(cfg, 3600, rollout=rule_base("atc", 2.0)), *sc)
    np.testing.assert_array_equal(a, b)


def test_plan_on_a_delayed_rule_takes_its_holds(cfg):
    from sched.data.scenario import draw, scenario_model
    from sched.sim import waiting

    d = draw(scenario_model(cfg), 12, tasks=40)
    sc = (d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])
    one = {**SETTINGS, "samples": 1}  # one sample: no deviation, every decision the base's own
    got = Planner(cfg, rule_base("atc-wait", 2.0, 3.0, 600.0), one).schedule(sc)
    want = waiting.simulate(*sc, "atc-wait", 3.0, 600.0, k=2.0)
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)
    assert _idle_with_work(d["arrival"], got[0], d["duration"]) > 0.0  # it did hold


@pytest.mark.parametrize("bad", [0, -5, True, float("inf"), "60"])
def test_bad_wait_refused_in_one_line(bad):
    with pytest.raises(PlanError, match=r"plan\.wait_s: expected"):
        check_settings({**SETTINGS, "wait_s": bad})
