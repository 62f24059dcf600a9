"""The candidate evaluator: what starting each candidate now costs on sampled futures.

One definition for the two places that compare candidates by rollouts: the
teacher that labels training states (``sched.learn.search.teacher``) and ``plan``,
the lookahead at decision time (``sched.learn.search.plan``). For a decision of
slot 0 of a State and its candidates (queue positions), :func:`sample_costs`
starts each candidate now on a sampled future and lets a continuation
policy take every later decision; the cost is the weighted tardiness of
every task started from now on. Every candidate sees the same futures
(common random numbers), so what differs between two candidates' costs is
the decision, not the luck of the draw.

A sampled future (:func:`sampled`) is the waiting tasks and the GPUs as they
are now, plus the next ``horizon`` arrivals of a pool of futures drawn from
the scenario model (:func:`sched.learn.search.teacher.future_pool`). What it reads
of the present is a setting (:class:`Lookahead`):

* ``estimates_only`` (``plan``): only what a scheduler knows. The waiting
  tasks' durations are drawn around their estimates with the calibrated
  estimate noise, ``duration = estimate * exp(-sigma * Z)`` (the scenario
  model writes ``estimate = duration * exp(sigma * Z)``), and a busy GPU
  frees at its running task's start plus its estimate;
* otherwise (the teacher): the queue's true durations and the GPUs' true
  free times, which a teacher may know and its student never sees.

The futures of a decision are ``pool[(f0 + r) % len(pool)]`` for sample r,
the noise of sample r seeded by ``zseed0 + 31 r``: the caller fixes both from
its seed and the decision's index, so that the costs depend on nothing else.
"""

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from sched.learn.policy import kernel
from sched.sim import core as S
from sched.sim import rules
from sched.sim import waiting as W
from sched.sim.state import core_jit

#: ``Lookahead.rule`` (and a base policy's rule id) of a learned policy: its compiled decision.
LEARNED = -1
#: A candidate that is no task: hold the free GPU (until ``Evaluator.hold[0]`` or the next arrival).
WAIT = -1


class Futures(NamedTuple):
    """The pool of sampled futures: (futures, horizon) arrays of arrival offsets after now,
    durations, estimates, weights and due offsets after now."""

    arr: np.ndarray
    dur: np.ndarray
    est: np.ndarray
    w: np.ndarray
    due: np.ndarray


class Lookahead(NamedTuple):
    """How a candidate's rollouts are sampled and continued."""

    horizon: int  #: future arrivals per sample (at most the pool's)
    sigma: float  #: the estimate noise (log scale) the waiting tasks' durations are drawn with
    estimates_only: bool  #: True: only what a scheduler knows (module doc); False: true durations
    rule: int  #: the continuation: a rule id, or LEARNED (``net``)
    k: float  #: ATC's k of a rule continuation (and of the terminal estimate's frozen ATC order)
    #: decisions a rollout takes after the candidate's start, then :func:`terminal`; < 0: to the end
    depth: int = -1
    #: a delayed continuation's alpha (``rules.delayed_start``, ``la.rule`` its base rule): its
    #: decisions hold the GPU as its own do (``waiting.decide``); inf: a rule that never holds
    alpha: float = np.inf
    max_wait: float = np.inf  #: a delayed continuation's bound on a hold (seconds since the GPU freed)


@nb.njit(cache=True)
def known_free(s):
    """When each GPU of slot 0 frees as a scheduler knows it: a free GPU's time, a busy
    one's running task's start plus its estimate at that GPU's speed (not its true end), at
    least now."""
    t = s.t[0]
    M = s.mfree.shape[1]
    out = np.empty(M)
    for m in range(M):
        j = s.mtask[0, m]
        if s.mfree[0, m] <= t or j < 0:
            out[m] = s.mfree[0, m]
        else:
            out[m] = max(t, s.start[0, j] + s.est[0, j] / s.speed[0, m])
    return out


