"""The state encoding: what a learned policy sees at a decision.

The feature names and their meaning, the global features' one definition
(:func:`global_features`), and the per-task rows of every waiting task
(:class:`Encoder`: the Gymnasium environment's observation). A learned
policy's own observation, the same features of its candidates only, is
computed by its compiled decision, ``sched.learn.policy.kernel.observe``.

A decision is taken for one GPU (the freeing one, ``pending``); the features
read every estimate on that GPU, ``p / v`` with ``v`` its speed, as the rules
do (``sched.sim.rules``), and ``speed_rel`` tells a fast GPU from a slow one.
Times are divided by ``pbar``, the mean estimate of the waiting tasks, so the
features do not depend on the time unit or the duration scale, and the
classic rules are representable exactly: the ``atc`` feature is the ATC log
index relative to the queue's best (argmax = ATC), ``wmdd`` and ``wspt``
likewise (argmax = WMDD, WSPT), ``due_rel`` gives EDD and ``est_rel`` SPT.

The time of week, which no rule reads: ``ahead_1h`` and ``ahead_4h`` are the
scenario model's load profile (``ScenarioModel.load_profile``: the expected
offered load of each hour of the week, Monday 00:00 UTC first; the constant
load without a workload) averaged over the next 1 and 4 hours (:func:`ahead`),
``week_sin`` and ``week_cos`` the time of week on the unit circle (0 with a
flat profile). A decision at time t of a scenario that starts ``week_start_s``
into the week is at time of week (week_start_s + t) mod one week.
"""

import math
from typing import NamedTuple

import numba as nb
import numpy as np
from numba.extending import register_jitable

from sched.errors import SchedError
from sched.sim import rules


class FeatureError(SchedError):
    """An encoding that does not exist."""


TASK_FEATURES = (
    "est_rel",  # p / pbar
    "log_est_rel",  # log(p / pbar)
    "log_weight",  # log w
    "slack_rel",  # asinh((d - t - p) / pbar)
    "slack_pos",  # max(d - t - p, 0) / pbar: with wspt, ATC of any k is linear in features
    "due_rel",  # asinh((d - t) / pbar)
    "waited_rel",  # asinh((t - arrival) / pbar)
    "atc",  # ATC log index minus the queue's largest (<= 0), floored at ATC_FLOOR
    "wmdd",  # -(log WMDD key - the queue's smallest) (<= 0), floored
    "wspt",  # log(w / p) minus the queue's largest (<= 0)
    "late",  # 1 when d < t + p: late even if started now
    "atc_rank",  # position in the ATC order / queue length, in [0, 1)
)
GLOBAL_FEATURES = (
    "log_qlen",  # log(1 + waiting tasks)
    "log_work",  # log(1 + waiting work / p_ref)
    "log_pbar",  # log(pbar / p_ref)
    "busy",  # asinh(mean remaining busy time of the machines / p_ref)
    "free_frac",  # share of machines free now
    "late_frac",  # share of waiting tasks already doomed to be late
    "ahead_1h",  # the expected offered load over the next hour (the profile, :func:`ahead`)
    "ahead_4h",  # ... over the next 4 hours
    "week_sin",  # sin(2 pi time of week / week): 0 with a flat profile (no workload)
    "week_cos",  # cos(2 pi time of week / week): 0 with a flat profile
    "speed_rel",  # the deciding GPU's speed / the farm's mean speed (1 on identical GPUs)
)
#: A wait output's own features (``train.wait``; ``sched.learn.policy.wait_head``: their one
#: definition), beside the context: times relative to ``pbar``, and the delayed rules' criterion.
WAIT_FEATURES = (
    "idle_rel",  # asinh((t - when the GPU freed) / pbar)
    "gap_rel",  # asinh(the expected gap to the next arrival / pbar), rules.mean_gap
    "best_est_rel",  # log(p / pbar) of the best ATC candidate
    "start_ratio",  # log(p / (idle + gap)): a delayed rule starts it when this <= log(alpha)
)
N_TASK = len(TASK_FEATURES)
N_GLOBAL = len(GLOBAL_FEATURES)
N_WAIT = len(WAIT_FEATURES)
ATC_INDEX = TASK_FEATURES.index("atc")
ATC_RANK_INDEX = TASK_FEATURES.index("atc_rank")
assert TASK_FEATURES.index("wspt") == 9 and TASK_FEATURES.index("atc_rank") == 11
assert GLOBAL_FEATURES.index("ahead_1h") == 6 and GLOBAL_FEATURES.index("speed_rel") == 10
ATC_FLOOR = -30.0
#: Seconds in a week, and in an hour of the profile (168 hours, Monday 00:00 UTC first).
WEEK_S = 7 * 86400.0
HOUR_S = 3600.0


