"""Proximal Policy Optimisation, written by hand, on the compiled simulator.

Shaped like CleanRL's ``ppo.py``: :class:`Args` holds every setting, and
:func:`train` shows the loop. One iteration = ``num_steps`` lockstep steps of
``num_envs`` training scenarios (one batched forward per step,
``sched.learn.ppo.rollout``), then ``update_epochs`` passes of shuffled
minibatches over that rollout (``sched.learn.ppo.update``) with:

* generalised advantage estimation (gamma, lambda), bootstrapped from the
  critic at the end of the rollout and cut at episode ends;
* advantages normalised per minibatch;
* the clipped surrogate objective (ratio clipped to 1 +/- clip_coef);
* a clipped value loss, an entropy bonus over the *valid* actions only
  (masked logits), gradient-norm clipping;
* Adam with the learning rate annealed linearly to zero;
* orthogonal initialisation (``sched.learn.policy.networks.layer``).

Before PPO, an optional warm start trains the network in place: the caller passes it
(``warm_start``; the teacher's distillation, composed with this loop by
``sched.learn.chain``), so that PPO imports nothing of the search.

Logged per iteration (``sched.learn.ppo.train_log``): mean episode weighted tardiness, the
losses, entropy, approx_kl, clip fraction, explained variance, env steps per second, wall
time; every ``eval_every`` iterations, the greedy policy's mean total weighted tardiness
on fixed validation scenarios next to ATC's (``sched.learn.ppo.validation``). The policy
file keeps the weights with the best validation score.

Seeds control everything: network initialisation, action sampling, minibatch
shuffles and the training scenarios. A checkpoint every ``checkpoint_every``
iterations (``sched.learn.ppo.checkpoint``) lets an interrupted run, resumed with
the same command, end with the same result as an uninterrupted one.
"""

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from sched import files, layout, threads
from sched.config import schema_defaults, seed_range
from sched.errors import SchedError
from sched.learn.env.vec_env import VecQueue
from sched.learn.policy import networks as P
from sched.learn.policy import policy_file
from sched.learn.ppo import checkpoint, train_log
from sched.learn.ppo.checkpoint import RunProgress
from sched.learn.ppo.rollout import CompiledSampler, GroupedQueue, collect_iteration
from sched.learn.ppo.update import ppo_update
from sched.learn.ppo.validation import Validator

#: Second word of the seed of the NumPy stream that draws the training scenarios
#: (``np.random.default_rng([seed, SCENARIO_STREAM])``), so that this stream is not
#: the one ``default_rng(seed)`` would give. The two torch streams are seeded with the
#: training seed itself: the global one initialises the network, a ``torch.Generator``
#: samples the actions and shuffles the minibatches and the distillation's decisions.
SCENARIO_STREAM = 20240601
#: Second word of the seed of the NumPy stream of the compiled sampler's uniforms
#: (``sched.learn.ppo.sampler``: the actions of the scorer's rollouts).
ACTION_STREAM = 20261201


# size: one concept, a PPO training run: its settings (Args, a docstring per field, as CleanRL's
# are) and its loop, from the warm start to the policy file.
#: The schema's defaults of the config section ``train``: Args's defaults, so that the two cannot
#: differ (``seed``: the first of ``train.seeds``).
_TRAIN = schema_defaults("train")


