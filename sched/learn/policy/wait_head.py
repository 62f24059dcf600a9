"""A learned policy's wait output, compiled (issue 60): its one definition.

A network trained with ``train.wait`` has one output more than the candidates' scores
(``networks.TaskScorer.wait_logits``): *wait*, one extra candidate, whose action holds the free
GPU (``sched.sim.waiting.hold``) until the next arrival, and never longer than ``max_wait``
seconds after the GPU freed (the delayed rules' bound, ``benchmark.waiting.max_wait_s``, kept in
the policy file's ``max_wait_s``). It is masked (never chosen, no probability) where waiting is
off (:func:`allowed`): before the GPU's first task, once it has idled ``max_wait``, and when no
task is still to arrive. With a wait output a lone waiting task is a decision too (it may wait).

A decision (slot ``b``'s pending GPU): the candidates and their scores as ``kernel`` computes
them, then the wait features (``features.WAIT_FEATURES``, :func:`features`) and the wait logit
(:func:`wait_score`: ``lin . z + w1 . tanh(W0 [context, z] + b0) + b1``, float64). Greedy: the
first highest candidate, or wait when its logit is higher still (a tie starts the task).
Sampled: the Gumbel-max draw over the candidates and wait; its column is the candidate limit
(``ws.cand.shape[0]``: torch's logits put it last), its queue position :data:`WAIT`.

* :func:`greedy`, :func:`sample`: the decision; :func:`apply_batch`: the env's action;
* :func:`run`: greedy rollouts (``kernel.run`` comes here, through the policy's ``run``, for
  a policy with a wait output: the benchmark, ``sched simulate``, ``rank()``, the validation).
"""

import math
import threading
from typing import NamedTuple

import numba as nb
import numpy as np

from sched.learn.policy import features as F
from sched.learn.policy import kernel as K
from sched.sim import core as S
from sched.sim import rules
from sched.sim import waiting as W
from sched.sim.errors import SimulationError
from sched.sim.state import core_jit

N_WAIT = F.N_WAIT
#: The queue position of the wait action (no task has it).
WAIT = -1
#: Bounds of the wait features: a ratio above CAP is CAP (asinh(1e6) is about 14.5), the
#: log-ratio is clamped to +/- CLAMP.
CAP = 1e6
CLAMP = -F.ATC_FLOOR


class Head(NamedTuple):
    """A wait output's weights (float64) and its bound."""

    W0: np.ndarray  #: (H, N_CTX + N_WAIT) hidden layer (the context, then the wait features)
    b0: np.ndarray  #: (H,)
    w1: np.ndarray  #: (H,) output layer
    b1: float
    lin: np.ndarray  #: (N_WAIT,) the linear part over the wait features
    max_wait: float  #: seconds a GPU may idle since it freed


class Waiting(NamedTuple):
    """A scorer with a wait output, as the compiled code reads it."""

    net: K.Net
    head: Head
    waits = True  # what ``kernel.run`` asks (a class attribute, not a field)

    def run(self, scenarios, machines=1, machine_free=None, week_start_s=0.0):
        """:func:`run` of this policy (``kernel.run`` calls it)."""
        return run(self, scenarios, machines, machine_free, week_start_s)


class Scratch(NamedTuple):
    """A decision's scratch beside ``kernel.Work`` (:func:`scratch`)."""

    z: np.ndarray  #: (N_WAIT,) the wait features
    h: np.ndarray  #: (H,) the hidden layer
    ok: np.ndarray  #: (1,) bool: whether waiting was on


def head_of(state_dict, max_wait):
    """A :class:`Head` from a ``TaskScorer``'s state dict (tensors or arrays)."""

    def a(name):
        v = state_dict[name]
        v = v.detach().double().numpy() if hasattr(v, "detach") else np.asarray(v, dtype=np.float64)
        return np.ascontiguousarray(v, dtype=np.float64)

    return Head(
        a("wait_hidden.weight"), a("wait_hidden.bias"), np.ascontiguousarray(a("wait_out.weight")[0]),
        float(a("wait_out.bias")[0]), np.ascontiguousarray(a("wait_linear.weight")[0]), float(max_wait),
    )  # fmt: skip


def of_network(net, atc_k, p_ref, profile, max_wait, week_start_s=0.0):
    """The :class:`Waiting` of a ``TaskScorer``'s current weights (training: weights change)."""
    head = head_of(net.state_dict(), max_wait)
    return Waiting(K.of_network(net, atc_k, p_ref, profile, week_start_s), head)


_LOCK = threading.Lock()


def of_policy(policy):
    """The :class:`Waiting` of a loaded policy with a wait output, built once under a lock."""
    with _LOCK:
        if getattr(policy, "_wait_net", None) is None:
            m = policy.meta
            policy._wait_net = of_network(policy.net, m["atc_k"], m["p_ref"], m["profile"], m["max_wait_s"])
        return policy._wait_net


def scratch(wnet):
    """A :class:`Scratch` for ``wnet``."""
    return Scratch(np.empty(N_WAIT), np.empty(wnet.head.b0.shape[0]), np.zeros(1, np.bool_))


@core_jit
def allowed(s, b, max_wait):
    """Whether slot ``b``'s pending GPU may wait: a task is still to arrive and the GPU has idled
    less than ``max_wait`` since it freed (never before its first task: it freed at -inf)."""
    if s.nxt[b] >= s.n[b]:
        return False
    return s.t[b] < W.freed_at(s, b, s.pending[b]) + max_wait


