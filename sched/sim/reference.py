"""Plain-Python reference simulator, written for clarity rather than speed.

It implements the same model as the compiled core (see ``sched.sim.core``) from
scratch, with Python lists and no shared state code, so the tests can check
that both produce identical schedules. Only the rule formulas are shared
(``sched.sim.rules``): they are the specification both must follow.
"""

import math
from collections import deque

from sched.data.machines import MachinesError, speeds
from sched.sim import rules


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
