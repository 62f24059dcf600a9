"""The farm as the adapters drive it (issue 59, point 4): priorities set at syncs, the farm's
own order between them; the compiled loop of :mod:`sched.sim.chunks` with a sync interval.

``sched opencue sync`` and ``sched deadline sync`` run every ``sync_s`` seconds (cron); in
between, the farm hands each free GPU to the waiting job of its best priority. The model:

* **Sync times**: every multiple of ``sync_s`` on the scenario's clock, ``k × sync_s`` for every
  integer k (0, s, 2s, ...; before 0 too): the first sync that matters is the first at or after
  the first arrival. ``sync_s`` 0: the policy decides at each free GPU, the loop of
  :func:`sched.sim.chunks.run_farm` itself (:func:`simulate` calls it: bit for bit today's).
* **At a sync** at time T, after the chunks ending at T and the jobs arriving at T (they are
  present at the sync), before any chunk starts at T: the rule ranks every job present with a
  waiting chunk (those at their ``max_gpus`` too) by its priority at T (:func:`rules.priority`
  on the job's remaining work, ``pbar`` the mean remaining work of those jobs, a GPU of speed 1:
  ``rank()`` with a GPU count), then :func:`rules.tie_key` (``farm-balanced``: the chunks the job
  runs at T), then arrival, then row. The scores are frozen until the next sync.
* **The farm's priorities**: the adapters give the ranked jobs priorities that strictly decrease
  along the rank order (:func:`sched.farms.adapter.new_priorities`), overriding the classes the
  jobs were submitted with. A job submitted since the last sync keeps its submitted priority,
  OpenCue's default 1 = the adapter's lowest: it waits **below every synced job** (a tie with the
  lowest goes to the earlier submission, the synced job). Among such jobs the farm's order is
  ``farm-fifo``'s: the higher submitted priority class (the job's ``weight``), then the earlier
  submission (arrival, then row).
* **Between syncs** each free GPU (lowest index first) starts the next chunk of the job, among
  those with a waiting chunk running fewer chunks than their limit, of the best farm priority:
  a synced job by its frozen rank; else a job submitted since by weight, then submission.

Not modelled: Deadline Cloud's default puts a new job at 50, the middle of the adapter's spread,
not below every synced job; beyond 101 jobs its levels are shared and the farm orders a level its
own way. The rank is the rule's index at the sync instant, not ``rank()``'s forward plan.

Syncs are run lazily: only the last sync before a decision can matter (nothing changes between
two events), so the loop runs at most one sync per event, whatever ``sync_s``. The plain-Python
reference (``sched.sim.reference.simulate_chunked`` with ``sync_s``) visits every sync instant.
"""

from collections import namedtuple

import numpy as np
from numba.extending import register_jitable

from sched.errors import shorten
from sched.limits import MAX_SYNC_S, MIN_SYNC_S
from sched.sim import chunks, rules
from sched.sim.chunks import _free_gpu, _start, admit, next_event
from sched.sim.errors import SimulationError
from sched.sim.rules import priority, tie_key
from sched.sim.state import core_jit

#: What a sync leaves the farm, per job (N,): its frozen priority and tie key (float64), and
#: whether it was ranked at the last sync (int64 1) or submitted since (0).
Synced = namedtuple("Synced", ["x", "y", "synced"])


#: Beyond this many intervals from 0 the grid k × s is coarser than the integers (2**53): the
#: adjustments below stop there (times a farm never reaches; they keep the loop finite).
EXACT_K = 2.0**53


@register_jitable
def sync_floor(t, s, strict=False):
    """The last sync at or before ``t`` (``strict``: strictly before): the largest ``k × s``
    <= ``t`` (< ``t``), k an integer held as a float (the same float wherever it is computed)."""
    k = np.floor(t / s)
    if abs(k) >= EXACT_K:
        return k * s
    for _ in range(2):  # t / s is rounded: k is off by at most one
        if k * s > t or (strict and k * s == t):
            k -= 1.0
    for _ in range(2):
        if (k + 1.0) * s < t or (not strict and (k + 1.0) * s == t):
            k += 1.0
    return k * s


@core_jit
def _sync(s, y, ql, rule, k, t):
    """Rank the jobs of the queue (every job with a waiting chunk) at ``t``: freeze each one's
    priority and tie key, and mark it synced."""
    if ql == 0:
        return
    pbar = 0.0
    for q in range(ql):
        pbar += s.rem[s.queue[q]]
    at = rules.Decision(t, pbar / ql, 1.0)
    for q in range(ql):
        j = s.queue[q]
        y.x[j] = priority(rule, k, at, s.arr[j], s.rem[j], s.w[j], s.due[j], s.static[j])
        y.y[j] = tie_key(rule, s.run[j])
        y.synced[j] = 1


