"""A learned policy's decision, compiled: its one definition.

Every place that acts with a learned policy runs these functions: the
benchmark, ``sched simulate``, ``rank()``, the replay, PPO's sampler, the
teacher's and ``plan``'s rollouts. Torch only trains the same network
(``TaskScorer.forward_compact`` reads the observation :func:`observe`
writes); ``tests/test_kernel.py`` checks that both score alike on random
states.

A decision, for the GPU that is free now (slot ``b``'s ``pending``):

1. **Candidates.** The ``top_k`` waiting tasks with the highest ATC index
   (every waiting task when ``top_k`` is 0), best first; ties keep queue
   order, as the rules break them. One pass over the queue, arithmetic only:
   the ATC index reads the task's static part ``log(w / p)``
   (``s.static`` must hold ATC's: :func:`greedy_rollout` sets it; the
   work, the sum of the estimates, is summed first), and the same pass
   counts the tasks already late and finds the smallest WMDD ratio and the
   largest ``log(w / p)``.
2. **Observation.** Each candidate's ``N_TASK`` features
   (``sched.learn.policy.features.TASK_FEATURES``, their meaning there), the queue
   context (the mean then the max of each feature over the candidates, then
   the ``N_GLOBAL`` global features of ``features.global_features``).
3. **Scores.** The scorer network: ``lin . x + MLP([x, context])``, two
   tanh hidden layers (:func:`_tanh`), float64; the same bits in every
   caller and every batch.
4. **Action.** Greedy: the first candidate with the highest score (the ATC
   choice if no score is finite). Sampled: the Gumbel-max draw from the
   softmax of the scores, with the caller's uniforms.

The work per decision is one arithmetic pass over the queue plus the
candidates' features and scores: a queue of 1,000 tasks costs little more
than a queue of 30 beyond that pass.
"""

import math
import threading
from typing import NamedTuple

import numba as nb
import numpy as np

from sched.learn.policy import features as F
from sched.sim import core as S
from sched.sim import rules
from sched.sim.state import core_jit
from sched.sim.top import offer

#: The decision's functions allocate nothing (the caller's :class:`Work`) and return no array, so
#: they are compiled without numba's reference counting (``core_jit``), as the simulator's step
#: functions are; a function that returns arrays (:func:`at`) keeps it.
N_TASK = F.N_TASK
N_GLOBAL = F.N_GLOBAL
N_CTX = 2 * N_TASK + N_GLOBAL
FLOOR = F.ATC_FLOOR


class Net(NamedTuple):
    """A scorer policy as the compiled code reads it: weights (float64) and settings."""

    W0: np.ndarray  #: (H, N_TASK + N_CTX) first layer (the task's features, then the context)
    b0: np.ndarray  #: (H,)
    W1: np.ndarray  #: (H, H) second layer
    b1: np.ndarray  #: (H,)
    w2: np.ndarray  #: (H,) output layer
    b2: float
    lin: np.ndarray  #: (N_TASK,) the linear score over the task's own features
    top_k: int  #: candidates (0: every waiting task)
    atc_k: float  #: ATC's look-ahead in the candidates and the ``atc`` feature
    p_ref: float  #: the scenario model's mean duration (global features)
    profile: np.ndarray  #: (168,) expected offered load per hour of week (``ahead_1h``, ``ahead_4h``)
    weekly: bool  #: whether ``profile`` varies (False: ``week_sin``, ``week_cos`` are 0)
    week_start_s: float  #: the scenario's time 0, in seconds since Monday 00:00 UTC


class Work(NamedTuple):
    """The scratch arrays of one decision (:func:`workspace`)."""

    cand: np.ndarray  #: (K,) candidates' queue positions, best ATC first
    atc: np.ndarray  #: (K,) their ATC log indices
    X: np.ndarray  #: (K, N_TASK) their features
    ctx: np.ndarray  #: (N_CTX,) the context
    v: np.ndarray  #: (K,) their scores
    hc: np.ndarray  #: (H,) the first layer's context part
    h0: np.ndarray  #: (H,)
    h1: np.ndarray  #: (H,)


