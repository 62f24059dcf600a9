"""The compiled simulator core: the event loop, the rule picks and batched rollouts.

Model: M uniform parallel machines (GPUs), non-preemptive and non-delay. A
machine of speed v runs a task of duration p in p / v (speed 1: the
reference GPU; identical GPUs are all speed 1). Whenever a machine is free and
tasks wait, one of them starts on it at once: the decision is taken for that
machine, and the rule sees the waiting tasks' estimates on it, p / v
(``rules.priority``). When several machines are free at the same time they
are filled one after another, lowest machine index first, from the same
queue at that time, whatever their speeds (list the fast GPUs first to have
them served first: a fastest-first scan here cost about a third of the
core's decisions per second, measured, for every farm). Tasks that arrive
exactly when a machine frees are in the queue for that decision.

The scenarios live in a :class:`~sched.sim.state.State` of plain NumPy arrays
(layout, loading and unloading in :mod:`sched.sim.state`, re-exported here:
this module is the simulator's public face). Tasks are numbered in arrival
order and the queue of waiting tasks is kept in that order, so "first strict
maximum while scanning the queue" is exactly the tie rule: earlier arrival,
then earlier row.

The step functions are compiled with numba's ``_nrt=False``: they never
allocate, the arrays they touch are owned by the caller for the whole call,
and without it numba's reference counting of the twenty-odd arrays of a
State costs more than the scheduling itself. Functions that allocate keep the
NRT.
"""

import numba as nb
import numpy as np

from sched.sim import rules
from sched.sim.errors import SimulationError
from sched.sim.rules import priority, static_part  # one definition of each formula, compiled where called
from sched.sim.state import (  # noqa: F401  (re-exported: the simulator's public names)
    State,
    _unpack,
    arrival_order,
    copy_slot,
    core_jit,
    empty_state,
    load_slot,
    pack,
    reset_slot,
)


@core_jit
def _admit(s, b):
    """Move every task that has arrived by the current time into the queue."""
    t = s.t[b]
    while s.nxt[b] < s.n[b] and s.arr[b, s.nxt[b]] <= t:
        s.queue[b, s.qlen[b]] = s.nxt[b]
        s.qlen[b] += 1
        s.nxt[b] += 1


@core_jit
def _free_machine(s, b):
    """Lowest-index machine free at the current time, or -1."""
    for m in range(s.mfree.shape[1]):
        if s.mfree[b, m] <= s.t[b]:
            return m
    return -1


@core_jit
def _start(s, b, qpos, m):
    """Start the task at queue position ``qpos`` on machine ``m`` now."""
    j = s.queue[b, qpos]
    # shift left, keeping the queue in arrival order (the tie rule relies on it)
    for q in range(qpos, s.qlen[b] - 1):
        s.queue[b, q] = s.queue[b, q + 1]
    s.qlen[b] -= 1
    t = s.t[b]
    end = t + s.dur[b, j] / s.speed[b, m]
    s.start[b, j] = t
    s.end[b, j] = end
    s.mach[b, j] = m
    s.mfree[b, m] = end
    s.mtask[b, m] = j
    s.nstarted[b] += 1
    late = end - s.due[b, j]
    if late > 0.0:
        s.wt_started[b] += s.w[b, j] * late


@core_jit
def accrued_weighted_tardiness(s, b):
    """Weighted tardiness accrued up to the current time.

    Sum over arrived tasks of w * max(0, min(C, t) - d), C the completion time
    (infinite while waiting). It only grows with t and equals the schedule's
    total weighted tardiness once every task has completed; the dense reward
    is minus its increments.
    """
    t = s.t[b]
    total = s.wt_started[b]
    # tasks still running: remove the part of their tardiness not yet reached
    for m in range(s.mtask.shape[1]):
        j = s.mtask[b, m]
        if j >= 0 and s.end[b, j] > t:
            d = s.due[b, j]
            total -= s.w[b, j] * (max(s.end[b, j] - d, 0.0) - max(t - d, 0.0))
    for q in range(s.qlen[b]):
        j = s.queue[b, q]
        late = t - s.due[b, j]
        if late > 0.0:
            total += s.w[b, j] * late
    return total


