"""The compiled path of ``rank()``: one queue, one rule, one compiled call.

``core.simulate_batch`` is built for many scenarios: it packs a 25-array
:class:`~sched.sim.state.State` in Python and hands it to several compiled
functions. For one queue of a few dozen tasks that costs more than the
scheduling itself (each dispatch with the State unboxes every array).
:func:`rollout_order` takes five plain arrays, builds a one-slot State inside
the compiled code and drives it with the core's own step functions
(``reset_slot``, ``set_rule``, ``_advance``, ``pick``, ``_start``): the
event loop, the machine model, the tie rule and the rule formulas
(``sched.sim.rules``) are the simulator's, not a copy. The only thing added
is the record of the order in which tasks were started.

numba's on-disk cache alone would not notice a change in ``core.py``,
``state.py`` or ``rules.py`` (it checks only this file's timestamp);
``sched/__init__.py`` keys the cache folder on a hash of all the package's
sources for that reason.
"""

import numba as nb
import numpy as np

from sched.sim.core import _advance, _start, pick, set_rule
from sched.sim.state import allocate, reset_slot


@nb.njit(cache=True, nogil=True)
def plan_slot(arrival, estimate, weight, due, machine_free, speed, rule):
    """One queue loaded into a one-slot State for ``rule``'s plan (the State layout:
    sched.sim.state's one definition): ``(state, rows)``, ``rows`` the caller's rows in the
    slot's order (stable: equal arrivals keep row order, the simulator's tie rule). A task lasts
    what it is estimated to."""
    n = arrival.shape[0]
    s = allocate(1, n, speed)
    rows = np.argsort(arrival, kind="mergesort")
    for i in range(n):
        r = rows[i]
        s.arr[0, i] = arrival[r]
        s.dur[0, i] = estimate[r]
        s.est[0, i] = estimate[r]
        s.w[0, i] = weight[r]
        s.due[0, i] = due[r]
    s.n[0] = n
    for m in range(machine_free.shape[0]):
        s.mfree0[0, m] = machine_free[m]
    reset_slot(s, 0)
    set_rule(s, 0, rule)
    return s, rows


@nb.njit(cache=True, nogil=True)  # nogil: sched serve's other calls go on meanwhile
def rollout_order(arrival, estimate, weight, due, machine_free, speed, rule, k):
    """Greedy rollout of ``rule`` on one queue, planned with the estimates.

    Arrays in the caller's row order; ``machine_free[m]`` is when machine
    ``m`` is first free and ``speed[m]`` its speed. Returns ``(order, start, end, machine)``: ``order``
    the rows in the order they start (decision order), the others in row
    order.
    """
    n = arrival.shape[0]
    s, rows = plan_slot(arrival, estimate, weight, due, machine_free, speed, rule)
    order = np.empty(n, np.int64)
    c = 0
    # Without skip_forced every start goes through here, so the decision
    # order is recorded exactly; a lone waiting task is picked either way.
    while _advance(s, 0, False):
        q = pick(s, 0, rule, k)
        order[c] = rows[s.queue[0, q]]
        c += 1
        _start(s, 0, q, s.pending[0])
    start = np.empty(n)
    end = np.empty(n)
    mach = np.empty(n, np.int64)
    for i in range(n):
        r = rows[i]
        start[r] = s.start[0, i]
        end[r] = s.end[0, i]
        mach[r] = s.mach[0, i]
    return order, start, end, mach
