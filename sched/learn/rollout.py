"""Rollout collection for PPO: ``num_steps`` lockstep steps of the training scenarios.

Each step encodes every slot of the vector environment, runs one batched
forward of the actor-critic, samples one action per slot from its masked
softmax and steps the environment. The decisions are kept ragged (see
``sched.learn.networks``): each holds as many feature rows as tasks wait.
"""

from typing import NamedTuple

import numpy as np
import torch

from sched.learn import networks as P


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
