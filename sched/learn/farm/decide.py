"""A learned policy's decision on the chunked farm, compiled (issue 60, point 2): its one definition.

At each free GPU of the chunked loop (:mod:`sched.sim.chunks`: the same admission, release, start
and jump to the next event), for the jobs with a waiting chunk running fewer chunks than their
limit:

1. **Candidates.** The ``top_k`` such jobs of highest ATC index on their *remaining work* (every
   one when ``top_k`` is 0), best first, ties in queue (arrival) order: the index is
   ``rules.priority(ATC, ...)`` exactly as the chunked ATC rule computes it (``pbar`` the mean
   remaining work of those jobs, the deciding GPU's speed), so candidate 0 is ATC's pick.
2. **Observation.** Each candidate's :data:`TASK_FEATURES`: the scorer's features
   (``sched.learn.policy.features.TASK_FEATURES``) with the job's remaining work on that GPU as
   ``p``, then its chunk features (:data:`CHUNK_FEATURES`); the context: the mean then the max of
   each over the candidates, the global features (``features.global_features``) and the farm's
   (:data:`FARM_FEATURES`).
3. **Scores.** The scorer network (``networks.TaskScorer`` of these sizes, float64, the tanh of
   ``sched.learn.policy.kernel``): ``lin . x + MLP([x, context])``. With the ATC prior and a zero
   correction the scores are ``scale x atc``: the greedy policy is the chunked ATC rule, bit for bit.
4. **Action.** Greedy: the first highest score. Sampled: the Gumbel-max draw from the softmax of
   the scores on the caller's uniforms (one row a decision: a run takes exactly one decision a
   chunk).

At a sync (``sync_s`` > 0) the action is a ranking of the jobs (:mod:`sched.learn.farm.synced`):
:func:`observe` with ``every`` (the jobs at their limit too, a GPU of speed 1) gives its candidates.
"""

import math
from typing import NamedTuple

import numpy as np

from sched.learn.policy import features as F
from sched.learn.policy.kernel import Work, score  # the scorer's work arrays and forward: the kernel's own
from sched.sim import chunks, rules
from sched.sim.chunks import _free_gpu, _start, admit, next_event
from sched.sim.state import core_jit
from sched.sim.top import offer

#: A job's chunk features, after the scorer's own.
CHUNK_FEATURES = (
    "log_waiting_chunks",  # log(chunks not started yet)
    "running_frac",  # chunks running now / the job's limit
    "chunk_rel",  # the next chunk's estimate on the deciding GPU / pbar
)
#: The farm's global features, after the scorer's own.
FARM_FEATURES = (
    "log_free",  # log(1 + GPUs free now)
    "log_wwork",  # log(1 + weighted waiting work (sum of w x remaining work) / p_ref)
    "blocked_frac",  # share of the jobs with a waiting chunk that run at their limit
)
TASK_FEATURES = F.TASK_FEATURES + CHUNK_FEATURES
GLOBAL_FEATURES = F.GLOBAL_FEATURES + FARM_FEATURES
N_TASK = len(TASK_FEATURES)
N_GLOBAL = len(GLOBAL_FEATURES)
N_CTX = 2 * N_TASK + N_GLOBAL
FLOOR = F.ATC_FLOOR
_OWN = F.N_TASK  # the first chunk feature's column
_FARM = 2 * N_TASK + F.N_GLOBAL  # the first farm feature's column of the context


class Record(NamedTuple):
    """What a sampled run keeps of each decision (row d: the d-th chunk started); length 0: nothing."""

    X: np.ndarray  #: (D, K, N_TASK) float32 the candidates' rows
    ctx: np.ndarray  #: (D, N_CTX) float32
    count: np.ndarray  #: (D,) candidates
    choice: np.ndarray  #: (D,) the candidate taken
    logp: np.ndarray  #: (D,) its log-probability (0: greedy)
    time: np.ndarray  #: (D,) when
    job: np.ndarray  #: (D,) the job (arrival order) whose chunk started


def workspace(candidates, net):
    """A :class:`Work` for up to ``candidates`` candidates (a sync observes every job: the job count)."""
    K = max(int(candidates), 1)
    H = net.b0.shape[0]
    return Work(
        np.empty(K, np.int64), np.empty(K), np.empty((K, N_TASK)), np.empty(N_CTX), np.empty(K),
        np.empty(H), np.empty(H), np.empty(H),
    )  # fmt: skip


def no_record():
    """A :class:`Record` that keeps nothing (greedy runs)."""
    z = np.zeros(0, np.int64)
    return Record(np.zeros((0, 1, N_TASK), np.float32), np.zeros((0, N_CTX), np.float32), z, z,
                  np.zeros(0), np.zeros(0), z)  # fmt: skip


@core_jit
def _eligible(s, j, every):
    return every or s.run[j] < s.maxg[j]


@core_jit
def _select(s, ql, at, net, ws, every):
    """Candidates into ``ws`` (the K best ATC indices on remaining work, ties in queue order);
    returns (m, late, min WMDD ratio, max log(w / p)) over the eligible jobs."""
    v = at.speed
    n = 0
    for q in range(ql):
        if _eligible(s, s.queue[q], every):
            n += 1
    K = ws.cand.shape[0] if net.top_k <= 0 else min(net.top_k, ws.cand.shape[0])
    K = min(K, n)
    m, late, rmin, smax = 0, 0, np.inf, -np.inf
    for q in range(ql):
        j = s.queue[q]
        if not _eligible(s, j, every):
            continue
        p = s.rem[j] / v if v != 1.0 else s.rem[j]
        a = rules.priority(rules.ATC, net.atc_k, at, s.arr[j], s.rem[j], s.w[j], s.due[j], s.static[j])
        if not a == a:  # NaN: never ahead of a number
            a = -np.inf
        d, w = s.due[j], s.w[j]
        if d < at.t + p:
            late += 1
        rmin = min(rmin, max(p, d - at.t) / w)
        smax = max(smax, s.static[j])
        m = offer(ws.cand, ws.atc, m, K, q, a)  # the one top-k (sched.sim.top)
    return m, late, rmin, smax


