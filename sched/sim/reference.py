"""Plain-Python reference simulator, written for clarity rather than speed.

It implements the same model as the compiled core (see ``sched.sim.core``) from
scratch, with Python lists and no shared state code, so the tests can check
that both produce identical schedules. Only the rule formulas are shared
(``sched.sim.rules``): they are the specification both must follow; and, for jobs of frames
(:func:`simulate_chunked`), the chunk formulas of ``sched.sim.chunks`` (a chunk's frames and
work, a job's remaining work), the model's specification too. With ``sync_s`` > 0,
:func:`simulate_chunked` runs the farm as the adapters drive it (``sched.sim.sync``: ranks at syncs,
the farm's order between), visiting every sync instant where the compiled loop runs only the last
sync before each event.
"""

import math
from collections import deque

from sched.data.machines import MachinesError, speeds
from sched.sim import chunks, rules


def choose(rule, t, waiting, arrival, estimate, weight, due, k, speed=1.0):
    """Index (into ``waiting``) of the task ``rule`` starts at time ``t`` on a GPU of ``speed``.

    ``waiting`` lists task rows in (arrival, row) order; the first task with
    the highest priority wins, which breaks ties by arrival then row.
    """
    rid = rules.rule_id(rule) if isinstance(rule, str) else rule
    pbar = sum(estimate[j] for j in waiting) / len(waiting)
    at = rules.Decision(t, pbar, speed)
    best_pos, best_value = None, -math.inf
    for pos, j in enumerate(waiting):
        static = rules.static_part(rid, estimate[j], weight[j])
        value = rules.priority(rid, k, at, arrival[j], estimate[j], weight[j], due[j], static)
        if best_pos is None or value > best_value:
            best_pos, best_value = pos, value
    return best_pos


def simulate(
    arrival, duration, estimate, weight, due, rule, machines=1, k=rules.ATC_K_DEFAULT, machine_free=None
):
    """Schedule one scenario; returns (start, end, machine) lists in row order.

    ``machines``: a count, a spec such as ``"2x1.0,2x0.6"`` or a list of
    speeds; ``machine_free``: the time each GPU becomes free.
    """
    arrival, duration, estimate, weight, due = (
        [float(x) for x in col] for col in (arrival, duration, estimate, weight, due)
    )
    speed = [float(v) for v in speeds(machines)]
    machines = len(speed)
    n = len(arrival)
    free_at = list(machine_free) if machine_free is not None else [-math.inf] * machines
    if len(free_at) != machines:
        raise MachinesError(f"machine_free: expected {machines} values, got {len(free_at)}")
    not_arrived = deque(sorted(range(n), key=lambda j: (arrival[j], j)))
    waiting = []
    start, end, machine = [None] * n, [None] * n, [None] * n
    t = -math.inf
    while not_arrived or waiting:
        while not_arrived and arrival[not_arrived[0]] <= t:
            waiting.append(not_arrived.popleft())
        if not waiting:
            t = max(t, arrival[not_arrived[0]])
            continue
        free = [m for m in range(machines) if free_at[m] <= t]
        if not free:
            t = min(free_at)
            continue
        m = free[0]  # the lowest-index free GPU decides first, whatever the speeds
        j = waiting.pop(choose(rule, t, waiting, arrival, estimate, weight, due, k, speed[m]))
        start[j], end[j], machine[j] = t, t + duration[j] / speed[m], m
        free_at[m] = end[j]
    return start, end, machine


