"""Waiting as an action (issue 60): the delayed rules, compiled against the plain-Python reference,
and what a hold does."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sched.sim import core, reference, rules, waiting
from sched.sim.errors import SimulationError


@st.composite
def scenarios(draw, max_tasks=14):
    """Small scenarios on a coarse grid (ties and coincident events common), with long tasks."""
    n = draw(st.integers(1, max_tasks))
    arrival = [float(draw(st.integers(0, 20))) for _ in range(n)]
    duration = [float(draw(st.sampled_from([1, 2, 3, 8, 15]))) for _ in range(n)]
    noisy = draw(st.booleans())
    estimate = [float(draw(st.integers(1, 12))) if noisy else d for d in duration]
    weight = [float(draw(st.sampled_from([1, 2, 4]))) for _ in range(n)]
    due = [a + float(draw(st.integers(-3, 15))) for a in arrival]
    return arrival, duration, estimate, weight, due


def _same(got, want):
    return all(np.array_equal(g, np.array(w, dtype=g.dtype)) for g, w in zip(got, want))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sc=scenarios(),
    rule=st.sampled_from(rules.WAIT_RULES),
    machines=st.sampled_from([1, 2, 3, "1x1.0,1x0.5"]),
    alpha=st.sampled_from([0.25, 1.0, 3.0, math.inf]),
    max_wait=st.sampled_from([0.5, 4.0, 50.0]),
    free=st.booleans(),
)
def test_compiled_equals_reference_task_by_task(sc, rule, machines, alpha, max_wait, free):
    """Start, end and GPU of every task agree, with holds, speeds and GPUs busy at the start."""
    m = 2 if machines == "1x1.0,1x0.5" else machines
    mf = [float(i) for i in range(m)] if free else None
    got = waiting.simulate(*sc, rule, alpha, max_wait, machines=machines, k=2.0, machine_free=mf)
    want = reference.simulate_delayed(*sc, rule, alpha, max_wait, machines=machines, k=2.0, machine_free=mf)
    assert _same(got, want)


def test_never_waiting_is_the_base_rule():
    """alpha = inf never holds a GPU: the base rule's schedules, bit for bit."""
    rng = np.random.default_rng(0)
    scs = []
    for _ in range(20):
        n = 60
        arr = np.sort(rng.uniform(0, 3000, n))
        dur = rng.lognormal(3, 1.5, n)
        scs.append((arr, dur, dur * rng.lognormal(0, 0.3, n), rng.choice([1.0, 2.0, 8.0], n), arr + 100.0))
    for rule, base in (("wspt-wait", "wspt"), ("atc-wait", "atc")):
        got = waiting.simulate_batch(scs, rule, math.inf, 60.0, machines=2, k=1.5)
        want = core.simulate_batch(scs, base, machines=2, k=1.5)
        assert all(_same(g, w) for g, w in zip(got, want))


def test_a_long_task_waits_for_arrivals_and_short_ones_pass_it():
    """One GPU: the long task, alone once the first one ends, is held; each short urgent task
    starts at its arrival; the long one starts max_wait after the GPU last freed, the bound."""
    arrival, duration = [0.0, 0.5, 2.0, 6.0], [1.0, 100.0, 1.0, 1.0]
    weight, due = [1.0, 1.0, 8.0, 8.0], [1.0, 500.0, 3.0, 7.0]
    start, _end, _m = waiting.simulate(arrival, duration, duration, weight, due, "wspt-wait", 1.0, 30.0)
    assert list(start) == [0.0, 37.0, 2.0, 6.0]
    base = core.simulate(arrival, duration, duration, weight, due, "wspt")[0]
    assert list(base) == [0.0, 1.0, 101.0, 102.0]


def test_hold_bounds_and_refusals():
    """A hold ends at the next arrival or now + max_wait; bad parameters are refused."""
    s, _ = core.pack([(np.array([0.0, 10.0]), np.ones(2), np.ones(2), np.ones(2), np.full(2, 5.0))], 1)
    assert core._advance(s, 0, False)
    assert waiting.hold(s, 0, 100.0, 50.0) == 10.0  # the next arrival comes first
    s, _ = core.pack([(np.array([0.0, 90.0]), np.ones(2), np.ones(2), np.ones(2), np.full(2, 5.0))], 1)
    assert core._advance(s, 0, False)
    assert waiting.hold(s, 0, 100.0, 7.0) == 7.0  # the bound comes first
    for alpha, max_wait in ((0.0, 5.0), (1.0, 0.0), (1.0, math.inf)):
        with pytest.raises(SimulationError):
            waiting.simulate([0.0], [1.0], [1.0], [1.0], [1.0], "atc-wait", alpha, max_wait)
    with pytest.raises(SimulationError):
        waiting.simulate([0.0], [1.0], [1.0], [1.0], [1.0], "atc", 1.0, 5.0)


def _tiny(waiting_section=None):
    from sched.config import validate_config

    bench = {"validation_scenarios": 4, "atc_k_grid": [1.0, 2.0]}
    if waiting_section is not None:
        bench["waiting"] = waiting_section
    return validate_config({"scenario": {"tasks": 40}, "benchmark": bench}, "test")


def test_tune_chooses_alpha_on_the_validation_seeds_and_the_benchmark_runs_it(tmp_path):
    """`sched tune` writes each named delayed rule's best alpha of the grid (atc-wait at the tuned
    k); the benchmark's spec runs exactly it; without benchmark.waiting tuned.json has no
    `waiting` (the other settings' files are unchanged)."""
    import json

    from sched.evaluate import policies, runs, tuning

    assert "waiting" not in tuning.tune_atc_k(_tiny())
    cfg = _tiny({"rules": ["wspt-wait", "atc-wait"], "alpha_grid": [0.5, 64.0], "max_wait_s": 900})
    rec = tuning.tune_atc_k(cfg)
    for rule, got in rec["waiting"]["rules"].items():
        means = [g["mean_twt_s"] for g in got["grid"]]
        assert got["alpha"] == got["grid"][int(np.argmin(means))]["alpha"]
        assert got["atc_k"] == (rec["atc_k"] if rule == "atc-wait" else None)
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps(rec))
    specs, _ = policies.resolve_policies(cfg, ["atc-wait"], tuned=path)
    got = rec["waiting"]["rules"]["atc-wait"]
    assert (specs["atc-wait"]["wait_alpha"], specs["atc-wait"]["max_wait_s"]) == (got["alpha"], 900.0)
    scenarios = runs.generate_scenarios(cfg, [5, 6])
    arrays = [s.arrays for s in scenarios]
    ran = runs.schedule_policy(specs["atc-wait"], scenarios, arrays, 1)
    want = waiting.simulate_batch(arrays, "atc-wait", got["alpha"], 900.0, k=rec["atc_k"])
    assert all(_same(g, w) for g, w in zip(ran, want))
    with pytest.raises(SimulationError):  # a tuned file without the rule's alpha
        path.write_text(json.dumps({k: v for k, v in rec.items() if k != "waiting"}))
        policies.resolve_policies(cfg, ["wspt-wait"], tuned=path)
