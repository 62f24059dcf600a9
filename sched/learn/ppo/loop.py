"""Proximal Policy Optimisation, written by hand, on the compiled simulator.

Shaped like CleanRL's ``ppo.py``: :func:`train` shows the loop; its settings are a
``sched.learn.settings.Training`` (PPO's own: ``settings.ppo``). One iteration = ``num_steps``
lockstep steps of ``num_envs`` training scenarios (one batched forward per step,
``sched.learn.ppo.rollout``), then ``update_epochs`` passes of shuffled minibatches over that
rollout (``sched.learn.ppo.update``) with:

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
on fixed validation scenarios next to ATC's (``sched.learn.validation``). The policy
file keeps the weights with the best validation score.

Seeds control everything: network initialisation, action sampling, minibatch
shuffles and the training scenarios. A checkpoint every ``checkpoint_every``
iterations (``sched.learn.ppo.checkpoint``) lets an interrupted run, resumed with
the same command, end with the same result as an uninterrupted one.
"""

import math
import os
import time
from pathlib import Path

import numpy as np
import torch

from sched import files, layout, threads
from sched.config import seed_range
from sched.learn.env.vec_env import VecQueue
from sched.learn.policy import networks as P
from sched.learn.policy import policy_file
from sched.learn.ppo import checkpoint, train_log
from sched.learn.ppo.checkpoint import RunProgress
from sched.learn.ppo.rollout import CompiledSampler, GroupedQueue, collect_iteration
from sched.learn.ppo.update import ppo_update
from sched.learn.settings import TrainSettingsError, check
from sched.learn.validation import Validator

#: Second word of the seed of the NumPy stream that draws the training scenarios
#: (``np.random.default_rng([seed, SCENARIO_STREAM])``), so that this stream is not
#: the one ``default_rng(seed)`` would give. The two torch streams are seeded with the
#: training seed itself: the global one initialises the network, a ``torch.Generator``
#: samples the actions and shuffles the minibatches and the distillation's decisions.
SCENARIO_STREAM = 20240601
#: Second word of the seed of the NumPy stream of the compiled sampler's uniforms
#: (``sched.learn.ppo.sampler``: the actions of the scorer's rollouts).
ACTION_STREAM = 20261201


def make_optimizer(net, ppo):
    """Adam; the linear scores (few weights: the rule mixture, the wait output's) learn
    ``linear_lr_mult`` x faster."""
    fast = ("linear.", "wait_linear.")
    lin = [p for n, p in net.named_parameters() if n.startswith(fast)]
    rest = [p for n, p in net.named_parameters() if not n.startswith(fast)]
    groups = [{"params": rest, "lr_mult": 1.0}]
    if lin:
        groups.append({"params": lin, "lr_mult": ppo.linear_lr_mult})
    for g in groups:
        g["lr"] = ppo.learning_rate * g["lr_mult"]
    return torch.optim.Adam(groups, lr=ppo.learning_rate, eps=1e-5)


def anneal_lr(optimizer, ppo, iteration):
    """Set the learning rate of ``iteration`` (linear annealing to zero); returns the network's."""
    if ppo.anneal_lr:
        frac = 1.0 - (iteration - 1.0) / ppo.iterations
        for group in optimizer.param_groups:
            group["lr"] = frac * ppo.learning_rate * group["lr_mult"]
    return optimizer.param_groups[0]["lr"]


def make_env(cfg, settings, atc_k):
    """The training scenarios, stepped in lockstep, drawn from the config's training seeds (in
    groups of ``group_size`` runs of one scenario with ``group_size`` >= 2: no privileged hint,
    the group is the baseline)."""
    ppo = settings.ppo
    grouped = ppo.group_size >= 2
    kind = GroupedQueue if grouped else VecQueue
    extra = {"group_size": ppo.group_size} if grouped else {}
    return kind(
        cfg,
        ppo.num_envs,
        np.random.default_rng([settings.seed, SCENARIO_STREAM]),
        seed_range(cfg, "train"),
        "tasks",
        atc_k,
        tasks=settings.tasks,
        loads=ppo.loads,
        reward_scale=ppo.reward_scale,
        privileged=ppo.privileged_critic and not grouped,
        action_rng=np.random.default_rng([settings.seed, ACTION_STREAM]),
        max_wait=policy_file.max_wait_of(cfg) if settings.network.wait else None,
        **extra,
    )