def simulate_delayed(
    arrival, duration, estimate, weight, due, rule, alpha, max_wait, machines=1, k=rules.ATC_K_DEFAULT,
    machine_free=None, waits=(),
):  # fmt: skip
    """Schedule one scenario with a delayed rule (``rules.WAIT_RULES``, ``sched.sim.waiting``: its
    model): the base rule's pick starts on the free GPU when ``rules.delayed_start`` says so; else
    the GPU stays idle until then, the next arrival or ``max_wait`` after the decision, whichever
    comes first, and decides again. ``waits``: the decisions (numbered from 0, every one taken,
    a lone waiting task's too) where a learned policy's wait holds the GPU instead
    (``sched.learn.policy.wait_head``): until the next arrival, at most ``max_wait`` after the GPU
    freed; where that is off (no task still to arrive, or the GPU idle that long) the rule decides.
    Returns (start, end, machine) lists in row order."""
    base = rules.wait_base(rule)
    arrival, duration, estimate, weight, due = (
        [float(x) for x in col] for col in (arrival, duration, estimate, weight, due)
    )
    speed = [float(v) for v in speeds(machines)]
    n = len(arrival)
    free_at = list(machine_free) if machine_free is not None else [-math.inf] * len(speed)
    if len(free_at) != len(speed):
        raise MachinesError(f"machine_free: expected {len(speed)} values, got {len(free_at)}")
    freed = list(free_at)  # when each GPU last became free (a hold does not change it)
    dec = -1
    not_arrived = deque(sorted(range(n), key=lambda j: (arrival[j], j)))
    arrived, waiting = [], []
    start, end, machine = [None] * n, [None] * n, [None] * n
    t = -math.inf
    while not_arrived or waiting:
        while not_arrived and arrival[not_arrived[0]] <= t:
            arrived.append(not_arrived[0])
            waiting.append(not_arrived.popleft())
        if not waiting:
            t = max(t, arrival[not_arrived[0]])
            continue
        free = [m for m in range(len(speed)) if free_at[m] <= t]
        if not free:
            t = min(free_at)
            continue
        m = free[0]
        dec += 1
        if dec in waits and not_arrived and t < freed[m] + max_wait:  # a learned policy's wait
            free_at[m] = min(freed[m] + max_wait, arrival[not_arrived[0]])
            continue
        pos = choose(base, t, waiting, arrival, estimate, weight, due, k, speed[m])
        window = arrived[-(rules.GAP_WINDOW + 1) :]
        gap = rules.mean_gap(arrival[window[0]], arrival[window[-1]], len(window) - 1)
        wake = rules.delayed_start(estimate[waiting[pos]] / speed[m], alpha, freed[m], gap, max_wait)
        if wake > t:  # hold the GPU
            free_at[m] = min([wake, t + max_wait] + ([arrival[not_arrived[0]]] if not_arrived else []))
            continue
        j = waiting.pop(pos)
        start[j], end[j], machine[j] = t, t + duration[j] / speed[m], m
        free_at[m] = freed[m] = end[j]
    return start, end, machine


def simulate_chunked(
    arrival, duration, estimate, weight, due, frames, chunk_frames, max_gpus, setup, rule,
    machines=1, k=rules.ATC_K_DEFAULT, machine_free=None, sync_s=0.0,
):  # fmt: skip
    """Schedule one scenario of jobs of frames (``sched.sim.chunks``: its model and formulas);
    returns (job, chunk, start, end, machine) lists, one item a chunk, jobs in row order and
    each job's chunks in order. ``chunk_frames`` 0: indivisible; ``max_gpus`` 0: no limit.
    ``sync_s`` > 0: the rule ranks the jobs at syncs every ``sync_s`` seconds and the farm
    dispatches by those ranks between them (``sched.sim.sync``: its model); here every sync
    instant k × sync_s from the first arrival on is visited."""
    rid = rules.rule_id(rule) if isinstance(rule, str) else rule
    speed = [float(v) for v in speeds(machines)]
    n = len(arrival)
    free_at = list(machine_free) if machine_free is not None else [-math.inf] * len(speed)
    if len(free_at) != len(speed):
        raise MachinesError(f"machine_free: expected {len(speed)} values, got {len(free_at)}")
    job = _Jobs(arrival, duration, estimate, weight, due, frames, chunk_frames, max_gpus, setup)
    running = []  # (end, job) of the chunks running
    not_arrived = deque(sorted(range(n), key=lambda j: (arrival[j], j)))
    waiting, placed, t = [], {}, -math.inf
    next_sync, farm_rank = None, {}  # the index k of the next sync; the ranks of the last one
    while True:
        while not_arrived and arrival[not_arrived[0]] <= t:
            waiting.append(not_arrived.popleft())
        free = [m for m in range(len(speed)) if free_at[m] <= t]
        running = [(e, i) for e, i in running if e > t]  # a chunk ended by t frees its job's place
        busy = [sum(1 for _, i in running if i == j) for j in range(n)]
        if sync_s > 0 and next_sync is None and waiting:
            next_sync = _first_sync(t, sync_s)
        if next_sync is not None and next_sync * sync_s == t:  # after the ends and arrivals at t
            farm_rank = _ranking(job, rid, k, t, waiting, busy)
            next_sync += 1
        ready = [j for j in waiting if busy[j] < job.limit[j]]
        if free and ready:
            m = free[0]
            if sync_s > 0:
                j = _farm_choice(ready, farm_rank, weight)
            else:
                j = _rule_choice(job, rid, k, t, ready, busy, speed[m])
            c = job.started[j]
            f = chunks.frames_of(job.frames[j], job.per[j], c)
            work = chunks.chunk_work(duration[j], job.frames[j], f, setup[j])
            placed[j, c] = (t, t + work / speed[m], m)
            free_at[m] = placed[j, c][1]
            running.append((free_at[m], j))
            job.started[j] += 1
            if job.started[j] == job.total[j]:
                waiting.remove(j)
            continue
        later = [e for e in free_at if e > t] + ([arrival[not_arrived[0]]] if not_arrived else [])
        if next_sync is not None and (waiting or not_arrived):
            later.append(next_sync * sync_s)
        if not later:
            break
        t = min(later)
    rows = [(j, c, *placed[j, c]) for j in range(n) for c in range(job.total[j])]
    return tuple(list(col) for col in zip(*rows)) if rows else ([], [], [], [], [])


