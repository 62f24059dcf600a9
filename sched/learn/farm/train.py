"""PPO for the farm scorer on a chunked setting's own scenarios (``sched farm-train``).

The settings are the config's ``train`` section (the farm setting's step config: the schema's
defaults under the setting's ``train`` block; ``sched.learn.settings.Training``): ``iterations``,
``num_envs`` runs an iteration in groups of ``group_size`` (>= 2) runs of one scenario, the update's
(``learning_rate``, ``linear_lr_mult``, ``update_epochs``, ``num_minibatches``, ``clip_coef``,
``ent_coef``, ``max_grad_norm``, ``target_kl``, ``norm_adv``), the network's (``hidden``, ``top_k``,
``prior_scale``), ``eval_every``, ``patience`` and ``validation_scenarios``. Budgets are counts.

* **Start**: the ATC prior with the setting's tuned k (``tuned.json``) and a correction of exactly
  zero (the output layer's weights zeroed): iteration 0 is atc-tuned on remaining work, bit for bit.
* **Rollouts**: each iteration draws ``num_envs / group_size`` training scenarios (``seeds.train``)
  and runs each ``group_size`` times to its end with sampled actions (``decide.run_policy``, one
  decision a chunk, uniforms from a seeded stream). A decision's return is minus the weighted
  tardiness of the jobs whose last chunk starts at or after it (a job's completion is known once
  its last chunk starts); its advantage, that return less the mean over the group's other runs of
  their return from their first decision at or after its time (``ppo.rollout.leave_one_out``:
  the input-dependent baseline, no critic). Decisions with one candidate carry no gradient and are
  left out of the update.
* **Update**: ``sched.learn.ppo.update.ppo_update`` (the clipped surrogate, the entropy bonus over
  the valid candidates, Adam with the linear score's faster rate), the critic's loss weighted 0:
  it takes no part in the grouped advantage.
* **At a sync interval** (``train.sync_s``, else the setting's ``chunks.sync_s``; > 0): the
  action is a sync's ranking, rollouts and update in :mod:`sched.learn.farm.rank_ppo`; iteration 0
  is still atc-tuned, at that interval (``top_k`` > 0: it caps the ranked prefix).
* **Model selection**: every ``eval_every`` iterations the greedy policy's mean total weighted
  tardiness on the first ``validation_scenarios`` validation seeds at the training interval;
  the file keeps the best weights (iteration 0, atc-tuned, included); the patience rule stops
  after ``patience`` checks in a row without better weights.

It writes the policy file (``sched.learn.farm.policy_file``) and the learning curve, one row an
iteration (:data:`CURVE_COLUMNS`). No checkpoint: a rerun of the same command gives the same file.
"""

import dataclasses
import math

import numpy as np
import pandas as pd
import torch

from sched import setting, threads
from sched.config import seed_range, training_hash
from sched.data.scenario import generate, scenario_model
from sched.learn.env.vec_env import p_ref_of
from sched.learn.farm import decide, policy_file, rank_ppo, scorer
from sched.learn.ppo.loop import ACTION_STREAM, SCENARIO_STREAM, anneal_lr, make_optimizer
from sched.learn.ppo.rollout import CompactStore, Rollout, leave_one_out
from sched.learn.ppo.update import ppo_update
from sched.learn.settings import Training, TrainSettingsError
from sched.sim import chunks, rules

CURVE_COLUMNS = ("iteration", "decisions", "train_mean_twt_s", "val_mean_twt_s", "val_atc_tuned_twt_s",
                 "approx_kl", "clip_fraction", "entropy")  # fmt: skip


def settings_of(cfg, seed, **overrides):
    """The training settings of a farm setting's config (``overrides``: flat ``train`` keys), checked."""
    s = Training.from_config(cfg, seed=seed, **overrides)
    ppo = s.ppo
    if sync_of(cfg) > 0 and s.network.top_k <= 0:
        raise TrainSettingsError("train.top_k: training at a sync interval ranks the top_k candidates; got 0")
    if ppo.group_size < 2 or ppo.num_envs % ppo.group_size:
        raise TrainSettingsError(
            f"train.group_size: the farm's training needs >= 2 dividing train.num_envs ({ppo.num_envs}), "
            f"got {ppo.group_size}"
        )
    return s


def farms(cfg, seeds):
    """The chunked scenarios (``scorer.Farm``) of ``seeds``."""
    model = scenario_model(cfg)
    return [scorer.of_scenario(generate(model, s, warm_up=True)) for s in seeds]


