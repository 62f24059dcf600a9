"""The lockstep API used by PPO: decisions, actions and the dense reward."""

import numpy as np

from sched.data.scenario import generate, scenario_model
from sched.sim import core, reference, rules


def _run_lockstep(scs, machines, choose, skip_forced=True):
    state, orders = core.pack([s.arrays for s in scs], machines)
    for b in range(len(scs)):
        core.set_rule(state, b, rules.ATC)
    accrued = np.zeros(len(scs))
    core.advance_batch(state, skip_forced)
    accrued += state.accrued
    while not state.done.all():
        actions = np.array(
            [choose(state, b) if state.pending[b] >= 0 else -1 for b in range(len(scs))], dtype=np.int64
        )
        core.apply_batch(state, actions)
        core.advance_batch(state, skip_forced)
        accrued += state.accrued
    return state, orders, accrued


def test_lockstep_with_rule_actions_equals_rule_rollout(cfg):
    scs = [generate(scenario_model(cfg), s, tasks=120) for s in range(5)]
    for machines in (1, 3):

        def atc(state, b):
            return core.pick(state, b, rules.ATC, 2.0)

        state, orders, _ = _run_lockstep(scs, machines, atc)
        for b, sc in enumerate(scs):
            want = reference.simulate(*sc.arrays, "atc", machines=machines)
            start = np.empty(len(sc))
            start[orders[b]] = state.start[b, : len(sc)]
            assert np.array_equal(start, np.array(want[0]))


def test_reward_sums_to_total_weighted_tardiness(cfg):
    rng = np.random.default_rng(0)
    scs = [generate(scenario_model(cfg), s, tasks=100, machines=2, load=1.1) for s in range(6)]

    def random_action(state, b):
        return int(rng.integers(state.qlen[b]))

    for skip in (True, False):
        state, orders, accrued = _run_lockstep(scs, 2, random_action, skip_forced=skip)
        for b, sc in enumerate(scs):
            _, _, _, w, d = sc.arrays
            end = np.empty(len(sc))
            end[orders[b]] = state.end[b, : len(sc)]
            total = float((w * np.maximum(end - d, 0.0)).sum())
            assert np.isclose(accrued[b], total, rtol=1e-9, atol=1e-6)
            assert total > 0  # the check would be empty otherwise


def test_accrued_never_decreases(cfg):
    sc = generate(scenario_model(cfg), 3, tasks=200)
    state, _ = core.pack([sc.arrays], 1)
    core.advance_batch(state, False)
    steps = [state.accrued[0]]
    while not state.done[0]:
        core.apply_batch(state, np.array([state.qlen[0] - 1]))
        core.advance_batch(state, False)
        steps.append(state.accrued[0])
    assert min(steps) >= 0.0 and sum(steps) > 0


def test_forced_decisions_are_skipped(cfg):
    sc = generate(scenario_model(cfg), 5, tasks=200)
    counts = {}
    for skip in (True, False):
        state, _ = core.pack([sc.arrays], 1)
        core.advance_batch(state, skip)
        while not state.done[0]:
            if skip:
                assert state.qlen[0] >= 2
            core.apply_batch(state, np.array([0]))
            core.advance_batch(state, skip)
        counts[skip] = state.decisions[0]
    assert counts[False] == len(sc) and counts[True] < counts[False]


def test_queue_is_readable_without_copy(cfg):
    sc = generate(scenario_model(cfg), 7, tasks=200)
    state, _ = core.pack([sc.arrays], 1)
    core.advance_batch(state, True)
    view = state.queue[0, : state.qlen[0]]
    assert view.base is state.queue or view.base is state.queue.base
    # queue order is arrival order (the tie rule depends on it)
    assert np.all(np.diff(state.arr[0, view]) >= 0)