class Model(NamedTuple):
    """What the global features read of the scenario model and the scenario (the fields of the
    same names of ``sched.learn.policy.kernel.Net``)."""

    p_ref: float  #: the model's mean duration (seconds)
    profile: np.ndarray  #: (168,) its expected offered load per hour of week (``ahead_1h``, ``ahead_4h``)
    weekly: bool  #: whether ``profile`` varies (False: ``week_sin``, ``week_cos`` are 0)
    week_start_s: float  #: the scenario's time 0, in seconds since Monday 00:00 UTC


class Queue(NamedTuple):
    """The waiting tasks of a decision as the global features read them."""

    ql: int  #: how many wait
    work: float  #: their total estimate on the deciding GPU
    pbar: float  #: its mean
    late: int  #: how many would finish late if started now


@register_jitable
def time_of_week(week_start_s, t):
    """Seconds since Monday 00:00 UTC, in [0, WEEK_S), of simulation time ``t`` in a scenario
    whose time 0 is ``week_start_s`` into the week."""
    x = week_start_s + t
    x -= math.floor(x / WEEK_S) * WEEK_S
    return x if x < WEEK_S else 0.0


@register_jitable
def ahead(profile, tow, hours):
    """The mean of the hourly ``profile`` (168 values, Monday 00:00 UTC first) over the
    ``hours`` from time of week ``tow`` (seconds), each hour weighted by its share of the
    window (partial hours included), wrapping from Sunday to Monday. Summed as differences
    from the first hour's value, so that a constant profile gives that constant exactly."""
    left = hours * HOUR_S
    x = tow
    first = profile[int(math.floor(x / HOUR_S)) % 168]
    acc = 0.0
    while left > 0.0:
        h = math.floor(x / HOUR_S)
        seg = min((h + 1.0) * HOUR_S - x, left)
        acc += (profile[int(h) % 168] - first) * seg
        x += seg
        left -= seg
    return first + acc / (hours * HOUR_S)


@register_jitable
def own_features(row, p, w, d, t, arrival, pbar):
    """The features of a task that read only the task and the queue's mean estimate ``pbar``
    (est_rel, log_est_rel, log_weight, slack_rel, slack_pos, due_rel, waited_rel, late), into
    ``row``; their one definition (the relative ones, atc, wmdd, wspt, atc_rank, need the queue)."""
    row[0] = p / pbar
    row[1] = math.log(p / pbar)
    row[2] = math.log(w)
    row[3] = math.asinh((d - t - p) / pbar)
    row[4] = min(max(d - t - p, 0.0) / pbar, -ATC_FLOOR)
    row[5] = math.asinh((d - t) / pbar)
    row[6] = math.asinh((t - arrival) / pbar)
    row[10] = 1.0 if d < t + p else 0.0