def sync_of(cfg):
    """The sync interval training runs and validates at: ``train.sync_s``, else the setting's
    ``scenario.chunks.sync_s`` (0: a decision at each free GPU)."""
    own = cfg.train.to_dict().get("sync_s")
    return float(cfg.scenario.chunks.get("sync_s", 0.0) if own is None else own)


class Validator:
    """The greedy policy's mean total weighted tardiness on the first ``n`` validation seeds, at the
    sync interval ``sync_s`` (None: :func:`sync_of`); ``atc``: atc-tuned's (the rule,
    ``sched.sim.sync``) on them."""

    def __init__(self, cfg, n, atc_k, sync_s=None):
        self.seeds = list(seed_range(cfg, "validation"))[:n]
        self.farms = farms(cfg, self.seeds)
        self.machines = cfg.scenario.machines
        self.sync_s = sync_of(cfg) if sync_s is None else float(sync_s)
        self.atc = self.mean(lambda f: _rule_ends(f, self.machines, atc_k, self.sync_s))

    def mean(self, run):
        return float(np.mean([scorer.cost(f, run(f)) for f in self.farms]))

    def __call__(self, knet):
        return self.mean(lambda f: scorer.ends(knet, f, self.machines, self.sync_s))


def _rule_ends(farm, machines, k, sync_s):
    from sched.sim import sync

    job, _c, _s, end, _m = sync.simulate(*farm.arrays, rules.ATC, machines, k, None, *farm.cols, True, sync_s)
    return chunks.job_ends(job, end, len(farm.arrays[0]))


def collect(knet, groups, machines, group_size, urng):
    """Run each farm of ``groups`` ``group_size`` times; (Rollout of the decisions with >= 2
    candidates, their advantages, their returns, the runs' mean total weighted tardiness)."""
    X, C, cnt, act, lp, adv, ret, totals = [], [], [], [], [], [], [], []
    K = max(knet.top_k, 1)
    for farm in groups:
        D = scorer.chunk_count(farm)
        runs = [scorer.sampled(knet, farm, machines, urng.random((D, K))) for _ in range(group_size)]
        times = np.stack([r[0].time for r in runs], 1)
        returns = np.stack([np.cumsum(r[1][::-1])[::-1] for r in runs], 1)
        base = leave_one_out(times, returns, group_size)
        for g, (rec, _reward, job_end) in enumerate(runs):
            keep = rec.count >= 2
            X.append(rec.X[keep]), C.append(rec.ctx[keep]), cnt.append(rec.count[keep])
            act.append(rec.choice[keep]), lp.append(rec.logp[keep])
            ret.append(returns[keep, g]), adv.append(returns[keep, g] - base[keep, g])
            totals.append(scorer.cost(farm, job_end))
    cat = np.concatenate
    store = CompactStore(cat(X), cat(C), cat(cnt))
    n = len(store.x)
    zero = np.zeros(n, np.float32)
    rollout = Rollout(
        store, torch.from_numpy(cat(act)), torch.from_numpy(cat(lp).astype(np.float32)), zero, zero, zero,
        zero, np.zeros(0, np.float32), [],
    )  # fmt: skip
    return rollout, cat(adv).astype(np.float32), cat(ret).astype(np.float32), float(np.mean(totals))


