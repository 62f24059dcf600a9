"""The priority-list dispatcher of the chunked farm, compiled, with saved states: the decoder of
the clairvoyant search on chunks (:mod:`sched.sim.farm_clairvoyant.search`).

A priority list (``pos[j]``: job j's place, 0 first) is dispatched as the chunked loop of
:mod:`sched.sim.chunks` dispatches a rule: whenever a GPU is free (lowest index first) and some
job has a waiting chunk while it runs fewer chunks than its limit, the next chunk of the first
such job of the list starts on it at once (``farm-fifo`` with the list's places as the weights).
The true durations are used. A job's weighted tardiness is charged when its last chunk starts
(its end is then known), so the partial cost only grows (:func:`dispatch` stops at a bound).

A run can save its state before the arrival of every :data:`STRIDE`-th job (:class:`Snaps`),
resume from such a state under another list (:func:`restore`) and tell when its state equals a
saved one (:func:`same`): a search resumes a changed list where it can first differ and stops
where it agrees with the incumbent again.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from sched.sim import chunks
from sched.sim.state import core_jit

#: Arrivals between two saved states of the incumbent's run.
STRIDE = 16


class Problem(NamedTuple):
    """One chunked scenario as the search knows it, jobs in arrival order (ties by row):
    :class:`sched.sim.chunks.Farm`'s arrays, the true work (``dur``), the counted weights."""

    arr: np.ndarray
    dur: np.ndarray
    w: np.ndarray  #: weight, 0 for a job of the warm-up (not counted)
    due: np.ndarray
    setup: np.ndarray
    frames: np.ndarray  #: int64
    per: np.ndarray  #: int64, 0: indivisible
    nch: np.ndarray  #: int64 chunks
    maxg: np.ndarray  #: int64 limit (at most the GPU count)
    speed: np.ndarray  #: (M,)
    mfree0: np.ndarray  #: (M,)


class Run(NamedTuple):
    """The list dispatcher's state (``iv``: t is ``fv[0]``, cost ``fv[1]``; nxt ``iv[0]``,
    queue length ``iv[1]``)."""

    nextc: np.ndarray  #: (N,) next chunk to start
    run: np.ndarray  #: (N,) chunks running
    jend: np.ndarray  #: (N,) latest end of a started chunk
    mfree: np.ndarray  #: (M,)
    mjob: np.ndarray  #: (M,) job on the GPU, -1
    queue: np.ndarray  #: (N,) jobs with a waiting chunk, in list order
    fv: np.ndarray  #: (2,) float: time, cost charged
    iv: np.ndarray  #: (2,) int: next arrival to admit, queue length


class Snaps(NamedTuple):
    """The incumbent's run saved before the arrival of job ``k × stride`` (row k), and its total."""

    nextc: np.ndarray  #: (K, N)
    run: np.ndarray
    jend: np.ndarray
    mfree: np.ndarray  #: (K, M)
    mjob: np.ndarray
    fv: np.ndarray  #: (K, 2)
    iv: np.ndarray  #: (K, 2)
    total: np.ndarray  #: (1,)


@core_jit
def reset(p, r):
    """The state before any arrival."""
    for j in range(p.arr.shape[0]):
        r.nextc[j] = 0
        r.run[j] = 0
        r.jend[j] = -np.inf
    for m in range(p.speed.shape[0]):
        r.mfree[m] = p.mfree0[m]
        r.mjob[m] = -1
    r.fv[0] = -np.inf
    r.fv[1] = 0.0
    r.iv[0] = 0
    r.iv[1] = 0


@core_jit
def save(r, sn, k):
    """Snapshot row k := the state ``r``."""
    for j in range(r.nextc.shape[0]):
        sn.nextc[k, j] = r.nextc[j]
        sn.run[k, j] = r.run[j]
        sn.jend[k, j] = r.jend[j]
    for m in range(r.mfree.shape[0]):
        sn.mfree[k, m] = r.mfree[m]
        sn.mjob[k, m] = r.mjob[m]
    sn.fv[k, 0], sn.fv[k, 1] = r.fv[0], r.fv[1]
    sn.iv[k, 0], sn.iv[k, 1] = r.iv[0], r.iv[1]


@core_jit
def insert(r, pos, j, ql):
    """Put job j into the queue at its place in the list; the new length."""
    q = ql
    while q > 0 and pos[r.queue[q - 1]] > pos[j]:
        r.queue[q] = r.queue[q - 1]
        q -= 1
    r.queue[q] = j
    return ql + 1


@core_jit
def restore(p, pos, r, sn, k):
    """The state ``r`` := snapshot row k, its queue rebuilt in the order of ``pos``."""
    N = p.arr.shape[0]
    for j in range(N):
        r.nextc[j] = sn.nextc[k, j]
        r.run[j] = sn.run[k, j]
        r.jend[j] = sn.jend[k, j]
    for m in range(p.speed.shape[0]):
        r.mfree[m] = sn.mfree[k, m]
        r.mjob[m] = sn.mjob[k, m]
    r.fv[0], r.fv[1] = sn.fv[k, 0], sn.fv[k, 1]
    nxt = sn.iv[k, 0]
    r.iv[0] = nxt
    ql = 0
    for j in range(nxt):
        if r.nextc[j] < p.nch[j]:
            ql = insert(r, pos, j, ql)
    r.iv[1] = ql


