"""Rollout collection for PPO: ``num_steps`` lockstep steps of the training scenarios.

:func:`collect_compiled`: each step is one compiled call that observes,
scores and samples every slot and keeps the log-probability of the sampled
action (``sched.learn.ppo.sampler`` on ``sched.learn.policy.kernel``, the policy's one
decision), with a compact observation per decision (the candidates' rows and
the queue context); torch then computes the critic's values of the whole
rollout in one batched forward.
"""

from typing import NamedTuple

import numpy as np
import torch

from sched.learn.policy import kernel
from sched.learn.ppo import sampler


class Rollout(NamedTuple):
    """One rollout of ``T = num_steps`` steps of ``B = num_envs`` slots.

    Per-decision tensors are flat, step-major (decision ``t * B + b``);
    per-step arrays are (T, B).
    """

    store: "CompactStore"  # the decisions' observations
    actions: torch.Tensor  # (T*B,) the sampled action: a candidate of its decision
    logprobs: torch.Tensor  # (T*B,) its log-probability under the rollout's policy
    values: np.ndarray  # (T, B) float32, the critic's value (hint included)
    hints: np.ndarray  # (T, B) float32, the privileged hint inside ``values`` (0 without one)
    rewards: np.ndarray  # (T, B) float32
    dones: np.ndarray  # (T, B) float32, 1 where the step ended an episode
    next_value: np.ndarray  # (B,) float32, the value after the last step (bootstrap)
    episodes: list  # (seed, load, total weighted tardiness) of the episodes that ended


class CompactStore:
    """The decisions of a compiled rollout: candidates' rows (N, K, n_task), context (N, n_ctx),
    valid-candidate mask (N, K), as torch tensors."""

    def __init__(self, x, ctx, count):
        K = x.shape[1]
        self.x = torch.from_numpy(x)
        self.ctx = torch.from_numpy(ctx)
        self.mask = torch.arange(K).unsqueeze(0) < torch.from_numpy(count).unsqueeze(1)

    def batch(self, idx):
        # index_select, not x[idx]: the same rows, and torch copies them faster
        return {
            "x": self.x.index_select(0, idx),
            "ctx": self.ctx.index_select(0, idx),
            "mask": self.mask[idx],
        }

    def all(self):
        return {"x": self.x, "ctx": self.ctx, "mask": self.mask}


class CompiledSampler:
    """What :func:`collect_compiled` needs besides the env: the candidate limit and the scratch."""

    def __init__(self, env, net):
        self.top_k = net.top_k
        self.K = net.top_k if net.top_k > 0 else env.tasks
        self.u = np.empty((env.B, self.K))
        self.qpos = np.empty(env.B, dtype=np.int64)
        self.work = None

    def __call__(self, env, knet, X, C, count, choice, logp):
        """Sample every slot of ``env`` now, writing its compact observation; returns the queue positions."""
        if self.work is None:
            self.work = kernel.workspace(env.tasks, knet)
        env.action_rng.random(out=self.u)
        out = sampler.Samples(X, C, count, choice, logp, self.qpos)
        sampler.sample_batch(env.state, knet, env.slot_profile, env.slot_week, self.work, self.u, out)
        return self.qpos


@torch.no_grad()
def collect_compiled(env, net, num_steps, draw):
    """Step ``env`` (a ``VecQueue`` built with an ``action_rng``) ``num_steps`` times under ``net``'s
    sampling policy, compiled; ``draw``: a :class:`CompiledSampler`. Returns the :class:`Rollout`
    (the next observation is the env's state: nothing to carry)."""
    T, B, K = num_steps, env.B, draw.K
    X = np.zeros((T + 1, B, K, kernel.N_TASK), dtype=np.float32)
    C = np.zeros((T + 1, B, kernel.N_CTX), dtype=np.float32)
    count = np.zeros((T + 1, B), dtype=np.int64)
    choice = np.zeros((T + 1, B), dtype=np.int64)
    rewards, dones, hints, logp = (np.zeros((T + 1, B), dtype=np.float32) for _ in range(4))
    knet = env.kernel_net(net)
    for t in range(T + 1):  # step T only observes: the bootstrap value's context
        hints[t] = env.value_hint()
        qpos = draw(env, knet, X[t], C[t], count[t], choice[t], logp[t])
        if t < T:
            _, rewards[t], dones[t] = env.step(qpos, observe=False)
    store = CompactStore(X[:T].reshape(T * B, K, -1), C[:T].reshape(T * B, -1), count[:T].reshape(-1))
    actions = torch.from_numpy(choice[:T].reshape(-1))
    values = net.critic(torch.from_numpy(C)).squeeze(-1).numpy() + hints
    logp = torch.from_numpy(logp[:T].reshape(-1))
    next_value, values = values[T], values[:T]
    episodes, env.finished = env.finished, []
    return Rollout(
        store=store,
        actions=actions,
        logprobs=logp,
        values=values,
        hints=hints[:T],
        rewards=rewards[:T],
        dones=dones[:T],
        next_value=next_value,
        episodes=episodes,
    )
