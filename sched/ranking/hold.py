"""``rank()`` with a delayed rule (issue 60): a held task's planned start is later than ``now``.

A delayed rule (``wspt-wait``, ``atc-wait``: :data:`sched.sim.rules.WAIT_RULES`) runs when the call
names it, or when ``auto`` follows a verdict whose winner is one. Its forward plan is the
one-queue rollout of :func:`sched.sim.one_queue.rollout_order` (the core's step functions, the
base rule's pick) with the delayed rule's decision: the pick of estimate ``p`` on a GPU free since
``freed`` starts at ``rules.delayed_start(p, alpha, freed, gap, max_wait)`` (one home for the
formula); later than the decision, the GPU is held (``sched.sim.waiting.hold``) until then or the
next arrival among the call's tasks, and decides again.

What ``rank()`` knows (docs/rank.md, "Delayed rules"):

* ``alpha``, ATC's ``k`` and ``max_wait_s``: tuned.json's ``waiting`` (``sched tune``): config
  ``rank.tuned`` for a named policy, the winner's own folder's for ``auto`` (:func:`resolve`);
* the expected gap to the next arrival: the mean of the last ``rules.GAP_WINDOW`` gaps between the
  call's task arrivals up to ``now`` (the simulator's estimate on what the call shows). Tasks that
  give no ``arrival`` arrive at ``now``: when no two arrivals differ, no gap is known (infinite)
  and nothing is held;
* when a GPU went idle: a busy GPU's ``free_at``; a GPU free now is taken as idle since the
  earliest arrival of the call's tasks, at most ``max_wait_s`` before ``now``. So no task is held
  past ``max_wait_s`` after it arrived, however often ``rank()`` is called.

With any other policy nothing here runs: ``rank()`` is as before, bit for bit.
"""

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from sched.ranking.tasks import RankInputError
from sched.sim import rules
from sched.sim.core import _advance, _start, pick
from sched.sim.one_queue import plan_slot
from sched.sim.waiting import hold


def is_delayed(choice):
    """Whether a Choice runs a delayed rule."""
    return getattr(choice, "wait", None) is not None


def wait_record(tuned, name, path):
    """{"alpha", "k", "max_wait_s", "source"} of the delayed rule ``name`` in a parsed tuned.json
    (``path``); a RankInputError naming the file when it has none."""
    from sched.sim.errors import SimulationError
    from sched.sim.waiting import tuned_parameters

    try:
        alpha, k, max_wait = tuned_parameters(tuned, name)
    except (SimulationError, KeyError, TypeError, ValueError) as exc:
        raise RankInputError(f"{path}: field waiting: {exc}") from None
    if not (alpha > 0 and max_wait > 0 and math.isfinite(max_wait)) or (k is not None and not k > 0):
        raise RankInputError(f"{path}: field waiting.rules.{name}: alpha, atc_k and max_wait_s must be > 0")
    return {"alpha": alpha, "k": k, "max_wait_s": max_wait, "source": str(path)}


def _as_read(data, path, root):
    """A tuned.json as parsed (its ``waiting`` is checked by :func:`wait_record`)."""
    return data


def _read_tuned(path):
    """A tuned.json's parsed content, through rank()'s one cache of verdict files
    (``verdicts._json_file``: read again only when the file changes; rank() calls often)."""
    from sched.ranking.verdict_files import read_verdict
    from sched.ranking.verdicts import _json_file

    data = _json_file(path, _as_read)
    return read_verdict(path, _as_read) if data is None else data  # absent: its error, naming it


def delayed_choice(name, st, why):
    """The Choice of a call naming the delayed rule ``name``: alpha, k and max_wait from config
    ``rank.tuned``'s ``waiting`` (a RankInputError naming the file without it)."""
    from sched.ranking.verdict_files import Choice

    w = wait_record(_read_tuned(st.tuned), name, st.tuned)
    k = w["k"] if w["k"] is not None else st.atc_k
    return Choice(
        name, rules.wait_base(name), k, None, f"{why}; alpha {w['alpha']:g} from {st.tuned}", wait=w
    )


def resolve(choice, st, farm):
    """``auto``'s Choice with a delayed winner's parameters read now (tuned.json may change
    without its winner.json); without them, ATC with the k tuned for the call's GPUs (else config
    ``rules.atc_k``), ``why`` saying the winner cannot run. Any other Choice as it is."""
    from sched.ranking.verdicts import Choice, tuned_k

    if choice.wait is None or "alpha" in choice.wait:
        return choice
    tpath = choice.wait["tuned"]
    try:
        w = wait_record(_read_tuned(tpath), choice.name, tpath)
    except RankInputError as exc:
        why = f"{choice.why}; the winner {choice.name} cannot run ({exc})"
        try:
            k, v = tuned_k(st, farm)
            return Choice("atc-tuned", rules.ATC, k, None, f"{why}: ATC with the k tuned in {v.source}")
        except RankInputError:
            return Choice("atc", rules.ATC, st.atc_k, None, f"{why}: ATC with config rules.atc_k")
    k = w["k"] if w["k"] is not None else st.atc_k
    return choice._replace(k=k, why=f"{choice.why}; alpha {w['alpha']:g} from {tpath}", wait=w)


