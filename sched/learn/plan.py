"""``plan``: decision-time lookahead on top of a base policy, compiled.

At a decision with at least two waiting tasks the planner takes the base
policy's ``candidates`` best tasks (its own choice first), and for each one
starts it now and lets the base policy take every later decision, on
``samples`` sampled futures. Every candidate sees the same futures (common
random numbers), so what differs between two candidates' costs is the
decision, not the luck of the draw. Each sampled future is:

* the waiting tasks' durations drawn around their estimates with the
  calibrated estimate noise, ``duration = estimate * exp(-sigma * Z)`` (the
  scenario model writes ``estimate = duration * exp(sigma * Z)``); the true
  durations are never read;
* the next ``horizon`` arrivals from the scenario model (kinds, load,
  priorities, due rule): a pool of futures drawn from seeds at the end of the
  training range (:func:`sched.learn.teacher.future_pool`);
* each busy GPU free at its known time: the time given to ``rank()``, or in a
  simulation the running task's start plus its estimate.

The cost of a candidate on a sample is the weighted tardiness of every task
started from now on. The planner deviates from the base policy's own choice
only when a paired test says so: for each other candidate the differences
``d_r = cost(candidate, r) - cost(base choice, r)`` give a mean and a
standard error; the candidate with the lowest ``mean + z * se`` is started
when that bound is below zero, else the base policy's choice is.

Everything random comes from ``seed`` and the decision's index, so a fixed
sample count gives the same decision for the same seed and inputs.
"""

import math

import numba as nb
import numpy as np

from sched.learn import scorer
from sched.learn.teacher import _with_future
from sched.sim import core as S
from sched.sim import rules

#: ``base`` value of a learned (scorer) base policy; rules use their rule id.
LEARNED = -1
#: ``roll`` value of :func:`plan_rollout` when the base policy continues the rollouts.
SAME = -2
#: Stride between the futures of consecutive decisions in the pool (a prime).
DECISION_STRIDE = 7919


@nb.njit(cache=True)
def base_pick(s, base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1):
    """Queue position the base policy starts now in slot 0 (a rule's pick, or the scorer's)."""
    if base >= 0:
        return S.pick(s, 0, base, k)
    return scorer._decide(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1)


@nb.njit(cache=True)
def candidates(s, K, base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1):
    """Queue positions of the base policy's K best tasks in slot 0, its own choice first."""
    ql = s.qlen[0]
    v = np.empty(ql)
    if base >= 0:
        t = s.t[0]
        v_m = s.speed[0, s.pending[0]]  # the deciding GPU's speed, as core.pick reads it
        pbar = 0.0
        for q in range(ql):
            pbar += s.est[0, s.queue[0, q]]
        pbar /= ql
        for q in range(ql):
            j = s.queue[0, q]
            v[q] = rules.priority(
                base, t, s.arr[0, j], s.est[0, j], s.w[0, j], s.due[0, j], k, pbar, s.static[0, j], v_m
            )
    else:
        scorer.scores(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1, v)
        for q in range(ql):
            if math.isnan(v[q]):
                v[q] = -np.inf
    first = base_pick(s, base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1)
    order = np.argsort(-v, kind="mergesort")  # ties in queue order, as the rules break them
    n = min(K, ql)
    out = np.empty(n, dtype=np.int64)
    out[0] = first
    i = 1
    for q in order:
        if i >= n:
            break
        if q != first and v[q] > -np.inf:
            out[i] = q
            i += 1
    return out[:i]


@nb.njit(cache=True)
def known_free(s):
    """When each GPU of slot 0 frees as a scheduler knows it: a free GPU's time, a busy
    one's running task's start plus its estimate (not its true end), at least now."""
    t = s.t[0]
    M = s.mfree.shape[1]
    out = np.empty(M)
    for m in range(M):
        j = s.mtask[0, m]
        if s.mfree[0, m] <= t or j < 0:
            out[m] = s.mfree[0, m]
        else:
            out[m] = max(t, s.start[0, j] + s.est[0, j])
    return out


