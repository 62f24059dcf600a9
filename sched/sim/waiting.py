"""Waiting as an action (issue 60): a free GPU may stay idle while tasks wait.

The core (:mod:`sched.sim.core`) is non-delay: a free GPU with waiting tasks starts one at once.
Here a decision may instead *hold* the GPU: it stays idle until the next arrival or a wake
time, whichever comes first, and never longer than ``max_wait`` seconds from the decision; then
it decides again (with the task that arrived, if one did). The rest of the model (the GPU that
decides, the tie rule, the rules' formulas) is the core's, through its own step functions.

* :func:`hold`: the action itself, for any policy: hold the pending GPU until a time;
* :func:`decide`: a delayed rule's decision (``rules.WAIT_RULES``): its base rule's pick and the
  time the GPU waits until (at or before now: start the pick now). One function: ``rank()``, the
  planner or a learned policy call it to know what the rule would do;
* :func:`run_delayed`, :func:`simulate_batch`: the rollouts of a delayed rule;
* :func:`tuned_parameters`: a delayed rule's alpha, k and bound, as ``sched tune`` chose them.

A held GPU's ``mfree`` is its wake time (its last task is still ``mtask``, whose end says when
it freed: :func:`freed_at`). With every decision starting a task nothing here runs and the
core's results are unchanged, bit for bit. The plain-Python model is
``sched.sim.reference.simulate_delayed``.
"""

import numba as nb
import numpy as np

from sched.sim import rules
from sched.sim.core import _advance, _report, _start, pick, set_rule
from sched.sim.errors import SimulationError
from sched.sim.state import _unpack, core_jit, pack, reset_slot


@core_jit
def freed_at(s, b, m):
    """When GPU ``m`` last became free: its last task's end, else when it was first free."""
    j = s.mtask[b, m]
    return s.end[b, j] if j >= 0 else s.mfree0[b, m]


@core_jit
def arrival_gap(s, b):
    """The expected gap to the next arrival: the mean of the last ``rules.GAP_WINDOW`` gaps
    between the tasks arrived so far (infinite before the second arrival)."""
    last = s.nxt[b] - 1
    first = max(0, last - rules.GAP_WINDOW)
    if last < 0:
        return np.inf
    return rules.mean_gap(s.arr[b, first], s.arr[b, last], last - first)


@core_jit
def wake_time(s, b, q, alpha, max_wait):
    """When the delayed rule starts the task at queue position ``q`` on the pending GPU
    (``rules.delayed_start``): at or before ``s.t[b]``: now."""
    m = s.pending[b]
    p = s.est[b, s.queue[b, q]] / s.speed[b, m]
    return rules.delayed_start(p, alpha, freed_at(s, b, m), arrival_gap(s, b), max_wait)


@core_jit
def decide(s, b, rule, k, alpha, max_wait):
    """A delayed rule's decision at slot ``b``'s pending GPU: ``(q, wake)``, ``q`` the queue
    position of the base ``rule``'s pick (static parts set: ``core.set_rule``), ``wake`` when it
    starts: ``wake <= s.t[b]``, start it now (``core._start``); later, :func:`hold` the GPU until
    ``wake``."""
    q = pick(s, b, rule, k)
    return q, wake_time(s, b, q, alpha, max_wait)


@core_jit
def hold(s, b, until, max_wait):
    """Leave slot ``b``'s pending GPU idle until ``until``, the next arrival or ``now + max_wait``,
    whichever comes first; returns that wake time, when the GPU decides again. ``until`` must be
    after now."""
    t = s.t[b]
    m = s.pending[b]
    u = min(until, t + max_wait)
    if s.nxt[b] < s.n[b]:
        u = min(u, s.arr[b, s.nxt[b]])
    if not u > t:
        raise SimulationError("a hold must end after the decision's time")
    s.mfree[b, m] = u
    s.pending[b] = -1
    return u


@core_jit
def run_delayed(s, b, rule, k, alpha, max_wait):
    """Take every remaining decision of slot ``b`` with the delayed ``rule`` (its static parts
    set); a lone waiting task is a decision too (it may wait). Returns the decisions taken."""
    n = 0
    while _advance(s, b, False):
        q, wake = decide(s, b, rule, k, alpha, max_wait)
        if wake > s.t[b]:
            hold(s, b, wake, max_wait)
        else:
            _start(s, b, q, s.pending[b])
        n += 1
    return n


@core_jit
def _rollout(s, b, rule, k, alpha, max_wait):
    reset_slot(s, b)
    set_rule(s, b, rule)
    s.decisions[b] += run_delayed(s, b, rule, k, alpha, max_wait)
    _report(s, b)


@core_jit
def _rollout_serial(s, rule, k, alpha, max_wait):
    for b in range(s.n.shape[0]):
        _rollout(s, b, rule, k, alpha, max_wait)


@nb.njit(cache=True, parallel=True, _nrt=False)
def _rollout_parallel(s, rule, k, alpha, max_wait):
    for b in nb.prange(s.n.shape[0]):
        _rollout(s, b, rule, k, alpha, max_wait)


def tuned_parameters(tuned, rule):
    """``(alpha, atc_k or None, max_wait)`` of the delayed ``rule`` in a tuned.json's ``waiting``
    (``sched tune`` writes it, ``sched.evaluate.tuning.tune_waiting``: what the benchmark ran)."""
    wait = tuned.get("waiting") if isinstance(tuned, dict) else None
    got = wait.get("rules", {}).get(rule) if isinstance(wait, dict) else None
    if not isinstance(got, dict):
        raise SimulationError(
            f"delayed rule {rule}: the tuned file has no alpha for it (name it in config "
            "benchmark.waiting.rules and rerun `sched tune`)"
        )
    k = got.get("atc_k")
    return float(got["alpha"]), (None if k is None else float(k)), float(wait["max_wait_s"])


def check(alpha, max_wait):
    """A delayed rule's parameters: ``alpha`` > 0 (inf: never waits) and ``max_wait`` > 0 seconds."""
    if not alpha > 0:
        raise SimulationError(f"a delayed rule's alpha must be > 0, got {alpha!r}")
    if not (max_wait > 0 and np.isfinite(max_wait)):
        raise SimulationError(f"a delayed rule's max_wait must be a finite time > 0, got {max_wait!r}")


def simulate_batch(scenarios, rule, alpha, max_wait, machines=1, k=rules.ATC_K_DEFAULT, machine_free=None):
    """Schedule many scenarios with the delayed ``rule`` (a name of ``rules.WAIT_RULES``), as
    ``core.simulate_batch``; returns a list of (start, end, machine) arrays in row order."""
    base = rules.wait_base(rule)
    check(alpha, max_wait)
    state, orders = pack(scenarios, machines, machine_free)
    if state.n.shape[0] >= 2 * nb.get_num_threads():
        _rollout_parallel(state, base, float(k), float(alpha), float(max_wait))
    else:
        _rollout_serial(state, base, float(k), float(alpha), float(max_wait))
    return _unpack(state, orders)


def simulate(
    arrival, duration, estimate, weight, due, rule, alpha, max_wait, machines=1, k=rules.ATC_K_DEFAULT,
    machine_free=None,
):  # fmt: skip
    """Schedule one scenario with a delayed rule; returns (start, end, machine) in row order."""
    return simulate_batch(
        [(arrival, duration, estimate, weight, due)], rule, alpha, max_wait, machines, k, machine_free
    )[0]
