"""``plan``: decision-time lookahead on top of a base policy, compiled.

At a decision with at least two waiting tasks the planner takes the base
policy's ``candidates`` best tasks (its own choice first), and for each one
starts it now and lets the base policy take every later decision, on
``samples`` sampled futures. Every candidate sees the same futures (common
random numbers), so what differs between two candidates' costs is the
decision, not the luck of the draw. The rollouts are the candidate evaluator's
(``sched.learn.search.lookahead.sample_costs``, shared with the teacher), reading
only what a scheduler knows: the waiting tasks' durations drawn around their
estimates, each busy GPU free at its known time (the time given to
``rank()``, or in a simulation the running task's start plus its estimate),
and the next ``horizon`` arrivals from the pool of sampled futures.

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
from typing import NamedTuple

import numba as nb
import numpy as np

from sched.learn.policy import kernel
from sched.learn.search import lookahead as L
from sched.sim import core as S
from sched.sim import rules
from sched.sim import waiting as W
from sched.sim.top import top

#: ``base`` value of a learned (scorer) base policy; rules use their rule id.
LEARNED = L.LEARNED
#: ``roll`` value of :func:`plan_rollout` when the base policy continues the rollouts.
SAME = -2
#: Stride between the futures of consecutive decisions in the pool (a prime).
DECISION_STRIDE = 7919


class Gate(NamedTuple):
    """How a decision is planned: the base policy's ``candidates`` best tasks compared on at
    most ``samples`` sampled futures, drawn ``chunk`` at a time between two checks of the
    paired stopping rule (:func:`settled`; ``chunk`` >= ``samples``: every sample), the
    deviation test's ``z`` (:func:`choose`)."""

    candidates: int
    samples: int
    chunk: int
    z: float
    #: plan.wait_s: holding the free GPU until the next arrival is one more candidate while the
    #: GPU has been idle less than this many seconds since it freed (:func:`with_wait`); 0: never
    wait: float = 0.0
    #: a delayed base rule's alpha and bound on a hold (``waiting.decide``): its own choice at a
    #: decision may be a hold, the :data:`lookahead.WAIT` candidate; inf: a base that never holds
    alpha: float = np.inf
    hold_max: float = np.inf


@nb.njit(cache=True, nogil=True)
def candidates(s, K, base, k, net, ws):
    """Queue positions of the base policy's K best tasks in slot 0, its own choice first:
    a rule's by priority, a learned policy's by score among its candidates."""
    ql = s.qlen[0]
    if base >= 0:
        t = s.t[0]
        v_m = s.speed[0, s.pending[0]]  # the deciding GPU's speed, as core.pick reads it
        pbar = 0.0
        for q in range(ql):
            pbar += s.est[0, s.queue[0, q]]
        pbar /= ql
        at = rules.Decision(t, pbar, v_m)
        v = np.empty(ql)
        for q in range(ql):
            j = s.queue[0, q]
            v[q] = rules.priority(
                base, k, at, s.arr[0, j], s.est[0, j], s.w[0, j], s.due[0, j], s.static[0, j]
            )
        return top(v, K, S.pick(s, 0, base, k))
    m = kernel.scored(s, 0, net, ws)
    v = np.full(ql, -np.inf)
    for i in range(m):
        x = ws.v[i]
        v[ws.cand[i]] = x if x == x else -np.inf
    return top(v, K, ws.cand[kernel.argmax(ws.v, m)])


@nb.njit(cache=True, nogil=True)
def with_wait(s, cands, wait):
    """``(cands, until)``: the candidates with :data:`lookahead.WAIT` last, and the latest end of
    its hold, when slot 0's pending GPU has stood idle with work waiting less than ``wait``
    seconds (since it freed, ``waiting.freed_at``, or since the oldest waiting task arrived if
    that is later: the hold respects the bound); else ``(cands, now)``, unchanged."""
    since = -np.inf
    for q in range(s.qlen[0]):
        a = s.arr[0, s.queue[0, q]]
        since = a if since == -np.inf else min(since, a)
    until = max(W.freed_at(s, 0, s.pending[0]), since) + wait
    if not until > s.t[0]:
        return cands, s.t[0]
    out = np.empty(cands.shape[0] + 1, np.int64)
    out[:-1] = cands
    out[-1] = L.WAIT
    return out, until


@nb.njit(cache=True, nogil=True)
def own_hold(s, cands, base, k, gate):
    """``(cands, until)`` at a delayed base rule's decision: when it holds the GPU (until its wake
    time), :data:`lookahead.WAIT` first (its own choice), the tasks after it; else unchanged, now."""
    q, wake = W.decide(s, 0, base, k, gate.alpha, gate.hold_max)
    if not wake > s.t[0]:
        return cands, s.t[0]
    out = np.empty(cands.shape[0] + 1, np.int64)
    out[0] = L.WAIT
    out[1:] = cands
    return out, wake


@nb.njit(cache=True)
def bounds(costs, n, z, out):
    """out[c] := the pessimistic bound of candidate c against row 0 (the base's choice) on
    ``costs[:, :n]``: the mean paired difference ``costs[c] - costs[0]`` plus ``z`` standard
    errors; out[0] = 0. With one sample there is no standard error: +inf for every c > 0."""
    out[0] = 0.0
    for c in range(1, costs.shape[0]):
        if n < 2:
            out[c] = np.inf
            continue
        m = 0.0
        for r in range(n):
            m += costs[c, r] - costs[0, r]
        m /= n
        v = 0.0
        for r in range(n):
            d = costs[c, r] - costs[0, r] - m
            v += d * d
        out[c] = m + z * math.sqrt(v / (n - 1) / n)