def train(cfg, atc_k, seed=1, progress=True, log=print, init=None, **overrides):
    """Train the farm scorer (``init``: a warm start, a ``policy_file.FarmPolicy`` of the same
    architecture and k, taken when better on validation than the prior); returns (network with the best
    validated weights, its ``meta``, the learning curve as a DataFrame)."""
    s = settings_of(cfg, seed, **overrides)
    ppo, nets = s.ppo, s.network
    threads.apply(s.threads, torch=True)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    srng = np.random.default_rng([seed, SCENARIO_STREAM])
    urng = np.random.default_rng([seed, ACTION_STREAM])
    model = scenario_model(cfg)
    p_ref, profile = p_ref_of(model), [float(x) for x in model.load_profile()]
    net = start_network(nets)
    optimizer = make_optimizer(net, ppo)
    update_settings = dataclasses.replace(ppo, vf_coef=0.0)  # the critic takes no part
    validator = Validator(cfg, s.validation_scenarios, atc_k)
    train_seeds = seed_range(cfg, "train")
    machines = cfg.scenario.machines

    def knet():
        return scorer.compiled(net, atc_k, p_ref, profile)

    best = {"score": validator(knet()), "iteration": 0, "state": _copy(net)}
    want = policy_file.arch(nets.hidden, nets.top_k, nets.prior_scale, nets.atc_prior)
    if init is not None and init.meta["arch"] != want:
        raise TrainSettingsError(f"train: the warm start's arch {init.meta['arch']} is not these settings'")
    if init is not None:  # the warm start, kept only if better on validation than the prior
        warm = validator(scorer.compiled(init.net, atc_k, p_ref, profile))
        log(f"warm start: validation {warm / 1e3:.3f} k (atc-tuned {validator.atc / 1e3:.3f} k): "
            f"{'kept' if warm < best['score'] else 'not kept, PPO from the prior'}")  # fmt: skip
        kept = {"kept": bool(warm < best["score"]), "val_weighted_tardiness_s": float(warm)}
        if warm < best["score"]:
            net.load_state_dict(init.net.state_dict())
            optimizer = make_optimizer(net, ppo)
            best = {"score": warm, "iteration": 0, "state": _copy(net)}
    rows = [_row(0, 0, math.nan, best["score"], validator.atc, None)]
    checks_since = 0
    for it in range(1, ppo.iterations + 1):
        anneal_lr(optimizer, ppo, it)
        seeds = [
            train_seeds[int(i)] for i in srng.integers(len(train_seeds), size=ppo.num_envs // ppo.group_size)
        ]
        if validator.sync_s > 0:  # a ranking a sync (rank_ppo)
            batch, ret, mean_twt = rank_ppo.collect(
                knet(), farms(cfg, seeds), machines, ppo.group_size, urng, validator.sync_s
            )
            stats = rank_ppo.update(net, optimizer, batch, ret, update_settings, gen) if len(ret) else None
        else:
            rollout, adv, ret, mean_twt = collect(knet(), farms(cfg, seeds), machines, ppo.group_size, urng)
            stats = ppo_update(net, optimizer, rollout, adv, ret, update_settings, gen) if len(ret) else None
        val = math.nan
        if it % ppo.eval_every == 0 or it == ppo.iterations:
            val = validator(knet())
            checks_since += 1
            if val < best["score"]:
                best, checks_since = {"score": val, "iteration": it, "state": _copy(net)}, 0
        rows.append(_row(it, len(ret), mean_twt, val, validator.atc, stats))
        if progress:
            log(f"iteration {it}: {len(ret)} decisions, train {mean_twt / 1e3:.2f} k, validation "
                f"{val / 1e3:.3f} k (atc-tuned {validator.atc / 1e3:.3f} k)")  # fmt: skip
        if ppo.patience > 0 and checks_since >= ppo.patience:
            log(f"stopped at iteration {it}: {ppo.patience} validation checks without better weights")
            break
    net.load_state_dict(best["state"])
    meta = meta_of(cfg, s, atc_k, p_ref, profile, validator, best)
    if init is not None:
        meta["warm_start"] = kept
    return net, meta, pd.DataFrame(rows, columns=list(CURVE_COLUMNS))


def start_network(nets):
    """The farm scorer from the ATC prior with a correction of exactly zero (atc-tuned)."""
    net = scorer.network(nets.hidden, nets.top_k, nets.prior_scale, nets.atc_prior)
    with torch.no_grad():
        net.actor[4].weight.zero_()
        net.actor[4].bias.zero_()
    return net


def meta_of(cfg, s, atc_k, p_ref, profile, validator, best):
    """A farm policy file's ``meta`` (``best``: its validation ``score`` and ``iteration``)."""
    nets = s.network
    return {
        "arch": policy_file.arch(nets.hidden, nets.top_k, nets.prior_scale, nets.atc_prior),
        "atc_k": float(atc_k),
        "p_ref": p_ref,
        "profile": profile,
        "task_features": list(decide.TASK_FEATURES),
        "global_features": list(decide.GLOBAL_FEATURES),
        "config_hash": training_hash(cfg),
        "train_args": {k: v for k, v in s.as_dict().items() if k != "threads"},
        "setting": setting.of_config(cfg),
        "best_iteration": int(best["iteration"]),
        "validation_seeds": [int(validator.seeds[0]), len(validator.seeds)],
        "train_sync_s": validator.sync_s,
        "val_weighted_tardiness_s": float(best["score"]),
        "val_atc_tuned_weighted_tardiness_s": float(validator.atc),
    }


def _copy(net):
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def _row(it, decisions, train_twt, val, atc, stats):
    nan = math.nan
    kl, clip, ent = (stats.approx_kl, stats.clip_fraction, stats.entropy_loss) if stats else (nan, nan, nan)
    return dict(zip(CURVE_COLUMNS, (it, decisions, train_twt, val, atc, kl, clip, ent)))