@core_jit
def _pick_farm(s, y, ql):
    """Queue position of the job whose next chunk the farm starts: the synced job of the best
    frozen (priority, tie key), else the job submitted since of the highest weight; the first in
    the queue (arrival order) among equals; -1 when no job is under its limit."""
    best, bx, by = -1, -np.inf, -np.inf
    new, nw = -1, -np.inf
    for q in range(ql):
        j = s.queue[q]
        if s.run[j] >= s.maxg[j]:
            continue
        if y.synced[j]:
            if best < 0 or y.x[j] > bx or (y.x[j] == bx and y.y[j] > by):
                best, bx, by = q, y.x[j], y.y[j]
        elif new < 0 or s.w[j] > nw:
            new, nw = q, s.w[j]
    return best if best >= 0 else new


@core_jit
def run_synced(s, y, rule, k, sync_s):
    """Schedule every chunk of the farm ``s`` (:class:`sched.sim.chunks.Farm`) with ``rule``
    ranking at syncs every ``sync_s`` > 0 seconds and the farm's order between (``y``: a
    :class:`Synced` of the farm's size); returns the decisions taken."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    chunks.reset(s, rule)
    y.synced[:] = 0
    t, last, nxt, ql, decisions = -np.inf, -np.inf, 0, 0, 0
    while True:
        first = nxt
        nxt, ql = admit(s, t, nxt, ql, N)  # arrivals at t: present at a sync at t
        for j in range(first, nxt):
            y.synced[j] = 0
        m = _free_gpu(s, t)  # chunks ended by t release their GPUs and their jobs' places
        if last < t and sync_floor(t, sync_s, False) == t:  # a sync at t, once, before the starts at t
            _sync(s, y, ql, rule, k, t)
            last = t
        if m >= 0 and ql > 0:
            q = _pick_farm(s, y, ql)
            if q >= 0:
                ql = _start(s, q, ql, m, t, rule)
                decisions += 1
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return decisions
        ts = sync_floor(tn, sync_s, True)  # the last sync before the next event sees the state as now
        if ts > t:
            _sync(s, y, ql, rule, k, ts)
            last = ts
        t = tn


# --------------------------------------------------------------------------- from Python


def check_sync(sync_s, what="sync_s"):
    """``sync_s`` as a float: 0 (the policy decides at each free GPU) or from MIN_SYNC_S to
    MAX_SYNC_S seconds (sched.limits); a SimulationError naming ``what`` otherwise."""
    try:
        v = float(sync_s)
    except (TypeError, ValueError):
        raise SimulationError(f"{what}: expected a number of seconds, got {shorten(sync_s)}") from None
    if not (v == 0 or MIN_SYNC_S <= v <= MAX_SYNC_S):  # NaN fails both
        raise SimulationError(
            f"{what}: must be 0 (decide at each free GPU) or from {MIN_SYNC_S:g} to {MAX_SYNC_S:g} s "
            f"(sched.limits.MIN_SYNC_S, MAX_SYNC_S), got {v:g}"
        )
    return v


def simulate(arrival, duration, estimate, weight, due, rule, machines=1, k=rules.ATC_K_DEFAULT,
             machine_free=None, frames=None, chunk_frames=None, max_gpus=None, setup=None,
             compiled=None, sync_s=0.0):  # fmt: skip
    """:func:`sched.sim.chunks.simulate` with the adapters' sync interval ``sync_s`` (seconds):
    0 is that very function (the policy decides at each free GPU); > 0 the rule ranks at syncs
    and the farm dispatches between them (this module's model), always on the chunked loop
    (``compiled`` False is then refused). Returns (job, chunk, start, end, machine) arrays."""
    sync_s = check_sync(sync_s)
    args = (arrival, duration, estimate, weight, due, rule, machines, k, machine_free)
    if sync_s == 0:
        return chunks.simulate(*args, frames, chunk_frames, max_gpus, setup, compiled)
    if compiled is False:
        raise SimulationError("sync_s > 0 runs the chunked loop; today's core has no syncs")
    n = len(np.asarray(arrival))
    cols = chunks.check_chunks(n, frames, chunk_frames, max_gpus, setup)
    rid = rules.rule_id(rule) if isinstance(rule, str) else int(rule)
    farm, order = chunks.load(args[:5], cols, machines, machine_free)
    y = Synced(np.zeros(n), np.zeros(n), np.zeros(n, np.int64))
    run_synced(farm, y, rid, float(k), sync_s)
    return chunks.unload(farm, order)
