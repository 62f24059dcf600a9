"""Policy networks: the actor-critics, the ragged batches they read, and :class:`Policy`.

Two architectures (config ``ppo.architecture``):

* ``scorer`` (default, size-free): a shared network embeds every waiting task
  from its own features, pools the embeddings (masked mean and max) into a
  queue context, and scores each task from its embedding and the context.
  The critic reads the context. It works for any queue length, and permuting
  the queue permutes the scores.
* ``flat``: the original card's encoding, 196 inputs (24 task slots x 8
  features + 4 globals), a 256 x 256 MLP actor and a 256 x 256 MLP critic.

With ``atc_prior`` the logits are ``scale * atc + correction``: the ``atc``
feature is the ATC log index relative to the queue's best, so a network whose
correction is zero picks exactly what ATC picks, and learning starts from the
field's reference rule instead of from a random policy. ``scale`` is learned.

The policy file that stores a trained network is ``sched.learn.policy_file``.
"""

import math

import numpy as np
import torch
from torch import nn

from sched.learn import features as F

ROOT_2 = math.sqrt(2)  # the gain of an orthogonal init before a ReLU/tanh layer


def layer(n_in, n_out, std=ROOT_2, bias=0.0):
    """Linear layer with orthogonal initialisation (as in CleanRL's PPO)."""
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, bias)
    return lin


# ---------------------------------------------------------------- ragged batches
# A batch of decisions holds a different number of waiting tasks per decision.
# Rather than padding every queue to the longest one (mean queue ~8, longest
# ~100: mostly padding), the valid candidates of all decisions are stored as
# consecutive rows: ``seg[r]`` is the decision of row r, and the rows of one
# decision are its candidates in order (queue positions, or flat slots).


def segment_max(values, seg, n):
    out = torch.full((n,) + values.shape[1:], -torch.inf, dtype=values.dtype)
    index = seg.view(-1, *([1] * (values.dim() - 1))).expand_as(values)
    return out.scatter_reduce(0, index, values, "amax", include_self=True)


def segment_mean(values, seg, n, counts):
    out = torch.zeros((n,) + values.shape[1:], dtype=values.dtype).index_add(0, seg, values)
    return out / counts.clamp(min=1).to(values.dtype).view(-1, *([1] * (values.dim() - 1)))


def segment_log_softmax(logits, seg, n):
    """Log-probabilities of each row within its decision."""
    m = segment_max(logits, seg, n).detach()  # a constant shift, for stability only
    total = torch.zeros(n, dtype=logits.dtype).index_add(0, seg, (logits - m[seg]).exp())
    return logits - (total.log() + m)[seg]


def segment_entropy(logp, seg, n):
    """Entropy of each decision's distribution over its valid candidates only."""
    return -torch.zeros(n, dtype=logp.dtype).index_add(0, seg, logp.exp() * logp)


def segment_argmax(values, seg, n, starts):
    """Position (within its decision) of the first row with the largest value."""
    m = segment_max(values, seg, n)
    rows = torch.arange(len(values))
    cand = torch.where(values == m[seg], rows, torch.full_like(rows, len(values)))
    first = torch.full((n,), len(values), dtype=rows.dtype).scatter_reduce(
        0, seg, cand, "amin", include_self=True
    )
    return first - starts


def starts_of(counts):
    return torch.cumsum(counts, 0) - counts


def evaluate_actions(net, batch, actions):
    """(log-probability of ``actions``, entropy over the valid candidates, value) per decision.

    ``batch``: ragged (``make_batch``, ``RolloutStore.batch``) or compact
    (``CompactStore.batch``: keys ``x``, ``ctx``, ``mask``); ``actions``: the
    chosen row within each decision.
    """
    if "ctx" in batch:
        logits, value = net.forward_compact(batch["x"], batch["ctx"], batch["mask"])
        logp = torch.log_softmax(logits, -1)
        entropy = -(logp.exp() * logp).sum(-1)  # masked rows: exp(-1e9) = 0 exactly
        return logp.gather(1, actions.view(-1, 1)).squeeze(1), entropy, value
    logits, value = net(batch)
    logp = segment_log_softmax(logits, batch["seg"], batch["n"])
    return logp[batch["starts"] + actions], segment_entropy(logp, batch["seg"], batch["n"]), value