class _Jobs:
    """A chunked scenario's jobs as lists, and how many chunks of each have started."""

    def __init__(self, arrival, duration, estimate, weight, due, frames, chunk_frames, max_gpus, setup):
        self.arrival, self.estimate, self.weight, self.due, self.setup = arrival, estimate, weight, due, setup
        self.frames, self.per = [int(f) for f in frames], [int(c) for c in chunk_frames]
        self.limit = [int(g) if g > 0 else math.inf for g in max_gpus]
        self.total = [chunks.chunk_count(f, c) for f, c in zip(self.frames, self.per)]
        self.started = [0] * len(self.frames)

    def remaining(self, j):
        """The estimated work of job ``j``'s waiting chunks."""
        return chunks.remaining_work(
            self.estimate[j], self.frames[j], self.per[j], self.total[j], self.started[j], self.setup[j]
        )

    def scores(self, rid, k, at, jobs, busy):
        """{job: (priority, tie key)} of ``jobs`` under rule ``rid`` at the decision ``at``."""
        out = {}
        for j in jobs:
            rem = self.remaining(j)
            static = rules.static_part(rid, rem, self.weight[j])
            x = rules.priority(rid, k, at, self.arrival[j], rem, self.weight[j], self.due[j], static)
            out[j] = (x, rules.tie_key(rid, busy[j]))
        return out


def _rule_choice(job, rid, k, t, ready, busy, speed):
    """The ready job the rule starts a chunk of on a GPU of ``speed`` at ``t`` (sync 0): the first
    maximum of (priority, tie key), ``ready`` being in (arrival, row) order."""
    at = rules.Decision(t, sum(job.remaining(j) for j in ready) / len(ready), speed)
    key = job.scores(rid, k, at, ready, busy)
    j = ready[0]
    for i in ready[1:]:
        if key[i] > key[j]:
            j = i
    return j


def _first_sync(t, sync_s):
    """The index k of the first sync at or after ``t``: the least integer k with k × sync_s >= t."""
    k = math.ceil(t / sync_s)
    while k * sync_s < t:
        k += 1
    while (k - 1) * sync_s >= t:
        k -= 1
    return k


def _ranking(job, rid, k, t, waiting, busy):
    """{job: rank} of a sync at ``t``: every job with a waiting chunk sorted by the rule's
    (priority, tie key) at ``t`` on a GPU of speed 1, largest first; ties in (arrival, row) order
    (a stable sort of ``waiting``)."""
    if not waiting:
        return {}
    at = rules.Decision(t, sum(job.remaining(j) for j in waiting) / len(waiting), 1.0)
    key = job.scores(rid, k, at, waiting, busy)
    order = sorted(waiting, key=lambda j: (-key[j][0], -key[j][1]))
    return {j: r for r, j in enumerate(order)}


def _farm_choice(ready, farm_rank, weight):
    """The ready job the farm starts a chunk of between syncs: the best-ranked of the last sync;
    else, among jobs submitted since, the highest weight (priority class), the earliest first."""
    synced = [j for j in ready if j in farm_rank]
    if synced:
        return min(synced, key=farm_rank.get)
    return max(ready, key=lambda j: weight[j])