@core_jit
def sampled(s, dst, fut, f, la, zseed, mfree):
    """Slot 0 of ``dst`` := slot 0 of ``s``'s waiting tasks (queue order kept, so the tie rule
    is unchanged) and GPUs, plus future ``f`` of the pool, as ``la`` reads them."""
    t = s.t[0]
    ql = s.qlen[0]
    static_rule = la.rule if la.rule >= 0 else rules.ATC  # the learned policy reads ATC's
    if la.estimates_only:
        np.random.seed(zseed)
    for q in range(ql):
        j = s.queue[0, q]
        dst.arr[0, q] = s.arr[0, j]
        e = s.est[0, j]
        dst.est[0, q] = e
        dst.dur[0, q] = (
            e * math.exp(-la.sigma * np.random.standard_normal()) if la.estimates_only else s.dur[0, j]
        )
        dst.w[0, q] = s.w[0, j]
        dst.due[0, q] = s.due[0, j]
        dst.queue[0, q] = q
    for i in range(la.horizon):
        j = ql + i
        dst.arr[0, j] = t + fut.arr[f, i]
        dst.dur[0, j] = fut.dur[f, i]
        dst.est[0, j] = fut.est[f, i]
        dst.w[0, j] = fut.w[f, i]
        dst.due[0, j] = t + fut.due[f, i]
    n = ql + la.horizon
    for j in range(n):
        dst.static[0, j] = rules.static_part(static_rule, dst.est[0, j], dst.w[0, j])
    for m in range(s.mfree.shape[1]):
        dst.mfree[0, m] = mfree[m] if la.estimates_only else s.mfree[0, m]
        dst.speed[0, m] = s.speed[0, m]
        dst.mtask[0, m] = -1
        # when each GPU freed (a delayed continuation reads it, ``waiting.freed_at``): a free one's
        # time since it freed, a busy one's known free time
        free = dst.mfree[0, m]
        dst.mfree0[0, m] = min(free, W.freed_at(s, 0, m)) if s.mfree[0, m] <= t else free
    dst.n[0] = n
    dst.qlen[0] = ql
    dst.t[0] = t
    dst.nxt[0] = ql
    dst.nstarted[0] = 0
    dst.pending[0] = s.pending[0]
    dst.done[0] = False
    dst.wt_started[0] = 0.0


class Evaluator(NamedTuple):
    """What the candidate evaluator reads besides the decision's state: where its rollouts run,
    on which futures, how, and the learned continuation (built by :func:`evaluator`)."""

    scratch: tuple  #: a ``State`` (slot 0: a sampled future, overwritten; queue + horizon tasks)
    ws: tuple  #: a ``kernel.Work`` for ``scratch``'s queues (the learned policy's scratch)
    fut: Futures  #: the pool of sampled futures
    la: Lookahead  #: how the rollouts are sampled and continued
    net: tuple  #: the ``kernel.Net`` of a learned continuation (``la.rule`` LEARNED)
    keys: np.ndarray  #: (N,) scratch of :func:`terminal` (N: ``scratch``'s tasks)
    order: np.ndarray  #: (N,) int64, scratch of :func:`terminal`
    #: (1,): when the :data:`WAIT` candidate's hold ends at the latest (the caller sets it per decision)
    hold: np.ndarray


def evaluator(scratch, ws, fut, la, net):
    """An :class:`Evaluator`, with :func:`terminal`'s scratch sized for ``scratch``'s tasks."""
    n = scratch.arr.shape[1]
    return Evaluator(scratch, ws, fut, la, net, np.empty(n), np.empty(n, np.int64), np.full(1, np.inf))


@core_jit
def hold_until(s, until):
    """Hold slot 0's pending GPU until ``until`` or the next arrival, whichever comes first
    (``waiting.hold`` without its check): a hold that would end at or before now holds nothing,
    the GPU stays pending (the next decision is taken at once)."""
    t = s.t[0]
    u = until
    if s.nxt[0] < s.n[0]:
        u = min(u, s.arr[0, s.nxt[0]])
    if u > t:
        s.mfree[0, s.pending[0]] = u
        s.pending[0] = -1


@core_jit
def _sift(keys, order, root, end):
    """Restore the heap of ``order[:end]`` below ``root``, its top the task :func:`_above` puts last."""
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and _above(keys, order[child + 1], order[child]):
            child += 1
        if not _above(keys, order[child], order[root]):
            return
        order[root], order[child] = order[child], order[root]
        root = child


@core_jit
def _above(keys, a, b):
    """Whether task ``a`` comes after task ``b`` in :func:`terminal`'s order: highest key first,
    equal keys by the lower index (arrival order, the simulator's tie rule)."""
    return keys[a] < keys[b] or (keys[a] == keys[b] and a > b)