class TaskScorer(nn.Module):
    """Size-free actor-critic over per-task feature rows.

    The queue context is the masked mean and max of the features of every
    waiting task, plus the global features. The candidates are the ``top_k``
    waiting tasks with the highest ATC index (all of them when top_k is 0);
    each is scored by the same network from its own features and the context:
    a linear score (the rule-mixture part) plus an MLP correction. The critic
    reads the context. Work per decision is linear in the queue length for
    the context and bounded by top_k for the scoring, so a queue of 1,000
    tasks costs little more than one of 30.
    """

    def __init__(
        self, n_task=F.N_TASK, n_global=F.N_GLOBAL, hidden=64, atc_prior=True, prior_scale=3.0, top_k=16
    ):
        super().__init__()
        self.top_k = int(top_k)
        ctx = 2 * n_task + n_global
        self.actor = nn.Sequential(
            layer(n_task + ctx, hidden),
            nn.Tanh(),
            layer(hidden, hidden),
            nn.Tanh(),
            layer(hidden, 1, std=0.01),
        )  # corrections start near 0
        self.critic = nn.Sequential(
            layer(ctx, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, 1, std=1.0)
        )
        # A linear score over the task's own features, beside the nonlinear
        # correction: the classic rules and their mixtures live in this
        # low-dimensional space, where policy gradients move fast. With the
        # ATC prior it starts as prior_scale x the ATC feature: the policy
        # starts as ATC.
        self.linear = nn.Linear(n_task, 1, bias=False)
        nn.init.zeros_(self.linear.weight)
        self.atc_prior = bool(atc_prior)
        if self.atc_prior:
            with torch.no_grad():
                self.linear.weight[0, F.ATC_INDEX] = prior_scale

    def forward(self, batch):
        """Logits of every row (-1e9 for non-candidates) and the value of every decision."""
        x, seg, n, counts, g = batch["x"], batch["seg"], batch["n"], batch["counts"], batch["g"]
        c = torch.cat([segment_mean(x, seg, n, counts), segment_max(x, seg, n), g], -1)
        if self.top_k > 0:
            rank = torch.round(x[:, F.ATC_RANK_INDEX] * counts[seg])
            cand = torch.nonzero(rank < self.top_k).squeeze(-1)
        else:
            cand = torch.arange(len(x))
        xc = x[cand]
        scores = self.linear(xc).squeeze(-1) + self.actor(torch.cat([xc, c[seg[cand]]], -1)).squeeze(-1)
        logits = torch.full((len(x),), -1e9, dtype=scores.dtype).index_copy(0, cand, scores)
        return logits, self.critic(c).squeeze(-1)

    def forward_compact(self, x, ctx, mask):
        """The same function on a compact batch (what the compiled sampler writes): ``x`` (N, K,
        n_task) the candidates' rows, ``ctx`` (N, n_ctx) the context, ``mask`` (N, K) the valid
        candidates. Logits (N, K), -1e9 where masked, and values (N,). The first layer's context
        part is computed once per decision, and the rest for the valid candidates only."""
        first = self.actor[0]
        n_task = x.shape[-1]
        ctx_part = ctx @ first.weight[:, n_task:].T + first.bias
        rows = x[mask]
        seg = mask.nonzero()[:, 0]
        h = rows @ first.weight[:, :n_task].T + ctx_part.index_select(0, seg)  # index_add_ backward: fast
        scores = self.linear(rows).squeeze(-1) + self.actor[1:](h).squeeze(-1)
        logits = torch.full(mask.shape, -1e9, dtype=scores.dtype).masked_scatter(mask, scores)
        return logits, self.critic(ctx).squeeze(-1)