@nb.njit(cache=True)
def _encode_slot(s, b, k, model, x, g):
    """Fill x[:qlen] (per-task rows, queue order) and g for slot b (``model``: a :class:`Model`);
    returns the ATC order."""
    ql = s.qlen[b]
    t = s.t[b]
    m = s.pending[b]
    v = s.speed[b, m]  # the deciding GPU's: estimates are read as p / v on it
    pbar = 0.0
    for q in range(ql):
        pbar += s.est[b, s.queue[b, q]]
    pbar /= v
    work = pbar
    pbar /= ql
    atc = np.empty(ql)
    atc_max = -np.inf
    wspt_max = -np.inf
    wmdd_min = np.inf
    late = 0
    for q in range(ql):
        j = s.queue[b, q]
        p, w, d = s.est[b, j] / v, s.w[b, j], s.due[b, j]
        log_wp = rules.static_part(rules.ATC, p, w)
        a = rules.atc_log_index(log_wp, p, d, t, k, pbar)
        atc[q] = a
        atc_max = max(atc_max, a)
        wspt_max = max(wspt_max, log_wp)
        key = math.log(max(p, d - t) / w)
        wmdd_min = min(wmdd_min, key)
        own_features(x[q], p, w, d, t, s.arr[b, j], pbar)
        x[q, 7] = a
        x[q, 8] = key
        x[q, 9] = log_wp
        if d < t + p:
            late += 1
    order = np.argsort(-atc, kind="mergesort")  # stable: ties in queue order, as the rules
    for r in range(ql):
        q = order[r]
        x[q, 7] = max(x[q, 7] - atc_max, ATC_FLOOR)
        x[q, 8] = max(-(x[q, 8] - wmdd_min), ATC_FLOOR)
        x[q, 9] = max(x[q, 9] - wspt_max, ATC_FLOOR)
        x[q, 11] = r / ql
    global_features(s.mfree[b], s.speed[b], m, t, Queue(ql, work, pbar, late), model, g)
    return order


@nb.njit(cache=True)
def global_features(mfree, speed, deciding, t, queue, model, g):
    """Write the N_GLOBAL features of a decision into ``g``: the one definition.

    ``mfree``: the machines' free times, ``speed`` their speeds, ``deciding``
    the machine the decision is for; ``t``: now; ``queue``: the waiting tasks
    (a :class:`Queue`: how many, their total estimate on the deciding machine
    and its mean, how many would finish late if started now); ``model``: a
    :class:`Model` (``profile``: the scenario model's expected offered load per
    hour of the week, ``ScenarioModel.load_profile``: constant, the load,
    without a workload; ``weekly``: whether it varies, False: week_sin,
    week_cos are 0; ``week_start_s``: the scenario's time 0 in seconds since
    Monday 00:00 UTC).
    """
    ql, work, pbar, late = queue.ql, queue.work, queue.pbar, queue.late
    p_ref, profile, weekly, week_start_s = model.p_ref, model.profile, model.weekly, model.week_start_s
    M = mfree.shape[0]
    busy = 0.0
    free = 0
    total_speed = 0.0
    for m in range(M):
        total_speed += speed[m]
        if mfree[m] <= t:
            free += 1
        else:
            busy += mfree[m] - t
    g[0] = math.log1p(ql)
    g[1] = math.log1p(work / p_ref)
    g[2] = math.log(pbar / p_ref)
    g[3] = math.asinh(busy / M / p_ref)
    g[4] = free / M
    g[5] = late / ql
    tow = time_of_week(week_start_s, t)
    g[6] = ahead(profile, tow, 1.0)
    g[7] = ahead(profile, tow, 4.0)
    angle = 2.0 * math.pi * tow / WEEK_S
    g[8] = math.sin(angle) if weekly else 0.0
    g[9] = math.cos(angle) if weekly else 0.0
    g[10] = speed[deciding] * M / total_speed