@core_jit
def terminal(s, k, keys, order):
    """A cheap estimate of what the rest of a truncated rollout costs, the same function for
    every candidate: the tasks still to start in slot 0 of ``s`` (waiting and not yet arrived)
    are ranked once by ATC's index frozen at the current time (k = ``k``), then each is started,
    in that order, on the GPU that would end it first, at the earliest when it arrives; returns
    its weighted tardiness. O(R log R + R M) for R tasks and M GPUs: a rollout's per-decision
    scan of the queue, O(R^2), is what a truncated rollout avoids. Writes ``s.mfree`` (the
    scratch state is rebuilt for every rollout)."""
    t = s.t[0]
    ql = s.qlen[0]
    r = 0
    pbar = 0.0
    for q in range(ql):
        order[r] = s.queue[0, q]
        r += 1
    for j in range(s.nxt[0], s.n[0]):
        order[r] = j
        r += 1
    if r == 0:
        return 0.0
    for i in range(r):
        pbar += s.est[0, order[i]]
    pbar /= r
    at = rules.Decision(t, pbar, 1.0)
    for i in range(r):
        j = order[i]
        e, w = s.est[0, j], s.w[0, j]
        static = rules.static_part(rules.ATC, e, w)
        keys[j] = rules.priority(rules.ATC, k, at, s.arr[0, j], e, w, s.due[0, j], static)
    for root in range(r // 2 - 1, -1, -1):  # heapsort in place (it allocates nothing)
        _sift(keys, order, root, r)
    for end in range(r - 1, 0, -1):
        order[0], order[end] = order[end], order[0]
        _sift(keys, order, 0, end)
    M = s.mfree.shape[1]
    cost = 0.0
    for i in range(r):
        j = order[i]
        best_m, best_end = 0, np.inf
        for m in range(M):
            e = max(s.mfree[0, m], s.arr[0, j], t) + s.dur[0, j] / s.speed[0, m]
            if e < best_end:
                best_m, best_end = m, e
        s.mfree[0, best_m] = best_end
        late = best_end - s.due[0, j]
        if late > 0.0:
            cost += s.w[0, j] * late
    return cost


class Draws(NamedTuple):
    """The draws of one decision's samples: sample r reads future ``(f0 + r) % len(pool)`` and
    seeds its noise with ``zseed0 + 31 r``; ``mfree``: the GPUs' known free times."""

    f0: int
    zseed0: int
    mfree: np.ndarray


@nb.njit(cache=True, nogil=True)  # nogil: sched serve's other calls go on meanwhile
def sample_costs(s, cands, r0, r1, costs, ev, seeds):
    """costs[c, r] := weighted tardiness of starting ``cands[c]`` now in slot 0 of ``s``, then
    following ``ev.la``'s continuation (``ev.net``: the learned one), on sampled future r, for
    r in [r0, r1): the same futures for every c. ``ev``: an :class:`Evaluator`; ``seeds``:
    the decision's (f0, zseed0) (module doc)."""
    _sample(s, cands, r0, r1, costs, ev, Draws(seeds[0], seeds[1], known_free(s)), -1)


@nb.njit(cache=True, nogil=True)
def sample_costs_upto(s, cands, r0, r1, costs, ev, seeds, max_work):
    """:func:`sample_costs`, stopped once ``max_work`` units of work are spent (< 0: never);
    returns (r, work): samples [r0, r) are complete (those of an interrupted sample are not).
    A unit: one waiting task read, when a sampled future is copied or a rollout's decision
    scans its queue (a decision on q waiting tasks: q + 1 units), so that a rollout over a
    long queue is interrupted within it. The costs of the samples it completes are
    :func:`sample_costs`'s, whatever ``max_work``."""
    return _sample(s, cands, r0, r1, costs, ev, Draws(seeds[0], seeds[1], known_free(s)), max_work)


@core_jit
def _sample(s, cands, r0, r1, costs, ev, draws, max_work):
    """The rollouts of :func:`sample_costs_upto` (``draws``: a :class:`Draws`), compiled
    without numba's reference counting: it allocates nothing, and counting the references of
    a State's arrays would cost more than the rollouts."""
    scratch, ws, fut, la, net = ev.scratch, ev.ws, ev.fut, ev.la, ev.net
    nf = fut.arr.shape[0]
    f0, zseed0, mfree = draws.f0, draws.zseed0, draws.mfree
    work = 0
    for r in range(r0, r1):
        f = (f0 + r) % nf
        zseed = (zseed0 + r * 31) % 2147483647
        for c in range(cands.shape[0]):
            work += s.qlen[0] + la.horizon
            if 0 <= max_work < work:
                return r, work
            sampled(s, scratch, fut, f, la, zseed, mfree)
            if cands[c] == WAIT:
                hold_until(scratch, ev.hold[0])
            else:
                S._start(scratch, 0, cands[c], scratch.pending[0])
            rule, k = la.rule, la.k
            delayed = la.alpha < np.inf  # a delayed rule continues: a lone waiting task is a decision
            d = 0
            tail = 0.0
            while S._advance(scratch, 0, not delayed):
                if d == la.depth:  # truncated: the rest by the terminal estimate
                    rest = scratch.qlen[0] + scratch.n[0] - scratch.nxt[0]
                    work += 2 * rest
                    if 0 <= max_work < work:
                        return r, work
                    tail = terminal(scratch, k, ev.keys, ev.order)
                    break
                work += scratch.qlen[0] + 1
                if 0 <= max_work < work:
                    return r, work
                # a rule's pick or, LEARNED, the learned policy's (its arguments read only where it acts)
                if delayed:
                    q, wake = W.decide(scratch, 0, rule, k, la.alpha, la.max_wait)
                    if wake > scratch.t[0]:
                        hold_until(scratch, wake)
                        d += 1
                        continue
                else:
                    q = S.pick(scratch, 0, rule, k) if rule >= 0 else kernel.greedy(scratch, 0, net, ws)
                S._start(scratch, 0, q, scratch.pending[0])
                d += 1
            costs[c, r] = scratch.wt_started[0] + tail
    return r1, work
