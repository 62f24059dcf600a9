"""Clairvoyant reference on the chunked farm: the best job priority list a local search finds
knowing the future (issue 59, point 5).

Not a contestant. It knows every job's arrival, true work, weight and due date in advance and
shows how much room is left below the rules on a farm of jobs of frames (the headroom).

Method
------
A schedule is encoded as a **priority list** of the jobs (a permutation; position 0 first). The
decoder is the chunked loop of :mod:`sched.sim.chunks` itself with the list as the rule: whenever
a GPU is free (lowest index first) and some job has a waiting chunk while it runs fewer chunks
than its limit, the next chunk of the first such job of the list starts on it at once. It is
``farm-fifo`` with a job's weight replaced by its place in the list (the tests check the totals
against ``sched.sim.reference.simulate_chunked`` run that way). A static list is what a farm runs
when every job's priority is set once and never changed: the search finds the best such setting.
It never idles a GPU while a chunk waits, as every rule of the farm.

The search is a first-improvement descent, compiled with numba:

* start: a list given by the caller (``sched.evaluate.farm.headroom``: the better of the best
  rule's jobs by completion, :func:`completion_order`, and the jobs by due date);
* moves: one job moved to another place of the list. A round takes the late jobs of the
  incumbent, the most (weighted) late first, and tries each one earlier and each job just before
  it after it, by 1, 2, 3, 4, 6, 9, ... places up to ``window``; a move is kept when the total is
  lower; the descent ends after a round that keeps none;
* a move of job x changes nothing before x arrives: its evaluation resumes from the incumbent's
  state saved before x's arrival (a snapshot every ``decoder.STRIDE`` arrivals), stops as soon as
  the partial cost (charged when a job's last chunk starts, its end then known) reaches the
  incumbent's total, and once x has started every chunk, stops at the next snapshot whose state
  equals the incumbent's (the rest is then the incumbent's: its cost is known);
* the budget is a count of move evaluations per scenario (``budget``), not a wall time, and
  nothing is random: the result is the same on any machine.

Limits: a local search gives an upper bound on the best list, not the optimum; a list is not
every schedule (no rule that changes its order over time is one, and no GPU is held back), so the
search may end above the best dynamic rule: the farm benchmark's reference is the lower of the
two per scenario (``sched.evaluate.farm.headroom``).
"""

import numba as nb
import numpy as np

from sched.sim import chunks
from sched.sim.errors import SearchError
from sched.sim.farm_clairvoyant import decoder as pl
from sched.sim.state import core_jit


@core_jit
def _move(order, pos, i, j):
    """Move the job at list place i to place j (the others shift by one); ``pos`` follows."""
    x = order[i]
    if i < j:
        for k in range(i, j):
            order[k] = order[k + 1]
            pos[order[k]] = k
    else:
        for k in range(i, j, -1):
            order[k] = order[k - 1]
            pos[order[k]] = k
    order[j] = x
    pos[x] = j


@nb.njit(cache=True)
def _steps(window):
    """The displacements tried: 1 to 4, then about x 1.5 each, up to ``window``."""
    out = np.empty(64, np.int64)
    n, d = 0, 1
    while d <= window and n < 64:
        out[n] = d
        n += 1
        d = d + 1 if d < 4 else (d * 3) // 2
    return out[:n]


@core_jit
def _try(p, order, pos, r, sn, i, j, best):
    """Evaluate the move of the job at place i to place j; keep it (and record the new incumbent)
    when its total is lower. Returns the incumbent's total."""
    x = order[i]
    _move(order, pos, i, j)
    k = x // pl.STRIDE  # nothing changes before x arrives
    pl.restore(p, pos, r, sn, k)
    c = pl.dispatch(p, pos, r, sn, False, x, best)
    if c < best - 1e-12 * max(best, 1.0):
        pl.restore(p, pos, r, sn, k)
        best = pl.dispatch(p, pos, r, sn, True, -1, np.inf)
        sn.total[0] = best
        return best
    _move(order, pos, j, i)
    return best


@nb.njit(cache=True)
def _search(p, order, window, budget):
    """Descend from the list ``order`` (changed in place to the best found); returns (its total,
    the start's total, evaluations used). A round takes the late jobs of the incumbent, the
    latest (weighted) first, and tries each one earlier and each job just before it after it,
    by every displacement of :func:`_steps`; it ends when a round keeps no move."""
    N, M = p.arr.shape[0], p.speed.shape[0]
    pos = np.empty(N, np.int64)
    for k in range(N):
        pos[order[k]] = k
    r = pl.new_run(N, M)
    sn = pl.new_snaps(N, M)
    pl.reset(p, r)
    best = pl.dispatch(p, pos, r, sn, True, -1, np.inf)
    sn.total[0] = best
    start = best
    steps = _steps(window)
    evals = 0
    improved = True
    while improved and evals < budget and best > 0.0:
        improved = False
        late = np.empty(N)
        _ends_into(p, pos, r, sn, late)
        for x in np.argsort(late, kind="mergesort"):
            if late[x] >= 0.0:
                break
            for d in steps:
                for side in range(2):
                    if evals >= budget:
                        return best, start, evals
                    i = pos[x]
                    if i - d < 0:
                        continue
                    evals += 1
                    before = best
                    if side == 0:
                        best = _try(p, order, pos, r, sn, i, i - d, best)  # x earlier
                    else:
                        best = _try(p, order, pos, r, sn, i - d, i, best)  # the job d before x after it
                    if best < before:
                        improved = True
    return best, start, evals


