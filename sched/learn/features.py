"""The state encoding: what a learned policy sees at a decision.

One definition, compiled with numba, used by training, greedy evaluation, the
benchmark and ``rank()``. Two encodings share the per-task features:

* per-task rows (default, size-free): one row of ``TASK_FEATURES`` for every
  waiting task, in queue order, plus ``GLOBAL_FEATURES``;
* the original card's flat vector (its globals, fixed by the card, have no
  ``speed_rel``: a flat policy reads the estimates on the deciding GPU but not
  how fast it is): the ``FLAT_SLOTS`` = 24 waiting tasks with the
  highest ATC index, best first, ``FLAT_TASK_FEATURES`` = 8 features each, then
  ``FLAT_GLOBAL_FEATURES`` = 4 globals: 24 x 8 + 4 = 196 inputs. Empty slots are
  zero and masked; when more than 24 tasks wait, the others are not visible
  (the ATC ordering keeps the most urgent candidates in view).

A decision is taken for one GPU (the freeing one, ``pending``); the features
read every estimate on that GPU, ``p / v`` with ``v`` its speed, as the rules
do (``sched.sim.rules``), and ``speed_rel`` tells a fast GPU from a slow one.
Times are divided by ``pbar``, the mean estimate of the waiting tasks, so the
features do not depend on the time unit or the duration scale, and the
classic rules are representable exactly: the ``atc`` feature is the ATC log
index relative to the queue's best (argmax = ATC), ``wmdd`` and ``wspt``
likewise (argmax = WMDD, WSPT), ``due_rel`` gives EDD and ``est_rel`` SPT.
"""

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from sched.sim import rules

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
    "load",  # the scenario model's load
    "speed_rel",  # the deciding GPU's speed / the farm's mean speed (1 on identical GPUs)
)
#: The global features of policy files made before GPU speeds (issue 16): such a
#: file is read with a zero weight on ``speed_rel`` (sched.learn.policy_file).
GLOBAL_FEATURES_BEFORE_SPEEDS = GLOBAL_FEATURES[:-1]
N_TASK = len(TASK_FEATURES)
N_GLOBAL = len(GLOBAL_FEATURES)
ATC_INDEX = TASK_FEATURES.index("atc")
ATC_RANK_INDEX = TASK_FEATURES.index("atc_rank")
assert TASK_FEATURES.index("wspt") == 9 and TASK_FEATURES.index("atc_rank") == 11
ATC_FLOOR = -30.0

FLAT_SLOTS = 24
FLAT_TASK_FEATURES = ("est_rel", "log_weight", "slack_rel", "waited_rel", "atc", "wmdd", "wspt", "late")
FLAT_GLOBAL_FEATURES = ("log_qlen", "log_work", "late_frac", "busy")
_FLAT_T = np.array([TASK_FEATURES.index(f) for f in FLAT_TASK_FEATURES], dtype=np.int64)
_FLAT_G = np.array([GLOBAL_FEATURES.index(f) for f in FLAT_GLOBAL_FEATURES], dtype=np.int64)
FLAT_SIZE = FLAT_SLOTS * len(FLAT_TASK_FEATURES) + len(FLAT_GLOBAL_FEATURES)
FLAT_ATC_INDEX = FLAT_TASK_FEATURES.index("atc")
assert FLAT_SIZE == 196


@nb.njit(cache=True)
def _encode_slot(s, b, k, p_ref, load, x, g):
    # ``load``: the load of the scenario model slot b was drawn from
    """Fill x[:qlen] (per-task rows, queue order) and g for slot b; returns the ATC order."""
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
        x[q, 0] = p / pbar
        x[q, 1] = math.log(p / pbar)
        x[q, 2] = math.log(w)
        x[q, 3] = math.asinh((d - t - p) / pbar)
        x[q, 4] = min(max(d - t - p, 0.0) / pbar, -ATC_FLOOR)
        x[q, 5] = math.asinh((d - t) / pbar)
        x[q, 6] = math.asinh((t - s.arr[b, j]) / pbar)
        x[q, 7] = a
        x[q, 8] = key
        x[q, 9] = log_wp
        if d < t + p:
            x[q, 10] = 1.0
            late += 1
        else:
            x[q, 10] = 0.0
    order = np.argsort(-atc, kind="mergesort")  # stable: ties in queue order, as the rules
    for r in range(ql):
        q = order[r]
        x[q, 7] = max(x[q, 7] - atc_max, ATC_FLOOR)
        x[q, 8] = max(-(x[q, 8] - wmdd_min), ATC_FLOOR)
        x[q, 9] = max(x[q, 9] - wspt_max, ATC_FLOOR)
        x[q, 11] = r / ql
    global_features(s.mfree[b], s.speed[b], m, t, ql, work, pbar, p_ref, late, load, g)
    return order


@nb.njit(cache=True)
def pool_context(xb, ql, gb, out):
    """The scorer's queue context, its one definition: the mean then the max of each per-task
    feature over ``xb[:ql]``, then the global features ``gb``, into ``out`` (2 N_TASK + N_GLOBAL)."""
    for f in range(N_TASK):
        m = 0.0
        mx = -np.inf
        for q in range(ql):
            v = xb[q, f]
            m += v
            if v > mx:
                mx = v
        out[f] = m / ql
        out[N_TASK + f] = mx
    for f in range(N_GLOBAL):
        out[2 * N_TASK + f] = gb[f]