@dataclass
class Args:
    """Every setting of a training run: the config section ``train`` (its defaults are the
    schema's, ``workflow/schemas/config.schema.yaml``), one training seed, and the overrides of
    ``sched train``'s options."""

    seed: int = _TRAIN["seeds"][0]
    """Training seed: network initialisation, action sampling, minibatch shuffles, training scenarios."""
    iterations: int = _TRAIN["iterations"]
    """PPO iterations: one rollout and one update each."""
    num_envs: int = _TRAIN["num_envs"]
    """Training scenarios stepped in lockstep (one batched forward per step serves them all)."""
    num_steps: int = _TRAIN["num_steps"]
    """Steps per scenario slot per rollout: a rollout holds ``num_envs * num_steps`` decisions."""
    learning_rate: float = _TRAIN["learning_rate"]
    """Adam's learning rate (before annealing)."""
    linear_lr_mult: float = _TRAIN["linear_lr_mult"]
    """Learning-rate multiplier of the linear score (the few weights of the rule mixture)."""
    anneal_lr: bool = _TRAIN["anneal_lr"]
    """Anneal the learning rate linearly to zero over the iterations."""
    gamma: float = _TRAIN["gamma"]
    """Discount factor."""
    gae_lambda: float = _TRAIN["gae_lambda"]
    """Lambda of generalised advantage estimation."""
    num_minibatches: int = _TRAIN["num_minibatches"]
    """Minibatches per pass over a rollout."""
    update_epochs: int = _TRAIN["update_epochs"]
    """Passes over each rollout in the update."""
    norm_adv: bool = _TRAIN["norm_adv"]
    """Normalise the advantages per minibatch."""
    clip_coef: float = _TRAIN["clip_coef"]
    """Surrogate clipping: the probability ratio is clipped to 1 +/- clip_coef."""
    clip_vloss: bool = _TRAIN["clip_vloss"]
    """Clip the value loss around the rollout's values (by clip_coef)."""
    ent_coef: float = _TRAIN["ent_coef"]
    """Coefficient of the entropy bonus (entropy over the valid actions only)."""
    vf_coef: float = _TRAIN["vf_coef"]
    """Coefficient of the value loss."""
    max_grad_norm: float = _TRAIN["max_grad_norm"]
    """Gradient-norm clipping threshold, in PPO and in the distillation."""
    target_kl: float | None = _TRAIN["target_kl"]
    """Stop an update after the epoch whose last minibatch's approx_kl exceeds it (None: never)."""
    reward_scale: float = _TRAIN["reward_scale"]
    """Reward per weighted second of tardiness: 0.001 makes one reward unit 1,000 weighted seconds."""
    architecture: str = _TRAIN["architecture"]
    """Network: "scorer", the size-free per-task scorer (the only one: the card's flat MLP is retired)."""
    hidden: int = _TRAIN["hidden"]
    """Width of the hidden layers."""
    atc_prior: bool = _TRAIN["atc_prior"]
    """Start the logits at prior_scale x the ATC feature, so that the untrained policy is ATC."""
    prior_scale: float = _TRAIN["prior_scale"]
    """Initial weight of the prior rule's feature in the logits (with atc_prior)."""
    prior_rule: str = _TRAIN["prior_rule"]
    """The rule the untrained policy is (with atc_prior): "atc" (its ATC feature) or "wmdd"."""
    top_k: int = _TRAIN["top_k"]
    """When > 0, only the top_k waiting tasks by ATC index are candidates."""
    atc_k: float | None = _TRAIN["atc_k"]
    """ATC's k in the features, the prior and the teacher (None: the config's rules.atc_k)."""
    privileged_critic: bool = _TRAIN["privileged_critic"]
    """Add to the critic a hindsight hint, ATC's cost-to-go with the true future arrivals (training only)."""
    teacher_scenarios: int = _TRAIN["teacher_scenarios"]
    """Warm start: training scenarios labelled by the gated teacher (0: no warm start)."""
    teacher_base: str = _TRAIN["teacher_base"]
    """The warm start teacher's base policy, which continues its rollouts: "atc" (with atc_k) or "wmdd"."""
    teacher_candidates: int = _TRAIN["teacher_candidates"]
    """Candidates the teacher compares: its base's best tasks, the base's own choice first."""
    teacher_samples: int = _TRAIN["teacher_samples"]
    """At most this many sampled futures per decision (common to all candidates)."""
    teacher_chunk: int = _TRAIN["teacher_chunk"]
    """Samples between two checks of the paired stopping rule (>= teacher_samples: every sample)."""
    teacher_horizon: int = _TRAIN["teacher_horizon"]
    """Future arrivals per sampled future."""
    teacher_z: float = _TRAIN["teacher_z"]
    """The teacher deviates from its base when the paired difference's mean + z se is below zero."""
    rounds: int = _TRAIN["rounds"]
    """Rounds of expert iteration after the warm start: round r labels the states policy r - 1 visits
    with the gated teacher on that policy (base and continuation); policy r is distilled from r - 1."""
    round_scenarios: int = _TRAIN["round_scenarios"]
    """Training scenarios labelled per round (seeds after the teacher's, different each round)."""
    round_teacher_share: float = _TRAIN["round_teacher_share"]
    """Share of a round's scenarios on the teacher's own states (the rest: the policy's)."""
    round_samples: int = _TRAIN["round_samples"]
    """At most this many sampled futures per decision in a round (the policy's rollouts are costly)."""
    round_chunk: int = _TRAIN["round_chunk"]
    """Samples between two checks of the paired stopping rule in a round."""
    round_horizon: int = _TRAIN["round_horizon"]
    """Future arrivals per sampled future in a round."""
    round_continuation: str = _TRAIN["round_continuation"]
    """Who continues a round's rollouts: "policy" (the round's base policy) or "atc" (ATC with the
    training's k: cheaper labels, the candidates still the policy's)."""
    group_size: int = _TRAIN["group_size"]
    """PPO: >= 2 runs each training scenario this many times per iteration (the same arrivals, durations
    and estimates; its own action samples) and takes each decision's advantage against the others of its
    group at the same time (leave-one-out); 0: GAE on the critic."""
    distill_target: str = _TRAIN["distill_target"]
    """What the student imitates: "bound" (the teacher's pessimistic bounds), "mean" (its mean
    paired differences) or "improved" (softmax(own logits - distill_improve x mean regret))."""
    round_target: str = _TRAIN["round_target"]
    """What a round of expert iteration imitates (as distill_target, which is the warm start's)."""
    distill_improve: float = _TRAIN["distill_improve"]
    """With distill_target "improved": how far a unit of mean regret (distill_scale weighted
    seconds) moves a candidate's logit in the target."""
    distill_epochs: int = _TRAIN["distill_epochs"]
    """Passes over the teacher's labels."""
    distill_lr: float = _TRAIN["distill_lr"]
    """Adam's learning rate in the distillation."""
    distill_batch: int = _TRAIN["distill_batch"]
    """Decisions per distillation minibatch."""
    distill_scale: float = _TRAIN["distill_scale"]
    """Weighted seconds per unit of the distillation loss."""
    tasks: int | None = _TRAIN["tasks"]
    """Tasks per training and validation scenario (None: the config's scenario.tasks)."""
    loads: list | None = _TRAIN["loads"]
    """Loads the training episodes are drawn from, a curriculum when several (None: [scenario.load])."""
    eval_every: int = _TRAIN["eval_every"]
    """Validate every eval_every iterations and at the last (0: never; the last weights are kept)."""
    patience: int = _TRAIN["patience"]
    """Stop once this many validation checks in a row found no better weights than the best so
    far (0: never stop early; ``iterations`` is then the run's length, else its cap)."""
    validation_scenarios: int = _TRAIN["validation_scenarios"]
    """Validation scenarios: the first of the config's validation seeds."""
    checkpoint_every: int = _TRAIN["checkpoint_every"]
    """Write a checkpoint every checkpoint_every iterations (0: never)."""
    threads: int = _TRAIN["threads"]
    """Torch and numba threads."""

    @classmethod
    def from_config(cls, cfg, **overrides):
        """The config's ``train`` settings, then the ``overrides`` that are not None."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in cfg.train.to_dict().items() if k in known}  # lists stay lists
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def batch_size(self):
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self):
        return self.batch_size // self.num_minibatches


def make_optimizer(net, args):
    """Adam; the linear score (few weights, the rule mixture) learns ``linear_lr_mult`` x faster."""
    lin = [p for n, p in net.named_parameters() if n.startswith("linear.")]
    rest = [p for n, p in net.named_parameters() if not n.startswith("linear.")]
    groups = [{"params": rest, "lr_mult": 1.0}]
    if lin:
        groups.append({"params": lin, "lr_mult": args.linear_lr_mult})
    for g in groups:
        g["lr"] = args.learning_rate * g["lr_mult"]
    return torch.optim.Adam(groups, lr=args.learning_rate, eps=1e-5)


def anneal_lr(optimizer, args, iteration):
    """Set the learning rate of ``iteration`` (linear annealing to zero); returns the network's."""
    if args.anneal_lr:
        frac = 1.0 - (iteration - 1.0) / args.iterations
        for group in optimizer.param_groups:
            group["lr"] = frac * args.learning_rate * group["lr_mult"]
    return optimizer.param_groups[0]["lr"]


