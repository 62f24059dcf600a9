"""rank() with a learned policy: the certified fast rollout gives the reference's schedule.

``sched.learn.scorer.greedy_rollout`` (the reference: every decision encodes
the whole queue, as the policy is defined) costs time quadratic in the queue
with several libm calls per waiting task and decision; ``greedy_rollout_fast``
takes each decision through ``sched.learn.scorer_fast.decide`` (a bounded
approximation of the queue context, certified) and falls back to the
reference decision when it cannot be sure. These tests check that the two
give the same schedule, bit for bit, on many random queues, that the bounds
the certificate rests on hold, and that the fast decisions are the rule (a
count of work, not a timing: speed is measured in benchmarks/test_rank_speed.py).
"""

import math

import numpy as np
import pytest
import torch

from sched.config import validate_config
from sched.learn import features as F
from sched.learn import scorer
from sched.learn import scorer_fast as SF
from sched.learn import scorer_pool as SP
from sched.learn.networks import Policy, build
from sched.learn.policy_file import arch_of, policy_meta
from sched.learn.ppo import Args
from sched.sim import core as S
from sched.sim import rules
from sched.sim.one_queue import rollout_order


def make_policy(top_k, hidden=16, seed=0, sigma=0.3):
    """A scorer with top_k candidates and weights drawn from N(0, sigma) (its choices
    differ from ATC's); sigma None: the untrained network (ATC plus a small correction)."""
    args = Args(seed=1, top_k=top_k, hidden=hidden)
    torch.manual_seed(seed)
    net = build(arch_of(args))
    if sigma is not None:
        with torch.no_grad():
            for p in net.parameters():
                p.normal_(0.0, sigma)
    return Policy(net, policy_meta(validate_config({}, "defaults"), args))