@core_jit
def observe(s, ql, t, deciding, net, ws, every):
    """Write the observation of the decision for GPU ``deciding`` at ``t`` into ``ws``; returns
    the candidate count (0: no job may start). ``every``: a sync's (every job with a waiting
    chunk, those at their limit too, on a GPU of speed 1)."""
    v = 1.0 if every else s.speed[deciding]
    n, tot, wwork, blocked = 0, 0.0, 0.0, 0
    for q in range(ql):
        j = s.queue[q]
        wwork += s.w[j] * s.rem[j]
        if s.run[j] >= s.maxg[j]:
            blocked += 1
        if _eligible(s, j, every):
            tot += s.rem[j]
            n += 1
    if n == 0:
        return 0
    pbar1 = tot / n  # the chunked ATC's pbar: speed 1, the eligible jobs' mean, summed in queue order
    at = rules.Decision(t, pbar1, v)
    pbar = pbar1 / v if v != 1.0 else pbar1
    m, late, rmin, smax = _select(s, ql, at, net, ws, every)
    lkmin, amax, X = math.log(rmin), ws.atc[0], ws.X
    for i in range(m):
        j = s.queue[ws.cand[i]]
        p = s.rem[j] / v if v != 1.0 else s.rem[j]
        w, d = s.w[j], s.due[j]
        F.own_features(X[i], p, w, d, t, s.arr[j], pbar)
        X[i, 7] = max(ws.atc[i] - amax, FLOOR)
        X[i, 8] = max(-(math.log(max(p, d - t) / w) - lkmin), FLOOR)
        X[i, 9] = max(s.static[j] - smax, FLOOR)
        X[i, 11] = i / n
        c = s.nextc[j]
        X[i, _OWN] = math.log(s.nch[j] - c)
        X[i, _OWN + 1] = s.run[j] / s.maxg[j]
        f = chunks.frames_of(s.frames[j], s.per[j], c)
        X[i, _OWN + 2] = chunks.chunk_work(s.est[j], s.frames[j], f, s.setup[j]) / v / pbar
    _context(s, t, deciding, net, ws, m, F.Queue(n, tot / v, pbar, late))
    free = 0
    for mm in range(s.mfree.shape[0]):
        if s.mfree[mm] <= t:
            free += 1
    ws.ctx[_FARM] = math.log1p(free)
    ws.ctx[_FARM + 1] = math.log1p(wwork / net.p_ref)
    ws.ctx[_FARM + 2] = blocked / ql
    return m


@core_jit
def _context(s, t, deciding, net, ws, m, queue):
    """The context's pooled features (mean, then max, over the m candidates) and global features."""
    c, X = ws.ctx, ws.X
    for f in range(N_TASK):
        tot, mx = 0.0, -np.inf
        for i in range(m):
            tot += X[i, f]
            mx = max(mx, X[i, f])
        c[f] = tot / m
        c[N_TASK + f] = mx
    model = F.Model(net.p_ref, net.profile, net.weekly, net.week_start_s)
    F.global_features(s.mfree, s.speed, deciding, t, queue, model, c[2 * N_TASK : _FARM])


@core_jit
def choose(v, m, u):
    """(candidate, log-probability): the first highest of v[:m] when ``u`` is empty (greedy, log p 0);
    else the Gumbel-max draw from softmax(v[:m]) on the uniforms ``u``."""
    greedy = u.shape[0] == 0
    best, best_g, top = 0, -np.inf, -np.inf
    for i in range(m):
        top = max(top, v[i])
        g = v[i] if greedy else v[i] - math.log(-math.log(u[i]))
        if g > best_g:
            best_g, best = g, i
    if greedy:
        return best, 0.0
    total = 0.0
    for i in range(m):
        total += math.exp(v[i] - top)
    return best, v[best] - top - math.log(total)


@core_jit
def _keep(rec, d, ws, m, best, lp, t, j):
    if rec.count.shape[0] == 0:
        return
    for i in range(m):
        for f in range(N_TASK):
            rec.X[d, i, f] = ws.X[i, f]
    for f in range(N_CTX):
        rec.ctx[d, f] = ws.ctx[f]
    rec.count[d], rec.choice[d], rec.logp[d], rec.time[d], rec.job[d] = m, best, lp, t, j


@core_jit
def run_policy(s, net, ws, u, rec):
    """Schedule every chunk of the farm ``s`` with the learned policy ``net`` at each free GPU:
    greedy when ``u`` has no row, else sampled on row d of ``u`` at decision d; ``rec``: a
    :class:`Record` (length 0: none). Returns the decisions taken (one a chunk)."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    chunks.reset(s, rules.ATC)
    t, nxt, ql, d = -np.inf, 0, 0, 0
    empty = u[:0, 0]
    while True:
        nxt, ql = admit(s, t, nxt, ql, N)
        m = _free_gpu(s, t)
        if m >= 0 and ql > 0:
            k = observe(s, ql, t, m, net, ws, False)
            if k > 0:
                score(net, ws, k)
                best, lp = choose(ws.v, k, empty if u.shape[0] == 0 else u[d])
                q = ws.cand[best]
                _keep(rec, d, ws, k, best, lp, t, s.queue[q])
                ql = _start(s, q, ql, m, t, rules.ATC)
                d += 1
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return d
        t = tn
