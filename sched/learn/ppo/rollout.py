"""PPO's rollout: ``num_steps`` lockstep steps of the training scenarios, and the advantages of
one iteration (:func:`collect_iteration`: GAE on the critic, or the grouped baseline).

:func:`collect_compiled`: each step is one compiled call that observes,
scores and samples every slot and keeps the log-probability of the sampled
action (``sched.learn.ppo.sampler`` on ``sched.learn.policy.kernel``, the policy's one
decision), with a compact observation per decision (the candidates' rows and
the queue context); torch then computes the critic's values of the whole
rollout in one batched forward.

Rollouts in groups, an input-dependent baseline (Mao et al., ICLR 2019). In a queue driven by
an exogenous arrival process, most of the variance of a decision's return is the arrivals', not
the action's: one scenario's total varies across scenarios far more than two policies differ. A
baseline that depends on the input sequence removes it. With ``train.group_size`` K >= 2, each
iteration draws ``num_envs / K`` training scenarios and runs each K times, to its end, in K
slots: the same arrivals, durations, estimates, weights and due dates, each slot with its own
action samples. The advantage of the decision a rollout takes at time t is its return from that
decision on (the undiscounted sum of its rewards: minus the weighted tardiness it accrues from
then) minus the mean, over the K - 1 other rollouts of its group, of their return from their
first decision at or after t (leave-one-out, at the same time: the rollouts' decisions drift
apart, their clocks do not). The other rollouts' actions are independent of this one's, so the
baseline adds no bias. The critic is still trained on the returns (its explained variance is
logged) but takes no part in the advantage.
"""

from typing import NamedTuple

import numpy as np
import torch

