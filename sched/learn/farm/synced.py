"""The learned farm policy under the adapters' sync interval (issue 60, point 4): a ranking a sync.

At a sync (``sync_s`` > 0, :mod:`sched.sim.sync`'s model: syncs on the grid k x ``sync_s``, run
lazily, the farm's order between them) the action is a **ranking** of the jobs with a waiting
chunk (those at their limit too), on a GPU of speed 1:

1. **Ranked prefix.** The policy's candidates (:func:`decide.observe` on every such job: the
   ``top_k`` of highest ATC index on remaining work, best first, ties in queue order; all of them
   when ``top_k`` is 0) are scored by the network and ranked. The other jobs come after them in
   ATC order (ties in queue order): the cap bounds a sync's cost and its record to ``top_k`` rows.
2. **Ranking.** Greedy: by score, highest first, ties in candidate (ATC) order. Sampled: the
   Plackett-Luce ranking of softmax(scores) by the Gumbel-top-k trick: each score perturbed by
   ``-log(-log u)`` (``u`` the caller's uniforms, one row a sync), then sorted. Its
   log-probability is the sum over the positions of the log-softmax of the placed job's score
   over the jobs not placed yet (``train.ranking_logp`` is the same in torch).
3. **Frozen priorities.** The i-th of the m ranked jobs gets priority m - i, the others 0 with
   their ATC index as the tie key: ``sync._pick_farm`` then dispatches in this order until the
   next sync (jobs submitted since: below every ranked job, as for the rules).

With the ATC prior and a zero correction the ranking is ATC's order at the sync: the greedy run
is the chunked ATC rule at that sync interval (``sync.run_synced``), bit for bit.
"""

import math
from typing import NamedTuple

import numpy as np

from sched.learn.farm import decide
from sched.sim import chunks, rules, sync
from sched.sim.chunks import _free_gpu, _start, admit, next_event
from sched.sim.state import core_jit


class RankRecord(NamedTuple):
    """What a sampled run keeps of each sync (row d: the d-th sync that ranked a job)."""

    X: np.ndarray  #: (D, K, N_TASK) float32 the ranked candidates' rows
    ctx: np.ndarray  #: (D, N_CTX) float32
    count: np.ndarray  #: (D,) ranked candidates m
    perm: np.ndarray  #: (D, K) int64: perm[d, i] the candidate at position i (i < m)
    logp: np.ndarray  #: (D,) the ranking's log-probability (0: greedy)
    time: np.ndarray  #: (D,) the sync's time


def record(syncs, K):
    """An empty :class:`RankRecord` for up to ``syncs`` syncs of up to ``K`` candidates (0: keeps nothing)."""
    return RankRecord(
        np.zeros((syncs, K, decide.N_TASK), np.float32), np.zeros((syncs, decide.N_CTX), np.float32),
        np.zeros(syncs, np.int64), np.zeros((syncs, K), np.int64), np.zeros(syncs), np.zeros(syncs),
    )  # fmt: skip


def max_syncs(n_jobs, n_chunks):
    """A bound on the syncs of a run: at most two a distinct event time (arrivals, chunk ends)."""
    return 2 * (int(n_jobs) + int(n_chunks)) + 2


def scratch(K):
    """The ranking's scratch arrays for up to ``K`` candidates: (order and a merge buffer (2, K)
    int64, keys (K,))."""
    return np.empty((2, max(int(K), 1)), np.int64), np.empty(max(int(K), 1))


@core_jit
def _merge_sort(key, m, idx, buf):
    """idx[:m] := 0..m-1 in ascending ``key`` order, stable (bottom-up merges through ``buf``)."""
    for i in range(m):
        idx[i] = i
    width = 1
    while width < m:
        for lo in range(0, m, 2 * width):
            mid, hi = min(lo + width, m), min(lo + 2 * width, m)
            a, b, o = lo, mid, lo
            while a < mid and b < hi:
                if key[idx[b]] < key[idx[a]]:
                    buf[o] = idx[b]
                    b += 1
                else:
                    buf[o] = idx[a]
                    a += 1
                o += 1
            while a < mid:
                buf[o] = idx[a]
                a, o = a + 1, o + 1
            while b < hi:
                buf[o] = idx[b]
                b, o = b + 1, o + 1
        for i in range(m):
            idx[i] = buf[i]
        width *= 2