def make_env(cfg, args, atc_k):
    """The training scenarios, stepped in lockstep, drawn from the config's training seeds (in
    groups of ``group_size`` runs of one scenario with ``group_size`` >= 2: no privileged hint,
    the group is the baseline)."""
    grouped = args.group_size >= 2
    kind = GroupedQueue if grouped else VecQueue
    extra = {"group_size": args.group_size} if grouped else {}
    return kind(
        cfg,
        args.num_envs,
        np.random.default_rng([args.seed, SCENARIO_STREAM]),
        seed_range(cfg, "train"),
        "tasks",
        atc_k,
        tasks=args.tasks,
        loads=args.loads,
        reward_scale=args.reward_scale,
        privileged=args.privileged_critic and not grouped,
        action_rng=np.random.default_rng([args.seed, ACTION_STREAM]),
        **extra,
    )


class TrainSettingsError(SchedError):
    """Training settings that cannot go together; the message names the field."""


def check_args(args):
    """TrainSettingsError on settings that cannot go together."""
    if args.architecture != "scorer":
        raise TrainSettingsError(
            f"train.architecture: expected scorer, got {args.architecture!r} (the card's flat MLP is "
            f"retired: a learned policy's decision has one, compiled definition)"
        )
    if args.group_size >= 2 and args.num_envs % args.group_size:
        raise TrainSettingsError(
            f"train.group_size: {args.group_size} does not divide train.num_envs ({args.num_envs})"
        )
    if args.teacher_scenarios > 0 and args.top_k <= 0:
        raise TrainSettingsError(
            f"train.teacher_scenarios: the teacher warm start labels the top_k "
            f"candidates of the scorer; got top_k {args.top_k} (set teacher_scenarios: 0 "
            f"to train without it)"
        )