@core_jit
def _report(s, b):
    """Record the weighted tardiness accrued since the previous report."""
    now = s.wt_started[b] if s.done[b] else accrued_weighted_tardiness(s, b)
    s.accrued[b] = now - s.wt_prev[b]
    s.wt_prev[b] = now


@core_jit
def _advance(s, b, skip_forced):
    """Run slot ``b`` until a decision is needed (returns True) or every task has started.

    With ``skip_forced`` a decision with a single waiting task is taken here:
    there is nothing to choose.
    """
    while True:
        _admit(s, b)
        if s.qlen[b] > 0:
            m = _free_machine(s, b)
            if m >= 0:
                if skip_forced and s.qlen[b] == 1:
                    _start(s, b, 0, m)
                    continue
                s.pending[b] = m
                return True
            # every machine busy: jump to the first one to free
            tm = s.mfree[b, 0]
            for mm in range(1, s.mfree.shape[1]):
                tm = min(tm, s.mfree[b, mm])
            s.t[b] = tm
        elif s.nxt[b] < s.n[b]:
            # empty queue: jump to the next arrival
            s.t[b] = max(s.t[b], s.arr[b, s.nxt[b]])
        else:
            s.pending[b] = -1
            s.done[b] = True
            return False


@core_jit
def pick(s, b, rule, k):
    """Queue position of the task ``rule`` starts now on the pending machine (first strict maximum)."""
    t = s.t[b]
    ql = s.qlen[b]
    v = s.speed[b, s.pending[b]]
    pbar = 0.0
    if rule == rules.ATC:
        for q in range(ql):
            pbar += s.est[b, s.queue[b, q]]
        pbar /= ql
    at = rules.Decision(t, pbar, v)
    best = 0
    best_v = -np.inf
    for q in range(ql):
        j = s.queue[b, q]
        x = priority(rule, k, at, s.arr[b, j], s.est[b, j], s.w[b, j], s.due[b, j], s.static[b, j])
        if x > best_v:
            best_v = x
            best = q
    return best


@core_jit
def set_rule(s, b, rule):
    """Precompute the static part of every task's priority under ``rule``."""
    for j in range(s.n[b]):
        s.static[b, j] = static_part(rule, s.est[b, j], s.w[b, j])


@core_jit
def run_rule(s, b, rule, k):
    """Take every remaining decision of slot b with ``rule`` (its static parts set); returns
    how many it took. The rollout loop, its one definition (a learned policy's:
    ``sched.learn.policy.kernel.run_policy``, which calls this one for a rule)."""
    n = 0
    while _advance(s, b, True):
        _start(s, b, pick(s, b, rule, k), s.pending[b])
        n += 1
    return n


@core_jit
def _rollout(s, b, rule, k):
    reset_slot(s, b)
    set_rule(s, b, rule)
    s.decisions[b] += run_rule(s, b, rule, k)
    _report(s, b)


@core_jit
def _rollout_serial(s, rule, k):
    for b in range(s.n.shape[0]):
        _rollout(s, b, rule, k)


@nb.njit(cache=True, parallel=True, _nrt=False)
def _rollout_parallel(s, rule, k):
    for b in nb.prange(s.n.shape[0]):
        _rollout(s, b, rule, k)


def rollout_batch(s, rule, k):
    """Schedule every slot of ``s`` with one dispatching rule (one compiled call).

    Slots are spread over numba's threads when there are enough of them to
    pay for starting the threads.
    """
    if s.n.shape[0] >= 2 * nb.get_num_threads():
        _rollout_parallel(s, rule, k)
    else:
        _rollout_serial(s, rule, k)


@core_jit
def advance_slot(s, b, skip_forced):
    """:func:`advance_batch` for one slot (e.g. one just reloaded with a new scenario)."""
    if s.done[b]:
        s.accrued[b] = 0.0
        return
    if _advance(s, b, skip_forced):
        s.decisions[b] += 1
    _report(s, b)