@nb.njit(cache=True)
def _sampled(s, dst, fa, fd, fe, fw, fdue, horizon, sigma, zseed, static_rule, mfree):
    """Slot 0 of ``dst`` := slot 0 of ``s``'s waiting tasks with sampled durations,
    the GPUs at ``mfree``, and one sampled future of ``horizon`` arrivals."""
    _with_future(s, 0, dst, fa, fd, fe, fw, fdue, horizon)
    np.random.seed(zseed)
    for q in range(s.qlen[0]):  # overwrite the true durations _with_future copied
        dst.dur[0, q] = dst.est[0, q] * math.exp(-sigma * np.random.standard_normal())
    for m in range(mfree.shape[0]):
        dst.mfree[0, m] = mfree[m]
    for j in range(dst.n[0]):
        dst.static[0, j] = rules.static_part(static_rule, dst.est[0, j], dst.w[0, j])


@nb.njit(cache=True)
def sample_costs(
    s, scratch, cands, r0, r1, costs, FA, FD, FE, FW, FDUE, horizon, sigma, seed, dec,
    base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1,
):  # fmt: skip
    """costs[c, r] := weighted tardiness of starting ``cands[c]`` now then following the
    policy ``base`` (the base policy, or the rule that continues the rollouts), on sampled
    future r, for r in [r0, r1) (the same futures for every c)."""
    nf = FA.shape[0]
    mfree = known_free(s)
    static_rule = base if base >= 0 else rules.ATC
    for r in range(r0, r1):
        f = (seed * 104729 + dec * DECISION_STRIDE + r) % nf
        zseed = (seed * 1000003 + dec * 7919 + r * 31 + 1) % 2147483647
        for c in range(cands.shape[0]):
            _sampled(
                s, scratch, FA[f], FD[f], FE[f], FW[f], FDUE[f], horizon, sigma, zseed, static_rule, mfree
            )
            S._start(scratch, 0, cands[c], scratch.pending[0])
            while S._advance(scratch, 0, True):
                q = base_pick(
                    scratch,
                    base,
                    k,
                    p_ref,
                    load,
                    top_k,
                    W0,
                    b0,
                    W1,
                    b1,
                    W2,
                    b2,
                    lin,
                    xb,
                    gb,
                    inp,
                    ctx,
                    h0,
                    h1,
                )
                S._start(scratch, 0, q, scratch.pending[0])
            costs[c, r] = scratch.wt_started[0]


@nb.njit(cache=True)
def choose(costs, n, z):
    """Index of the candidate to start given ``costs[:, :n]`` (row 0: the base's choice):
    the one whose paired difference with row 0 has the lowest ``mean + z * se``, when that
    bound is below zero; else 0. With one sample there is no standard error: row 0."""
    if n < 2:
        return 0
    best = 0
    best_bound = 0.0
    for c in range(1, costs.shape[0]):
        m = 0.0
        for r in range(n):
            m += costs[c, r] - costs[0, r]
        m /= n
        v = 0.0
        for r in range(n):
            d = costs[c, r] - costs[0, r] - m
            v += d * d
        bound = m + z * math.sqrt(v / (n - 1) / n)
        if bound < best_bound:
            best_bound = bound
            best = c
    return best


@nb.njit(cache=True)
def plan_rollout(
    s, scratch, K, samples, z, FA, FD, FE, FW, FDUE, horizon, sigma, seed, roll, roll_k,
    base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin,
):  # fmt: skip
    """Schedule slot 0 of ``s`` with the planner from its start; returns (planned
    decisions, decisions that deviated from the base policy). ``roll``: the rule (id,
    with its k ``roll_k``) that continues the rollouts, or :data:`SAME`: the base policy."""
    rb = base if roll == SAME else roll
    rk = k if roll == SAME else roll_k
    if base >= 0:
        S.set_rule(s, 0, base)
    xb, gb, inp, ctx, h0, h1 = scorer._buffers(scratch, W0, W1)  # scratch holds the most tasks
    costs = np.empty((K, max(samples, 1)))
    dec = 0
    moved = 0
    while S._advance(s, 0, True):
        cands = candidates(
            s, K, base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1
        )
        c = 0
        if cands.shape[0] >= 2 and samples >= 2:
            sample_costs(
                s, scratch, cands, 0, samples, costs, FA, FD, FE, FW, FDUE, horizon, sigma, seed, dec,
                rb, rk, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1,
            )  # fmt: skip
            c = choose(costs[: cands.shape[0]], samples, z)
        if c != 0:
            moved += 1
        S._start(s, 0, cands[c], s.pending[0])
        dec += 1
    return dec, moved


@nb.njit(cache=True)
def continue_base(s, base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1):
    """Take every remaining decision of slot 0 with the base policy (static parts set)."""
    while S._advance(s, 0, True):
        q = base_pick(s, base, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1)
        S._start(s, 0, q, s.pending[0])