def make_queue(rng, n, kind):
    """(arrival, duration, estimate, weight, due) of n tasks; kinds cover the cases
    rank() meets: all waiting now, earlier and later arrivals, Unix-epoch clocks,
    duplicated tasks (ties), far and tiny values."""
    now = 1.7e9 if kind in ("epoch", "earlier") else 0.0
    est = rng.lognormal(math.log(600.0), 1.0, n)
    w = rng.choice([1.0, 2.0, 5.0, 10.0], n)
    arr = np.full(n, now)
    if kind == "earlier":
        arr = now - rng.uniform(0.0, 5000.0, n)
    elif kind == "later":
        arr = now + np.sort(rng.uniform(0.0, 20000.0, n))
    due = arr + rng.uniform(-2000.0, 20000.0, n) * rng.choice([0.1, 1.0, 10.0], n)
    if kind == "duplicates":
        pick = rng.integers(0, max(1, n // 5), n)
        est, w, due = est[pick], w[pick], due[pick]
    elif kind == "extreme":
        due[rng.random(n) < 0.1] = now + 1e12
        est[rng.random(n) < 0.05] = 1e-3
        w[rng.random(n) < 0.05] = 1e6
    return arr, est.copy(), est, w, due


KINDS = ("now", "epoch", "earlier", "later", "duplicates", "extreme")


def both(policy, sc, machines=1, free=None):
    fast = scorer.run_one(policy, sc, machines, free, fast=True)
    ref = scorer.run_one(policy, sc, machines, free, fast=False)
    return fast, ref


def same(a, b):
    return all(np.array_equal(u, v, equal_nan=True) for u, v in zip(a, b))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("top_k", [1, 4, 16])
def test_fast_rollout_gives_the_reference_schedule(kind, top_k):
    rng = np.random.default_rng(100 * KINDS.index(kind) + top_k)
    for case in range(6):
        sigma = [0.3, 1.0, None][case % 3]
        policy = make_policy(top_k, hidden=int(rng.choice([8, 16, 32])), seed=case, sigma=sigma)
        n = int(rng.choice([2, 3, 17, 60, 150]))
        machines = int(rng.choice([1, 2, 5]))
        sc = make_queue(rng, n, kind)
        free = None if case % 3 == 0 else sc[0].min() + rng.uniform(-1000.0, 8000.0, machines)
        fast, ref = both(policy, sc, machines, free)
        assert same(fast, ref), (kind, top_k, case, n, machines)


def test_the_policies_compared_differ_from_atc():
    """A comparison of two copies of ATC would prove little: these policies choose otherwise."""
    rng = np.random.default_rng(5)
    sc = make_queue(rng, 150, "now")
    (start, _, _), _ = both(make_policy(16, seed=3), sc)
    order_ppo = np.lexsort((np.arange(150), start))
    order_atc, *_ = rollout_order(sc[0], sc[2], sc[3], sc[4], np.full(1, -np.inf), np.ones(1), rules.ATC, 2.0)
    assert not np.array_equal(order_ppo, order_atc)


def test_without_a_candidate_limit_the_reference_runs():
    """top_k 0 (every waiting task a candidate): no fast path, the reference schedule."""
    rng = np.random.default_rng(7)
    policy = make_policy(0, seed=1)
    sc = make_queue(rng, 80, "earlier")
    assert not scorer.fast_path_applies(0, sc)
    fast, ref = both(policy, sc, 2, None)
    assert same(fast, ref)


def test_rank_orders_a_trained_policy_as_the_reference(tiny_policy):
    from sched.learn.policy_file import load

    policy = load(tiny_policy[0])
    rng = np.random.default_rng(11)
    for kind in KINDS:
        sc = make_queue(rng, 120, kind)
        fast, ref = both(policy, sc, 2, None)
        assert same(fast, ref), kind


def run_counts(policy, sc, machines=1):
    state, _ = S.pack([sc], machines, None)
    w = scorer.weights_of(policy)
    ws = SF.workspace(state.queue.shape[1], policy.net.top_k, w[0].shape[0])
    enc = policy.encoder
    load = float(np.asarray(enc.load).ravel()[0])
    return scorer.greedy_rollout_fast(
        state, enc.k, enc.p_ref, load, policy.net.top_k, *w, scorer.fast_weights_of(policy), ws
    )


def test_fast_decisions_are_the_rule():
    """Work, counted: on a queue of 2,000 tasks nearly every decision is a fast one (a few
    vectorised passes and a network on top_k candidates), not the reference encoding of
    the whole queue (five libm calls per waiting task and a sort)."""
    rng = np.random.default_rng(13)
    certified, exact = run_counts(make_policy(16, hidden=64, seed=2), make_queue(rng, 2000, "epoch"))
    assert certified + exact == 1999  # the last task's start is forced
    assert exact <= 20


def test_fast_tanh_is_within_its_stated_error():
    x = np.concatenate(
        [
            np.linspace(-30.0, 30.0, 2_000_001),
            [0.0, -0.0, 1e-300, -1e-300, 5e-324, 19.999, 20.0, 20.001, 1e300, -1e300],
        ]
    ).reshape(1, -1)
    y = x.copy()
    SF.tanh_fast(y)
    err = np.abs(y - np.tanh(x)).max()
    assert err < SF.EPS_TANH_FAST / 16
    assert np.all(np.abs(y) <= 1.0)


def test_candidates_are_the_stable_atc_order():
    rng = np.random.default_rng(17)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        a = rng.choice([-1.0, 0.0, 0.5, 2.0], n) if rng.random() < 0.5 else rng.normal(size=n)
        live = (rng.random(n) < 0.8).astype(float)
        if not live.any():
            live[0] = 1.0
        top_k = int(rng.integers(1, 20))
        wk = np.zeros((5, n))
        wk[SP.W_A] = a
        rows = np.zeros((SP.N_ROWS, n))
        pos = np.zeros(top_k, np.int64)
        m = SP.select(n, live, rows, wk, top_k, pos, np.zeros(SP.N_ACC))
        alive = np.flatnonzero(live)
        want = alive[np.argsort(-a[alive], kind="stable")][:top_k]
        assert list(pos[:m]) == list(want)


def exact_context(s, k, p_ref, load):
    """_decide's pooling: means and maxima in queue order, then the globals."""
    ql = s.qlen[0]
    xb = np.empty((s.queue.shape[1], F.N_TASK))
    gb = np.empty(F.N_GLOBAL)
    F._encode_slot(s, 0, k, p_ref, load, xb, gb)
    means, maxima = [], []
    for f in range(F.N_TASK):
        total, mx = 0.0, -math.inf
        for q in range(ql):
            total += xb[q, f]
            if xb[q, f] > mx:
                mx = xb[q, f]
        means.append(total / ql)
        maxima.append(mx)
    return np.array(means + maxima + list(gb)), xb[:ql]


@pytest.mark.parametrize("kind", KINDS)
def test_the_bounds_of_the_certificate_hold(kind):
    """At every decision of random rollouts: the fast context is within its bound of
    _decide's (equal where the bound is 0), the candidates and their features are
    _decide's exactly, and the fast scores are within E of a float64 evaluation."""
    rng = np.random.default_rng(1000 + KINDS.index(kind))
    policy = make_policy(8, hidden=16, seed=4)
    W0, b0, W1, b1, W2, b2, lin = scorer.weights_of(policy)
    fw = scorer.fast_weights_of(policy)
    enc = policy.encoder
    load = float(np.asarray(enc.load).ravel()[0])
    checked = 0
    for _ in range(3):
        sc = make_queue(rng, 90, kind)
        s, _ = S.pack([sc], 2, None)
        ws = SF.workspace(s.queue.shape[1], 8, W0.shape[0])
        idx, live, mstate, pos, cin, dcin, X, v = ws[0], ws[1], ws[3], ws[5], ws[8], ws[9], ws[10], ws[13]
        while S._advance(s, 0, True):
            q = SF.decide(s, enc.k, enc.p_ref, load, 8, fw, ws)
            ql = s.qlen[0]
            c_exact, xb = exact_context(s, enc.k, enc.p_ref, load)
            if np.isfinite(cin).all():
                assert np.all(np.abs(cin - c_exact) <= dcin), np.abs(cin - c_exact) - dcin
                assert np.array_equal(cin[dcin == 0], c_exact[dcin == 0])
                m = min(8, ql)
                ranks = np.round(xb[:, F.ATC_RANK_INDEX] * ql).astype(int)
                qpos = [SF.queue_position(s, ql, idx[e]) for e in pos[:m]]
                assert [ranks[i] for i in qpos] == list(range(m))
                assert np.array_equal(X[:m], xb[qpos])
                inp = np.hstack([X[:m], np.tile(c_exact, (m, 1))])
                ref = np.tanh(np.tanh(inp @ W0.T + b0) @ W1.T + b1) @ W2[0] + b2[0] + X[:m] @ lin
                E = SF.error_bound(X, m, cin, dcin, fw)
                assert np.all(np.abs(v[:m] - ref) <= E)
                checked += 1
            if q < 0:
                q = scorer._decide(
                    s, enc.k, enc.p_ref, load, 8, W0, b0, W1, b1, W2, b2, lin, *scorer._buffers(s, W0, W1)
                )
            SP.kill(s.queue[0, q], idx, live, mstate)
            S._start(s, 0, q, s.pending[0])
    assert checked > 100
