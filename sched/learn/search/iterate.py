"""Expert iteration: the gated teacher on the current policy, distilled into the next one.

Approximate policy iteration with an improvement step that is never worse
than its base. Round r (1, 2, ...) takes the policy of the round before
(round 0: the warm start, the student of the gated teacher on a rule), runs
it on ``round_scenarios`` training scenarios of its own (after the warm
start's, different each round) and labels the states it visits with the
gated teacher whose base *and* rollout continuation is that policy
(``sched.learn.search.teacher``): the rollouts estimate that policy's own cost of
each candidate, so a label says where a one-step deviation from it pays. A
share of the scenarios (``round_teacher_share``) follows the teacher's own
choices instead, so that the states a better policy reaches are labelled too.
The next policy is distilled from the previous one's weights on these labels
and those of the rounds before (aggregated, as in DAgger), and kept only when
it does better than the previous one on the validation scenarios
(``train.validation_scenarios``); otherwise the previous weights are kept and
the round says so. Test seeds choose nothing here.

The labels cost rollouts of the learned policy (``docs/learning.md`` has the
measured cost a decision): a round's samples and horizon are settings of
their own (``train.round_*``).
"""

import math

import torch

from sched.config import ConfigError, seed_range
from sched.learn.policy import networks, policy_file
from sched.learn.search.distill import distill
from sched.learn.search.teacher import make_labels
from sched.learn.validation import Validator


def round_seeds(cfg, settings, r):
    """The training seeds round ``r`` labels: ``round_scenarios`` of them after the warm start's
    ``teacher_scenarios`` and the earlier rounds' (``settings``: a ``sched.learn.settings.Training``)."""
    if r < 1:
        raise ConfigError(f"round: expected a round >= 1, got {r}")
    per_round = int(settings.rounds.scenarios)
    lo = int(settings.teacher.scenarios) + (r - 1) * per_round
    seeds = seed_range(cfg, "train")
    if lo + per_round > len(seeds):
        raise ConfigError(f"train.round_scenarios: round {r} needs more training seeds than seeds.train has")
    return list(seeds[lo : lo + per_round])


def round_follow(rounds, n):
    """Whose choices each of a round's ``n`` scenarios follows: True (the teacher's) for the first
    ``rounds.teacher_share`` of them, False (the policy's) for the rest."""
    k = int(round(float(rounds.teacher_share) * n))
    return [i < k for i in range(n)]


def round_labels(cfg, settings, policy, r, progress=False):
    """Round ``r``'s labels (and the teacher's statistics) with ``policy`` (a loaded policy file,
    ``sched.learn.policy.policy_file.load``) as the gated teacher's base and continuation."""
    from sched.learn.search.planner import learned_base, rule_base

    rounds = settings.rounds
    seeds = round_seeds(cfg, settings, r)
    base = learned_base(policy, name=f"round-{r - 1}")
    top_k = int(policy.meta["arch"]["top_k"])
    rollout = rule_base("atc", base.k) if rounds.continuation == "atc" else None
    return make_labels(
        cfg,
        seeds,
        rounds.labelling(settings.teacher),
        base,
        top_k,
        round_follow(rounds, len(seeds)),
        progress=progress,
        rollout=rollout,
    )


def distill_stage(cfg, settings, labels, out, start=None, progress=False, stage="warm"):
    """Distil ``labels`` into a policy and write it to ``out``; returns a summary dict.

    ``settings``: a ``sched.learn.settings.Training``. ``start``: the policy file the student
    starts from (a round's previous policy), or None: the network's prior (the warm start, seeded
    by ``settings.seed``). The result is validated against its start on
    ``train.validation_scenarios`` validation scenarios and replaced by the start's weights when
    it does worse (``kept`` says which). ``stage``: "warm" or "round-<r>", recorded in the file's
    meta (``stage``, ``val_start``, ``val_distilled``, ``kept``).
    """
    settings = settings.for_stage(stage)  # a round imitates its own target (train.round_target)
    meta = policy_file.policy_meta(cfg, settings)
    torch.manual_seed(settings.seed)
    gen = torch.Generator().manual_seed(settings.seed)
    if start is None:
        net = networks.build(meta["arch"])
    else:
        pol = policy_file.load(start)
        why = policy_file.mismatch(pol.meta, meta)
        if why:
            raise ConfigError(f"{start}: {why}")
        net = pol.net
    validator = Validator(cfg, settings.validation_scenarios, settings.tasks)
    before = validator(net, meta)
    state = {k: v.clone() for k, v in net.state_dict().items()}
    loss = distill(net, labels, settings.distill, gen, progress=progress)
    after = validator(net, meta)
    kept = "distilled" if after <= before else "start"
    if kept == "start":
        net.load_state_dict(state)
    best = min(before, after)
    meta.update(
        best_iteration=0,
        val_weighted_tardiness_s=float(best),
        val_atc_weighted_tardiness_s=float(validator.atc),
        stage=stage,
        val_start=float(before),
        val_distilled=float(after),
        kept=kept,
    )
    policy_file.save(out, net, meta)
    return {
        "policy_file": str(out),
        "stage": stage,
        "decisions": int(len(labels["count"])),
        "distill_loss": None if math.isnan(loss) else float(loss),
        "val_start": float(before),
        "val_distilled": float(after),
        "val_atc": float(validator.atc),
        "kept": kept,
    }
