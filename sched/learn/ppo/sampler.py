"""PPO's sampling policy inside the compiled simulator: the rollout without torch.

One compiled call per lockstep step does, for every slot of a
:class:`~sched.learn.env.vec_env.VecQueue` with a pending decision, what the
greedy policy does (``sched.learn.policy.kernel``: the same observation, the same
scores), except that the action is drawn from the softmax of the scores
(``kernel.sample``, Gumbel-max on the caller's uniforms, a seeded NumPy
stream).

It writes the compact observation PPO's update reads (the candidates'
feature rows in ATC order, the context, the candidate count), the chosen
candidate and its log-probability (float64 here, float32 in torch's update:
the first epoch's ratios start within about 1e-6 of 1). The critic's values
are computed by torch, for the whole rollout in one batched forward.

A policy with a wait output (``train.wait``) samples with :func:`sample_wait_batch`
(``wait_head.sample``): its choice may be the wait column (the candidate limit K),
whose queue position is ``wait_head.WAIT``; it writes the wait features and mask too.
"""

from typing import NamedTuple

import numba as nb
import numpy as np

from sched.learn.policy import kernel as K
from sched.learn.policy import wait_head as WH


class Samples(NamedTuple):
    """What :func:`sample_batch` writes, per slot b (one lockstep step)."""

    X: np.ndarray  #: (B, K, N_TASK) ``X[b, :m]`` the m candidates' feature rows (ATC order)
    C: np.ndarray  #: (B, N_CTX) the context
    count: np.ndarray  #: (B,) m (0 where no decision is pending)
    choice: np.ndarray  #: (B,) the sampled candidate (its ATC rank; -1: none)
    logp: np.ndarray  #: (B,) its log-probability
    qpos: np.ndarray  #: (B,) its queue position (-1: none)


@nb.njit(cache=True)
def sample_batch(s, net, profiles, weeks, ws, u, out):
    """Sample one action for every slot of ``s`` with a pending decision, into ``out`` (a
    :class:`Samples`).

    ``profiles``: (B, 168) the load profile of each slot's scenario model (the ``ahead_1h``,
    ``ahead_4h`` features), ``weeks``: (B,) each slot's week start (seconds since Monday
    00:00 UTC at its time 0: ``week_sin``, ``week_cos``).
    ``u``: (B, K) uniforms in (0, 1), K = the candidate limit. ``ws``: ``kernel.workspace``.
    """
    X, C, count, choice, logp, qpos = out
    for b in range(s.n.shape[0]):
        if s.pending[b] < 0:
            count[b] = 0
            choice[b] = -1
            qpos[b] = -1
            continue
        best, lp, m = K.sample(s, b, K.at(net, profiles[b], weeks[b]), ws, u[b])
        for i in range(m):
            for f in range(K.N_TASK):
                X[b, i, f] = ws.X[i, f]
        for f in range(K.N_CTX):
            C[b, f] = ws.ctx[f]
        count[b] = m
        choice[b] = best
        logp[b] = lp
        qpos[b] = ws.cand[best]


class WaitSamples(NamedTuple):
    """What :func:`sample_wait_batch` writes besides :class:`Samples`, per slot b."""

    Z: np.ndarray  #: (B, N_WAIT) the wait features (0 where waiting is off)
    ok: np.ndarray  #: (B,) bool, whether waiting was on


@nb.njit(cache=True)
def sample_wait_batch(s, wnet, profiles, weeks, ws, u, out, wout):
    """:func:`sample_batch` of a policy with a wait output (``wait_head.Waiting``); ``u``: (B, K + 1)
    uniforms. A sampled wait is column K, queue position ``wait_head.WAIT``."""
    X, C, count, choice, logp, qpos = out
    col = ws.cand.shape[0]
    sc = WH.Scratch(np.empty(WH.N_WAIT), np.empty(wnet.head.b0.shape[0]), np.zeros(1, np.bool_))
    for b in range(s.n.shape[0]):
        wout.ok[b] = False
        if s.pending[b] < 0:
            count[b] = 0
            choice[b] = -1
            qpos[b] = -1
            continue
        w = WH.Waiting(K.at(wnet.net, profiles[b], weeks[b]), wnet.head)
        best, lp, m = WH.sample(s, b, w, ws, sc, u[b])
        for i in range(m):
            for f in range(K.N_TASK):
                X[b, i, f] = ws.X[i, f]
        for f in range(K.N_CTX):
            C[b, f] = ws.ctx[f]
        for f in range(WH.N_WAIT):
            wout.Z[b, f] = sc.z[f]
        wout.ok[b] = sc.ok[0]
        count[b] = m
        choice[b] = best
        logp[b] = lp
        qpos[b] = WH.WAIT if best == col else ws.cand[best]