@core_jit
def advance_batch(s, skip_forced):
    """Lockstep step, part 2: run every unfinished slot to its next decision.

    Afterwards ``pending[b] >= 0`` marks the slots waiting for an action,
    ``done[b]`` the finished ones, and ``accrued[b]`` holds the weighted
    tardiness accrued since the previous call (the total of the rest of the
    schedule for a slot that has just finished).
    """
    for b in range(s.n.shape[0]):
        advance_slot(s, b, skip_forced)


@core_jit
def _cost_to_go(s, b, scratch, rule, k):
    copy_slot(s, b, scratch, b)
    set_rule(scratch, b, rule)
    return _cost_to_go_copied(scratch, b, rule, k)


@core_jit
def _cost_to_go_copied(scratch, b, rule, k):
    """:func:`_cost_to_go` on slot b of ``scratch``, a copy whose static parts are ``rule``'s."""
    now = accrued_weighted_tardiness(scratch, b)
    if scratch.pending[b] >= 0:
        _start(scratch, b, pick(scratch, b, rule, k), scratch.pending[b])
    run_rule(scratch, b, rule, k)
    return scratch.wt_started[b] - now


@nb.njit(cache=True, parallel=True, _nrt=False)
def cost_to_go_batch(s, scratch, rule, k, out):
    """Hindsight cost-to-go of every slot: the weighted tardiness still to accrue
    if ``rule`` took every decision from now on, with the slot's true future
    arrivals and durations. 0 for finished slots. ``scratch`` is a State of
    the same shape, overwritten.

    Training only (the critic's privileged input): a scheduler never knows this.
    """
    for b in nb.prange(s.n.shape[0]):
        out[b] = 0.0 if s.done[b] else _cost_to_go(s, b, scratch, rule, k)


@nb.njit(cache=True, parallel=True, _nrt=False)
def cost_to_go_cached(s, scratch, rule, k, out, valid, taken, choice):
    """:func:`cost_to_go_batch`, reusing the previous step's value where the step followed ``rule``.

    After a step that started ``rule``'s own choice (``taken[b] == choice[b]``,
    ``valid[b]``), the rollout from the new state is the rest of the rollout
    from the previous one, so its cost-to-go is the previous minus what the
    step accrued (``s.accrued[b]``): no rollout is needed. Other slots are
    rolled out afresh. Then ``choice[b]`` becomes ``rule``'s choice in the new
    state (-1 when none is pending) and ``valid[b]`` is set. ``s.static``
    must hold ``rule``'s static parts (:func:`set_rule`).
    """
    for b in nb.prange(s.n.shape[0]):
        if s.done[b]:
            out[b] = 0.0
        elif valid[b] and choice[b] >= 0 and taken[b] == choice[b]:
            out[b] -= s.accrued[b]
        else:
            copy_slot(s, b, scratch, b)  # s.static holds rule's static parts: no set_rule
            out[b] = _cost_to_go_copied(scratch, b, rule, k)
        choice[b] = pick(s, b, rule, k) if s.pending[b] >= 0 else -1
        valid[b] = True


@core_jit
def apply_batch(s, actions):
    """Lockstep step, part 1: start ``queue[b, actions[b]]`` in every pending slot."""
    for b in range(s.n.shape[0]):
        m = s.pending[b]
        if m < 0:
            continue
        a = actions[b]
        if a < 0 or a >= s.qlen[b]:
            raise SimulationError("action outside the queue")
        _start(s, b, a, m)
        s.pending[b] = -1


def simulate_batch(scenarios, rule, machines=1, k=rules.ATC_K_DEFAULT, machine_free=None):
    """Schedule many scenarios with one rule in one compiled call.

    ``scenarios``: list of (arrival, duration, estimate, weight, due) arrays in row
    order. Returns a list of (start, end, machine) arrays in row order.
    """
    rid = rules.rule_id(rule) if isinstance(rule, str) else int(rule)
    state, orders = pack(scenarios, machines, machine_free)
    rollout_batch(state, rid, float(k))
    return _unpack(state, orders)


def simulate(
    arrival, duration, estimate, weight, due, rule, machines=1, k=rules.ATC_K_DEFAULT, machine_free=None
):
    """Schedule one scenario; returns (start, end, machine) in row order."""
    return simulate_batch([(arrival, duration, estimate, weight, due)], rule, machines, k, machine_free)[0]
