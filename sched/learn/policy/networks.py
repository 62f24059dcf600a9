"""Policy networks: the actor-critics, the ragged batches they read, and :class:`Policy`.

One architecture, ``scorer`` (size-free): each candidate (the ``top_k``
waiting tasks with the highest ATC index) is scored by one network from its
own features and the queue context (the mean and max of the candidates'
features, and the global features); the critic reads the context. It works
for any queue length. What acts is the compiled decision
(``sched.learn.policy.kernel``), which computes the observation; torch trains the
same network on those observations (:meth:`TaskScorer.forward_compact`).
The original card's flat 196-input MLP is retired: its decisions had a
second, torch-only definition.

With ``atc_prior`` the logits are ``scale * atc + correction``: the ``atc``
feature is the ATC log index relative to the queue's best, so a network whose
correction is zero picks exactly what ATC picks, and learning starts from the
field's reference rule instead of from a random policy. ``scale`` is learned.

With ``wait`` (``train.wait``) the network has a wait output too: one logit beside the
candidates' (:meth:`TaskScorer.wait_logits`), from the context and the wait features
(``features.WAIT_FEATURES``), masked where waiting is off; the compiled decision is
``sched.learn.policy.wait_head``. Its layers are created after every other one, so the other
weights' initial values are those of a network without it.

The policy file that stores a trained network is ``sched.learn.policy.policy_file``.
"""

import math

import torch
from torch import nn

from sched.errors import SchedError
from sched.learn.policy import features as F
from sched.learn.policy import wait_head


class ArchitectureError(SchedError):
    """An architecture this version does not build."""


ROOT_2 = math.sqrt(2)  # the gain of an orthogonal init before a ReLU/tanh layer


def layer(n_in, n_out, std=ROOT_2, bias=0.0):
    """Linear layer with orthogonal initialisation (as in CleanRL's PPO)."""
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, bias)
    return lin


def evaluate_actions(net, batch, actions):
    """(log-probability of ``actions``, entropy over the valid candidates, value) per decision.

    ``batch``: a compact batch (``CompactStore.batch``: keys ``x``, ``ctx``, ``mask``);
    ``actions``: the chosen candidate of each decision.
    """
    logits, value = net.forward_compact(batch["x"], batch["ctx"], batch["mask"])
    if "wait" in batch:  # the wait output: one more column, the last (wait_head's sentinel action)
        wait = net.wait_logits(batch["ctx"], batch["wait"], batch["wait_ok"])
        logits = torch.cat([logits, wait.unsqueeze(1)], 1)
    logp = torch.log_softmax(logits, -1)
    entropy = -(logp.exp() * logp).sum(-1)  # masked rows: exp(-1e9) = 0 exactly
    return logp.gather(1, actions.view(-1, 1)).squeeze(1), entropy, value


#: The feature the prior puts its weight on, per prior rule (``train.prior_rule``): the
#: greedy untrained policy picks, among the candidates, the task that rule would pick.
PRIOR_FEATURES = {"atc": F.ATC_INDEX, "wmdd": F.TASK_FEATURES.index("wmdd")}
#: The wait logit's initial bias: the untrained greedy policy never waits (the best candidate's
#: logit is about 0, the prior's), while PPO's samples still try a wait about once in 20 decisions.
WAIT_PRIOR_BIAS = -3.0


class TaskScorer(nn.Module):
    """Size-free actor-critic over per-task feature rows.

    The candidates are the ``top_k`` waiting tasks with the highest ATC index
    (all of them when top_k is 0); the queue context is the mean and max of
    the candidates' features, plus the global features (both computed by the
    compiled decision, ``sched.learn.policy.kernel.observe``). Each candidate is
    scored by the same network from its own features and the context: a
    linear score (the rule-mixture part) plus an MLP correction. The critic
    reads the context.
    """

    def __init__(
        self,
        n_task=F.N_TASK,
        n_global=F.N_GLOBAL,
        hidden=64,
        atc_prior=True,
        prior_scale=3.0,
        top_k=16,
        prior_rule="atc",
        wait=False,
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
        # prior it starts as prior_scale x the prior rule's feature (``prior_rule``: ATC's, or
        # WMDD's, the best rule of bursty queues): the untrained policy is that rule among
        # the candidates.
        self.linear = nn.Linear(n_task, 1, bias=False)
        nn.init.zeros_(self.linear.weight)
        self.atc_prior = bool(atc_prior)
        if prior_rule not in PRIOR_FEATURES:
            raise ArchitectureError(
                f"prior_rule: expected one of {', '.join(PRIOR_FEATURES)}, got {prior_rule!r}"
            )
        self.prior_rule = prior_rule
        if self.atc_prior:
            with torch.no_grad():
                self.linear.weight[0, PRIOR_FEATURES[prior_rule]] = prior_scale
        self.waits = bool(wait)
        if self.waits:  # last: the layers above draw the same initial weights as without it
            self.wait_hidden = layer(ctx + F.N_WAIT, hidden)
            self.wait_out = layer(hidden, 1, std=0.01, bias=WAIT_PRIOR_BIAS)
            self.wait_linear = nn.Linear(F.N_WAIT, 1, bias=False)
            nn.init.zeros_(self.wait_linear.weight)

    def wait_logits(self, ctx, z, ok):
        """The wait logit of each decision (N,): ``ctx`` (N, n_ctx) the context, ``z`` (N, N_WAIT)
        the wait features, ``ok`` (N,) where waiting is on (-1e9 elsewhere, as a masked candidate)."""
        h = torch.tanh(self.wait_hidden(torch.cat([ctx, z], -1)))
        v = self.wait_out(h).squeeze(-1) + self.wait_linear(z).squeeze(-1)
        return torch.where(ok, v, torch.full_like(v, -1e9))

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


ARCHITECTURES = {"scorer": TaskScorer}


def build(arch):
    """A network from an architecture dict {"name", "hidden", "atc_prior", "prior_scale"}."""
    name = arch["name"]
    if name not in ARCHITECTURES:
        raise ArchitectureError(f"architecture: expected one of {', '.join(ARCHITECTURES)}, got {name!r}")
    return ARCHITECTURES[name](
        hidden=int(arch["hidden"]),
        atc_prior=bool(arch["atc_prior"]),
        prior_scale=float(arch["prior_scale"]),
        top_k=int(arch.get("top_k", 0)),
        prior_rule=str(arch.get("prior_rule", "atc")),
        wait=bool(arch.get("wait", False)),
    )


class Policy:
    """A trained network and its metadata (``sched.learn.policy.policy_file``); it acts through its
    compiled decision, ``sched.learn.policy.kernel.of_policy``."""

    def __init__(self, net, meta):
        self.net = net.eval()
        self.meta = meta
        self.waits = bool(getattr(net, "waits", False))  #: a wait output (``wait_head.run`` acts)

    def run(self, scenarios, machines=1, machine_free=None, week_start_s=0.0):
        """The greedy rollouts of a policy with a wait output (``kernel.run`` calls it)."""
        return wait_head.run(self, scenarios, machines, machine_free, week_start_s)