def train(cfg, args, out, progress=True, resume=True, log=print, warm_start=None, init=None):
    """Train a policy; write ``out`` (policy file) and ``train_log.csv`` beside it; return a summary dict.

    With ``resume``, continues from ``<out>.ckpt`` when it exists and was made
    with the same config and arguments. ``warm_start``: a callable ``(net, gen, progress)``
    that trains the untrained network in place before PPO and returns its loss (the
    teacher's distillation, ``sched.learn.chain``); required when ``args.teacher_scenarios`` > 0
    without ``init``. ``init``: a policy file PPO starts from instead (the last round of expert
    iteration): no warm start here, and its weights are iteration 0 of the model selection.
    """
    check_args(args)
    if init is None and (args.teacher_scenarios > 0) != (warm_start is not None):
        raise TrainSettingsError(
            f"train.teacher_scenarios is {args.teacher_scenarios} and "
            f"{'no' if warm_start is None else 'a'} warm start was given: the warm start runs "
            "when the settings ask for one (sched.learn.chain.train composes it)"
        )
    out = Path(out)
    log_path, ckpt_path = out.with_name(train_log.FILE_NAME), checkpoint.path_for(out)
    for path in (out, log_path, ckpt_path):  # left by a run killed while writing them
        files.remove_stale_temporaries(path)
    threads.apply(args.threads, torch=True)
    torch.manual_seed(args.seed)  # the network's initialisation
    gen = torch.Generator().manual_seed(args.seed)  # actions, minibatch shuffles, distillation
    meta = policy_file.policy_meta(cfg, args)
    net = P.build(meta["arch"])
    if init is not None:
        meta["init_sha256"] = _load_init(net, meta, init)
    optimizer = make_optimizer(net, args)
    env = make_env(cfg, args, meta["atc_k"])
    validator = Validator(cfg, args) if args.eval_every > 0 else None
    fingerprint = checkpoint.fingerprint(meta, args)
    run = checkpoint.load(ckpt_path, fingerprint, net, optimizer, gen, env, log) if resume else None
    if run is not None:
        log(f"resuming {out} from iteration {run.iteration}")
    else:
        env.reset()
        run = start(args, net, meta, validator, gen, None if init else warm_start, progress, out)
    draw = CompiledSampler(env, net)
    bar = train_log.ProgressBar(args, run.iteration) if progress else None
    clock = train_log.Stopwatch(already=run.wall)
    for iteration in range(run.iteration + 1, args.iterations + 1):
        lr = anneal_lr(optimizer, args, iteration)
        t_iter = time.perf_counter()
        rollout, advantages, returns, ev_base = collect_iteration(env, net, args, draw)
        t_collected = time.perf_counter()
        run.count(rollout.episodes, len(rollout.actions))
        stats = ppo_update(net, optimizer, rollout, advantages, returns, args, gen, ev_base)
        t_updated = time.perf_counter()
        val = val_atc = math.nan
        if validator is not None and (iteration % args.eval_every == 0 or iteration == args.iterations):
            val, val_atc = validator(net, meta), validator.atc
            run.keep_if_best(val, iteration, net)
        run.iteration, run.wall = iteration, clock()
        timing = (len(rollout.actions), t_collected - t_iter, t_updated - t_collected)
        run.rows.append(train_log.iteration_row(iteration, run, stats, timing, lr, val, val_atc))
        if bar is not None:
            bar.show(run.rows[-1])
        if stalled(run, args):
            log(
                f"{out}: stopped at iteration {iteration} of {args.iterations}: {args.patience} validation "
                f"check(s) in a row without better weights than iteration {run.best['iteration']}'s"
            )
            break
        if (
            args.checkpoint_every > 0
            and iteration % args.checkpoint_every == 0
            and iteration < args.iterations
        ):
            train_log.write(log_path, run.rows)
            checkpoint.save(ckpt_path, fingerprint, run, net, optimizer, gen, env)
    if bar is not None:
        bar.close()
    return finish(out, log_path, ckpt_path, net, meta, run, validator, args)


