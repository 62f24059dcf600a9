"""The compiled core and the plain-Python reference give identical schedules."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sched.sim import core, reference, rules


@st.composite
def scenarios(draw, max_tasks=14):
    """Small scenarios on a coarse integer grid, so ties and coincident events are common."""
    n = draw(st.integers(1, max_tasks))
    static = draw(st.booleans())
    arrival = [0.0] * n if static else [float(draw(st.integers(0, 12))) for _ in range(n)]
    duration = [float(draw(st.integers(1, 6))) for _ in range(n)]
    noisy = draw(st.booleans())
    estimate = [float(draw(st.integers(1, 6))) if noisy else d for d in duration]
    weight = [float(draw(st.sampled_from([1, 2, 4]))) for _ in range(n)]
    due = [a + float(draw(st.integers(-3, 15))) for a in arrival]
    return arrival, duration, estimate, weight, due


def _same(compiled, reference):
    start, end, mach = compiled
    rs, re_, rm = (np.array(x) for x in reference)
    return (
        np.array_equal(start, rs.astype(float))
        and np.array_equal(end, re_.astype(float))
        and np.array_equal(mach, rm.astype(int))
    )


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sc=scenarios(),
    rule=st.sampled_from(rules.RULES),
    machines=st.integers(1, 3),
    k=st.sampled_from([0.5, 2.0, 5.0]),
)
def test_compiled_equals_reference(sc, rule, machines, k):
    got = core.simulate(*sc, rule, machines=machines, k=k)
    want = reference.simulate(*sc, rule, machines=machines, k=k)
    assert _same(got, want)


@settings(max_examples=100, deadline=None)
@given(
    sc=scenarios(),
    rule=st.sampled_from(rules.RULES),
    free=st.lists(st.integers(-2, 10), min_size=2, max_size=2),
)
def test_busy_machines_equal_reference(sc, rule, free):
    free = [float(f) for f in free]
    got = core.simulate(*sc, rule, machines=2, machine_free=free)
    want = reference.simulate(*sc, rule, machines=2, machine_free=free)
    assert _same(got, want)
    assert all(s >= f for s, m in zip(got[0], got[2]) for f in [free[m]])


# Speeds on a binary grid (0.5, 2: ends stay on a grid, so ties and coincident
# events are common) and off it (0.6, 1.5).
SPEEDS = st.lists(st.sampled_from([0.5, 0.6, 1.0, 1.5, 2.0]), min_size=1, max_size=4)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(), rule=st.sampled_from(rules.RULES), speeds=SPEEDS, k=st.sampled_from([0.5, 2.0]))
def test_mixed_speeds_equal_reference(sc, rule, speeds, k):
    got = core.simulate(*sc, rule, machines=speeds, k=k)
    want = reference.simulate(*sc, rule, machines=speeds, k=k)
    assert _same(got, want)
    start, end, mach = got
    # a task of duration p runs p / v on its GPU of speed v
    assert np.array_equal(end, start + np.asarray(sc[1]) / np.asarray(speeds)[mach])


@settings(max_examples=60, deadline=None)
@given(
    sc=scenarios(),
    rule=st.sampled_from(rules.RULES),
    free=st.lists(st.integers(-2, 10), min_size=3, max_size=3),
)
def test_mixed_speeds_with_busy_machines_equal_reference(sc, rule, free):
    speeds, free = [0.5, 2.0, 1.0], [float(f) for f in free]
    got = core.simulate(*sc, rule, machines=speeds, machine_free=free)
    assert _same(got, reference.simulate(*sc, rule, machines=speeds, machine_free=free))


@pytest.mark.parametrize("rule", rules.RULES)
def test_generated_scenarios_with_mixed_speeds_equal_reference(cfg, rule):
    from sched.data.scenario import generate, scenario_model

    spec = "2x1.0,1x0.6,1x1.7"
    scs = [generate(scenario_model(cfg), s, tasks=150, machines=spec) for s in range(3)]
    got = core.simulate_batch([s.arrays for s in scs], rule, machines=spec)
    for sc, g in zip(scs, got):
        assert _same(g, reference.simulate(*sc.arrays, rule, machines=spec))


def test_speed_one_everywhere_is_the_identical_machines_model(cfg):
    # a list of speeds of 1 and a count give the same schedule, bit for bit
    from sched.data.scenario import generate, scenario_model

    sc = generate(scenario_model(cfg), 3, tasks=200, machines=3)
    for rule in rules.RULES:
        a = core.simulate(*sc.arrays, rule, machines=3)
        b = core.simulate(*sc.arrays, rule, machines=[1.0, 1.0, 1.0])
        c = core.simulate(*sc.arrays, rule, machines="3x1.0")
        assert all(np.array_equal(x, y) and np.array_equal(x, z) for x, y, z in zip(a, b, c))


def test_free_gpus_decide_lowest_index_first_whatever_their_speeds():
    # four tasks at t = 0 on GPUs of speeds 0.5, 2, 1, 2: filled in index order,
    # each task running 4 / v on its GPU
    d = [4.0] * 4
    for sim in (core.simulate, reference.simulate):
        start, end, mach = sim([0.0] * 4, d, d, [1.0] * 4, [0.0] * 4, "fifo", machines=[0.5, 2.0, 1.0, 2.0])
        assert list(mach) == [0, 1, 2, 3]
        assert list(end) == [8.0, 2.0, 4.0, 2.0]


def test_rules_read_the_estimate_on_the_deciding_gpu():
    # WMDD's key max(p / v, d - t) / w: task A (p = 8, d = 6), task B (p = 2, d = 7), both w = 1.
    # On a speed-1 GPU A's key is 8 and B's 7: B first. On a speed-4 GPU A's is
    # max(2, 6) = 6 and B's 7: A first, and A runs 8 / 4 = 2 s.
    sc = ([0.0, 0.0], [8.0, 2.0], [8.0, 2.0], [1.0, 1.0], [6.0, 7.0])
    for sim in (core.simulate, reference.simulate):
        start, _, _ = sim(*sc, "wmdd", machines=[1.0])
        assert list(start) == [2.0, 0.0]
        start, end, _ = sim(*sc, "wmdd", machines=[4.0])
        assert list(start) == [0.0, 2.0] and list(end) == [2.0, 2.5]


def test_machine_free_must_give_one_time_per_machine():
    sc = ([0.0], [1.0], [1.0], [1.0], [5.0])
    for simulate in (core.simulate, reference.simulate):
        with pytest.raises(ValueError, match="machine_free: expected 1 values"):
            simulate(*sc, "atc", machines=1, machine_free=[5.0, 0.0])


@pytest.mark.parametrize("machines", [1, 3])
@pytest.mark.parametrize("rule", rules.RULES)
def test_generated_scenarios_equal_reference(cfg, rule, machines):
    from sched.data.scenario import generate, scenario_model

    scs = [generate(scenario_model(cfg), s, tasks=150, machines=machines) for s in range(4)]
    got = core.simulate_batch([s.arrays for s in scs], rule, machines=machines)
    for sc, g in zip(scs, got):
        assert _same(g, reference.simulate(*sc.arrays, rule, machines=machines))


def test_ties_go_to_earlier_arrival_then_row():
    # Three identical tasks: rows 1 and 2 arrive at 0, row 0 arrives at 1.
    arrival = [1.0, 0.0, 0.0]
    same = [2.0, 2.0, 2.0]
    for rule in rules.RULES:
        start, _, _ = core.simulate(arrival, same, same, [1.0] * 3, [5.0] * 3, rule)
        assert list(np.argsort(start)) == [1, 2, 0], rule


def test_arrival_when_machine_frees_is_in_the_decision():
    # Task 0 runs [0, 4); at t=4 task 1 (long, arrived at 1) and task 2 (short,
    # arriving exactly at 4) wait: SPT must see task 2 and start it first.
    arrival, duration = [0.0, 1.0, 4.0], [4.0, 5.0, 1.0]
    start, _, _ = core.simulate(arrival, duration, duration, [1.0] * 3, [9.0] * 3, "spt")
    assert start.tolist() == [0.0, 5.0, 4.0]


def test_idle_gap_between_arrivals():
    start, end, _ = core.simulate([0.0, 10.0], [2.0, 3.0], [2.0, 3.0], [1.0, 1.0], [1.0, 1.0], "atc")
    assert start.tolist() == [0.0, 10.0] and end.tolist() == [2.0, 13.0]


def test_free_machines_filled_lowest_index_first():
    start, _, mach = core.simulate(
        [0.0] * 4, [3.0, 1.0, 2.0, 1.0], [3.0, 1.0, 2.0, 1.0], [1.0] * 4, [0.0] * 4, "fifo", machines=3
    )
    assert mach.tolist() == [0, 1, 2, 1] and start.tolist() == [0.0, 0.0, 0.0, 1.0]


def test_rules_see_the_estimate_not_the_duration():
    # The long task looks short: SPT starts it first.
    duration, estimate = [10.0, 2.0], [1.0, 2.0]
    start, _, _ = core.simulate([0.0, 0.0], duration, estimate, [1.0, 1.0], [5.0, 5.0], "spt")
    assert start.tolist() == [0.0, 10.0]


def test_numba_cache_folder_follows_the_sources(tmp_path):
    """Editing any source file must select a fresh numba cache (no stale compiled code)."""
    import os
    import shutil
    import subprocess
    import sys

    import sched

    pkg = tmp_path / "sched"
    shutil.copytree(os.path.dirname(sched.__file__), pkg, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import os, sched; print(os.environ['NUMBA_CACHE_DIR'])"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}

    def cache_dir():
        r = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    first = cache_dir()
    assert first.startswith(str(pkg)) and first == cache_dir()
    with open(pkg / "rules.py", "a") as fh:
        fh.write("\n# an edit\n")
    assert cache_dir() != first
