"""The PPO update: advantages (GAE), then the clipped-surrogate optimisation of one rollout.

Names follow the PPO paper and CleanRL: ``pg_loss`` (clipped surrogate),
``v_loss`` (value), ``entropy_loss`` (mean entropy, a bonus), and
``loss = pg_loss - ent_coef * entropy_loss + vf_coef * v_loss``.
"""

from typing import NamedTuple

import numpy as np
import torch

from sched.learn.policy import networks as P


def compute_gae(rewards, values, dones, next_value, gamma, gae_lambda):
    """Generalised advantage estimation over a rollout of T steps of B slots.

    ``rewards``, ``values``, ``dones``: (T, B) arrays; ``dones[t]`` is 1 where
    step t ended an episode (no bootstrap across it: the slot's next value
    belongs to a new scenario). ``next_value``: (B,) the value after the last
    step. Returns ``(advantages, returns)``, both (T, B), with
    ``returns = advantages + values``.
    """
    num_steps = len(rewards)
    advantages = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1], dtype=np.float32)
    for t in reversed(range(num_steps)):
        next_v = next_value if t == num_steps - 1 else values[t + 1]
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_v * nonterminal - values[t]
        last = delta + gamma * gae_lambda * nonterminal * last
        advantages[t] = last
    return advantages, advantages + values


def explained_variance(values, returns):
    """1 - Var(returns - values) / Var(returns): the share of the returns the critic explains.

    NaN when the returns are constant.
    """
    var_y = np.var(returns)
    return float("nan") if var_y == 0 else float(1 - np.var(returns - values) / var_y)


class UpdateStats(NamedTuple):
    """What an update reports; the losses are those of its last minibatch."""

    pg_loss: float  # clipped surrogate policy loss
    v_loss: float  # value loss
    entropy_loss: float  # mean entropy of the policy over the valid actions
    approx_kl: float  # estimate of KL(old policy || new policy), last minibatch
    clip_fraction: float  # share of decisions whose ratio was clipped, over every minibatch
    explained_variance: float  # of the returns by the rollout's values
    explained_variance_learned: float  # of the returns less the hint, by the values less the hint
    explained_variance_baseline: float  # of the returns by the grouped baseline (NaN: GAE on the critic)


class _Minibatch(NamedTuple):
    """The rollout's flat tensors the losses read, one entry per decision."""

    actions: torch.Tensor
    logprobs: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    values: torch.Tensor
    hints: torch.Tensor


def ppo_update(net, optimizer, rollout, advantages, returns, ppo, gen, ev_baseline=float("nan")):
    """``update_epochs`` passes of shuffled minibatches over ``rollout``; returns :class:`UpdateStats`.

    ``ppo``: ``sched.learn.settings.PPOSettings``; ``gen`` shuffles the minibatches; ``ev_baseline``: the
    grouped baseline's explained variance, reported as is (``sched.learn.ppo.rollout``).
    """
    flat = _Minibatch(
        rollout.actions,
        rollout.logprobs,
        torch.from_numpy(advantages.reshape(-1)),
        torch.from_numpy(returns.reshape(-1).astype(np.float32)),
        torch.from_numpy(rollout.values.reshape(-1).astype(np.float32)),
        torch.from_numpy(rollout.hints.reshape(-1)),
    )
    clipfracs, approx_kl = [], torch.tensor(0.0)
    n = int(flat.actions.shape[0])  # num_envs x num_steps, or a grouped rollout's decisions
    size = max(1, n // ppo.num_minibatches)
    for _epoch in range(ppo.update_epochs):
        perm = torch.randperm(n, generator=gen)
        for lo in range(0, n - size + 1, size):
            mb = perm[lo : lo + size]
            pg_loss, v_loss, entropy_loss, approx_kl, clipfrac = losses(net, rollout.store, flat, mb, ppo)
            clipfracs.append(clipfrac)
            loss = pg_loss - ppo.ent_coef * entropy_loss + ppo.vf_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), ppo.max_grad_norm)
            optimizer.step()
        if ppo.target_kl is not None and approx_kl > ppo.target_kl:
            break
    return UpdateStats(
        pg_loss.item(),
        v_loss.item(),
        entropy_loss.item(),
        float(approx_kl),
        float(np.mean(clipfracs)),
        explained_variance(rollout.values, returns),
        explained_variance(rollout.values - rollout.hints, returns - rollout.hints),
        float(ev_baseline),
    )


def losses(net, store, flat, mb, ppo):
    """PPO's losses on the decisions ``mb``: (pg_loss, v_loss, entropy_loss, approx_kl, clip fraction)."""
    newlogprob, entropy, newvalue = P.evaluate_actions(net, store.batch(mb), flat.actions[mb])
    newvalue = newvalue + flat.hints[mb]  # the network learns the residual on the hint
    logratio = newlogprob - flat.logprobs[mb]
    ratio = logratio.exp()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > ppo.clip_coef).float().mean().item()
    mb_advantages = flat.advantages[mb]
    if ppo.norm_adv:
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
    pg_loss = clipped_policy_loss(mb_advantages, ratio, ppo.clip_coef)
    v_loss = value_loss(newvalue, flat.returns[mb], flat.values[mb], ppo.clip_coef, ppo.clip_vloss)
    return pg_loss, v_loss, entropy.mean(), approx_kl, clipfrac


def clipped_policy_loss(advantages, ratio, clip_coef):
    """PPO's clipped surrogate loss: mean of max(-A * r, -A * clip(r, 1 - c, 1 + c)).

    ``ratio`` is new / old probability of the action taken; the loss is the
    negative of the pessimistic surrogate, so a minimiser gains nothing by
    moving the ratio beyond 1 +/- c in the direction the advantage favours.
    """
    return torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()


def value_loss(newvalue, returns, values, clip_coef, clip):
    """Half the mean squared error of the critic; with ``clip``, the larger of the errors of
    the new value and of the new value kept within ``clip_coef`` of the rollout's ``values``."""
    if clip:
        v_loss_unclipped = (newvalue - returns) ** 2
        v_clipped = values + (newvalue - values).clamp(-clip_coef, clip_coef)
        return 0.5 * torch.max(v_loss_unclipped, (v_clipped - returns) ** 2).mean()
    return 0.5 * ((newvalue - returns) ** 2).mean()
