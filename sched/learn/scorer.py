"""The scorer's greedy rollout of one queue, compiled: the learned-policy path of ``rank()``.

Calling torch (or even NumPy) once per decision costs more than a decision
on a queue of a few dozen tasks, so the whole rollout (advance, encode,
score the ``top_k`` candidates, start the best) is one compiled call, with
the scorer's weights passed as arrays. :func:`_decide` computes the same
function as ``TaskScorer.forward`` (``sched.learn.networks``) in float64
(the tests check both pick the same tasks); :func:`greedy_rollout` takes
every decision with it: the reference, whose time grows with the square of
the queue times several libm calls per waiting task (features, then a sort).

:func:`greedy_rollout_fast` (what :func:`run_one`, hence ``rank()``, runs
when the policy has a candidate limit ``top_k``) takes each decision through
``sched.learn.scorer_fast.decide``, which gives the same task or answers
that it cannot be sure; then :func:`_decide` decides. The schedule is the
reference's, bit for bit (``tests/test_rank_scaling.py``).
"""

import math

import numba as nb
import numpy as np

from sched.learn import features as F
from sched.learn import scorer_fast, scorer_pool
from sched.sim import core as S


@nb.njit(cache=True, fastmath=True)
def _affine(W, b, x, lo, hi, out):
    """out = b + W[:, lo:hi] @ x[lo:hi] (fastmath: vectorised sums, float rounding may differ
    from torch's in the last bits)."""
    for i in range(W.shape[0]):
        acc = b[i]
        for j in range(lo, hi):
            acc += W[i, j] * x[j]
        out[i] = acc


@nb.njit(cache=True)
def _score(q, xb, W0, W1, b1, W2, b2, lin, inp, ctx, h0, h1):
    """The scorer's score of the task at queue position q, once ``ctx`` holds the first
    layer's context part (:func:`_decide`); ``inp``, ``h0``, ``h1`` are work buffers."""
    n_task = F.N_TASK
    for f in range(n_task):
        inp[f] = xb[q, f]
    _affine(W0, ctx, inp, 0, n_task, h0)
    for i in range(h0.shape[0]):
        h0[i] = math.tanh(h0[i])
    _affine(W1, b1, h0, 0, h0.shape[0], h1)
    for i in range(h1.shape[0]):
        h1[i] = math.tanh(h1[i])
    v = b2[0]
    for i in range(h1.shape[0]):
        v += W2[0, i] * h1[i]
    for f in range(n_task):
        v += lin[f] * xb[q, f]
    return v


@nb.njit(cache=True)
def _decide(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1):
    """Queue position of the task the greedy scorer starts now (slot 0): the policy's
    decision, computed as the definition reads. The reference for every faster path."""
    n_task = F.N_TASK
    n_in = W0.shape[1]
    ql = s.qlen[0]
    F._encode_slot(s, 0, k, p_ref, load, xb, gb)
    F.pool_context(xb, ql, gb, inp[n_task:])  # the context follows the task's own features
    # the first layer's context part is the same for every candidate
    _affine(W0, b0, inp, n_task, n_in, ctx)
    best = -1
    best_v = -np.inf
    atc_best = 0
    for q in range(ql):
        rank = round(xb[q, F.ATC_RANK_INDEX] * ql)
        if rank == 0:
            atc_best = q
        if top_k > 0 and rank >= top_k:
            continue
        v = _score(q, xb, W0, W1, b1, W2, b2, lin, inp, ctx, h0, h1)
        if v > best_v:
            best_v = v
            best = q
    if best < 0:  # every score NaN (a diverged network): ATC's choice, not garbage
        best = atc_best
    return best


@nb.njit(cache=True)
def scores(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1, out):
    """out[q] := the scorer's score of queue position q of slot 0 (-inf outside its
    ``top_k`` candidates): what :func:`_decide` maximises, for callers that rank the
    candidates (the planner, ``sched.learn.plan``)."""
    n_task = F.N_TASK
    ql = s.qlen[0]
    F._encode_slot(s, 0, k, p_ref, load, xb, gb)
    F.pool_context(xb, ql, gb, inp[n_task:])
    _affine(W0, b0, inp, n_task, W0.shape[1], ctx)
    for q in range(ql):
        rank = round(xb[q, F.ATC_RANK_INDEX] * ql)
        if top_k > 0 and rank >= top_k:
            out[q] = -np.inf
        else:
            out[q] = _score(q, xb, W0, W1, b1, W2, b2, lin, inp, ctx, h0, h1)


