"""The simulator's state: a batch of scenarios as plain NumPy arrays.

Many scenarios (``B`` of them, padded to ``N`` tasks) live in one
:class:`State`, so that

* a heuristic rollout of a whole scenario is one compiled call
  (:func:`sched.sim.core.rollout_batch`, parallel over scenarios);
* a learning agent can step every scenario in lockstep
  (:func:`sched.sim.core.advance_batch` then :func:`sched.sim.core.apply_batch`)
  and read the waiting tasks of scenario ``b`` as ``queue[b, :qlen[b]]``
  without copying.

Inside a State, tasks are numbered in arrival order (ties: earlier row of the
scenario first); :func:`pack` returns the permutation back to scenario rows
and :func:`_unpack` applies it to the schedule. The event loop that fills the
dynamic arrays is :mod:`sched.sim.core`; this module allocates, loads, resets,
copies and unloads them.
"""

from collections import namedtuple

import numba as nb
import numpy as np

from sched.data.machines import MachinesError, speeds
from sched.sim.errors import SimulationError

# Compiled, cached, and without reference counting: see sched.sim.core's docstring.
core_jit = nb.njit(cache=True, _nrt=False)

State = namedtuple(
    "State",
    [
        # scenario data, one row per scenario slot, tasks in arrival order
        "arr",
        "dur",
        "est",
        "w",
        "due",  # (B, N) float64
        "n",  # (B,) tasks in the slot
        "mfree0",  # (B, M) when each machine is first free
        "speed",  # (B, M) each machine's speed: a task of duration p takes p / speed on it
        "static",  # (B, N) rules.static_part of each task for the rule in use
        # dynamic state
        "t",  # (B,) current time
        "nxt",  # (B,) next task not yet arrived
        "queue",
        "qlen",  # (B, N) waiting tasks, (B,) how many
        "mfree",
        "mtask",  # (B, M) machine free time, task on it (-1)
        "start",
        "end",
        "mach",  # (B, N) the schedule being built
        "nstarted",  # (B,)
        "pending",  # (B,) machine waiting for a decision, -1 if none
        "done",  # (B,) every task started
        "wt_started",  # (B,) sum of w * tardiness of started tasks
        "wt_prev",  # (B,) weighted tardiness accrued at the last report
        "accrued",  # (B,) weighted tardiness accrued since the previous report
        "decisions",  # (B,) decisions asked of the caller so far
    ],
)


def empty_state(batch, max_tasks, machines):
    """Allocate a State for ``batch`` scenario slots of up to ``max_tasks`` tasks.

    ``machines``: any form :func:`sched.data.machines.speeds` reads (a count,
    a spec such as ``"2x1.0,2x0.6"``, a list of speeds); every slot gets
    those speeds.
    """
    return allocate(int(batch), int(max_tasks), np.asarray(speeds(machines), dtype=np.float64))


@nb.njit(cache=True)  # with reference counting: it returns the arrays, which its caller then owns
def allocate(batch, max_tasks, speed):
    """The State layout, its one definition: ``batch`` slots of up to ``max_tasks`` tasks (at
    least 1) on GPUs of speeds ``speed`` (M,), every array zero but ``mfree0`` (-inf: free
    since ever) and ``speed``. :func:`empty_state` from Python; compiled code (``one_queue``)
    calls it directly."""
    B, N, M = batch, max(max_tasks, 1), speed.shape[0]
    sp = np.empty((B, M))
    for b in range(B):
        for m in range(M):
            sp[b, m] = speed[m]
    return State(
        arr=np.zeros((B, N)),
        dur=np.zeros((B, N)),
        est=np.zeros((B, N)),
        w=np.zeros((B, N)),
        due=np.zeros((B, N)),
        n=np.zeros(B, np.int64),
        mfree0=np.full((B, M), -np.inf),
        speed=sp,
        static=np.zeros((B, N)),
        t=np.zeros(B),
        nxt=np.zeros(B, np.int64),
        queue=np.zeros((B, N), np.int64),
        qlen=np.zeros(B, np.int64),
        mfree=np.zeros((B, M)),
        mtask=np.zeros((B, M), np.int64),
        start=np.zeros((B, N)),
        end=np.zeros((B, N)),
        mach=np.zeros((B, N), np.int64),
        nstarted=np.zeros(B, np.int64),
        pending=np.zeros(B, np.int64),
        done=np.zeros(B, np.bool_),
        wt_started=np.zeros(B),
        wt_prev=np.zeros(B),
        accrued=np.zeros(B),
        decisions=np.zeros(B, np.int64),
    )


def arrival_order(arrival):
    """Permutation putting tasks in arrival order, ties by row (stable sort)."""
    return np.argsort(np.asarray(arrival, dtype=np.float64), kind="stable")


def load_slot(state, b, arrival, duration, estimate, weight, due, machine_free=None):
    """Write one scenario (arrays in row order) into slot ``b``; returns the row order.

    ``order[i]`` is the scenario row of the i-th task in the slot. The slot is
    reset and ready for :func:`advance_batch` / :func:`rollout_batch`.
    """
    n = len(arrival)
    if n > state.arr.shape[1]:
        raise SimulationError(f"scenario has {n} tasks, the state holds at most {state.arr.shape[1]}")
    order = arrival_order(arrival)
    for dst, src in (
        (state.arr, arrival),
        (state.dur, duration),
        (state.est, estimate),
        (state.w, weight),
        (state.due, due),
    ):
        dst[b, :n] = np.asarray(src, dtype=np.float64)[order]
        dst[b, n:] = 0.0
    state.n[b] = n
    M = state.mfree0.shape[1]
    if machine_free is None:
        state.mfree0[b, :] = -np.inf
    else:
        mf = np.asarray(machine_free, dtype=np.float64)
        if mf.shape != (M,):
            raise MachinesError(f"machine_free: expected {M} values, got {mf.shape}")
        state.mfree0[b, :] = mf
    reset_slot(state, b)
    return order


