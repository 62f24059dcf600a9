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
    test's ``z``, the ``seed`` of the draws."""

    candidates: int
    samples: int
    z: float
    seed: int


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


@core_jit
def _rollout(s, x, kfree, ql, q0, m0, t, rule, k, noise):
    """The cost of starting the job at queue position ``q0`` on GPU ``m0`` at ``t`` then letting
    ``rule`` take every decision over the jobs present, on the sampled future ``noise`` (per job:
    its work's factor on its estimate), in the scratch farm ``x`` (overwritten)."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
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
    for m in range(M):  # the jobs running only (no waiting chunk) need their places released
        j = s.mjob[m]
        if j >= 0:
            x.run[j] = s.run[j]
    xl = _start(x, q0, ql, m0, t, rule)
    tt = t
    while True:
        m = _free_gpu(x, tt)
        if m >= 0 and xl > 0:
            q = _pick(x, xl, rule, k, tt, m)
            if q >= 0:
                xl = _start(x, q, xl, m, tt, rule)
                continue
        if xl == 0:
            break
        tn = next_event(x, tt, N, N, M)
        if tn == np.inf:
            break
        tt = tn
    cost = 0.0
    for q in range(ql):
        j = s.queue[q]
        end = -np.inf
        for m in range(M):
            if s.mjob[m] == j and kfree[m] > end:
                end = kfree[m]
        for i in range(s.first[j] + s.nextc[j], s.first[j + 1]):
            if x.end[i] > end:
                end = x.end[i]
        if end > s.due[j]:
            cost += s.w[j] * (end - s.due[j])
    return cost


@nb.njit(cache=True)
def run_planned(s, x, rule, k, plan, sigma):
    """Schedule every chunk of the farm ``s`` (:class:`sched.sim.chunks.Farm`) with the planner
    (``x``: a scratch farm of the same scenario); returns (decisions, planned, deviations)."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    K, R = plan.candidates, plan.samples
    for j in range(N):
        s.nextc[j] = 0
        s.run[j] = 0
        s.rem[j] = chunks.remaining_work(s.est[j], s.frames[j], s.per[j], s.nch[j], 0, s.setup[j])
        s.static[j] = rules.static_part(rule, s.rem[j], s.w[j])
    for m in range(M):
        s.mfree[m] = s.mfree0[m]
        s.mjob[m] = -1
    kfree = s.mfree0.copy()  # when each GPU frees as a scheduler knows it
    noise = np.ones(N)
    costs = np.empty((K, max(R, 1)))
    t, nxt, ql = -np.inf, 0, 0
    decisions, planned, moved = 0, 0, 0
    while True:
        nxt, ql = admit(s, t, nxt, ql, N)
        m = _free_gpu(s, t)
        if m >= 0 and ql > 0:
            cands = candidates(s, ql, rule, k, t, m, K)
            if cands.shape[0] > 0:
                c = 0
                if cands.shape[0] >= 2 and R >= 2:
                    for r in range(R):
                        for q in range(ql):
                            j = s.queue[q]
                            noise[j] = np.exp(-sigma * _normal(plan.seed, decisions, r, j))
                        for i in range(cands.shape[0]):
                            costs[i, r] = _rollout(s, x, kfree, ql, cands[i], m, t, rule, k, noise)
                    c = choose(costs[: cands.shape[0]], R, plan.z)
                    planned += 1
                    moved += c != 0
                q = cands[c]
                j = s.queue[q]
                f = chunks.frames_of(s.frames[j], s.per[j], s.nextc[j])
                kfree[m] = t + chunks.chunk_work(s.est[j], s.frames[j], f, s.setup[j]) / s.speed[m]
                ql = _start(s, q, ql, m, t, rule)
                decisions += 1
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return decisions, planned, moved
        t = tn


def simulate(arrays, chunk_cols, machines, k, plan, sigma, rule="atc"):
    """Each job's completion (row order) of one chunked scenario under the planner on ``rule``
    (ATC's ``k``), and its counts {decisions, planned, deviations}."""
    n = len(np.asarray(arrays[0]))
    cols = chunks.check_chunks(n, *chunk_cols)
    rid = rules.rule_id(rule) if isinstance(rule, str) else int(rule)
    farm, order = chunks.load(arrays, cols, machines)
    scratch, _ = chunks.load(arrays, cols, machines)
    plan = Settings(int(plan.candidates), int(plan.samples), float(plan.z), int(plan.seed))
    dec, planned, moved = run_planned(farm, scratch, rid, float(k), plan, float(sigma))
    job, _c, _s, end, _m = chunks.unload(farm, order)
    return chunks.job_ends(job, end, n), {"decisions": dec, "planned": planned, "deviations": moved}