@nb.njit(cache=True)
def encode_tasks(s, k, models, out):
    """Per-task encoding of every slot with a pending decision.

    ``models``: a :class:`Model` of every slot: ``profiles`` (B, 168) the load profile of
    each slot's scenario model, ``weekly`` whether they vary, ``week_start_s`` (B,) each
    slot's week start (s). ``out``: an :class:`Observation` to fill, ``x`` (B, Q, N_TASK)
    float32 with Q >= the longest queue, ``mask`` (B, Q) bool, ``globals_`` (B, N_GLOBAL)
    float32. Row q of slot b is the task at queue position q, so an action is a queue
    position. Slots without a pending decision are all zero and fully masked.
    """
    x, mask, g = out.x, out.mask, out.globals_
    x[:] = 0.0
    mask[:] = False
    g[:] = 0.0
    xb = np.empty((x.shape[1], N_TASK))
    gb = np.empty(N_GLOBAL)
    for b in range(s.n.shape[0]):
        if s.pending[b] < 0:
            continue
        ql = s.qlen[b]
        model = Model(models.p_ref, models.profile[b], models.weekly, models.week_start_s[b])
        _encode_slot(s, b, k, model, xb, gb)
        for q in range(ql):
            mask[b, q] = True
            for f in range(N_TASK):
                x[b, q, f] = xb[q, f]
        for f in range(N_GLOBAL):
            g[b, f] = gb[f]


class Observation(NamedTuple):
    """What :class:`Encoder` returns for a batch of ``B`` slots: ``x`` (B, Q, N_TASK) float32
    rows in queue order (Q: the longest waiting queue), ``mask`` (B, Q) bool, True for a
    waiting task, ``globals_`` (B, N_GLOBAL) float32, ``slot_qpos`` None (an action is a
    queue position). Slots without a pending decision are all zero and fully masked.
    """

    x: np.ndarray
    mask: np.ndarray
    globals_: np.ndarray | None
    slot_qpos: np.ndarray | None

    def queue_positions(self, actions):
        """The queue positions of ``actions`` (one row index per slot, as a NumPy array)."""
        if self.slot_qpos is None:
            return actions
        return self.slot_qpos[np.arange(len(actions)), actions]


class Encoder:
    """Allocates the arrays and calls the compiled encoders for a State.

    ``kind`` is "tasks" (per-task rows, the one encoding left). ``k`` is the
    ATC look-ahead used by the ``atc`` feature, ``p_ref`` the mean duration of
    the scenario model (seconds), ``profile`` its load profile (168 loads, or a
    number: a constant load; :func:`load_profile`).
    """

    def __init__(self, kind, k, p_ref, profile):
        if kind != "tasks":
            raise FeatureError(f"encoding: expected 'tasks', got {kind!r}")
        self.kind, self.k, self.p_ref = kind, float(k), float(p_ref)
        self.profile = load_profile(profile)
        self.weekly = is_weekly(self.profile)

    def __call__(self, state, profiles=None, weeks=None):
        """The :class:`Observation` of every slot of ``state`` (``profiles``: (B, 168), one
        profile per slot, default this encoder's; ``weeks``: each slot's week start, default 0)."""
        B = state.n.shape[0]
        if profiles is None:
            profiles = np.broadcast_to(self.profile, (B, 168))
        profiles = np.ascontiguousarray(profiles, dtype=np.float64)
        weeks = np.ascontiguousarray(np.broadcast_to(0.0 if weeks is None else weeks, (B,)), dtype=np.float64)
        pend = state.pending >= 0
        Q = max(int(state.qlen[pend].max()) if pend.any() else 1, 1)
        x = np.empty((B, Q, N_TASK), dtype=np.float32)
        mask = np.empty((B, Q), dtype=np.bool_)
        g = np.empty((B, N_GLOBAL), dtype=np.float32)
        out = Observation(x, mask, g, None)
        encode_tasks(state, self.k, Model(self.p_ref, profiles, self.weekly, weeks), out)
        return out


def load_profile(profile):
    """``profile`` as a contiguous (168,) float64 array: 168 loads, or one number (constant)."""
    arr = np.asarray(profile, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(168, float(arr))
    if arr.shape != (168,):
        raise FeatureError(f"load profile: expected 168 hourly loads, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def is_weekly(profile):
    """Whether a load profile varies over the week (the week_sin, week_cos features are 0 if not)."""
    return bool(np.ptp(profile) > 0)
