"""Clairvoyant reference: the best schedule a local search finds knowing the future.

Not a contestant. It knows every arrival, true duration, weight and due date of
the scenario in advance, which no dispatching policy does, and shows how much
room is left below the best policy (the headroom).

Method
------
A schedule is encoded as a *sequence* of the tasks (the order in which they
start). The decoder starts each task, in sequence order, on the machine that is
free earliest, at max(that machine's free time, the task's arrival). It may
leave a machine idle while tasks wait (unlike the non-delay rules), so every
semi-active schedule is reachable: the sequence of an optimal schedule decodes
to a schedule that is at least as good (by induction, each task starts no later
than in the optimal one). Decoding the start order of a rule's non-delay
schedule gives back that schedule exactly.

The search is an iterated local search compiled with numba:

* start: the start order of the best of the dispatching rules on the scenario
  (the six rules, plus ATC at every k of ``benchmark.atc_k_grid``);
* descent: first-improvement over insertion moves (one task moved to another
  position) and pairwise interchanges within ``window`` positions;
* a move is evaluated from the machine state saved before the first changed
  position, stops as soon as the partial cost reaches the current total (the
  cost only grows along the sequence) and, after the last changed position,
  as soon as the machine state equals the saved one (the rest of the schedule
  is then unchanged, its cost is known);
* when no move improves: a perturbation (a few random interchanges inside a
  random window), a descent around it, kept when not worse, else undone;
* the budget is a number of move evaluations per scenario, not a wall time,
  so the result is the same on any machine and under any load; the random
  draws come from a seed.

Limits: a local search gives an upper bound on the optimum, not the optimum.
Each move changes at most ``window`` positions, so a task is never moved
far from where the rule put it in one step.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from sched.data.machines import MachinesError, describe, speeds
from sched.data.objective import weighted_tardiness
from sched.sim.errors import SearchError
from sched.sim.state import core_jit

INSERT, SWAP = 0, 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


class Jobs(NamedTuple):
    """The tasks (row order) as the search knows them: (n,) arrays, or (B, N) for a batch."""

    arr: np.ndarray  #: arrivals
    dur: np.ndarray  #: true durations
    w: np.ndarray  #: weights
    due: np.ndarray  #: due dates


class Saved(NamedTuple):
    """Machine states along a sequence. Its readers allocate nothing and are compiled without
    reference counting (``core_jit``): counting the arrays' references tripled the time."""

    FS: np.ndarray  #: (n + 1, M) ``FS[k]``: the machines' sorted free times before position k
    CS: np.ndarray  #: (n + 1,) ``CS[k]``: the cumulative cost before position k
    F: np.ndarray  #: (M,) one machine state of scratch


class Search(NamedTuple):
    """The search's settings."""

    window: int  #: moves within this many positions
    budget: int  #: move evaluations per scenario


@nb.njit(cache=True)
def _rand(state, n):
    """Uniform integer in [0, n) from a splitmix64 stream held in ``state[0]``."""
    state[0] += _GOLDEN
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return np.int64(z % np.uint64(n))


@core_jit
def _place(F, a, p):
    """Start a task (arrival a, duration p) on the earliest-free machine.

    ``F`` holds the machines' free times sorted ascending (which machine is
    which does not matter to the cost). Returns the start time.
    """
    s = max(F[0], a)
    e = s + p
    i = 0
    M = F.shape[0]
    while i + 1 < M and F[i + 1] < e:
        F[i] = F[i + 1]
        i += 1
    F[i] = e
    return s


@core_jit
def _charge(F, t, jobs, c):
    """Place task t on the machine that frees first; c plus its weighted tardiness."""
    late = _place(F, jobs.arr[t], jobs.dur[t]) + jobs.dur[t] - jobs.due[t]
    if late > 0.0:
        c += jobs.w[t] * late
    return c


@core_jit
def _forward(seq, lo, jobs, sv):
    """Recompute the saved states ``sv.FS[k]`` and cumulative costs ``sv.CS[k]`` for k > lo."""
    n = seq.shape[0]
    FS, CS, F, M = sv.FS, sv.CS, sv.F, sv.F.shape[0]
    for m in range(M):  # element by element: a slice copy may allocate (no NRT here)
        F[m] = FS[lo, m]
    c = CS[lo]
    for k in range(lo, n):
        c = _charge(F, seq[k], jobs, c)
        for m in range(M):
            FS[k + 1, m] = F[m]
        CS[k + 1] = c


@core_jit
def _task_at(seq, k, kind, i, j):
    """Task at position k of the sequence after the move (kind, i, j)."""
    if kind == SWAP:
        if k == i:
            return seq[j]
        if k == j:
            return seq[i]
        return seq[k]
    # INSERT: the task at i moves to position j
    if k == j:
        return seq[i]
    if i < j:
        if i <= k < j:
            return seq[k + 1]
        return seq[k]
    if j < k <= i:
        return seq[k - 1]
    return seq[k]


