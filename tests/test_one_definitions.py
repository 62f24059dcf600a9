"""Concepts defined once (issue 33, item 3): the top-k, the State layout, the reward, the
rollout loop and the locked cache. Where two former copies were not obviously the same
(the top-k's tie order, the layout's arrays), a test here says they are."""

import threading

import numpy as np
import pytest

from sched.cache import Cache
from sched.sim import core as S
from sched.sim import rules
from sched.sim.state import allocate, empty_state
from sched.sim.top import offer, top


def _values(rng, n):
    """Values with many ties, signed zeros, infinities and NaN."""
    v = rng.choice([-1.5, -0.0, 0.0, 0.5, 2.0, np.inf, -np.inf, np.nan], n)
    return np.where(rng.random(n) < 0.3, rng.normal(size=n), v)


@pytest.mark.parametrize("seed", range(20))
def test_top_is_the_stable_descending_order(seed):
    """``top`` is the argsort the planner's candidates used (stable, by decreasing value, -inf
    and NaN left out, ``first`` put first), on ties too."""
    rng = np.random.default_rng(seed)
    v = _values(rng, int(rng.integers(1, 40)))
    for n in (1, 3, len(v), len(v) + 2):
        for first in (-1, int(rng.integers(0, len(v)))):
            order = np.argsort(-v, kind="mergesort")
            want = [first] if first >= 0 else []
            want += [int(q) for q in order if q != first and v[q] > -np.inf]
            assert top(v, n, first).tolist() == want[: min(n, len(v))]


@pytest.mark.parametrize("seed", range(10))
def test_offer_keeps_the_kernels_running_top(seed):
    """``offer`` in index order (the learned policy's candidates, NaN read as -inf) gives the
    first K of the stable descending order, -inf included."""
    rng = np.random.default_rng(seed)
    v = _values(rng, 30)
    v[np.isnan(v)] = -np.inf
    for K in (1, 4, 30):
        idx, val, m = np.empty(K, np.int64), np.empty(K), 0
        for q in range(len(v)):
            m = offer(idx, val, m, K, q, v[q])
        assert m == K and idx.tolist() == np.argsort(-v, kind="stable")[:K].tolist()


def test_the_gym_envs_visible_rows_are_the_best_ranks():
    rank = np.array([3, 0, 4, 1, 2], np.float32) / 5
    assert top(-rank.astype(np.float64), 3).tolist() == np.argsort(rank, kind="stable")[:3].tolist()


def test_one_state_layout():
    """``empty_state`` is ``allocate``: every array zero but ``mfree0`` (-inf) and ``speed``."""
    s = empty_state(2, 0, "2x1.0,1x0.5")
    assert s.arr.shape == (2, 1) and s.speed.tolist() == [[1.0, 1.0, 0.5]] * 2
    assert np.all(s.mfree0 == -np.inf)
    t = allocate(2, 1, np.array([1.0, 1.0, 0.5]))
    for f, a, b in zip(s._fields, s, t):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), f
        assert a.flags.c_contiguous and a.flags.writeable, f


def test_the_reward_of_a_step():
    from sched.learn.env.vec_env import reward

    assert reward(np.array([0.0, 250.0]), 0.001).tolist() == [-0.0, -0.25]
    assert reward(1000.0, 0.5) == -500.0


def test_the_rule_rollout_loop_is_the_batch_rollout():
    """``core.run_rule`` from a slot's start is ``rollout_batch``'s schedule and decision count."""
    rng = np.random.default_rng(3)
    sc = (np.sort(rng.uniform(0, 500, 30)), *rng.uniform(10, 100, (2, 30)), rng.choice([1.0, 2.0], 30),
          rng.uniform(0, 900, 30))  # fmt: skip
    a, _ = S.pack([sc], 2)
    S.rollout_batch(a, rules.ATC, 1.5)
    b, _ = S.pack([sc], 2)
    S.set_rule(b, 0, rules.ATC)
    n = S.run_rule(b, 0, rules.ATC, 1.5)
    assert n == a.decisions[0] and np.array_equal(a.start, b.start) and np.array_equal(a.mach, b.mach)


def test_the_cache_loads_each_key_once_from_threads():
    c, calls, gate = Cache(2), [], threading.Barrier(8)

    def load(k):
        calls.append(k)
        return f"v{k}"

    def one(i):
        gate.wait()
        return c.get(i % 2, lambda: load(i % 2))

    threads_out = []
    ts = [threading.Thread(target=lambda i=i: threads_out.append(one(i))) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(calls) == [0, 1] and sorted(threads_out) == ["v0"] * 4 + ["v1"] * 4
    assert 0 in c and c.get(2, lambda: "v2") == "v2" and 0 not in c  # full: emptied before the store
    with pytest.raises(KeyError):
        c.get(3, lambda: {}[3])
    assert 3 not in c