@core_jit
def same(p, r, sn, k):
    """Whether the state ``r`` equals snapshot row k in everything its future depends on once
    the moved job has started every chunk: the time, the arrivals admitted, the GPUs, and the
    waiting jobs' chunks started, running and latest end."""
    if r.fv[0] != sn.fv[k, 0] or r.iv[0] != sn.iv[k, 0] or r.iv[1] != sn.iv[k, 1]:
        return False
    t = r.fv[0]
    for m in range(p.speed.shape[0]):
        if r.mfree[m] <= t and sn.mfree[k, m] <= t:
            continue  # both idle (released at the snapshot)
        if r.mfree[m] != sn.mfree[k, m] or r.mjob[m] != sn.mjob[k, m]:
            return False
    for q in range(r.iv[1]):
        j = r.queue[q]
        if r.nextc[j] != sn.nextc[k, j] or r.run[j] != sn.run[k, j] or r.jend[j] != sn.jend[k, j]:
            return False
    return True


@core_jit
def release(p, r, t):
    """Release the GPUs free at ``t``: their chunks' jobs run one chunk fewer."""
    for m in range(p.speed.shape[0]):
        if r.mfree[m] <= t and r.mjob[m] >= 0:
            r.run[r.mjob[m]] -= 1
            r.mjob[m] = -1


@core_jit
def dispatch(p, pos, r, sn, record, watch, bound):
    """Run the list ``pos`` (pos[j]: job j's place) from the state ``r`` to the end; returns the
    total weighted tardiness, or a value >= ``bound`` as soon as the partial cost reaches it.
    ``record``: save the snapshots into ``sn`` (the incumbent's run); else, ``watch`` >= 0 and
    that job started whole, stop at the first snapshot equal to ``sn``'s (its total known)."""
    N, M = p.arr.shape[0], p.speed.shape[0]
    t, cost = r.fv[0], r.fv[1]
    nxt, ql = r.iv[0], r.iv[1]
    while True:
        if nxt < N and p.arr[nxt] <= t:  # admissions at t: the snapshots they cross first
            k = (nxt + STRIDE - 1) // STRIDE
            if k * STRIDE < N and p.arr[k * STRIDE] <= t:
                release(p, r, t)  # as the loop does at t anyway: an idle GPU is idle, whenever it freed
            while k * STRIDE < N and p.arr[k * STRIDE] <= t:
                r.fv[0], r.fv[1], r.iv[0], r.iv[1] = t, cost, nxt, ql
                if record:
                    save(r, sn, k)
                elif watch >= 0 and r.nextc[watch] == p.nch[watch] and same(p, r, sn, k):
                    return cost + (sn.total[0] - sn.fv[k, 1])
                k += 1
            while nxt < N and p.arr[nxt] <= t:
                ql = insert(r, pos, nxt, ql)
                nxt += 1
        m = -1  # the lowest-index free GPU; chunks ended by t release their jobs' places
        for mm in range(M):
            if r.mfree[mm] <= t:
                j = r.mjob[mm]
                if j >= 0:
                    r.run[j] -= 1
                    r.mjob[mm] = -1
                if m < 0:
                    m = mm
        if m >= 0 and ql > 0:
            q = 0
            while q < ql and r.run[r.queue[q]] >= p.maxg[r.queue[q]]:
                q += 1
            if q < ql:
                j = r.queue[q]
                c = r.nextc[j]
                f = chunks.frames_of(p.frames[j], p.per[j], c)
                end = t + chunks.chunk_work(p.dur[j], p.frames[j], f, p.setup[j]) / p.speed[m]
                r.mfree[m] = end
                r.mjob[m] = j
                r.run[j] += 1
                r.nextc[j] = c + 1
                if end > r.jend[j]:
                    r.jend[j] = end
                if c + 1 == p.nch[j]:  # its last chunk: its end is known, charge it
                    late = r.jend[j] - p.due[j]
                    if late > 0.0:
                        cost += p.w[j] * late
                        if cost >= bound:
                            return cost
                    for qq in range(q, ql - 1):
                        r.queue[qq] = r.queue[qq + 1]
                    ql -= 1
                continue
        tn = p.arr[nxt] if nxt < N else np.inf
        for mm in range(M):
            if r.mfree[mm] > t and r.mfree[mm] < tn:
                tn = r.mfree[mm]
        if tn == np.inf:
            r.fv[0], r.fv[1], r.iv[0], r.iv[1] = t, cost, nxt, ql
            return cost
        t = tn


@nb.njit(cache=True)
def new_run(N, M):
    return Run(
        np.zeros(N, np.int64), np.zeros(N, np.int64), np.zeros(N), np.zeros(M), np.zeros(M, np.int64),
        np.zeros(N, np.int64), np.zeros(2), np.zeros(2, np.int64),
    )  # fmt: skip


@nb.njit(cache=True)
def new_snaps(N, M):
    K = max(1, (N + STRIDE - 1) // STRIDE)
    return Snaps(
        np.zeros((K, N), np.int64), np.zeros((K, N), np.int64), np.zeros((K, N)), np.zeros((K, M)),
        np.zeros((K, M), np.int64), np.zeros((K, 2)), np.zeros((K, 2), np.int64), np.zeros(1),
    )  # fmt: skip


@nb.njit(cache=True)
def ends(p, pos):
    """Each job's completion (arrival order) and the total of the list ``pos``."""
    N, M = p.arr.shape[0], p.speed.shape[0]
    r = new_run(N, M)
    sn = new_snaps(N, M)
    reset(p, r)
    total = dispatch(p, pos, r, sn, False, -1, np.inf)
    return r.jend.copy(), total