from sched.config import ConfigError
from sched.learn.env.vec_env import VecQueue, reward
from sched.learn.policy import kernel, wait_head
from sched.learn.ppo import sampler
from sched.learn.ppo.update import compute_gae


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
    valid-candidate mask (N, K), as torch tensors; with a wait output (``wait``: (wait features
    (N, N_WAIT), where waiting was on (N,))) those too."""

    def __init__(self, x, ctx, count, wait=None):
        K = x.shape[1]
        self.x = torch.from_numpy(x)
        self.ctx = torch.from_numpy(ctx)
        self.mask = torch.arange(K).unsqueeze(0) < torch.from_numpy(count).unsqueeze(1)
        self.wait = None if wait is None else tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in wait)

    def batch(self, idx):
        # index_select, not x[idx]: the same rows, and torch copies them faster
        out = {
            "x": self.x.index_select(0, idx),
            "ctx": self.ctx.index_select(0, idx),
            "mask": self.mask[idx],
        }
        if self.wait is not None:
            out["wait"], out["wait_ok"] = self.wait[0].index_select(0, idx), self.wait[1][idx]
        return out

    def all(self):
        out = {"x": self.x, "ctx": self.ctx, "mask": self.mask}
        if self.wait is not None:
            out["wait"], out["wait_ok"] = self.wait
        return out


class CompiledSampler:
    """What :func:`collect_compiled` needs besides the env: the candidate limit and the scratch."""

    def __init__(self, env, net):
        self.top_k = net.top_k
        self.K = net.top_k if net.top_k > 0 else env.tasks
        self.waits = env.max_wait is not None  # the wait output: one uniform more, its column K
        self.u = np.empty((env.B, self.K + 1 if self.waits else self.K))
        self.qpos = np.empty(env.B, dtype=np.int64)
        self.work = None

    def wait_arrays(self, *lead):
        """Where a rollout keeps the wait features and mask (shape ``lead``), or None without waiting."""
        if not self.waits:
            return None
        return np.zeros((*lead, wait_head.N_WAIT), dtype=np.float32), np.zeros(lead, dtype=np.bool_)

    def __call__(self, env, knet, X, C, count, choice, logp, wait=None):
        """Sample every slot of ``env`` now, writing its compact observation (and into ``wait``,
        :meth:`wait_arrays`, the wait's); returns the queue positions."""
        net = knet.net if self.waits else knet
        if self.work is None:
            self.work = kernel.workspace(env.tasks, net)
        env.action_rng.random(out=self.u)
        out = sampler.Samples(X, C, count, choice, logp, self.qpos)
        slots = (env.state, knet, env.slot_profile, env.slot_week, self.work, self.u, out)
        if self.waits:
            sampler.sample_wait_batch(*slots, sampler.WaitSamples(*wait))
        else:
            sampler.sample_batch(*slots)
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
    wait = draw.wait_arrays(T + 1, B)
    knet = env.kernel_net(net)
    for t in range(T + 1):  # step T only observes: the bootstrap value's context
        hints[t] = env.value_hint()
        qpos = draw(env, knet, X[t], C[t], count[t], choice[t], logp[t], wait and (wait[0][t], wait[1][t]))
        if t < T:
            _, rewards[t], dones[t] = env.step(qpos, observe=False)
    wait = wait and (wait[0][:T].reshape(T * B, -1), wait[1][:T].reshape(-1))
    store = CompactStore(X[:T].reshape(T * B, K, -1), C[:T].reshape(T * B, -1), count[:T].reshape(-1), wait)
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


class GroupedQueue(VecQueue):
    """A :class:`VecQueue` whose ``num_envs`` slots hold ``num_envs / group_size`` scenarios, each in
    ``group_size`` consecutive slots, run to their ends (a finished slot is not reloaded)."""

    def __init__(self, *args, group_size=4, **kwargs):
        super().__init__(*args, **kwargs)
        self.K = int(group_size)
        if self.K < 2 or self.B % self.K:
            raise ConfigError(f"train.group_size: expected >= 2 dividing num_envs ({self.B}), got {self.K}")
        self.G = self.B // self.K

    def reset(self):
        """Nothing to load: each iteration's :meth:`load_groups` draws its own scenarios."""
        return None

    def load_groups(self):
        """Put a new scenario in every group (the same one in each of its K slots), each run to its
        first real decision; a scenario with no decision at all is drawn again."""
        for g in range(self.G):
            while True:
                seed, load, d = self._draw_next()
                live = [self._put(b, seed, load, d) for b in range(g * self.K, (g + 1) * self.K)]
                if live[0]:
                    break
                self.finished.append((seed, load, float(self.state.wt_started[g * self.K])))

    def step_group(self, actions):
        """Apply one action per pending slot; returns the rewards (B,) (0 where a slot has ended)."""
        s = self.state
        live = s.pending >= 0
        self.apply(actions)
        r = np.where(live, reward(s.accrued + self._before_first, self.reward_scale), 0.0).astype(np.float32)
        self._before_first[:] = 0.0
        return r


def leave_one_out(times, returns, group_size):
    """The baseline of every decision: for decision (t, b) (``times[t, b]`` its clock, NaN where the
    slot had no decision at step t), the mean over the other slots of b's group of their return
    (``returns``) from their first decision at or after that time (0 past a slot's last decision).
    ``times``, ``returns``: (T, B). Returns (T, B), NaN where there is no decision."""
    T, B = times.shape
    out = np.full((T, B), np.nan)
    for g in range(B // group_size):
        slots = range(g * group_size, (g + 1) * group_size)
        curves = []
        for j in slots:
            ok = ~np.isnan(times[:, j])
            curves.append((times[ok, j], returns[ok, j]))
        for i in slots:
            ok = ~np.isnan(times[:, i])
            t_i = times[ok, i]
            acc = np.zeros(len(t_i))
            for j, (tj, rj) in zip(slots, curves):
                if j == i:
                    continue
                pos = np.searchsorted(tj, t_i, side="left")  # first decision of j at or after t
                acc += np.where(pos < len(tj), rj[np.minimum(pos, len(tj) - 1)], 0.0)
            out[ok, i] = acc / (group_size - 1)
    return out


@torch.no_grad()
def collect_groups(env, net, draw, max_steps):
    """Run every group of ``env`` (a :class:`GroupedQueue`) to its end under ``net``'s sampling
    policy (``draw``: a ``rollout.CompiledSampler``); returns (Rollout of the decisions, flat
    advantages, flat returns, explained variance of the baseline)."""
    env.load_groups()
    B, K = env.B, draw.K
    X, C, count, choice, logp, rew, times, Z, ok = [], [], [], [], [], [], [], [], []
    knet = env.kernel_net(net)
    for _ in range(max_steps):
        if env.state.done.all():
            break
        x = np.zeros((B, K, kernel.N_TASK), dtype=np.float32)
        c = np.zeros((B, kernel.N_CTX), dtype=np.float32)
        n, ch, lp = np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.float32)
        t = np.where(env.state.pending >= 0, env.state.t, np.nan)
        wait = draw.wait_arrays(B)
        qpos = draw(env, knet, x, c, n, ch, lp, wait)
        if wait is not None:
            Z.append(wait[0]), ok.append(wait[1])
        rew.append(env.step_group(qpos))
        X.append(x), C.append(c), count.append(n), choice.append(ch), logp.append(lp), times.append(t)
    times, rew = np.array(times), np.array(rew, dtype=np.float64)
    returns = np.flip(np.cumsum(np.flip(rew, 0), 0), 0)  # undiscounted return from each step on
    base = leave_one_out(times, returns, env.K)
    valid = ~np.isnan(times)
    for b in range(B):
        env.finished.append((int(env.slot_seed[b]), float(env.slot_load[b]), float(env.state.wt_started[b])))
    idx = np.flatnonzero(valid.reshape(-1))
    cnt = np.array(count).reshape(-1)[idx]
    wait = (np.array(Z).reshape(-1, wait_head.N_WAIT)[idx], np.array(ok).reshape(-1)[idx]) if Z else None
    store = CompactStore(
        np.array(X).reshape(-1, K, kernel.N_TASK)[idx], np.array(C).reshape(-1, kernel.N_CTX)[idx], cnt, wait
    )
    ret = returns.reshape(-1)[idx].astype(np.float32)
    adv = (ret - base.reshape(-1)[idx]).astype(np.float32)
    values = net.critic(store.ctx).squeeze(-1).numpy()
    zero = np.zeros(len(idx), dtype=np.float32)
    episodes, env.finished = env.finished, []
    rollout = Rollout(  # no hints, rewards or dones per decision: the returns are the group's
        store=store,
        actions=torch.from_numpy(np.array(choice).reshape(-1)[idx]),
        logprobs=torch.from_numpy(np.array(logp).reshape(-1)[idx]),
        values=values,
        hints=zero,
        rewards=zero,
        dones=zero,
        next_value=np.zeros(0, dtype=np.float32),
        episodes=episodes,
    )
    var = np.var(ret)
    ev_base = float("nan") if var == 0 else float(1 - np.var(adv) / var)
    return rollout, adv, ret, ev_base


#: A grouped rollout's bound on its steps (every scenario of the group ends well before).
GROUP_MAX_STEPS = 100_000


def collect_iteration(env, net, ppo, draw):
    """One PPO iteration's rollout and its (advantages, returns, baseline's explained variance):
    with ``ppo.group_size`` >= 2 the grouped leave-one-out baseline (:func:`collect_groups`),
    else ``num_steps`` lockstep steps and GAE on the critic (NaN: no grouped baseline)."""
    if ppo.group_size >= 2:
        return collect_groups(env, net, draw, GROUP_MAX_STEPS)
    rollout = collect_compiled(env, net, ppo.num_steps, draw)
    advantages, returns = compute_gae(
        rollout.rewards, rollout.values, rollout.dones, rollout.next_value, ppo.gamma, ppo.gae_lambda
    )
    return rollout, advantages, returns, float("nan")