def expected_gap(arrival, now):
    """The expected gap to the next arrival: the mean of the last ``GAP_WINDOW`` gaps between the
    arrivals up to ``now`` (``rules.mean_gap``); infinite when no two of them differ."""
    a = np.sort(arrival[arrival <= now])[-(rules.GAP_WINDOW + 1) :]
    if a.shape[0] < 2 or not a[-1] > a[0]:
        return math.inf
    return float(rules.mean_gap(a[0], a[-1], a.shape[0] - 1))


def idle_since(q, max_wait):
    """When each GPU went idle, as the module docstring says."""
    now = q.now
    first = float(q.arrival.min()) if q.n else now
    free_now = max(min(first, now), now - max_wait)
    return np.where(q.machine_free > now, q.machine_free, free_now)


class Tasks(NamedTuple):
    """The call's tasks in row order: (n,) float arrays."""

    arrival: np.ndarray
    estimate: np.ndarray
    weight: np.ndarray
    due: np.ndarray


class Gpus(NamedTuple):
    """The call's GPUs: (M,) float arrays."""

    free: np.ndarray  #: when each is first free
    idle0: np.ndarray  #: when each went idle (:func:`idle_since`)
    speed: np.ndarray


class Delay(NamedTuple):
    """The delayed rule's settings."""

    rule: int  #: the base rule
    k: float  #: ATC's k
    alpha: float
    max_wait: float
    gap: float  #: the expected gap to the next arrival


@nb.njit(cache=True, nogil=True)
def _delayed_order(tasks, gpus, d):
    """``one_queue.rollout_order`` with the delayed rule's decisions. Returns (order, start, end,
    machine, held_at, wake, freed): the last three in row order, each task's first hold (NaN:
    never held): the decision's time, when the GPU was to wake, when it went idle."""
    arrival, estimate, weight, due = tasks.arrival, tasks.estimate, tasks.weight, tasks.due
    machine_free, idle0, speed = gpus.free, gpus.idle0, gpus.speed
    rule, k, alpha, max_wait, gap = d.rule, d.k, d.alpha, d.max_wait, d.gap
    n = arrival.shape[0]
    s, rows = plan_slot(arrival, estimate, weight, due, machine_free, speed, rule)
    order = np.empty(n, np.int64)
    held_at, wake, freed_at = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    c = 0
    while _advance(s, 0, False):
        q = pick(s, 0, rule, k)
        m = s.pending[0]
        j = s.queue[0, q]
        last = s.mtask[0, m]
        freed = s.end[0, last] if last >= 0 else idle0[m]
        when = rules.delayed_start(s.est[0, j] / s.speed[0, m], alpha, freed, gap, max_wait)
        t = s.t[0]
        if when > t:
            u = hold(s, 0, when, max_wait)
            r = rows[j]
            if np.isnan(held_at[r]):
                held_at[r], wake[r], freed_at[r] = t, u, freed
            continue
        order[c] = rows[j]
        c += 1
        _start(s, 0, q, m)
    start, end, mach = np.empty(n), np.empty(n), np.empty(n, np.int64)
    for i in range(n):
        r = rows[i]
        start[r], end[r], mach[r] = s.start[0, i], s.end[0, i], s.mach[0, i]
    return order, start, end, mach, held_at, wake, freed_at


def plan(q, choice):
    """(order, start, end, machine, holds) of queue ``q`` under the delayed ``choice``; ``holds``:
    {row: (decision time, wake, idle since, gap)} of every task the plan holds."""
    w = choice.wait
    gap = expected_gap(q.arrival, q.now)
    idle0 = idle_since(q, w["max_wait_s"])
    k = rules.ATC_K_DEFAULT if choice.k is None else float(choice.k)
    order, start, end, mach, held_at, wake, freed = _delayed_order(
        Tasks(q.arrival, q.estimate, q.weight, q.due),
        Gpus(q.machine_free, idle0, q.speed),
        Delay(int(choice.rule), k, float(w["alpha"]), float(w["max_wait_s"]), float(gap)),
    )
    holds = {int(r): (held_at[r], wake[r], freed[r], gap) for r in np.flatnonzero(~np.isnan(held_at))}
    return order, start, end, mach, holds


def outcome(frame, q, choice, holds, start):
    """(the explain table with the holds said, or None without explain; :func:`held_now`)."""
    return (None if frame is None else explain_holds(frame, q, choice, holds, start)), held_now(q, holds)


def held_now(q, holds):
    """{id: planned start} of the tasks the plan holds at ``now``: those a GPU free now would start
    under the base rule and the delayed rule holds back (what an adapter may hold on the farm)."""
    return {q.ids[r]: h[1] for r, h in holds.items() if h[0] <= q.now}


def explain_holds(frame, q, choice, holds, start):
    """The explain table with each held task's ``why`` saying why it waits."""
    if not holds:
        return frame
    a = choice.wait["alpha"]
    row_of = {q.ids[r]: r for r in holds}
    why = frame["why"].tolist()
    for i, tid in enumerate(frame["id"].tolist()):
        r = row_of.get(tid)
        if r is None:
            continue
        t, wake, freed, gap = holds[r]
        p = q.estimate[r]
        why[i] = (
            f"{why[i]}; held: estimate {p:g} s > alpha {a:g} x (idle {t - freed:g} s + expected gap "
            f"{gap:g} s) at {t:g}; its GPU waits until {wake:g} unless a task arrives; "
            f"planned start {start[r]:g}"
        )
    frame["why"] = why
    return frame
