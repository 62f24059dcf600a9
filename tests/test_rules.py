"""ATC and WMDD by hand, from their textbook formulas, against ``sched.sim.rules`` and both
simulators (which share the formulas of rules.py, so agreeing with each other proves nothing
about the formulas themselves; the OR-Library check needs ../shared).

ATC, Apparent Tardiness Cost (Vepsalainen & Morton, 1987): run first the largest
    I = (w / p) * exp(-max(d - p - t, 0) / (k * pbar)),
pbar the mean estimate of the tasks waiting at t. rules.py ranks by log I (same order).
WMDD, weighted modified due date (Kanet & Li, 2004): run first the smallest
    (1 / w) * max(p, d - t); rules.py's priority is its negative.
"""

import math

import numpy as np
import pytest

from sched.sim import core, reference, rules


def atc_textbook(p, w, d, t, k, pbar):
    return (w / p) * math.exp(-max(d - p - t, 0.0) / (k * pbar))


def wmdd_textbook(p, w, d, t):
    return (1.0 / w) * max(p, d - t)


def priority(rule, t, p, w, d, k=2.0, pbar=1.0, arrival=0.0, speed=1.0):
    """rules.priority with its static part, as both simulators call it."""
    static = rules.static_part(rule, p, w)
    return rules.priority(rule, k, rules.Decision(t, pbar, speed), arrival, p, w, d, static)


# Three tasks waiting at t = 10 (p, w, d): A = (2, 2, 24), B = (3, 4, 31), C = (6, 1, 18).
T = 10.0
TASKS = [(2.0, 2.0, 24.0), (3.0, 4.0, 31.0), (6.0, 1.0, 18.0)]
PBAR = 11.0 / 3.0  # (2 + 3 + 6) / 3


def test_static_parts():
    assert rules.static_part(rules.ATC, 4.0, 2.0) == math.log(0.5)
    assert rules.static_part(rules.WSPT, 4.0, 2.0) == 0.5
    for rule in (rules.FIFO, rules.SPT, rules.EDD, rules.WMDD):
        assert rules.static_part(rule, 4.0, 2.0) == 0.0


def test_atc_index_of_three_tasks_by_hand():
    """k = 2, k * pbar = 22 / 3. Slacks d - p - t: A 12, B 18, C 2.
    I_A = 1 * exp(-12 * 3 / 22) = exp(-18 / 11) = 0.194687
    I_B = 4/3 * exp(-18 * 3 / 22) = 4/3 * exp(-27 / 11) = 0.114536
    I_C = 1/6 * exp(-2 * 3 / 22) = 1/6 * exp(-3 / 11) = 0.126883
    A first (though B has the best w / p and C the earliest due date)."""
    by_hand = [math.exp(-18 / 11), 4 / 3 * math.exp(-27 / 11), 1 / 6 * math.exp(-3 / 11)]
    assert by_hand == pytest.approx([0.194687, 0.114536, 0.126883], abs=5e-7)
    for (p, w, d), want in zip(TASKS, by_hand):
        assert atc_textbook(p, w, d, T, 2.0, PBAR) == pytest.approx(want, rel=1e-14)
        assert priority(rules.ATC, T, p, w, d, 2.0, PBAR) == pytest.approx(math.log(want), rel=1e-12)
    # a task past its latest start (slack < 0) counts as slack 0: I = w / p
    assert priority(rules.ATC, 20.0, 6.0, 1.0, 18.0, 2.0, PBAR) == pytest.approx(math.log(1 / 6))
    # the look-ahead k: small k punishes slack hard (C, the least slack), large k leans to w / p
    assert _pick_by_formula("atc", 0.5) == 2 and _pick_by_formula("atc", 2.0) == 0


def test_wmdd_index_of_three_tasks_by_hand():
    """(1 / w) max(p, d - t): A = max(2, 14) / 2 = 7, B = max(3, 21) / 4 = 5.25,
    C = max(6, 8) / 1 = 8: B first. Past its due date the index is p / w (WSPT)."""
    for (p, w, d), want in zip(TASKS, (7.0, 5.25, 8.0)):
        assert wmdd_textbook(p, w, d, T) == want
        assert priority(rules.WMDD, T, p, w, d) == -want
    assert priority(rules.WMDD, 40.0, 6.0, 1.0, 18.0) == -6.0
    assert _pick_by_formula("wmdd", 2.0) == 1


def _pick_by_formula(rule, k, t=T):
    if rule == "atc":
        return max(range(3), key=lambda i: atc_textbook(*TASKS[i], t, k, PBAR))
    return min(range(3), key=lambda i: wmdd_textbook(*TASKS[i], t))


