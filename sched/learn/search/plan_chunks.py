"""``plan`` on the chunked farm (issue 60, point 3): lookahead at each free GPU, compiled.

The chunked loop of :mod:`sched.sim.chunks` (sync 0) with a planner at every decision where at
least two jobs could take the free GPU:

1. **Candidates.** The base rule's ``candidates`` best jobs for that GPU (their priorities on
   remaining work, as ``chunks._pick`` reads them: tuned ATC in the farm benchmark), its own
   choice first; jobs at their ``max_gpus`` are not candidates.
2. **Sampled futures.** ``samples`` futures, each: every present job's true work drawn around
   its estimate, ``estimate × exp(-sigma Z)`` (one Z a job and sample, the scenario model's
   estimate noise), and each busy GPU free at its chunk's start plus the chunk's estimate (what a
   scheduler knows, not its true end). The true durations are never read. No future arrival is
   sampled: a rollout schedules the jobs present (a limit of this planner; the whole-task
   planner samples ``horizon`` arrivals from a pool).
3. **Rollouts.** For each candidate and future: the candidate's next chunk starts on the free GPU
   now, then the base rule takes every later decision of the chunked loop until every present
   job's last chunk has started; the cost is the weighted tardiness of the jobs that had a
   waiting chunk at the decision. Every candidate sees the same futures (common random numbers).
4. **Paired test.** ``sched.learn.search.plan.choose``: the candidate of the lowest
   ``mean + z × se`` of its paired differences with the base's choice, when below zero; else the
   base's choice.

Everything random comes from ``seed``, the decision's index and the sample's: the same inputs
give the same decisions. The cost of a decision grows with the present jobs' waiting chunks
times the candidates times the samples; ``benchmarks/plan_chunks_latency.py`` measures it.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from sched.learn.search.plan import choose
from sched.sim import chunks, rules
from sched.sim.chunks import _free_gpu, _pick, _start, admit, next_event
from sched.sim.state import core_jit
from sched.sim.top import top

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


class Settings(NamedTuple):
    """The planner's counts: ``candidates`` jobs compared on ``samples`` futures, the paired
    test's ``z``, the ``seed`` of the draws, and ``depth``: a rollout takes at most ``depth`` x
    the GPU count decisions after the candidate's start, then :func:`_fluid` estimates the rest
    (< 0: every rollout to its end)."""

    candidates: int
    samples: int
    z: float
    seed: int
    depth: int = 2


class Params(NamedTuple):
    """What a compiled call reads: the base rule (id) and its k, the estimate noise ``sigma``,
    and the :class:`Settings`' fields."""

    rule: int
    k: float
    sigma: float
    candidates: int
    samples: int
    z: float
    seed: int
    depth: int


class Work(NamedTuple):
    """A planner's scratch: a farm of the scenario (``x``), each GPU's known free time (``kfree``),
    a sample's factors and the rollouts' ends (``noise``, ``end``: (N,)), the costs (K, samples)."""

    x: tuple
    kfree: np.ndarray
    noise: np.ndarray
    end: np.ndarray
    costs: np.ndarray