def net_of(state_dict, top_k, atc_k, p_ref, profile, week_start_s=0.0):
    """A :class:`Net` from a ``TaskScorer``'s state dict (tensors or arrays); ``profile``: the
    load profile (168 loads, or one number: constant), ``week_start_s``: the scenario's start."""

    def a(name):
        v = state_dict[name]
        v = v.detach().double().numpy() if hasattr(v, "detach") else np.asarray(v, dtype=np.float64)
        return np.ascontiguousarray(v, dtype=np.float64)

    return Net(
        a("actor.0.weight"), a("actor.0.bias"), a("actor.2.weight"), a("actor.2.bias"),
        np.ascontiguousarray(a("actor.4.weight")[0]), float(a("actor.4.bias")[0]),
        np.ascontiguousarray(a("linear.weight")[0]),
        int(top_k), float(atc_k), float(p_ref), *_profile_fields(profile, week_start_s),
    )  # fmt: skip


def _profile_fields(profile, week_start_s):
    """(profile, weekly, week_start_s) of a :class:`Net`."""
    profile = F.load_profile(profile)
    return profile, F.is_weekly(profile), float(week_start_s)


def of_network(net, atc_k, p_ref, profile, week_start_s=0.0):
    """A :class:`Net` of a ``TaskScorer``'s current weights (training: weights change)."""
    return net_of(net.state_dict(), net.top_k, atc_k, p_ref, profile, week_start_s)


_NET_LOCK = threading.Lock()


def of_policy(policy):
    """The :class:`Net` of a loaded policy (``sched.learn.policy.policy_file.load``), built once under a
    lock; threads share it (read only: the compiled decision writes only its ``workspace``)."""
    with _NET_LOCK:
        if getattr(policy, "_kernel_net", None) is None:
            m = policy.meta
            policy._kernel_net = of_network(policy.net, m["atc_k"], m["p_ref"], m["profile"])
        return policy._kernel_net


def workspace(max_queue, net):
    """A :class:`Work` for queues of up to ``max_queue`` tasks."""
    K = net.top_k if net.top_k > 0 else max(int(max_queue), 1)
    H = net.b0.shape[0]
    return Work(
        np.empty(K, np.int64), np.empty(K), np.empty((K, N_TASK)), np.empty(N_CTX), np.empty(K),
        np.empty(H), np.empty(H), np.empty(H),
    )  # fmt: skip


@nb.njit(cache=True)  # with reference counting: it returns arrays, which its caller then owns
def at(net, profile, week_start_s):
    """``net`` for another scenario: its load ``profile`` (another model's: a curriculum of
    loads) and its week start (``week_start_s``); ``weekly`` stays ``net``'s."""
    return Net(
        net.W0, net.b0, net.W1, net.b1, net.w2, net.b2, net.lin, net.top_k, net.atc_k, net.p_ref,
        profile, net.weekly, week_start_s,
    )  # fmt: skip


def at_week(net, week_start_s):
    """``net`` for a scenario whose time 0 is ``week_start_s`` seconds after Monday 00:00 UTC."""
    return net._replace(week_start_s=float(week_start_s))


def no_net(top_k=1, atc_k=rules.ATC_K_DEFAULT, p_ref=1.0, profile=1.0, week_start_s=0.0):
    """A :class:`Net` without weights (every score 0): the settings :func:`observe` reads (the
    teacher's observations), or a stand-in where compiled code takes a rule or a learned policy
    and a rule acts."""
    z = np.zeros(1)
    W0 = np.zeros((1, N_TASK + N_CTX))
    return Net(
        W0, z, np.zeros((1, 1)), z, z, 0.0, np.zeros(N_TASK),
        int(top_k), float(atc_k), float(p_ref), *_profile_fields(profile, week_start_s),
    )  # fmt: skip


@core_jit
def _select(s, b, K, k, pbar_v, v, ws):
    """Candidates (ws.cand, ws.atc: the K highest ATC indices, best first, ties in queue
    order) and the queue's aggregates: (m, tasks already late, min WMDD ratio, max log(w / p))."""
    ql = s.qlen[b]
    t = s.t[b]
    m = 0
    late = 0
    rmin = np.inf
    smax = -np.inf
    cand, atc = ws.cand, ws.atc
    for q in range(ql):
        j = s.queue[b, q]
        p = s.est[b, j] / v
        d = s.due[b, j]
        w = s.w[b, j]
        st = s.static[b, j]
        a = rules.atc_log_index(st, p, d, t, k, pbar_v)
        if not a == a:  # NaN: never ahead of a number
            a = -np.inf
        if d < t + p:
            late += 1
        r = max(p, d - t) / w
        if r < rmin:
            rmin = r
        if st > smax:
            smax = st
        m = offer(cand, atc, m, K, q, a)  # the one top-k (sched.sim.top)
    return m, late, rmin, smax