@nb.njit(cache=True)
def global_features(mfree, speed, deciding, t, ql, work, pbar, p_ref, late, load, g):
    """Write the N_GLOBAL features of a decision into ``g``: the one definition.

    ``mfree``: the machines' free times, ``speed`` their speeds, ``deciding``
    the machine the decision is for; ``t``: now; ``ql``: waiting tasks;
    ``work``: their total estimate on the deciding machine and ``pbar`` its
    mean; ``late``: how many would finish late if started now; ``load``: the
    scenario model's load.
    """
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
    g[6] = load
    g[7] = speed[deciding] * M / total_speed


@nb.njit(cache=True)
def encode_tasks(s, k, p_ref, loads, x, mask, g):
    """Per-task encoding of every slot with a pending decision.

    ``loads``: (B,) the load of each slot's scenario model.
    ``x``: (B, Q, N_TASK) float32 with Q >= the longest queue, ``mask``: (B, Q)
    bool, ``g``: (B, N_GLOBAL) float32. Row q of slot b is the task at queue
    position q, so an action is a queue position. Slots without a pending
    decision are all zero and fully masked.
    """
    x[:] = 0.0
    mask[:] = False
    g[:] = 0.0
    xb = np.empty((x.shape[1], N_TASK))
    gb = np.empty(N_GLOBAL)
    for b in range(s.n.shape[0]):
        if s.pending[b] < 0:
            continue
        ql = s.qlen[b]
        _encode_slot(s, b, k, p_ref, loads[b], xb, gb)
        for q in range(ql):
            mask[b, q] = True
            for f in range(N_TASK):
                x[b, q, f] = xb[q, f]
        for f in range(N_GLOBAL):
            g[b, f] = gb[f]


@nb.njit(cache=True)
def encode_flat(s, k, p_ref, loads, flat, mask, slot_qpos):
    """The card's 196-input encoding for every slot with a pending decision.

    ``flat``: (B, 196) float32, ``mask``: (B, 24) bool, ``slot_qpos``: (B, 24)
    int64, the queue position shown in each slot (-1 when empty): an action
    ``a`` on the flat encoding starts ``queue[slot_qpos[b, a]]``.
    """
    flat[:] = 0.0
    mask[:] = False
    slot_qpos[:] = -1
    nt = _FLAT_T.shape[0]
    xb = np.empty((s.queue.shape[1], N_TASK))
    gb = np.empty(N_GLOBAL)
    for b in range(s.n.shape[0]):
        if s.pending[b] < 0:
            continue
        order = _encode_slot(s, b, k, p_ref, loads[b], xb, gb)
        for i in range(min(FLAT_SLOTS, s.qlen[b])):
            q = order[i]
            mask[b, i] = True
            slot_qpos[b, i] = q
            for f in range(nt):
                flat[b, i * nt + f] = xb[q, _FLAT_T[f]]
        for f in range(_FLAT_G.shape[0]):
            flat[b, FLAT_SLOTS * nt + f] = gb[_FLAT_G[f]]


class Observation(NamedTuple):
    """What :class:`Encoder` returns for a batch of ``B`` slots.

    For the per-task encoding ("tasks"): ``x`` (B, Q, N_TASK) float32 rows in
    queue order (Q: the longest waiting queue), ``mask`` (B, Q) bool, True for
    a waiting task, ``globals_`` (B, N_GLOBAL) float32, ``slot_qpos`` None (an
    action is a queue position).

    For the flat encoding ("flat"): ``x`` (B, 196) float32, the whole input
    vector (globals included), ``mask`` (B, 24) bool, ``globals_`` None,
    ``slot_qpos`` (B, 24) int64, the queue position shown in each slot (-1
    when empty): action ``a`` of slot b starts queue position ``slot_qpos[b, a]``.

    Slots without a pending decision are all zero and fully masked.
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

    ``kind`` is "tasks" (per-task rows) or "flat" (196 inputs). ``k`` is the
    ATC look-ahead used by the ``atc`` feature, ``p_ref`` the mean duration of
    the scenario model (seconds), ``load`` its load (a number, or one per slot
    when slots come from models of different loads).
    """

    def __init__(self, kind, k, p_ref, load):
        if kind not in ("tasks", "flat"):
            raise ValueError(f"encoding: expected 'tasks' or 'flat', got {kind!r}")
        self.kind, self.k, self.p_ref, self.load = kind, float(k), float(p_ref), load

    def __call__(self, state, loads=None):
        """The :class:`Observation` of every slot of ``state`` (``loads``: one per slot)."""
        B = state.n.shape[0]
        if loads is None:
            loads = np.broadcast_to(np.asarray(self.load, dtype=np.float64), (B,))
        loads = np.ascontiguousarray(loads, dtype=np.float64)
        if self.kind == "tasks":
            pend = state.pending >= 0
            Q = max(int(state.qlen[pend].max()) if pend.any() else 1, 1)
            x = np.empty((B, Q, N_TASK), dtype=np.float32)
            mask = np.empty((B, Q), dtype=np.bool_)
            g = np.empty((B, N_GLOBAL), dtype=np.float32)
            encode_tasks(state, self.k, self.p_ref, loads, x, mask, g)
            return Observation(x, mask, g, None)
        flat = np.empty((B, FLAT_SIZE), dtype=np.float32)
        mask = np.empty((B, FLAT_SLOTS), dtype=np.bool_)
        slot_qpos = np.empty((B, FLAT_SLOTS), dtype=np.int64)
        encode_flat(state, self.k, self.p_ref, loads, flat, mask, slot_qpos)
        return Observation(flat, mask, None, slot_qpos)