@core_jit
def rank(v, m, u, sc):
    """sc[0][0, :m] := the ranking of the scores v[:m] (greedy when ``u`` is empty: by score, ties
    in index order; else the Plackett-Luce draw on the uniforms ``u``); returns its
    log-probability (0 when greedy). ``sc``: :func:`scratch`."""
    greedy = u.shape[0] == 0
    idx, g = sc
    order = idx[0]
    for i in range(m):
        g[i] = -v[i] if greedy else -(v[i] - math.log(-math.log(u[i])))
    _merge_sort(g, m, order, idx[1])  # stable: ties keep the candidates' order
    if greedy:
        return 0.0
    lp, lse = 0.0, -np.inf
    for i in range(m - 1, -1, -1):  # log-softmax over the jobs not placed yet, from the last place
        x = v[order[i]]
        hi = max(lse, x)
        lse = hi + math.log(math.exp(lse - hi) + math.exp(x - hi))
        lp += x - lse
    return lp


@core_jit
def _sync(s, y, ql, t, net, ws, io, d):
    """Rank the queue at ``t`` (``io``: (u, rec, sc) of :func:`run_ranked`; row ``d`` of ``u`` when
    sampling, kept in ``rec`` row d); freeze the farm's priorities. Returns the syncs counted
    (d + 1, or d when the queue is empty)."""
    if ql == 0:
        return d
    u, rec, sc = io
    m = decide.observe(s, ql, t, 0, net, ws, True)
    decide.score(net, ws, m)
    lp = rank(ws.v, m, u[d] if u.shape[0] > 0 else u[:0, 0], sc)
    order = sc[0][0]
    tot = 0.0
    for q in range(ql):
        tot += s.rem[s.queue[q]]
    at = rules.Decision(t, tot / ql, 1.0)  # observe's: every job, a GPU of speed 1
    for q in range(ql):
        j = s.queue[q]
        a = rules.priority(rules.ATC, net.atc_k, at, s.arr[j], s.rem[j], s.w[j], s.due[j], s.static[j])
        y.x[j], y.y[j], y.synced[j] = 0.0, a if a == a else -np.inf, 1
    for i in range(m):
        j = s.queue[ws.cand[order[i]]]
        y.x[j], y.y[j] = float(m - i), 0.0
    if rec.count.shape[0] > 0:
        for i in range(m):
            rec.perm[d, i] = order[i]
            for f in range(decide.N_TASK):
                rec.X[d, i, f] = ws.X[i, f]
        for f in range(decide.N_CTX):
            rec.ctx[d, f] = ws.ctx[f]
        rec.count[d], rec.logp[d], rec.time[d] = m, lp, t
    return d + 1


@core_jit
def run_ranked(s, y, net, ws, sync_s, u, rec, sc):
    """:func:`sched.sim.sync.run_synced` with the learned policy ranking at the syncs (``ws``:
    :func:`decide.workspace` of the job count; ``u``: one row of uniforms a sync, no row: greedy;
    ``rec``: a :class:`RankRecord`, length 0: none; ``sc``: :func:`scratch` of the job count).
    Returns (chunks started, syncs that ranked)."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    chunks.reset(s, rules.ATC)
    y.synced[:] = 0
    t, last, nxt, ql, decisions, d = -np.inf, -np.inf, 0, 0, 0, 0
    while True:
        first = nxt
        nxt, ql = admit(s, t, nxt, ql, N)
        for j in range(first, nxt):
            y.synced[j] = 0
        m = _free_gpu(s, t)
        if last < t and sync.sync_floor(t, sync_s, False) == t:
            d = _sync(s, y, ql, t, net, ws, (u, rec, sc), d)
            last = t
        if m >= 0 and ql > 0:
            q = sync._pick_farm(s, y, ql)
            if q >= 0:
                ql = _start(s, q, ql, m, t, rules.ATC)
                decisions += 1
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return decisions, d
        ts = sync.sync_floor(tn, sync_s, True)
        if ts > t:
            d = _sync(s, y, ql, ts, net, ws, (u, rec, sc), d)
            last = ts
        t = tn