@nb.njit(cache=True)
def best_of(b):
    """Index of the lowest bound ``b`` (:func:`bounds`) when it is below zero (b[0] = 0), else 0."""
    best = 0
    for c in range(1, b.shape[0]):
        if b[c] < b[best]:
            best = c
    return best


@nb.njit(cache=True)
def choose(costs, n, z):
    """Index of the candidate to start given ``costs[:, :n]`` (row 0: the base's choice):
    the one with the lowest :func:`bounds`, when that bound is below zero; else 0."""
    b = np.empty(costs.shape[0])
    bounds(costs, n, z, b)
    return best_of(b)


@nb.njit(cache=True)
def settled(costs, n, z):
    """The paired stopping rule: whether every candidate's interval ``mean +/- z * se`` of its
    paired difference with row 0 excludes zero on ``costs[:, :n]`` (each is clearly better or
    clearly worse than the base's choice: more samples would not change the decision)."""
    if n < 2:
        return False
    hi = np.empty(costs.shape[0])
    bounds(costs, n, z, hi)
    lo = np.empty(costs.shape[0])
    bounds(costs, n, -z, lo)
    for c in range(1, costs.shape[0]):
        if lo[c] <= 0.0 <= hi[c]:
            return False
    return True


@nb.njit(cache=True)
def sample_gated(s, cands, gate, costs, ev, seeds):
    """Fill ``costs[:, :n]`` ``gate.chunk`` samples at a time until :func:`settled` or
    ``gate.samples``; returns n. ``chunk`` >= ``samples``: every sample (plan's fixed count).
    The samples are those :func:`lookahead.sample_costs` draws with the evaluator ``ev`` from
    ``seeds``, (f0, z0): stopping early only drops the last ones."""
    samples, z = gate.samples, gate.z
    n = 0
    step = max(2, gate.chunk)
    while n < samples:
        r1 = min(samples, n + step)
        L.sample_costs(s, cands, n, r1, costs, ev, seeds)
        n = r1
        if n < samples and settled(costs[:, :n], n, z):
            break
    return n


@nb.njit(cache=True)
def futures_of(seed, dec):
    """(f0, zseed0) of ``lookahead.sample_costs`` for decision ``dec`` of a planner seeded ``seed``."""
    return seed * 104729 + dec * DECISION_STRIDE, seed * 1000003 + dec * 7919 + 1


@nb.njit(cache=True, nogil=True)  # nogil: the benchmark runs scenarios on threads side by side
def plan_rollout(s, gate, seed, base, k, ev):
    """Schedule slot 0 of ``s`` with the planner from its start; returns (planned
    decisions, decisions that deviated from the base policy, samples drawn). ``gate``: a
    :class:`Gate` (``chunk`` > 0: the paired stopping rule, :func:`sample_gated`, the
    teacher's; 0: every sample); ``base``, ``k``: the base policy (a rule id and its k, or
    LEARNED: ``ev.net``); ``ev``: the rollouts (``lookahead.Evaluator``; its ``la.rule`` the
    continuation, LEARNED: ``ev.net``; ``ev.ws`` a ``kernel.workspace`` for its scratch's
    queues)."""
    K, samples, z = gate.candidates, gate.samples, gate.z
    chunked = Gate(K, samples, gate.chunk if gate.chunk > 0 else samples, z)  # 0: all at once
    net, ws = ev.net, ev.ws
    if base >= 0:
        S.set_rule(s, 0, base)
    else:
        S.set_rule(s, 0, rules.ATC)  # the learned policy reads ATC's static parts
    delayed = gate.alpha < np.inf
    holds = gate.wait > 0.0 or delayed  # a lone waiting task is a decision too: it may wait
    costs = np.empty((K + 1 if holds else K, max(samples, 1)))
    dec = 0
    moved = 0
    drawn = 0
    while S._advance(s, 0, not holds):
        cands = candidates(s, K, base, k, net, ws)
        until = s.t[0]
        if delayed:
            cands, until = own_hold(s, cands, base, k, gate)
        if gate.wait > 0.0 and not until > s.t[0]:
            cands, until = with_wait(s, cands, gate.wait)
        ev.hold[0] = until
        mt = cands.shape[0]
        c = 0
        if mt >= 2 and samples >= 2:
            # the candidates' rows only: with fewer waiting tasks than K, the rows past them hold
            # whatever memory np.empty gave, which the stopping rule would read (issue 45: the
            # teacher's row of the plan benchmark changed from one call to the next)
            n = sample_gated(s, cands, chunked, costs[:mt], ev, futures_of(seed, dec))
            drawn += n
            c = choose(costs[:mt], n, z)
        if c != 0:
            moved += 1
        if cands[c] == L.WAIT:
            W.hold(s, 0, until, np.inf)
        else:
            S._start(s, 0, cands[c], s.pending[0])
        dec += 1
    return dec, moved, drawn


@nb.njit(cache=True, nogil=True)  # nogil: sched serve's other calls go on meanwhile
def continue_base(s, base, k, net, ws):
    """Take every remaining decision of slot 0 with the base policy (static parts set)."""
    kernel.run_policy(s, 0, base, k, net, ws)