@core_jit
def features(s, b, ws, z, max_wait):
    """z := the wait features of slot b's decision (after ``kernel.observe``: its best
    candidate is ``ws.cand[0]``); returns whether waiting is on (off: z is 0)."""
    for f in range(N_WAIT):
        z[f] = 0.0
    if not allowed(s, b, max_wait):
        return False
    m = s.pending[b]
    v = s.speed[b, m]
    ql = s.qlen[b]
    work = 0.0
    for q in range(ql):  # pbar as kernel.observe sums it
        work += s.est[b, s.queue[b, q]]
    work /= v
    pbar = work / ql
    p = s.est[b, s.queue[b, ws.cand[0]]] / v
    idle = s.t[b] - W.freed_at(s, b, m)
    gap = W.arrival_gap(s, b)
    z[0] = math.asinh(min(idle / pbar, CAP))
    z[1] = math.asinh(min(gap / pbar, CAP))
    z[2] = math.log(p / pbar)
    z[3] = min(max(math.log(p / (idle + gap)), -CLAMP), CLAMP)
    return True


@nb.njit(cache=True, fastmath=K._SUMS, _nrt=False)
def wait_score(head, ctx, z, h):
    """The wait logit of a decision whose context is ``ctx`` and wait features ``z``."""
    H = head.b0.shape[0]
    n = ctx.shape[0]
    for i in range(H):
        acc = head.b0[i]
        for f in range(n):
            acc += head.W0[i, f] * ctx[f]
        for f in range(N_WAIT):
            acc += head.W0[i, n + f] * z[f]
        h[i] = acc
    K._tanh(h, H)
    val = head.b1
    for i in range(H):
        val += head.w1[i] * h[i]
    for f in range(N_WAIT):
        val += head.lin[f] * z[f]
    return val


@core_jit
def decision(s, b, wnet, ws, sc):
    """Observe and score slot b's decision: (m candidates, the wait logit: -inf where off)."""
    m = K.scored(s, b, wnet.net, ws)
    sc.ok[0] = features(s, b, ws, sc.z, wnet.head.max_wait)
    if not sc.ok[0]:
        return m, -np.inf
    return m, wait_score(wnet.head, ws.ctx, sc.z, sc.h)


@core_jit
def greedy(s, b, wnet, ws, sc):
    """The queue position the greedy policy starts now in slot b, or :data:`WAIT`."""
    m, vw = decision(s, b, wnet, ws, sc)
    best = K.argmax(ws.v, m)
    return WAIT if vw > ws.v[best] else ws.cand[best]


@core_jit
def sample(s, b, wnet, ws, sc, u):
    """(column, its log-probability, m) of a Gumbel-max draw over the m candidates and, where on,
    wait (column ``ws.cand.shape[0]``, uniform ``u[m]``); ``u``: at least m + 1 uniforms. With
    waiting off, ``kernel.sample``'s draw, bit for bit."""
    m, vw = decision(s, b, wnet, ws, sc)
    col = ws.cand.shape[0]
    best = 0
    best_g = -np.inf
    top = vw
    for i in range(m):
        top = max(top, ws.v[i])
        g = ws.v[i] - math.log(-math.log(u[i]))
        if g > best_g:
            best_g = g
            best = i
    on = vw > -np.inf
    if on and vw - math.log(-math.log(u[m])) > best_g:
        best = col
    total = 0.0
    for i in range(m):
        total += math.exp(ws.v[i] - top)
    if on:
        total += math.exp(vw - top)
    chosen = vw if best == col else ws.v[best]
    return best, chosen - top - math.log(total), m


@core_jit
def hold(s, b, max_wait):
    """Hold slot b's pending GPU until the next arrival, at most ``max_wait`` after it freed."""
    W.hold(s, b, W.freed_at(s, b, s.pending[b]) + max_wait, max_wait)


@core_jit
def apply_batch(s, actions, max_wait):
    """``core.apply_batch`` with the wait action: :data:`WAIT` holds the slot's GPU (refused where
    waiting is off), a queue position starts its task."""
    for b in range(s.n.shape[0]):
        m = s.pending[b]
        if m < 0:
            continue
        a = actions[b]
        if a == WAIT:
            if not allowed(s, b, max_wait):
                raise SimulationError("a wait where waiting is off")
            hold(s, b, max_wait)
            continue
        if a < 0 or a >= s.qlen[b]:
            raise SimulationError("action outside the queue")
        S._start(s, b, a, m)
        s.pending[b] = -1


@core_jit
def run_policy(s, b, wnet, ws, sc):
    """Take every remaining decision of slot b with the greedy policy (ATC's static parts set)."""
    while S._advance(s, b, False):
        q = greedy(s, b, wnet, ws, sc)
        if q == WAIT:
            hold(s, b, wnet.head.max_wait)
        else:
            S._start(s, b, q, s.pending[b])


@nb.njit(cache=True, nogil=True)  # with reference counting (kernel.at)
def greedy_batch(s, wnet, ws, sc, weeks):
    """:func:`run_policy` of every slot of ``s`` from its start (``weeks``: their week starts)."""
    for b in range(s.n.shape[0]):
        S.reset_slot(s, b)
        S.set_rule(s, b, rules.ATC)
        run_policy(s, b, Waiting(K.at(wnet.net, wnet.net.profile, weeks[b]), wnet.head), ws, sc)


def run(policy, scenarios, machines=1, machine_free=None, week_start_s=0.0):
    """``kernel.run`` of a policy with a wait output (a loaded policy, or a :class:`Waiting`)."""
    wnet = policy if isinstance(policy, Waiting) else of_policy(policy)
    scenarios = list(scenarios)
    state, orders = S.pack(scenarios, machines, machine_free)
    weeks = np.ascontiguousarray(np.broadcast_to(np.asarray(week_start_s, np.float64), (len(scenarios),)))
    greedy_batch(state, wnet, K.workspace(state.queue.shape[1], wnet.net), scratch(wnet), weeks)
    return S._unpack(state, orders)