@core_jit
def _eval_move(seq, kind, i, j, jobs, sv, bound):
    """Total cost of the sequence after the move, or a value >= bound when it cannot beat it."""
    n = seq.shape[0]
    FS, CS, F, M = sv.FS, sv.CS, sv.F, sv.F.shape[0]
    lo, hi = min(i, j), max(i, j)
    for m in range(M):
        F[m] = FS[lo, m]
    c = CS[lo]
    for k in range(lo, hi + 1):
        c = _charge(F, _task_at(seq, k, kind, i, j), jobs, c)
        if c >= bound:
            return c
    for k in range(hi + 1, n):
        same = True
        for m in range(M):
            if F[m] != FS[k, m]:
                same = False
                break
        if same:
            return c + (CS[n] - CS[k])
        c = _charge(F, seq[k], jobs, c)
        if c >= bound:
            return c
    return c


@core_jit
def _apply(seq, kind, i, j):
    if kind == SWAP:
        seq[i], seq[j] = seq[j], seq[i]
        return
    t = seq[i]
    if i < j:
        for k in range(i, j):
            seq[k] = seq[k + 1]
    else:
        for k in range(i, j, -1):
            seq[k] = seq[k - 1]
    seq[j] = t


@core_jit
def _better(c, ref):
    # a relative margin keeps rounding noise from counting as an improvement
    return c < ref - 1e-12 * max(ref, 1.0)


@core_jit
def _descent(seq, rlo, rhi, jobs, sv, search, evals):
    """First-improvement descent over moves of tasks at positions rlo..rhi; returns the
    evaluations used so far (``evals`` before it)."""
    n = seq.shape[0]
    window, budget = search.window, search.budget
    CS = sv.CS
    improved = True
    while improved and evals < budget:
        improved = False
        for i in range(rlo, rhi + 1):
            for d in range(1, window + 1):
                for sgn in (-1, 1):
                    j = i + sgn * d
                    if j < 0 or j >= n:
                        continue
                    # an interchange of neighbours is an insertion by one: skip the duplicate
                    for kind in (INSERT, SWAP):
                        if kind == SWAP and d == 1:
                            continue
                        if evals >= budget:
                            return evals
                        evals += 1
                        cur = CS[n]
                        c = _eval_move(seq, kind, i, j, jobs, sv, cur)
                        if _better(c, cur):
                            _apply(seq, kind, i, j)
                            _forward(seq, min(i, j), jobs, sv)
                            improved = True
    return evals


@nb.njit(cache=True)
def _search_one(seq, jobs, mfree0, search, seed):
    """Iterated local search from ``seq`` (changed in place to the best found); returns
    (best cost, evaluations used)."""
    n = seq.shape[0]
    M = mfree0.shape[0]
    sv = Saved(np.empty((n + 1, M)), np.zeros(n + 1), np.empty(M))
    CS = sv.CS
    sv.FS[0, :] = np.sort(mfree0)
    _forward(seq, 0, jobs, sv)
    if n < 2:
        return CS[n], 0
    window = max(1, min(search.window, n - 1))
    budget = search.budget
    within = Search(window, budget)  # the window no wider than the sequence
    evals = _descent(seq, 0, n - 1, jobs, sv, within, 0)
    best = CS[n]
    best_seq = seq.copy()
    state = np.zeros(1, dtype=np.uint64)
    state[0] = np.uint64(seed)
    span = min(n, 2 * window)
    while evals < budget and best > 0.0:
        p = _rand(state, n - span + 1)
        for _ in range(2 + _rand(state, 2)):
            a = p + _rand(state, span)
            b = p + _rand(state, span)
            seq[a], seq[b] = seq[b], seq[a]
        _forward(seq, p, jobs, sv)
        lo = max(0, p - window)
        hi = min(n - 1, p + span + window)
        evals = _descent(seq, lo, hi, jobs, sv, within, evals)
        if CS[n] <= best:
            best = CS[n]
            best_seq[:] = seq
        else:
            seq[:] = best_seq
            _forward(seq, 0, jobs, sv)
    seq[:] = best_seq
    return best, evals


@nb.njit(cache=True, parallel=True)
def _search_batch(seqs, n, jobs, mfree0, search, seeds, costs, evals):
    """:func:`_search_one` of every scenario b (its first ``n[b]`` rows of ``seqs`` and ``jobs``)."""
    for b in nb.prange(seqs.shape[0]):
        k = n[b]
        mine = Jobs(jobs.arr[b, :k], jobs.dur[b, :k], jobs.w[b, :k], jobs.due[b, :k])
        c, e = _search_one(seqs[b, :k], mine, mfree0, search, seeds[b])
        costs[b] = c
        evals[b] = e