@core_jit
def _ends_into(p, pos, r, sn, late):
    """late[j] := minus job j's weighted tardiness under the incumbent (``sn``'s run replayed
    into ``r`` from its start)."""
    pl.restore(p, pos, r, sn, 0)
    pl.dispatch(p, pos, r, sn, False, -1, np.inf)
    for j in range(p.arr.shape[0]):
        late[j] = -p.w[j] * max(r.jend[j] - p.due[j], 0.0)


# --------------------------------------------------------------------------- from Python


def problem(arrays, chunk_cols, machines, counted_from=0.0):
    """The ``decoder.Problem`` of one scenario (``arrays``: arrival, duration, estimate, weight,
    due in row order; ``chunk_cols``: :func:`sched.sim.chunks.check_chunks`'s four), and its row
    order (``order[i]``: the row of the i-th job in arrival order). Jobs arriving before
    ``counted_from`` (a warm-up) weigh 0, as the benchmark counts them."""
    n = len(np.asarray(arrays[0]))
    cols = chunks.check_chunks(n, *chunk_cols)
    farm, order = chunks.load(arrays, cols, machines)
    w = np.where(farm.arr >= counted_from, farm.w, 0.0) if counted_from > 0 else farm.w
    prob = pl.Problem(
        farm.arr, farm.dur, np.ascontiguousarray(w), farm.due, farm.setup, farm.frames, farm.per,
        farm.nch, farm.maxg, farm.speed, farm.mfree0,
    )  # fmt: skip
    return prob, order


def completion_order(ends, arrival):
    """A priority list (rows, first first) from a schedule: the jobs by completion, ties by
    arrival then row."""
    rows = np.arange(len(ends))
    return np.lexsort((rows, np.asarray(arrival, float), np.asarray(ends, float))).astype(np.int64)


def _positions(prob, order, rows):
    """pos (arrival-order job -> place) of the list ``rows`` (scenario rows, first first)."""
    rows = np.asarray(rows, np.int64)
    n = len(order)
    if sorted(rows.tolist()) != list(range(n)):
        raise SearchError(f"clairvoyant search: the priority list is not a permutation of the {n} rows")
    inv = np.empty(n, np.int64)
    inv[order] = np.arange(n)
    return inv[rows]  # the list in arrival-order job numbers


def list_ends(arrays, chunk_cols, machines, rows, counted_from=0.0):
    """(each job's completion in row order, the total weighted tardiness) of the priority list
    ``rows`` dispatched by the chunked loop on the true durations."""
    prob, order = problem(arrays, chunk_cols, machines, counted_from)
    seq = _positions(prob, order, rows)
    pos = np.empty(len(seq), np.int64)
    pos[seq] = np.arange(len(seq))
    jend, total = pl.ends(prob, pos)
    out = np.empty(len(order))
    out[order] = jend
    return out, float(total)


def search(arrays, chunk_cols, machines, rows, window=64, evaluations=2_000, counted_from=0.0):
    """Improve the priority list ``rows`` (scenario rows, first first) of one scenario by the
    descent of the module docstring; returns a dict: ``rows`` (the list found), ``ends`` (each
    job's completion, row order), ``cost`` (its total weighted tardiness), ``start_cost`` (the
    given list's) and ``evaluations``."""
    if int(window) < 1 or int(evaluations) < 0:
        raise SearchError(
            f"clairvoyant search: window must be >= 1 and evaluations >= 0, got {window}, {evaluations}"
        )
    prob, order = problem(arrays, chunk_cols, machines, counted_from)
    seq = _positions(prob, order, rows).copy()
    n = len(seq)
    best, start, evals = _search(prob, seq, max(1, min(int(window), n - 1)), int(evaluations))
    pos = np.empty(n, np.int64)
    pos[seq] = np.arange(n)
    jend, total = pl.ends(prob, pos)
    ends = np.empty(n)
    ends[order] = jend
    return {
        "rows": order[seq],
        "ends": ends,
        "cost": float(total),
        "search_cost": float(best),
        "start_cost": float(start),
        "evaluations": int(evals),
    }