@core_jit
def observe(s, b, net, ws):
    """Write the observation of slot b's decision into ``ws`` (candidates, features, context);
    returns the number of candidates m (>= 1: a task waits)."""
    ql = s.qlen[b]
    t = s.t[b]
    mach = s.pending[b]
    v = s.speed[b, mach]
    work = 0.0
    for q in range(ql):
        work += s.est[b, s.queue[b, q]]
    work /= v
    pbar = work / ql
    K = net.top_k if net.top_k > 0 else ws.cand.shape[0]
    m, late, rmin, smax = _select(s, b, min(K, ql), net.atc_k, pbar, v, ws)
    lkmin = math.log(rmin)
    amax = ws.atc[0]
    X = ws.X
    for i in range(m):
        j = s.queue[b, ws.cand[i]]
        p = s.est[b, j] / v
        w, d = s.w[b, j], s.due[b, j]
        F.own_features(X[i], p, w, d, t, s.arr[b, j], pbar)
        X[i, 7] = max(ws.atc[i] - amax, FLOOR)
        X[i, 8] = max(-(math.log(max(p, d - t) / w) - lkmin), FLOOR)
        X[i, 9] = max(s.static[b, j] - smax, FLOOR)
        X[i, 11] = i / ql
    c = ws.ctx
    for f in range(N_TASK):
        tot = 0.0
        mx = -np.inf
        for i in range(m):
            x = X[i, f]
            tot += x
            if x > mx:
                mx = x
        c[f] = tot / m
        c[N_TASK + f] = mx
    model = F.Model(net.p_ref, net.profile, net.weekly, net.week_start_s)
    F.global_features(s.mfree[b], s.speed[b], mach, t, F.Queue(ql, work, pbar, late), model, c[2 * N_TASK :])
    return m


#: exp's Taylor coefficients 1 / i!, i = 0..9 (:func:`_tanh`)
_EXP_TAYLOR = np.array([1.0 / math.factorial(i) for i in range(10)])
#: Sums may be reassociated and multiply-adds fused (vectorised loops), nothing else: NaN and
#: infinities keep their meaning. A sum's order is then fixed by the compiled code: the same
#: bits in every caller on one machine (another processor may round the last bits otherwise).
_SUMS = {"reassoc", "contract"}


@nb.njit(cache=True, fastmath=_SUMS, _nrt=False)
def _tanh(h, n):
    """tanh of h[:n], in place: (1 - e) / (1 + e), e = exp(-2|x|) from a Taylor polynomial of
    exp(-|x| / 32) squared six times (no libm call: the loop vectorises). Within 4e-15 of
    tanh (tests/test_kernel.py); tanh(20) is 1 in float64, hence the clamp."""
    c = _EXP_TAYLOR
    for i in range(n):
        x = h[i]
        y = min(abs(x), 20.0) * (-1.0 / 32.0)
        e = (
            (((((((c[9] * y + c[8]) * y + c[7]) * y + c[6]) * y + c[5]) * y + c[4]) * y + c[3]) * y + c[2])
            * y
            + c[1]
        ) * y + c[0]
        e = e * e
        e = e * e
        e = e * e
        e = e * e
        e = e * e
        e = e * e
        h[i] = math.copysign((1.0 - e) / (1.0 + e), x)


@nb.njit(cache=True, fastmath=_SUMS, _nrt=False)
def score(net, ws, m):
    """ws.v[:m] := the scores of the m candidates of ``ws`` (after :func:`observe`)."""
    W0, W1 = net.W0, net.W1
    H = net.b0.shape[0]
    hc, h0, h1, X, c = ws.hc, ws.h0, ws.h1, ws.X, ws.ctx
    n_task, n_ctx = X.shape[1], c.shape[0]  # this kernel's sizes, or the farm's (sched.learn.farm.decide)
    for i in range(H):  # the first layer's context part: once per decision
        acc = net.b0[i]
        for f in range(n_ctx):
            acc += W0[i, n_task + f] * c[f]
        hc[i] = acc
    for q in range(m):
        for i in range(H):
            acc = hc[i]
            for f in range(n_task):
                acc += W0[i, f] * X[q, f]
            h0[i] = acc
        _tanh(h0, H)
        for i in range(H):
            acc = net.b1[i]
            for j in range(H):
                acc += W1[i, j] * h0[j]
            h1[i] = acc
        _tanh(h1, H)
        val = net.b2
        for i in range(H):
            val += net.w2[i] * h1[i]
        for f in range(n_task):
            val += net.lin[f] * X[q, f]
        ws.v[q] = val