@nb.njit(cache=True)
def decode(seq, arr, dur, mfree0):
    """(start, end, machine) per task (task index order) of the sequence ``seq``.

    Each task goes, in sequence order, to the machine free earliest (lowest
    index on ties), at max(free time, arrival).
    """
    n = seq.shape[0]
    M = mfree0.shape[0]
    free = mfree0.copy()
    start = np.empty(n)
    end = np.empty(n)
    mach = np.empty(n, dtype=np.int64)
    for k in range(n):
        j = seq[k]
        m = 0
        for mm in range(1, M):
            if free[mm] < free[m]:
                m = mm
        s = max(free[m], arr[j])
        start[j] = s
        end[j] = s + dur[j]
        mach[j] = m
        free[m] = end[j]
    return start, end, mach


def start_sequence(start, end):
    """Start order of a schedule (ties by end time, then row)."""
    return np.lexsort((np.arange(len(start)), np.asarray(end), np.asarray(start))).astype(np.int64)


def search(scenarios, start_seqs, machines=1, window=30, evaluations=200_000, seeds=0):
    """Improve each scenario's start sequence by iterated local search.

    ``scenarios``: (arrival, duration, estimate, weight, due) arrays (the true
    durations are used: the search knows them). ``start_seqs``: a sequence
    (permutation of rows) per scenario. Returns, per scenario, a dict with
    ``start``, ``end``, ``machine`` (row order), ``sequence``, ``cost`` (total
    weighted tardiness) and ``evaluations``. ``seeds``: one search seed per
    scenario, or one integer from which they are derived by position.
    """
    B = len(scenarios)
    if B == 0:
        return []
    machines = identical_count(machines)
    if int(window) < 1 or int(evaluations) < 0:
        raise SearchError(
            f"clairvoyant search: window must be >= 1 and evaluations >= 0, got {window}, {evaluations}"
        )
    n = np.array([len(sc[0]) for sc in scenarios], dtype=np.int64)
    N = int(n.max())
    cols = [np.zeros((B, N)) for _ in range(4)]
    seqs = np.zeros((B, N), dtype=np.int64)
    for b, (sc, s0) in enumerate(zip(scenarios, start_seqs)):
        arrival, duration, _estimate, weight, due = sc
        for dst, src in zip(cols, (arrival, duration, weight, due)):
            dst[b, : n[b]] = np.asarray(src, dtype=np.float64)
        s0 = np.asarray(s0, dtype=np.int64)
        if sorted(s0.tolist()) != list(range(n[b])):
            raise SearchError(
                f"clairvoyant search: start sequence of scenario {b} is not a permutation of its {n[b]} rows"
            )
        seqs[b, : n[b]] = s0
    mfree0 = np.full(int(machines), -np.inf)
    if np.ndim(seeds) == 0:
        seeds = np.random.SeedSequence(int(seeds)).generate_state(B, dtype=np.uint64)
    seeds = np.asarray(seeds, dtype=np.uint64)
    if seeds.shape != (B,):
        raise SearchError(f"clairvoyant search: {seeds.size} seeds for {B} scenarios")
    costs = np.zeros(B)
    evals = np.zeros(B, dtype=np.int64)
    _search_batch(seqs, n, Jobs(*cols), mfree0, Search(int(window), int(evaluations)), seeds, costs, evals)
    out = []
    for b in range(B):
        seq = seqs[b, : n[b]].copy()
        start, end, mach = decode(seq, cols[0][b, : n[b]], cols[1][b, : n[b]], mfree0)
        out.append(
            {
                "start": start,
                "end": end,
                "machine": mach,
                "sequence": seq,
                "cost": float(costs[b]),
                "evaluations": int(evals[b]),
            }
        )
    return out


def sequence_cost(seq, arrival, duration, weight, due, machines=1):
    """Total weighted tardiness of the decoded sequence (a direct evaluation)."""
    _, end, _ = decode(
        np.asarray(seq, dtype=np.int64),
        np.asarray(arrival, dtype=np.float64),
        np.asarray(duration, dtype=np.float64),
        np.full(identical_count(machines), -np.inf),
    )
    return weighted_tardiness(end, due, weight)


def identical_count(machines):
    """The count of GPUs of ``machines`` (any form of sched.data.machines), all of speed 1.

    The decoder's "machine free earliest" is only right for identical GPUs;
    with mixed speeds the right machine depends on the task (the one that
    finishes it first), which this search does not model: refused.
    """
    sp = speeds(machines)
    if not (sp == 1.0).all():
        raise MachinesError(
            f"machines: the clairvoyant search handles identical GPUs only, got {describe(sp)}"
        )
    return len(sp)