def _three_waiting_at(t):
    """Row 0 runs [0, t) on the one machine; rows 1-3 (tasks A, B, C) arrive at 1, 2, 3
    and all wait at t, the first decision among them."""
    p, w, d = (np.array([t] + [x[i] for x in TASKS]) for i in range(3))
    d[0] = 100.0
    return np.array([0.0, 1.0, 2.0, 3.0]), p, p, w, d


@pytest.mark.parametrize(
    "rule, k, t, want",
    [("atc", 2.0, T, 0), ("atc", 0.5, T, 2), ("wmdd", 2.0, T, 1), ("wmdd", 2.0, 18.0, 0)],
)
def test_both_simulators_start_the_task_the_formula_picks(rule, k, t, want):
    """At t = 18 WMDD's indices are A max(2, 6) / 2 = 3, B max(3, 13) / 4 = 3.25,
    C max(6, 0) / 1 = 6: A first, where at t = 10 it was B."""
    assert _pick_by_formula(rule, k, t) == want
    arrays = _three_waiting_at(t)
    for simulate in (core.simulate, reference.simulate):
        start, _, _ = simulate(*arrays, rule, k=k)
        start = np.asarray(start, dtype=float)
        assert start[0] == 0.0
        assert start[1 + want] == t and sorted(start[1:])[0] == t, (simulate.__module__, start)
    # the reference simulator's decision itself, at t, among the three waiting rows
    arrival, _, est, w, d = arrays
    assert reference.choose(rule, t, [1, 2, 3], arrival, est, w, d, k) == want


def _dispatch_by_textbook(arrival, p, w, d, rule, k):
    """A one-machine dispatcher written from the textbook formulas: start times."""
    n = len(arrival)
    start = np.full(n, np.nan)
    t, left = 0.0, set(range(n))
    while left:
        waiting = [j for j in left if arrival[j] <= t]
        if not waiting:
            t = min(arrival[j] for j in left)
            continue
        pbar = sum(p[j] for j in waiting) / len(waiting)
        if rule == "atc":
            j = max(waiting, key=lambda j: atc_textbook(p[j], w[j], d[j], t, k, pbar))
        else:
            j = min(waiting, key=lambda j: wmdd_textbook(p[j], w[j], d[j], t))
        start[j] = t
        t += p[j]
        left.remove(j)
    return start


@pytest.mark.parametrize("rule", ["atc", "wmdd"])
def test_whole_schedules_equal_a_textbook_dispatcher(rule):
    """Random instances, real-valued (no ties), slacks small enough that exp() does not
    underflow: every start time equals the textbook dispatcher's."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = 12
        arrival = np.sort(rng.uniform(0, 30, n))
        p = rng.uniform(1, 8, n)
        w = rng.choice([1.0, 2.0, 4.0], n) * rng.uniform(0.9, 1.1, n)
        d = arrival + p + rng.uniform(-5, 25, n)
        k = float(rng.choice([0.5, 2.0, 4.0]))
        want = _dispatch_by_textbook(arrival, p, w, d, rule, k)
        for simulate in (core.simulate, reference.simulate):
            start, _, _ = simulate(arrival, p, p, w, d, rule, k=k)
            np.testing.assert_allclose(np.asarray(start, dtype=float), want, rtol=0, atol=1e-9)


def test_rules_read_the_estimates_on_the_deciding_gpu():
    # On a GPU of speed v a rule sees p / v and pbar / v; the static part stays the speed-1 one.
    v = 0.5
    for rule in (rules.SPT, rules.ATC, rules.WMDD):
        for p, w, d in ((2.0, 2.0, 24.0), (3.0, 4.0, 31.0), (6.0, 1.0, 18.0)):
            got = priority(rule, T, p, w, d, 2.0, 3.0, speed=v)
            if rule == rules.ATC:
                want = math.log(w / p) - max(d - p / v - T, 0.0) / (2.0 * 3.0 / v)
            elif rule == rules.SPT:
                want = -(p / v)
            else:
                want = -max(p / v, d - T) / w
            assert got == pytest.approx(want, rel=1e-12)
    # speed 1 is bit for bit the rule without speeds, and FIFO, EDD, WSPT ignore the speed
    for rule in range(len(rules.RULES)):
        assert priority(rule, T, 3.0, 4.0, 31.0, speed=1.0) == priority(rule, T, 3.0, 4.0, 31.0)
    for rule in (rules.FIFO, rules.EDD, rules.WSPT):
        assert priority(rule, T, 3.0, 4.0, 31.0, speed=0.3) == priority(rule, T, 3.0, 4.0, 31.0)
