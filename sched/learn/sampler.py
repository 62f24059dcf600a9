"""The scorer's sampling policy inside the compiled simulator: PPO's rollout without torch.

Collecting a rollout calls the policy once per decision; with torch, the
calls (a batched forward per step, ragged feature rows, Python between
them) cost more than the simulator. Here one compiled call per lockstep step
does, for every slot of a :class:`~sched.learn.vec_env.VecQueue`, what
``sched.learn.scorer._decide`` does for a greedy decision, with sampling:

1. encode the waiting tasks (``features._encode_slot``, the one encoding)
   and pool them into the queue context (mean and max of every feature over
   the waiting tasks, then the global features): ``TaskScorer``'s context;
2. score the ``top_k`` candidates (the waiting tasks with the highest ATC
   index, in ATC order) with the scorer's network in float64
   (``scorer_fast.score``);
3. sample a candidate by the Gumbel-max trick: the argmax of score + G,
   with G = -log(-log U) from the caller's uniforms ``U`` (a seeded NumPy
   stream), which draws exactly from the softmax of the scores.

It writes the compact observation PPO's update reads (the candidates'
feature rows in ATC order, the context, the candidate count), the chosen
candidate and its log-probability (float64 here, float32 in torch's update:
the first epoch's ratios start within about 1e-6 of 1). The critic's values
are computed by torch, for the whole rollout in one batched forward.
"""

import math

import numba as nb
import numpy as np

from sched.learn import features as F
from sched.learn import scorer, scorer_fast

N_TASK = F.N_TASK
N_CTX = 2 * F.N_TASK + F.N_GLOBAL


@nb.njit(cache=True)
def sample_batch(s, k, p_ref, loads, top_k, fw, u, X, C, count, choice, logp, qpos, work):
    """Sample one action for every slot of ``s`` with a pending decision.

    ``u``: (B, K) uniforms in (0, 1), K = the candidate limit; writes, per
    slot b: ``X[b, :m]`` the m candidates' feature rows (ATC order),
    ``C[b]`` the context, ``count[b] = m``, ``choice[b]`` the sampled
    candidate (its ATC rank), ``logp[b]`` its log-probability and ``qpos[b]``
    its queue position (-1, and count 0, where no decision is pending).
    ``work``: :func:`workspace`.
    """
    xb, gb, cin, Xm, H0, H1, v = work
    K = X.shape[1]
    for b in range(s.n.shape[0]):
        if s.pending[b] < 0:
            count[b] = 0
            choice[b] = -1
            qpos[b] = -1
            continue
        ql = s.qlen[b]
        order = F._encode_slot(s, b, k, p_ref, loads[b], xb, gb)
        F.pool_context(xb, ql, gb, cin)
        m = min(K, ql) if top_k > 0 else ql
        for i in range(m):
            q = order[i]
            for f in range(N_TASK):
                Xm[i, f] = xb[q, f]
                X[b, i, f] = xb[q, f]
        for f in range(N_CTX):
            C[b, f] = cin[f]
        scorer_fast.score(Xm, m, cin, fw, H0, H1, v)
        best = 0
        best_v = -np.inf
        top = -np.inf
        for i in range(m):
            top = max(top, v[i])
            g = v[i] - math.log(-math.log(u[b, i]))
            if g > best_v:
                best_v = g
                best = i
        total = 0.0
        for i in range(m):
            total += math.exp(v[i] - top)
        count[b] = m
        choice[b] = best
        logp[b] = v[best] - top - math.log(total)
        qpos[b] = order[best]


def workspace(max_queue, candidates, hidden):
    """The scratch arrays of :func:`sample_batch`, for queues of up to ``max_queue`` tasks."""
    return (
        np.empty((max(max_queue, 1), N_TASK)),
        np.empty(F.N_GLOBAL),
        np.empty(N_CTX),
        np.empty((candidates, N_TASK)),
        np.empty((candidates, hidden)),
        np.empty((candidates, hidden)),
        np.empty(candidates),
    )


def weights(net):
    """The arrays ``scorer_fast.score`` reads, from a ``TaskScorer``'s current weights (float64)."""
    return scorer_fast.prepare(scorer.arrays_of(net))