def train(cfg, settings, out, progress=True, resume=True, log=print, warm_start=None, init=None):
    """Train a policy; write ``out`` (policy file) and ``train_log.csv`` beside it; return a summary dict.

    ``settings``: a ``sched.learn.settings.Training``. With ``resume``, continues from
    ``<out>.ckpt`` when it exists and was made with the same config and settings. ``warm_start``:
    a callable ``(net, gen, progress)`` that trains the untrained network in place before PPO and
    returns its loss (the teacher's distillation, ``sched.learn.chain``); required when
    ``train.teacher_scenarios`` > 0 without ``init``. ``init``: a policy file PPO starts from
    instead (the last round of expert iteration): no warm start here, and its weights are
    iteration 0 of the model selection.
    """
    check(settings)
    ppo = settings.ppo
    if init is None and (settings.teacher.scenarios > 0) != (warm_start is not None):
        raise TrainSettingsError(
            f"train.teacher_scenarios is {settings.teacher.scenarios} and "
            f"{'no' if warm_start is None else 'a'} warm start was given: the warm start runs "
            "when the settings ask for one (sched.learn.chain.train composes it)"
        )
    out = Path(out)
    log_path, ckpt_path = out.with_name(train_log.FILE_NAME), checkpoint.path_for(out)
    for path in (out, log_path, ckpt_path):  # left by a run killed while writing them
        files.remove_stale_temporaries(path)
    threads.apply(settings.threads, torch=True)
    torch.manual_seed(settings.seed)  # the network's initialisation
    gen = torch.Generator().manual_seed(settings.seed)  # actions, minibatch shuffles, distillation
    meta = policy_file.policy_meta(cfg, settings)
    net = P.build(meta["arch"])
    if init is not None:
        meta["init_sha256"] = _load_init(net, meta, init)
    optimizer = make_optimizer(net, ppo)
    env = make_env(cfg, settings, meta["atc_k"])
    validator = Validator(cfg, settings.validation_scenarios, settings.tasks) if ppo.eval_every > 0 else None
    fingerprint = checkpoint.fingerprint(meta, settings)
    run = checkpoint.load(ckpt_path, fingerprint, net, optimizer, gen, env, log) if resume else None
    if run is not None:
        log(f"resuming {out} from iteration {run.iteration}")
    else:
        env.reset()
        warm = None if init else warm_start
        run = start(settings, net, meta, validator, gen, warm, progress, out)
    draw = CompiledSampler(env, net)
    bar = train_log.ProgressBar(ppo.iterations, settings.seed, run.iteration) if progress else None
    clock = train_log.Stopwatch(already=run.wall)
    for iteration in range(run.iteration + 1, ppo.iterations + 1):
        lr = anneal_lr(optimizer, ppo, iteration)
        t_iter = time.perf_counter()
        rollout, advantages, returns, ev_base = collect_iteration(env, net, ppo, draw)
        t_collected = time.perf_counter()
        run.count(rollout.episodes, len(rollout.actions))
        stats = ppo_update(net, optimizer, rollout, advantages, returns, ppo, gen, ev_base)
        t_updated = time.perf_counter()
        val = val_atc = math.nan
        if validator is not None and (iteration % ppo.eval_every == 0 or iteration == ppo.iterations):
            val, val_atc = validator(net, meta), validator.atc
            run.keep_if_best(val, iteration, net)
        run.iteration, run.wall = iteration, clock()
        timing = (len(rollout.actions), t_collected - t_iter, t_updated - t_collected)
        run.rows.append(train_log.iteration_row(iteration, run, stats, timing, lr, val, val_atc))
        if bar is not None:
            bar.show(run.rows[-1])
        if stalled(run, ppo):
            log(
                f"{out}: stopped at iteration {iteration} of {ppo.iterations}: {ppo.patience} validation "
                f"check(s) in a row without better weights than iteration {run.best['iteration']}'s"
            )
            break
        if ppo.checkpoint_every > 0 and iteration % ppo.checkpoint_every == 0 and iteration < ppo.iterations:
            train_log.write(log_path, run.rows)
            checkpoint.save(ckpt_path, fingerprint, run, net, optimizer, gen, env)
    if bar is not None:
        bar.close()
    return finish(out, log_path, ckpt_path, net, meta, run, validator)


def checks_since_best(rows, best_iteration):
    """The validation checks logged in ``rows`` after the best one (at ``best_iteration``)."""
    return sum(
        1 for r in rows if r["iteration"] > best_iteration and not math.isnan(r["val_weighted_tardiness_s"])
    )


def stalled(run, ppo):
    """Whether PPO stops here: ``ppo.patience`` checks in a row without better weights (the patience
    rule: compute goes on while the validation curve still falls, up to ``ppo.iterations``)."""
    return ppo.patience > 0 and checks_since_best(run.rows, run.best["iteration"]) >= ppo.patience


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


def start(settings, net, meta, validator, gen, warm_start, progress, out):
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
        add_row(0, warm_start(net, gen, progress), settings.distill.lr)
        val = run.rows[-1]["val_weighted_tardiness_s"]
        warm = dict(meta, best_iteration=0, val_weighted_tardiness_s=None if math.isnan(val) else float(val))
        policy_file.save(Path(out).with_name(layout.WARM_POLICY_FILE), net, warm)
    else:
        add_row(0, math.nan, math.nan)
    run.wall = run.rows[-1]["wall_s"]
    return run


def finish(out, log_path, ckpt_path, net, meta, run, validator):
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
        "iterations": run.iteration,  # done: fewer than train.iterations when the patience rule stopped it
        "env_steps": run.env_steps,
        "episodes": run.episodes,
        "wall_s": run.rows[-1]["wall_s"] if run.rows else 0.0,
        "best_iteration": meta["best_iteration"],
        "val_weighted_tardiness_s": meta["val_weighted_tardiness_s"],
        "val_atc_weighted_tardiness_s": meta["val_atc_weighted_tardiness_s"],
    }