def checks_since_best(rows, best_iteration):
    """The validation checks logged in ``rows`` after the best one (at ``best_iteration``)."""
    return sum(
        1 for r in rows if r["iteration"] > best_iteration and not math.isnan(r["val_weighted_tardiness_s"])
    )


def stalled(run, args):
    """Whether PPO stops here: ``args.patience`` checks in a row without better weights (the patience
    rule: compute goes on while the validation curve still falls, up to ``args.iterations``)."""
    return args.patience > 0 and checks_since_best(run.rows, run.best["iteration"]) >= args.patience


def _load_init(net, meta, path):
    """Load the policy file ``path`` into ``net``, refused unless it has this run's architecture
    and ATC k; returns the file's sha256 (it joins the checkpoint's fingerprint)."""
    import hashlib

    pol = policy_file.load(path)
    why = policy_file.mismatch(pol.meta, meta)
    if why:
        raise TrainSettingsError(f"--init: {path}: {why}")
    net.load_state_dict(pol.net.state_dict())
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def start(args, net, meta, validator, gen, warm_start, progress, out):
    """A new run's starting points, validated: its first log rows; returns its RunProgress.

    Model selection covers where training starts too: the untrained network
    (the ATC prior: ATC with ``atc_k``) and, with a ``warm_start``, the network it trained.
    A warm start or PPO that does worse on validation is not kept. The warm
    start is also written as a policy file of its own (``warm_start.pt``
    beside ``out``), so that the benchmark can show PPO's share of the gain.
    """
    run = RunProgress()
    clock = train_log.Stopwatch()

    def add_row(iteration, loss, lr):
        val = val_atc = math.nan
        if validator is not None:
            val, val_atc = validator(net, meta), validator.atc
            run.keep_if_best(val, iteration, net)
        run.rows.append(train_log.start_row(iteration, loss, lr, clock(), val, val_atc))

    if warm_start is not None:
        add_row(-1, math.nan, math.nan)  # the untrained network: ATC prior
        add_row(0, warm_start(net, gen, progress), args.distill_lr)
        val = run.rows[-1]["val_weighted_tardiness_s"]
        warm = dict(meta, best_iteration=0, val_weighted_tardiness_s=None if math.isnan(val) else float(val))
        policy_file.save(Path(out).with_name(layout.WARM_POLICY_FILE), net, warm)
    else:
        add_row(0, math.nan, math.nan)
    run.wall = run.rows[-1]["wall_s"]
    return run


def finish(out, log_path, ckpt_path, net, meta, run, validator, args):
    """Write the policy file (the best validated weights) and the log, drop the checkpoint; the summary."""
    best = run.best
    if best["state"] is not None:
        net.load_state_dict(best["state"])
    meta["best_iteration"] = int(best["iteration"]) if best["state"] is not None else run.iteration
    meta["val_weighted_tardiness_s"] = None if math.isinf(best["score"]) else float(best["score"])
    meta["val_atc_weighted_tardiness_s"] = None if validator is None else float(validator.atc)
    policy_file.save(out, net, meta)
    train_log.write(log_path, run.rows)
    if ckpt_path.exists():
        os.unlink(ckpt_path)
    return {
        "policy_file": str(out),
        "log": str(log_path),
        "iterations": run.iteration,  # done: fewer than args.iterations when the patience rule stopped it
        "env_steps": run.env_steps,
        "episodes": run.episodes,
        "wall_s": run.rows[-1]["wall_s"] if run.rows else 0.0,
        "best_iteration": meta["best_iteration"],
        "val_weighted_tardiness_s": meta["val_weighted_tardiness_s"],
        "val_atc_weighted_tardiness_s": meta["val_atc_weighted_tardiness_s"],
    }
