"""Rollout collection for PPO: ``num_steps`` lockstep steps of the training scenarios.

Two collectors, the same sampling policy (the masked softmax of the logits):

* :func:`collect_compiled` (the scorer): each step is one compiled call that
  encodes, scores and samples every slot and keeps the log-probability of the
  sampled action (``sched.learn.sampler``), with a compact observation per
  decision (the ``top_k`` candidates' rows and the queue context); torch then
  computes the critic's values of the whole rollout in one batched forward;
* :func:`collect_rollout` (any architecture, the flat one included): each
  step encodes every slot, runs one batched torch forward and samples; the
  decisions are kept ragged (see ``sched.learn.networks``), with as many
  feature rows as tasks wait.
"""

from typing import NamedTuple

import numpy as np
import torch

from sched.learn import features as F
from sched.learn import networks as P
from sched.learn import sampler


class RolloutStore:
    """The decisions of one rollout, kept ragged: their rows, counts and globals."""

    def __init__(self, encoding):
        self.encoding = encoding
        self.x, self.counts, self.g = [], [], []

    def add(self, batch):
        self.x.append(batch["x"])
        self.counts.append(batch["counts"])
        if batch["g"] is not None:
            self.g.append(batch["g"])

    def finish(self):
        self.X = torch.cat(self.x)
        self.C = torch.cat(self.counts)
        self.S = P.starts_of(self.C)
        self.G = torch.cat(self.g) if self.g else None

    def batch(self, idx):
        """The ragged batch of decisions ``idx`` (a tensor of decision numbers)."""
        counts = self.C[idx]
        n = len(idx)
        seg = torch.repeat_interleave(torch.arange(n), counts)
        starts = P.starts_of(counts)
        if self.encoding == "flat":
            return {"x": self.X[idx], "seg": seg, "n": n, "counts": counts, "starts": starts, "g": None}
        within = torch.arange(len(seg)) - starts[seg]
        rows = self.S[idx][seg] + within
        return {"x": self.X[rows], "seg": seg, "n": n, "counts": counts, "starts": starts, "g": self.G[idx]}


class Rollout(NamedTuple):
    """One rollout of ``T = num_steps`` steps of ``B = num_envs`` slots.

    Per-decision tensors are flat, step-major (decision ``t * B + b``);
    per-step arrays are (T, B).
    """

    store: RolloutStore  # the decisions' feature rows
    actions: torch.Tensor  # (T*B,) the sampled action: a row within its decision
    logprobs: torch.Tensor  # (T*B,) its log-probability under the rollout's policy
    values: np.ndarray  # (T, B) float32, the critic's value (hint included)
    hints: np.ndarray  # (T, B) float32, the privileged hint inside ``values`` (0 without one)
    rewards: np.ndarray  # (T, B) float32
    dones: np.ndarray  # (T, B) float32, 1 where the step ended an episode
    next_value: np.ndarray  # (B,) float32, the value after the last step (bootstrap)
    episodes: list  # (seed, load, total weighted tardiness) of the episodes that ended


def sample_actions(logits, batch, gen):
    """One action per decision from the masked softmax (Gumbel-max, seeded generator)."""
    u = torch.rand(len(logits), generator=gen).clamp_(1e-12, 1.0 - 1e-7)
    noisy = logits - torch.log(-torch.log(u))
    return P.segment_argmax(noisy, batch["seg"], batch["n"], batch["starts"])


@torch.no_grad()
def collect_rollout(env, net, obs, num_steps, encoding, gen):
    """Step ``env`` (a ``VecQueue``) ``num_steps`` times from ``obs`` under ``net``'s sampling policy.

    Returns the :class:`Rollout` and the observation to continue from.
    """
    store = RolloutStore(encoding)
    actions, logprobs, values, rewards, dones, hints = ([] for _ in range(6))
    for _ in range(num_steps):
        batch = P.make_batch(obs)
        logits, value = net(batch)
        hint = env.value_hint()
        value = value + torch.from_numpy(hint)
        action = sample_actions(logits, batch, gen)
        logprob = P.segment_log_softmax(logits, batch["seg"], batch["n"])[batch["starts"] + action]
        store.add(batch)
        actions.append(action)
        logprobs.append(logprob)
        values.append(value.numpy())
        hints.append(hint)
        obs, reward, done = env.step(obs.queue_positions(action.numpy()))
        rewards.append(reward)
        dones.append(done)
    next_value = net(P.make_batch(obs))[1].numpy() + env.value_hint()
    store.finish()
    episodes, env.finished = env.finished, []
    rollout = Rollout(
        store,
        torch.cat(actions),
        torch.cat(logprobs),
        np.array(values),
        np.stack(hints),
        np.array(rewards),
        np.array(dones, dtype=np.float32),
        next_value,
        episodes,
    )
    return rollout, obs


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
        self.work = sampler.workspace(env.tasks, self.K, net.actor[0].out_features)
        self.u = np.empty((env.B, self.K))
        self.qpos = np.empty(env.B, dtype=np.int64)

    def __call__(self, env, fw, X, C, count, choice, logp):
        """Sample every slot of ``env`` now, writing its compact observation; returns the queue positions."""
        env.action_rng.random(out=self.u)
        e = env.encoder
        s, u, q, w = env.state, self.u, self.qpos, self.work
        sampler.sample_batch(
            s, e.k, e.p_ref, env.slot_load, self.top_k, fw, u, X, C, count, choice, logp, q, w
        )
        return self.qpos


@torch.no_grad()
def collect_compiled(env, net, num_steps, draw):
    """Step ``env`` (a ``VecQueue`` built with an ``action_rng``) ``num_steps`` times under ``net``'s
    sampling policy, compiled; ``draw``: a :class:`CompiledSampler`. Returns the :class:`Rollout`
    (the next observation is the env's state: nothing to carry)."""
    T, B, K = num_steps, env.B, draw.K
    X = np.zeros((T + 1, B, K, F.N_TASK), dtype=np.float32)
    C = np.zeros((T + 1, B, sampler.N_CTX), dtype=np.float32)
    count = np.zeros((T + 1, B), dtype=np.int64)
    choice = np.zeros((T + 1, B), dtype=np.int64)
    rewards, dones, hints, logp = (np.zeros((T + 1, B), dtype=np.float32) for _ in range(4))
    fw = sampler.weights(net)
    for t in range(T + 1):  # step T only observes: the bootstrap value's context
        hints[t] = env.value_hint()
        qpos = draw(env, fw, X[t], C[t], count[t], choice[t], logp[t])
        if t < T:
            _, rewards[t], dones[t] = env.step(qpos, observe=False)
    store = CompactStore(X[:T].reshape(T * B, K, -1), C[:T].reshape(T * B, -1), count[:T].reshape(-1))
    actions = torch.from_numpy(choice[:T].reshape(-1))
    values = net.critic(torch.from_numpy(C)).squeeze(-1).numpy() + hints
    logp = torch.from_numpy(logp[:T].reshape(-1))
    next_value, values = values[T], values[:T]
    episodes, env.finished = env.finished, []
    return Rollout(store, actions, logp, values, hints[:T], rewards[:T], dones[:T], next_value, episodes)
