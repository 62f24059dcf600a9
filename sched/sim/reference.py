"""Plain-Python reference simulator, written for clarity rather than speed.

It implements the same model as the compiled core (see ``sched.sim.core``) from
scratch, with Python lists and no shared state code, so the tests can check
that both produce identical schedules. Only the rule formulas are shared
(``sched.sim.rules``): they are the specification both must follow; and, for jobs of frames
(:func:`simulate_chunked`), the chunk formulas of ``sched.sim.chunks`` (a chunk's frames and
work, a job's remaining work), the model's specification too.
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


def simulate_chunked(
    arrival, duration, estimate, weight, due, frames, chunk_frames, max_gpus, setup, rule,
    machines=1, k=rules.ATC_K_DEFAULT, machine_free=None,
):  # fmt: skip
    """Schedule one scenario of jobs of frames (``sched.sim.chunks``: its model and formulas);
    returns (job, chunk, start, end, machine) lists, one item a chunk, jobs in row order and
    each job's chunks in order. ``chunk_frames`` 0: indivisible; ``max_gpus`` 0: no limit."""
    rid = rules.rule_id(rule) if isinstance(rule, str) else rule
    speed = [float(v) for v in speeds(machines)]
    n = len(arrival)
    free_at = list(machine_free) if machine_free is not None else [-math.inf] * len(speed)
    if len(free_at) != len(speed):
        raise MachinesError(f"machine_free: expected {len(speed)} values, got {len(free_at)}")
    frames, per = [int(f) for f in frames], [int(c) for c in chunk_frames]
    limit = [int(g) if g > 0 else math.inf for g in max_gpus]
    total = [chunks.chunk_count(frames[j], per[j]) for j in range(n)]
    started = [0] * n
    running = []  # (end, job) of the chunks running
    not_arrived = deque(sorted(range(n), key=lambda j: (arrival[j], j)))
    waiting, placed, t = [], {}, -math.inf
    while True:
        while not_arrived and arrival[not_arrived[0]] <= t:
            waiting.append(not_arrived.popleft())
        free = [m for m in range(len(speed)) if free_at[m] <= t]
        running = [(e, i) for e, i in running if e > t]  # a chunk ended by t frees its job's place
        busy = [sum(1 for _, i in running if i == j) for j in range(n)]
        ready = [j for j in waiting if busy[j] < limit[j]]
        if free and ready:
            m = free[0]
            rem = {
                j: chunks.remaining_work(estimate[j], frames[j], per[j], total[j], started[j], setup[j])
                for j in ready
            }
            at = rules.Decision(t, sum(rem[j] for j in ready) / len(ready), speed[m])
            key = {
                j: (
                    rules.priority(
                        rid,
                        k,
                        at,
                        arrival[j],
                        rem[j],
                        weight[j],
                        due[j],
                        rules.static_part(rid, rem[j], weight[j]),
                    ),
                    rules.tie_key(rid, busy[j]),
                )  # fmt: skip
                for j in ready
            }
            j = ready[0]
            for i in ready[1:]:
                if key[i] > key[j]:
                    j = i
            c = started[j]
            work = chunks.chunk_work(duration[j], frames[j], chunks.frames_of(frames[j], per[j], c), setup[j])
            placed[j, c] = (t, t + work / speed[m], m)
            free_at[m] = placed[j, c][1]
            running.append((free_at[m], j))
            started[j] += 1
            if started[j] == total[j]:
                waiting.remove(j)
            continue
        later = [e for e in free_at if e > t] + ([arrival[not_arrived[0]]] if not_arrived else [])
        if not later:
            break
        t = min(later)
    rows = [(j, c, *placed[j, c]) for j in range(n) for c in range(total[j])]
    return tuple(list(col) for col in zip(*rows)) if rows else ([], [], [], [], [])
