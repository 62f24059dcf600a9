"""Dispatching rules: their names and their priority formulas, defined once.

Every rule is written as a *priority* of one waiting task at decision time
``t`` (larger is better). A scheduler picks the waiting task with the largest
priority; ties go to the earlier arrival, then to the earlier row of the
scenario. The functions are marked ``register_jitable``: called from Python
(the reference simulator) they are plain Python; called from the compiled
core (``sched.sim.core``) numba compiles them. A formula cannot drift between the
two.

What a rule may see is what a scheduler knows at ``t``: the task's estimate
``p`` (not its true duration), weight ``w``, due date ``d`` and arrival, plus
``pbar``, the mean estimate of the tasks waiting at ``t``, and the speed ``v``
of the GPU the decision is for: the rule reads the estimates on that GPU,
``p / v`` and ``pbar / v`` (a speed of exactly 1 leaves every value, bit for
bit, as it was before speeds existed). The static part (``w / p``,
``log(w / p)``) stays the speed-1 one: on one GPU every waiting task shares
the factor ``v`` (the term ``log v``), which does not change their order.

On a farm of chunked jobs (:mod:`sched.sim.chunks`) ``p`` is a job's remaining work: the
estimates of its waiting chunks (a whole task's estimate when the job is one chunk). The farm's
own dispatchers, :data:`FARM_RULES`, are rules of their own: ``farm-fifo`` (highest weight, then
earliest arrival) and ``farm-balanced`` (highest weight, then the job running the fewest chunks
now, :func:`tie_key`, then earliest arrival). They are not in :data:`RULES`, the rules every
benchmark, ``rank()`` and tuning already run: their results must not change.

The delayed rules, :data:`WAIT_RULES` (issue 60; delayed SPT, Hoogeveen and Vestjens 1996; delayed
WSPT, Anderson and Potts 2004), may leave a free GPU idle: the base rule's pick, of estimate ``p`` on
that GPU, starts only when ``p <= alpha x (time since the GPU freed + the expected gap to the next
arrival)`` (:func:`delayed_start`); their compiled loop is :mod:`sched.sim.waiting`.
"""

import math
from typing import NamedTuple

from numba.extending import register_jitable

from sched.sim.errors import SimulationError

FIFO, SPT, EDD, WSPT, ATC, WMDD, FARM_FIFO, FARM_BALANCED = range(8)

#: Rule names as used on the command line and in every output file.
RULES = ("fifo", "spt", "edd", "wspt", "atc", "wmdd")
#: The render farm's own dispatchers (OpenCue's and Deadline's defaults): `sched simulate` runs
#: them; the benchmarks of today's settings do not.
FARM_RULES = ("farm-fifo", "farm-balanced")
#: Every rule `sched simulate --policy` takes.
ALL_RULES = RULES + FARM_RULES
RULE_IDS = {name: i for i, name in enumerate(ALL_RULES)}

#: The delayed rules and the rule each delays (:func:`delayed_start`); not in :data:`RULES` either.
WAIT_RULES = ("wspt-wait", "atc-wait")
WAIT_BASE = {"wspt-wait": WSPT, "atc-wait": ATC}
#: The expected gap to the next arrival: the mean of the last GAP_WINDOW gaps between arrivals.
GAP_WINDOW = 32

#: Default look-ahead parameter of ATC (the field's usual reference value).
ATC_K_DEFAULT = 2.0


class Decision(NamedTuple):
    """What every waiting task's priority at one decision shares: the time ``t``, ``pbar``
    (the mean speed-1 estimate of the waiting tasks; read by ATC only) and the ``speed`` of
    the GPU the decision is for. Built once per decision, outside the loop over the queue."""

    t: float
    pbar: float
    speed: float


@register_jitable
def static_part(rule, p, w):
    """The part of a task's priority that does not change while it waits.

    log(w / p) for ATC, w / p for WSPT, 0 otherwise. The compiled core
    computes it once per task instead of at every decision.
    """
    if rule == ATC:
        return math.log(w / p)
    if rule == WSPT:
        return w / p
    return 0.0


@register_jitable
def atc_log_index(log_wp, p, d, t, k, pbar):
    """Natural log of the Apparent Tardiness Cost index, from log(w / p).

    ATC (Vepsalainen & Morton, 1987): I = (w / p) * exp(-max(d - p - t, 0) / (k * pbar)).
    The log is used because it ranks tasks in the same order while exp()
    underflows to 0 for tasks with a large slack, which would turn them into
    false ties.
    """
    return log_wp - max(d - p - t, 0.0) / (k * pbar)


@register_jitable
def priority(rule, k, at, arrival, p, w, d, static):
    """Priority of one waiting task under ``rule`` (ATC's look-ahead ``k``; larger runs first)
    at the decision ``at`` (a :class:`Decision`: its time, ``pbar`` and the GPU's ``speed``).

    ``p`` and ``pbar`` are speed-1 estimates (the rule uses ``p / speed`` and
    ``pbar / speed``); ``static`` is ``static_part(rule, p, w)`` of the task.
    """
    t, pbar, speed = at.t, at.pbar, at.speed
    if speed != 1.0:  # p / 1.0 is p: skip the divisions (the hot loop of identical GPUs)
        p = p / speed
        pbar = pbar / speed
    if rule == FIFO:
        return -arrival
    if rule == SPT:
        return -p
    if rule == EDD:
        return -d
    if rule == WSPT:
        return static
    if rule == ATC:
        return atc_log_index(static, p, d, t, k, pbar)
    if rule == WMDD:  # weighted modified due date: smallest max(p, d - t) / w first
        return -max(p, d - t) / w
    # FARM_FIFO, FARM_BALANCED: the highest weight (priority class) first; ties by tie_key,
    # then by arrival (the queue's order)
    return w


@register_jitable
def tie_key(rule, running):
    """What breaks a tie of equal priorities before the arrival order (larger first):
    ``farm-balanced``'s fewest running chunks (``-running``); 0 for every other rule."""
    if rule == FARM_BALANCED:
        return -float(running)
    return 0.0


@register_jitable
def mean_gap(first, last, gaps):
    """The expected gap to the next arrival: the mean of ``gaps`` gaps between arrivals, from the
    arrival ``first`` to the arrival ``last``; infinite when none is known (``gaps`` 0)."""
    if gaps <= 0:
        return math.inf
    return (last - first) / gaps


@register_jitable
def delayed_start(p, alpha, freed, gap, max_wait):
    """When a delayed rule starts its pick of estimate ``p`` (on the deciding GPU) on a GPU free
    since ``freed``: the first time t with ``p <= alpha x (t - freed + gap)``, ``gap`` the expected
    gap to the next arrival, and never later than ``freed + max_wait``. At or before the decision's
    time: start now; after it: the GPU waits (a new decision at an arrival or at that time)."""
    return min(freed + p / alpha - gap, freed + max_wait)


def wait_base(name):
    """The rule id a delayed rule delays; a clear error for an unknown name."""
    try:
        return WAIT_BASE[name]
    except KeyError:
        known = ", ".join(WAIT_RULES)
        raise SimulationError(f"unknown delayed rule {name!r}; expected one of {known}") from None


def rule_id(name):
    """Rule number for a rule name; a clear error for an unknown one."""
    try:
        return RULE_IDS[name]
    except KeyError:
        raise SimulationError(f"unknown rule {name!r}; expected one of {', '.join(ALL_RULES)}") from None