@core_jit
def _mix(x):
    """splitmix64's output function."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@core_jit
def _normal(seed, dec, r, j):
    """A standard normal of (seed, decision, sample, job): two splitmix64 draws, Box-Muller."""
    x = _mix(_mix(_mix(np.uint64(seed) + _GOLDEN) + np.uint64(dec)) + np.uint64(r) * _GOLDEN + np.uint64(j))
    a = _mix(x + _GOLDEN)
    b = _mix(x + _GOLDEN + _GOLDEN)
    u1 = ((a >> np.uint64(11)) + np.uint64(1)) * (1.0 / 9007199254740992.0)  # (0, 1]
    u2 = (b >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@nb.njit(cache=True)
def candidates(s, ql, rule, k, t, m, K):
    """Queue positions of the base rule's K best jobs for GPU ``m`` at ``t``, its own choice
    (``chunks._pick``) first; jobs at their limit excluded."""
    own = _pick(s, ql, rule, k, t, m)
    pbar, n = 0.0, 0
    for q in range(ql):
        j = s.queue[q]
        if s.run[j] < s.maxg[j]:
            pbar += s.rem[j]
            n += 1
    at = rules.Decision(t, pbar / max(n, 1), s.speed[m])
    v = np.full(ql, -np.inf)
    for q in range(ql):
        j = s.queue[q]
        if s.run[j] < s.maxg[j]:
            v[q] = rules.priority(rule, k, at, s.arr[j], s.rem[j], s.w[j], s.due[j], s.static[j])
    return top(v, K, own)


@nb.njit(cache=True)
def _fluid(s, x, xl, t, rule, k, end):
    """The terminal estimate of a cut rollout: the jobs still waiting in ``x`` at ``t``, ranked
    once by ``rule``'s priority frozen at ``t``, each one's remaining sampled work poured in that
    order into the farm as a fluid (every GPU's speed, after the work already on it);
    end[j] := the time its last unit would pour (limits and chunk sizes ignored)."""
    M = x.mfree.shape[0]
    cap, cum = 0.0, 0.0
    for m in range(M):
        cap += x.speed[m]
        cum += max(x.mfree[m] - t, 0.0) * x.speed[m]
    pbar = 0.0
    for q in range(xl):
        pbar += x.rem[x.queue[q]]
    at = rules.Decision(t, pbar / xl, 1.0)
    v = np.empty(xl)
    for q in range(xl):
        j = x.queue[q]
        v[q] = -rules.priority(rule, k, at, x.arr[j], x.rem[j], x.w[j], x.due[j], x.static[j])
    for q in np.argsort(v, kind="mergesort"):
        j = x.queue[q]
        cum += chunks.remaining_work(x.dur[j], x.frames[j], x.per[j], x.nch[j], x.nextc[j], x.setup[j])
        end[j] = t + cum / cap


@nb.njit(cache=True)
def _rollout(s, w, p, ql, q0, m0, t):
    """The cost of starting the job at queue position ``q0`` on GPU ``m0`` at ``t`` then letting
    the base rule take ``depth`` x M decisions (< 0: all) over the jobs present, the rest estimated
    by :func:`_fluid`, on the sampled future ``w.noise`` (per job: its work's factor on its
    estimate), in the scratch farm ``w.x`` (overwritten)."""
    x, kfree, noise, end, rule, k = w.x, w.kfree, w.noise, w.end, p.rule, p.k
    N, M = s.arr.shape[0], s.mfree.shape[0]
    depth = p.depth * M if p.depth >= 0 else -1
    for m in range(M):  # a busy GPU frees when its chunk's estimate says, at least now
        x.mfree[m] = max(kfree[m], t) if s.mjob[m] >= 0 else s.mfree[m]
        x.mjob[m] = s.mjob[m]
    for q in range(ql):
        j = s.queue[q]
        x.queue[q] = j
        x.nextc[j] = s.nextc[j]
        x.run[j] = s.run[j]
        x.rem[j] = s.rem[j]
        x.static[j] = s.static[j]
        x.dur[j] = s.est[j] * noise[j]
        end[j] = -np.inf
    for m in range(M):  # the jobs running only (no waiting chunk) need their places released
        j = s.mjob[m]
        if j >= 0:
            x.run[j] = s.run[j]
    xl = _start(x, q0, ql, m0, t, rule)
    tt, taken = t, 0
    while xl > 0 and (depth < 0 or taken < depth):
        m = _free_gpu(x, tt)
        if m >= 0:
            q = _pick(x, xl, rule, k, tt, m)
            if q >= 0:
                xl = _start(x, q, xl, m, tt, rule)
                taken += 1
                continue
        tn = next_event(x, tt, N, N, M)
        if tn == np.inf:
            break
        tt = tn
    if xl > 0:
        _fluid(s, x, xl, tt, rule, k, end)
    cost = 0.0
    for q in range(ql):
        j = s.queue[q]
        e = end[j]
        for m in range(M):
            if s.mjob[m] == j and kfree[m] > e:
                e = kfree[m]
        for i in range(s.first[j] + s.nextc[j], s.first[j] + x.nextc[j]):
            if x.end[i] > e:
                e = x.end[i]
        if e > s.due[j]:
            cost += s.w[j] * (e - s.due[j])
    return cost


@nb.njit(cache=True)
def decide(s, w, p, t, m, ql, dec):
    """Queue position of the job whose next chunk starts on the free GPU ``m`` at ``t`` (-1: no
    job is under its limit), and whether the paired test was run (``dec``: the decision's index,
    ``w``: a :class:`Work`, ``p``: :class:`Params`)."""
    cands = candidates(s, ql, p.rule, p.k, t, m, p.candidates)
    nc, R = cands.shape[0], p.samples
    if nc == 0:
        return -1, False
    if nc < 2 or R < 2:
        return cands[0], False
    for r in range(R):
        for q in range(ql):
            j = s.queue[q]
            w.noise[j] = np.exp(-p.sigma * _normal(p.seed, dec, r, j))
        for i in range(nc):
            w.costs[i, r] = _rollout(s, w, p, ql, cands[i], m, t)
    return cands[choose(w.costs[:nc], R, p.z)], True


@nb.njit(cache=True, nogil=True)
def run_planned(s, w, p):
    """Schedule every chunk of the farm ``s`` (:class:`sched.sim.chunks.Farm`) with the planner
    (``w``: a :class:`Work` of the same scenario, ``p``: :class:`Params`); returns (decisions,
    planned, deviations). It releases the GIL: scenarios may run side by side on threads, each
    with its own farm and Work."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    chunks.reset(s, p.rule)
    for m in range(M):
        w.kfree[m] = s.mfree0[m]  # when each GPU frees as a scheduler knows it
    t, nxt, ql = -np.inf, 0, 0
    decisions, planned, moved = 0, 0, 0
    while True:
        nxt, ql = admit(s, t, nxt, ql, N)
        m = _free_gpu(s, t)
        if m >= 0 and ql > 0:
            q, was = decide(s, w, p, t, m, ql, decisions)
            if q >= 0:
                planned += was
                moved += q != _pick(s, ql, p.rule, p.k, t, m)
                j = s.queue[q]
                f = chunks.frames_of(s.frames[j], s.per[j], s.nextc[j])
                w.kfree[m] = t + chunks.chunk_work(s.est[j], s.frames[j], f, s.setup[j]) / s.speed[m]
                ql = _start(s, q, ql, m, t, p.rule)
                decisions += 1
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return decisions, planned, moved
        t = tn


def params(plan, rule, k, sigma):
    """The :class:`Params` of ``plan`` (:class:`Settings`) on ``rule`` (a name or id) with ``k``."""
    rid = rules.rule_id(rule) if isinstance(rule, str) else int(rule)
    return Params(rid, float(k), float(sigma), int(plan.candidates), int(plan.samples), float(plan.z),
                  int(plan.seed), int(plan.depth))  # fmt: skip


def work(arrays, cols, machines, plan, machine_free=None):
    """A :class:`Work` for the scenario (a scratch farm of it) and ``plan``'s counts."""
    x, _ = chunks.load(arrays, cols, machines, machine_free)
    n, M = len(x.arr), len(x.speed)
    return Work(
        x, np.zeros(M), np.ones(n), np.empty(n), np.empty((max(plan.candidates, 1), max(plan.samples, 1)))
    )


def simulate(arrays, chunk_cols, machines, k, plan, sigma, rule="atc"):
    """Each job's completion (row order) of one chunked scenario under the planner on ``rule``
    (ATC's ``k``), and its counts {decisions, planned, deviations}."""
    n = len(np.asarray(arrays[0]))
    cols = chunks.check_chunks(n, *chunk_cols)
    farm, order = chunks.load(arrays, cols, machines)
    dec, planned, moved = run_planned(farm, work(arrays, cols, machines, plan), params(plan, rule, k, sigma))
    job, _c, _s, end, _m = chunks.unload(farm, order)
    return chunks.job_ends(job, end, n), {"decisions": dec, "planned": planned, "deviations": moved}