@nb.njit(cache=True)
def _buffers(s, W0, W1):
    return (
        np.empty((s.queue.shape[1], F.N_TASK)),
        np.empty(F.N_GLOBAL),
        np.empty(W0.shape[1]),
        np.empty(W0.shape[0]),
        np.empty(W0.shape[0]),
        np.empty(W1.shape[0]),
    )


@nb.njit(cache=True)
def greedy_rollout(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin):
    """Run the greedy scorer on slot 0 of ``s`` until every task has started (the
    reference: :func:`_decide` at every decision; time quadratic in the queue)."""
    xb, gb, inp, ctx, h0, h1 = _buffers(s, W0, W1)
    while S._advance(s, 0, True):
        best = _decide(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1)
        S._start(s, 0, best, s.pending[0])


@nb.njit(cache=True)
def greedy_rollout_fast(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, fw, ws):
    """:func:`greedy_rollout`, each decision by ``scorer_fast.decide`` when it is certain
    (the same task), else by :func:`_decide`. Returns (certified, exact) decision counts."""
    xb, gb, inp, ctx, h0, h1 = _buffers(s, W0, W1)
    idx, live, mstate = ws[0], ws[1], ws[3]
    certified = exact = 0
    while S._advance(s, 0, True):
        best = scorer_fast.decide(s, k, p_ref, load, top_k, fw, ws)
        if best >= 0:
            certified += 1
        else:
            exact += 1
            best = _decide(s, k, p_ref, load, top_k, W0, b0, W1, b1, W2, b2, lin, xb, gb, inp, ctx, h0, h1)
        scorer_pool.kill(s.queue[0, best], idx, live, mstate)
        S._start(s, 0, best, s.pending[0])
    return certified, exact


def arrays_of(net):
    """A ``TaskScorer``'s current weights as float64 arrays, in greedy_rollout's order."""
    sd = {k: v.detach().double().numpy() for k, v in net.state_dict().items()}
    names = (
        "actor.0.weight",
        "actor.0.bias",
        "actor.2.weight",
        "actor.2.bias",
        "actor.4.weight",
        "actor.4.bias",
    )
    return tuple(np.ascontiguousarray(sd[n]) for n in names) + (np.ascontiguousarray(sd["linear.weight"][0]),)


def weights_of(policy):
    """:func:`arrays_of` a loaded policy's network, computed once per policy."""
    w = getattr(policy, "_nb_weights", None)
    if w is None:
        w = policy._nb_weights = arrays_of(policy.net)
    return w


def fast_weights_of(policy):
    """``scorer_fast.prepare`` of the policy's weights, computed once per policy."""
    fw = getattr(policy, "_nb_fast_weights", None)
    if fw is None:
        fw = policy._nb_fast_weights = scorer_fast.prepare(weights_of(policy))
    return fw


def fast_path_applies(top_k, scenario, speeds=None):
    """Whether :func:`greedy_rollout_fast` runs: a candidate set of 1 to MAX_TOP_K
    tasks, finite times, positive estimates and weights, every GPU of speed 1
    (else the reference runs). The fast path reads the estimates as they are;
    on a GPU of another speed the features read p / speed (``features``), which
    only the reference path computes."""
    if not 0 < top_k <= scorer_fast.MAX_TOP_K:
        return False
    if speeds is not None and not (np.asarray(speeds) == 1.0).all():
        return False
    arr, _, est, w, due = (np.asarray(c, dtype=np.float64) for c in scenario)
    finite = all(np.isfinite(c).all() for c in (arr, est, w, due))
    return bool(finite and (est > 0).all() and (w > 0).all())


def run_one(policy, scenario, machines=1, machine_free=None, fast=True):
    """(start, end, machine) of one scenario under the greedy scorer, row order.

    ``fast``: through :func:`greedy_rollout_fast` where it applies (the same
    schedule); False: the reference :func:`greedy_rollout`.
    """
    state, (order,) = S.pack([scenario], machines, machine_free)
    enc = policy.encoder
    load = float(np.asarray(enc.load).ravel()[0])
    top_k = int(policy.net.top_k)
    w = weights_of(policy)
    if fast and fast_path_applies(top_k, scenario, state.speed[0]):
        ws = scorer_fast.workspace(state.queue.shape[1], top_k, w[0].shape[0])
        greedy_rollout_fast(state, enc.k, enc.p_ref, load, top_k, *w, fast_weights_of(policy), ws)
    else:
        greedy_rollout(state, enc.k, enc.p_ref, load, top_k, *w)
    return S._unpack(state, [order])[0]