class FlatMLP(nn.Module):
    """The original card's 196-input actor and critic (256 x 256 MLPs)."""

    def __init__(
        self, n_in=F.FLAT_SIZE, n_out=F.FLAT_SLOTS, hidden=256, atc_prior=True, prior_scale=3.0, top_k=0
    ):
        super().__init__()
        self.top_k = int(top_k)
        self.actor = nn.Sequential(
            layer(n_in, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, n_out, std=0.01)
        )
        self.critic = nn.Sequential(
            layer(n_in, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, 1, std=1.0)
        )
        self.atc_prior = bool(atc_prior)
        self.log_prior_scale = nn.Parameter(torch.tensor(math.log(prior_scale)), requires_grad=self.atc_prior)
        nt = len(F.FLAT_TASK_FEATURES)
        self.register_buffer("atc_cols", torch.arange(F.FLAT_SLOTS) * nt + F.FLAT_ATC_INDEX, persistent=False)

    def forward(self, batch):
        x, counts = batch["x"], batch["counts"]
        logits = self.actor(x)
        if self.atc_prior:
            logits = logits + self.log_prior_scale.exp() * x[:, self.atc_cols]
        valid = torch.arange(F.FLAT_SLOTS).unsqueeze(0) < counts.unsqueeze(1)
        if self.top_k > 0:  # slots are in ATC order: slot i has ATC rank i
            logits = logits.masked_fill(torch.arange(F.FLAT_SLOTS).unsqueeze(0) >= self.top_k, -1e9)
        return logits[valid], self.critic(x).squeeze(-1)


ARCHITECTURES = {"scorer": TaskScorer, "flat": FlatMLP}
ENCODINGS = {"scorer": "tasks", "flat": "flat"}


def build(arch):
    """A network from an architecture dict {"name", "hidden", "atc_prior", "prior_scale"}."""
    name = arch["name"]
    if name not in ARCHITECTURES:
        raise ValueError(f"architecture: expected one of {', '.join(ARCHITECTURES)}, got {name!r}")
    return ARCHITECTURES[name](
        hidden=int(arch["hidden"]),
        atc_prior=bool(arch["atc_prior"]),
        prior_scale=float(arch["prior_scale"]),
        top_k=int(arch.get("top_k", 0)),
    )


class Policy:
    """A trained network with what is needed to encode states for it."""

    def __init__(self, net, meta):
        self.net = net.eval()
        self.meta = meta
        self.encoder = F.Encoder(ENCODINGS[meta["arch"]["name"]], meta["atc_k"], meta["p_ref"], meta["load"])

    @torch.no_grad()
    def act(self, state):
        """Greedy (argmax) action, as a queue position, for every pending slot (-1 elsewhere)."""
        obs = self.encoder(state)
        batch = make_batch(obs)
        logits, _ = self.net(batch)
        a = segment_argmax(logits, batch["seg"], batch["n"], batch["starts"]).numpy()
        slot_qpos = obs.slot_qpos
        if slot_qpos is not None:
            a = slot_qpos[np.arange(len(a)), np.minimum(a, slot_qpos.shape[1] - 1)]
        return np.where(state.pending >= 0, a, -1).astype(np.int64)


def make_batch(obs):
    """A ragged batch (dict of tensors) from an encoder's :class:`~sched.learn.features.Observation`."""
    x, mask, g, slot_qpos = obs
    mask = torch.from_numpy(mask)
    counts = mask.sum(1)
    n = len(counts)
    seg = torch.repeat_interleave(torch.arange(n), counts)
    if slot_qpos is None:
        rows = torch.from_numpy(x)[mask]
        return {
            "x": rows,
            "seg": seg,
            "n": n,
            "counts": counts,
            "starts": starts_of(counts),
            "g": torch.from_numpy(g),
        }
    return {
        "x": torch.from_numpy(x),
        "seg": seg,
        "n": n,
        "counts": counts,
        "starts": starts_of(counts),
        "g": None,
    }