@core_jit
def reset_slot(s, b):
    """Put slot ``b`` back at its start: nothing arrived, machines at mfree0."""
    s.t[b] = -np.inf
    s.nxt[b] = 0
    s.qlen[b] = 0
    for m in range(s.mfree.shape[1]):
        s.mfree[b, m] = s.mfree0[b, m]
        s.mtask[b, m] = -1
    for j in range(s.start.shape[1]):
        s.start[b, j] = np.nan
        s.end[b, j] = np.nan
        s.mach[b, j] = -1
    s.nstarted[b] = 0
    s.pending[b] = -1
    s.done[b] = s.n[b] == 0
    s.wt_started[b] = 0.0
    s.wt_prev[b] = 0.0
    s.accrued[b] = 0.0
    s.decisions[b] = 0


@core_jit
def copy_slot(src, b, dst, d):
    """Copy slot ``b`` of ``src`` into slot ``d`` of ``dst`` (same task capacity)."""
    n = src.n[b]
    dst.n[d] = n
    for j in range(n):
        dst.arr[d, j] = src.arr[b, j]
        dst.dur[d, j] = src.dur[b, j]
        dst.est[d, j] = src.est[b, j]
        dst.w[d, j] = src.w[b, j]
        dst.due[d, j] = src.due[b, j]
        dst.static[d, j] = src.static[b, j]
        dst.start[d, j] = src.start[b, j]
        dst.end[d, j] = src.end[b, j]
        dst.mach[d, j] = src.mach[b, j]
    for q in range(src.qlen[b]):
        dst.queue[d, q] = src.queue[b, q]
    for m in range(src.mfree.shape[1]):
        dst.mfree0[d, m] = src.mfree0[b, m]
        dst.speed[d, m] = src.speed[b, m]
        dst.mfree[d, m] = src.mfree[b, m]
        dst.mtask[d, m] = src.mtask[b, m]
    dst.qlen[d] = src.qlen[b]
    dst.t[d] = src.t[b]
    dst.nxt[d] = src.nxt[b]
    dst.nstarted[d] = src.nstarted[b]
    dst.pending[d] = src.pending[b]
    dst.done[d] = src.done[b]
    dst.wt_started[d] = src.wt_started[b]
    dst.wt_prev[d] = src.wt_prev[b]
    dst.accrued[d] = src.accrued[b]
    dst.decisions[d] = src.decisions[b]


@nb.njit(cache=True)
def _load_slots(s, offsets, arr, dur, est, w, due, orders):
    """Fill every slot from concatenated scenarios (one compiled call)."""
    for b in range(offsets.shape[0] - 1):
        lo, hi = offsets[b], offsets[b + 1]
        n = hi - lo
        in_order = True
        for i in range(lo + 1, hi):
            if arr[i] < arr[i - 1]:
                in_order = False
                break
        if in_order:  # generated scenarios are; skip the sort
            order = np.arange(n)
        else:
            order = np.argsort(arr[lo:hi], kind="mergesort")  # stable: ties keep row order
        for i in range(n):
            r = lo + order[i]
            s.arr[b, i] = arr[r]
            s.dur[b, i] = dur[r]
            s.est[b, i] = est[r]
            s.w[b, i] = w[r]
            s.due[b, i] = due[r]
            orders[lo + i] = order[i]
        s.n[b] = n
        reset_slot(s, b)


@core_jit
def _unload_slots(s, offsets, orders, start, end, mach):
    for b in range(offsets.shape[0] - 1):
        lo = offsets[b]
        for i in range(offsets[b + 1] - lo):
            r = lo + orders[lo + i]
            start[r] = s.start[b, i]
            end[r] = s.end[b, i]
            mach[r] = s.mach[b, i]


def pack(scenarios, machines, machine_free=None):
    """A State holding ``scenarios`` (a list of (arrival, duration, estimate, weight, due)).

    ``machines``: a count, a spec or a list of speeds (:func:`empty_state`).

    Returns ``(state, orders)``: ``orders[b][i]`` is the scenario row of the
    i-th task (arrival order) of slot ``b``.
    """
    lens = np.array([len(sc[0]) for sc in scenarios], dtype=np.int64)
    offsets = np.zeros(len(scenarios) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    state = empty_state(len(scenarios), lens.max(initial=1), machines)
    M = state.speed.shape[1]
    if machine_free is not None:
        mf = np.asarray(machine_free, dtype=np.float64)
        if mf.shape != (M,):
            raise MachinesError(f"machine_free: expected {M} values, got {mf.shape}")
        state.mfree0[:] = mf
    cols = [
        np.concatenate([np.asarray(sc[c], dtype=np.float64) for sc in scenarios])
        if len(scenarios)
        else np.zeros(0)
        for c in range(5)
    ]
    orders = np.empty(offsets[-1], dtype=np.int64)
    _load_slots(state, offsets, *cols, orders)
    return state, np.split(orders, offsets[1:-1])


def _unpack(state, orders):
    """Per-slot (start, end, machine) arrays in scenario row order."""
    lens = np.array([len(o) for o in orders], dtype=np.int64)
    offsets = np.zeros(len(orders) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    total = offsets[-1]
    start, end, mach = np.empty(total), np.empty(total), np.empty(total, dtype=np.int64)
    _unload_slots(
        state, offsets, np.concatenate(orders) if orders else np.zeros(0, np.int64), start, end, mach
    )
    cut = offsets[1:-1]
    return list(zip(np.split(start, cut), np.split(end, cut), np.split(mach, cut)))