@core_jit
def scored(s, b, net, ws):
    """:func:`observe` then :func:`score` slot b's decision; returns the candidate count m."""
    m = observe(s, b, net, ws)
    score(net, ws, m)
    return m


@core_jit
def argmax(v, m):
    """The first index of the highest of v[:m]; 0 when none is a number (a diverged network:
    candidate 0 is ATC's choice)."""
    best = 0
    best_v = -np.inf
    for i in range(m):
        if v[i] > best_v:
            best_v = v[i]
            best = i
    return best


@core_jit
def greedy(s, b, net, ws):
    """Queue position the greedy policy starts now in slot b: the first highest score."""
    m = scored(s, b, net, ws)
    return ws.cand[argmax(ws.v, m)]


@core_jit
def sample(s, b, net, ws, u):
    """(candidate index, its log-probability, m) of a draw from the softmax of the scores,
    by the Gumbel-max trick on the uniforms ``u`` (at least m of them, in (0, 1))."""
    m = scored(s, b, net, ws)
    best = 0
    best_g = -np.inf
    top = -np.inf
    for i in range(m):
        top = max(top, ws.v[i])
        g = ws.v[i] - math.log(-math.log(u[i]))
        if g > best_g:
            best_g = g
            best = i
    total = 0.0
    for i in range(m):
        total += math.exp(ws.v[i] - top)
    return best, ws.v[best] - top - math.log(total), m


@core_jit
def run_policy(s, b, rule, k, net, ws):
    """Take every remaining decision of slot b with a rule (``rule`` >= 0, ``k``: its static
    parts set; ``sched.sim.core.run_rule``) or, ``rule`` < 0, the greedy policy ``net`` (ATC's
    static parts set); the rollout loop of a rule or a learned policy, its one definition."""
    if rule >= 0:
        S.run_rule(s, b, rule, k)
        return
    while S._advance(s, b, True):
        S._start(s, b, greedy(s, b, net, ws), s.pending[b])


@core_jit
def greedy_rollout(s, b, net, ws):
    """Take every remaining decision of slot b with the greedy policy (it sets ATC's static parts)."""
    S.set_rule(s, b, rules.ATC)
    run_policy(s, b, -1, net.atc_k, net, ws)


# with reference counting (:func:`at`); the rollouts inside are core_jit; nogil: threads beside
# it (sched serve's event loop, other calls) go on while it runs
@nb.njit(cache=True, nogil=True)
def greedy_batch(s, net, ws, weeks):
    """:func:`greedy_rollout` of every slot of ``s`` from its start; ``weeks``: (B,) each
    slot's week start (seconds since Monday 00:00 UTC at its time 0)."""
    for b in range(s.n.shape[0]):
        S.reset_slot(s, b)
        greedy_rollout(s, b, at(net, net.profile, weeks[b]), ws)


def run(policy, scenarios, machines=1, machine_free=None, week_start_s=0.0):
    """(start, end, machine) arrays, row order, of each scenario (5 task arrays) under the
    greedy ``policy`` (a loaded policy, or a :class:`Net`); ``week_start_s``: each scenario's
    week start (a sequence, one per scenario, or one number for all; ``Scenario.week_start_s``)."""
    if getattr(policy, "waits", False):  # a wait output: its own rollout (sched.learn.policy.wait_head)
        return policy.run(scenarios, machines, machine_free, week_start_s)
    net = policy if isinstance(policy, Net) else of_policy(policy)
    scenarios = list(scenarios)
    state, orders = S.pack(scenarios, machines, machine_free)
    weeks = np.ascontiguousarray(np.broadcast_to(np.asarray(week_start_s, np.float64), (len(scenarios),)))
    greedy_batch(state, net, workspace(state.queue.shape[1], net), weeks)
    return S._unpack(state, orders)


def run_one(policy, scenario, machines=1, machine_free=None, week_start_s=0.0):
    """:func:`run` of a single scenario."""
    return run(policy, [scenario], machines, machine_free, [week_start_s])[0]
