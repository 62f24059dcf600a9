"""Proximal Policy Optimisation, written by hand, on the compiled simulator.

Readable top to bottom, in the spirit of CleanRL's ``ppo.py``: every PPO detail
is here. One iteration = ``num_steps`` lockstep steps of ``num_envs`` training
scenarios (one batched forward per step), then ``update_epochs`` passes of
shuffled minibatches over that rollout with:

* generalised advantage estimation (gamma, lambda), bootstrapped from the
  critic at the end of the rollout and cut at episode ends;
* advantages normalised per minibatch;
* the clipped surrogate objective (ratio clipped to 1 +/- clip_coef);
* a clipped value loss, an entropy bonus over the *valid* actions only
  (masked logits), gradient-norm clipping;
* Adam with the learning rate annealed linearly to zero;
* orthogonal initialisation (``sched.learn.networks.layer``).

Logged per iteration (CSV): mean episode weighted tardiness, policy and value
loss, entropy, approx_kl, clip fraction, explained variance, env steps per
second, wall time; every ``eval_every`` iterations, the greedy policy's mean
total weighted tardiness on fixed validation scenarios next to ATC's on the
same scenarios. The policy file keeps the weights with the best validation
score (validation seeds never overlap training or test seeds).

Seeds control everything: network initialisation, action sampling, minibatch
shuffles and the training scenarios. A checkpoint every ``checkpoint_every``
iterations holds the network, optimiser, random states and the simulator
state, so an interrupted run resumed with the same command ends with the same
result as an uninterrupted one.
"""

import csv
import dataclasses
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from sched import threads
from sched.config import config_hash, seed_range
from sched.files import atomic_path
from sched.learn import features as F
from sched.learn import networks as P
from sched.learn.vec_env import VecQueue, p_ref_of, run_greedy
from sched.sim import core
from sched.sim.objective import weighted_tardiness

LOG_COLUMNS = (
    "iteration",
    "env_steps",
    "episodes",
    "mean_episode_weighted_tardiness_s",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
    "steps_per_s",
    "wall_s",
    "learning_rate",
    "val_weighted_tardiness_s",
    "val_atc_weighted_tardiness_s",
)


@dataclass
class Args:
    seed: int = 1  # training seed: init, sampling, scenarios
    iterations: int = 2000
    num_envs: int = 16  # scenarios stepped in lockstep
    num_steps: int = 32  # steps per scenario per iteration
    learning_rate: float = 3e-4
    linear_lr_mult: float = 10.0  # the linear (rule-mixture) score learns faster
    anneal_lr: bool = True
    gamma: float = 0.995
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.02
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    reward_scale: float = 0.001  # one reward unit = 1,000 weighted seconds
    architecture: str = "scorer"  # "scorer" (size-free) or "flat" (196 inputs)
    hidden: int = 64
    atc_prior: bool = True
    prior_scale: float = 3.0
    top_k: int = 16  # > 0: only the top_k tasks by ATC index are candidates
    atc_k: float | None = None  # ATC k of the features, the prior and the teacher (None: rules.atc_k)
    privileged_critic: bool = True  # critic gets the hindsight ATC cost-to-go (training only)
    teacher_scenarios: int = 400  # warm start: scenarios labelled by the rollout teacher (0 = none)
    teacher_samples: int = 16  # sampled futures per candidate
    teacher_horizon: int = 100  # future arrivals per sample
    distill_epochs: int = 6  # passes over the teacher's labels
    distill_lr: float = 1e-3
    distill_batch: int = 256
    distill_scale: float = 100.0  # weighted seconds per unit of the distillation loss
    tasks: int | None = None  # tasks per training scenario (default: scenario.tasks)
    loads: list | None = None  # loads episodes are drawn from (default: [scenario.load])
    eval_every: int = 50
    validation_scenarios: int = 32
    checkpoint_every: int = 50
    threads: int = 1

    @classmethod
    def from_config(cls, cfg, **overrides):
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in cfg.get("train", {}).items() if k in known}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def batch_size(self):
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self):
        return self.batch_size // self.num_minibatches


def arch_of(args):
    return {
        "name": args.architecture,
        "hidden": args.hidden,
        "atc_prior": args.atc_prior,
        "prior_scale": args.prior_scale,
        "top_k": args.top_k,
    }


def policy_meta(cfg, args):
    enc = P.ENCODINGS[args.architecture]
    return {
        "arch": arch_of(args),
        "atc_k": float(args.atc_k if args.atc_k is not None else cfg["rules"]["atc_k"]),
        "p_ref": p_ref_of(cfg),
        "load": float(cfg["scenario"]["load"]),
        "task_features": list(F.TASK_FEATURES if enc == "tasks" else F.FLAT_TASK_FEATURES),
        "global_features": list(F.GLOBAL_FEATURES if enc == "tasks" else F.FLAT_GLOBAL_FEATURES),
        "config_hash": config_hash(cfg, ["scenario", "rules", "seeds"]),
        "train_args": dataclasses.asdict(args),
    }


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


class RolloutStore:
    """The decisions of one rollout, kept ragged (see ``sched.policy``)."""

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


def sample_actions(logits, batch, gen):
    """One action per decision from the masked softmax (Gumbel-max, seeded generator)."""
    u = torch.rand(len(logits), generator=gen).clamp_(1e-12, 1.0 - 1e-7)
    noisy = logits - torch.log(-torch.log(u))
    return P.segment_argmax(noisy, batch["seg"], batch["n"], batch["starts"])


class Validator:
    """Greedy policy vs ATC on fixed validation scenarios (common random numbers)."""

    def __init__(self, cfg, args):
        seeds = list(seed_range(cfg, "validation"))[: args.validation_scenarios]
        from sched.data.scenario import draw

        self.scenarios = []
        for s in seeds:
            d = draw(cfg, s, tasks=args.tasks)
            self.scenarios.append((d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"]))
        self.M = cfg["scenario"]["machines"]
        atc = core.simulate_batch(self.scenarios, "atc", machines=self.M, k=cfg["rules"]["atc_k"])
        self.atc = self._mean_twt(atc)

    def _mean_twt(self, results):
        costs = [weighted_tardiness(end, sc[4], sc[3]) for sc, (_, end, _) in zip(self.scenarios, results)]
        return float(np.mean(costs))

    def __call__(self, net, meta):
        pol = P.Policy(net, meta)
        out = self._mean_twt(run_greedy(pol, self.scenarios, self.M))
        net.train()
        return out


def distill(net, labels, args, gen, progress=False):
    """Warm start: cost-sensitive imitation of the rollout teacher (sched/teacher.py).

    For each labelled decision the loss is the expected label (extra weighted
    tardiness over ATC's choice, in units of ``distill_scale``) under the
    policy's softmax over the teacher's candidates: the gradient pushes
    probability towards the cheaper candidates in proportion to what a wrong
    pick costs. The critic is left to PPO. Returns the mean loss of the last epoch.
    """
    x, g = torch.from_numpy(labels["x"]), torch.from_numpy(labels["g"])
    cand, lab = torch.from_numpy(labels["cand"]), torch.from_numpy(labels["label"])
    counts = torch.from_numpy(labels["counts"])
    starts = P.starts_of(counts)
    valid = cand >= 0
    regret = (lab - lab.masked_fill(~valid, float("inf")).min(1, keepdim=True).values).masked_fill(
        ~valid, 0.0
    ) / args.distill_scale
    opt = torch.optim.Adam(net.parameters(), lr=args.distill_lr)
    n = len(counts)
    epochs = range(args.distill_epochs)
    if progress:
        from tqdm import tqdm

        epochs = tqdm(epochs, desc="distil teacher", unit="epoch", dynamic_ncols=True)
    last = float("nan")
    for _ in epochs:
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for lo in range(0, n, args.distill_batch):
            idx = perm[lo : lo + args.distill_batch]
            c = counts[idx]
            seg = torch.repeat_interleave(torch.arange(len(idx)), c)
            st = P.starts_of(c)
            rows = starts[idx][seg] + torch.arange(len(seg)) - st[seg]
            batch = {"x": x[rows], "seg": seg, "n": len(idx), "counts": c, "starts": st, "g": g[idx]}
            logits, _ = net(batch)
            picked = logits[st.unsqueeze(1) + cand[idx].clamp(min=0)].masked_fill(~valid[idx], -1e9)
            loss = (torch.softmax(picked, 1) * regret[idx]).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
            opt.step()
            total += loss.item() * len(idx)
        last = total / n
    return last


def teacher_labels(cfg, args, progress=False):
    """The teacher's labels on the first ``teacher_scenarios`` training seeds."""
    from sched.learn.teacher import make_labels

    seeds = list(seed_range(cfg, "train"))[: args.teacher_scenarios]
    return make_labels(
        cfg,
        seeds,
        args.teacher_horizon,
        args.teacher_samples,
        args.top_k,
        progress=progress,
        atc_k=args.atc_k,
    )


def train(cfg, args, out, progress=True, resume=True, log=print, labels=None):
    """Train a policy; write ``out`` (policy file), ``train_log.csv`` beside it.

    Returns a summary dict. Resumes from ``<out>.ckpt`` when it exists and was
    made with the same config and arguments.
    """
    out = Path(out)
    log_path = out.with_name("train_log.csv")
    ckpt_path = out.with_name(out.name + ".ckpt")
    threads.apply(args.threads, torch=True)

    # --- seeding: one seed drives everything
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    env_rng = np.random.default_rng([args.seed, 20240601])
    meta = policy_meta(cfg, args)
    net = P.build(meta["arch"])
    optimizer = make_optimizer(net, args)
    env = VecQueue(
        cfg,
        args.num_envs,
        env_rng,
        seed_range(cfg, "train"),
        P.ENCODINGS[args.architecture],
        meta["atc_k"],
        tasks=args.tasks,
        loads=args.loads,
        reward_scale=args.reward_scale,
        privileged=args.privileged_critic,
    )
    validator = Validator(cfg, args) if args.eval_every > 0 else None
    if args.teacher_scenarios > 0 and (args.top_k <= 0 or args.architecture != "scorer"):
        raise ValueError(
            f"train.teacher_scenarios: the teacher warm start labels the top_k "
            f"candidates of the scorer; got architecture {args.architecture!r}, "
            f"top_k {args.top_k} (set teacher_scenarios: 0 to train without it)"
        )

    fingerprint = {"config": meta["config_hash"], "args": dataclasses.asdict(args)}
    start_iter, rows, best = 1, [], {"score": math.inf, "iteration": 0, "state": None}
    env_steps, episodes, wall_before = 0, 0, 0.0
    recent = []
    if resume and ckpt_path.exists():
        ck = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        if ck["fingerprint"] == fingerprint:
            net.load_state_dict(ck["net"])
            optimizer.load_state_dict(ck["optimizer"])
            gen.set_state(ck["torch_gen"])
            env.set_state(ck["env"])
            start_iter, rows, best = ck["iteration"] + 1, ck["rows"], ck["best"]
            env_steps, episodes, wall_before, recent = (
                ck["env_steps"],
                ck["episodes"],
                ck["wall"],
                ck["recent"],
            )
            log(f"resuming {out} from iteration {ck['iteration']}")
            obs = env.observe()
        else:
            log(f"ignoring checkpoint {ckpt_path}: made with another config or arguments")
            obs = env.reset()
    else:
        obs = env.reset()
    if start_iter == 1:
        # ------------------------------------------------ starting points, validated
        # Model selection covers where training starts too: the untrained network
        # (the ATC prior: ATC with train.atc_k) and, with a teacher, the warm start.
        # A warm start or PPO that does worse on validation is not kept.
        nan = float("nan")
        t_d = time.perf_counter()

        def start_row(iteration, loss, lr):
            nonlocal best
            score = validator(net, meta) if validator is not None else nan
            if validator is not None and score < best["score"]:
                best = {
                    "score": score,
                    "iteration": iteration,
                    "state": {k: v.detach().clone() for k, v in net.state_dict().items()},
                }
            rows.append(
                {
                    "iteration": iteration,
                    "env_steps": 0,
                    "episodes": 0,
                    "mean_episode_weighted_tardiness_s": nan,
                    "policy_loss": loss,
                    "value_loss": nan,
                    "entropy": nan,
                    "approx_kl": nan,
                    "clip_fraction": nan,
                    "explained_variance": nan,
                    "steps_per_s": nan,
                    "wall_s": time.perf_counter() - t_d,
                    "learning_rate": lr,
                    "val_weighted_tardiness_s": score,
                    "val_atc_weighted_tardiness_s": validator.atc if validator else nan,
                }
            )

        if args.teacher_scenarios > 0:
            start_row(-1, nan, nan)  # the untrained network: ATC prior
            if labels is None:
                labels = teacher_labels(cfg, args, progress=progress)
            start_row(0, distill(net, labels, args, gen, progress=progress), args.distill_lr)
        else:
            start_row(0, nan, nan)
        wall_before = rows[-1]["wall_s"]

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=args.iterations,
            initial=start_iter - 1,
            desc=f"train seed {args.seed}",
            unit="it",
            dynamic_ncols=True,
        )
    t0 = time.perf_counter() - wall_before
    for it in range(start_iter, args.iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (it - 1.0) / args.iterations
            for group in optimizer.param_groups:
                group["lr"] = frac * args.learning_rate * group["lr_mult"]
        t_iter = time.perf_counter()

        # ------------------------------------------------------------ rollout
        store = RolloutStore(P.ENCODINGS[args.architecture])
        acts, logps, vals, rews, dones, hints = ([] for _ in range(6))
        with torch.no_grad():
            for _ in range(args.num_steps):
                batch = P.make_batch(obs)
                logits, value = net(batch)
                hint = env.value_hint()
                value = value + torch.from_numpy(hint)
                a = sample_actions(logits, batch, gen)
                logp = P.segment_log_softmax(logits, batch["seg"], batch["n"])[batch["starts"] + a]
                a_np = a.numpy()
                slot_qpos = obs[3]
                act = a_np if slot_qpos is None else slot_qpos[np.arange(len(a_np)), a_np]
                store.add(batch)
                acts.append(a)
                logps.append(logp)
                vals.append(value.numpy())
                hints.append(hint)
                obs, r, done = env.step(act)
                rews.append(r)
                dones.append(done)
            next_value = net(P.make_batch(obs))[1].numpy() + env.value_hint()
        store.finish()
        env_steps += args.batch_size
        new_eps = env.finished
        env.finished = []
        episodes += len(new_eps)
        recent = (recent + [wt for _, _, wt in new_eps])[-50:]

        # ------------------------------------------------------------ GAE
        rews, dones, vals = np.array(rews), np.array(dones, dtype=np.float32), np.array(vals)
        adv = np.zeros_like(rews)
        last = np.zeros(args.num_envs, dtype=np.float32)
        for t in reversed(range(args.num_steps)):
            next_v = next_value if t == args.num_steps - 1 else vals[t + 1]
            nonterminal = 1.0 - dones[t]  # the step ended an episode: no bootstrap across it
            delta = rews[t] + args.gamma * next_v * nonterminal - vals[t]
            last = delta + args.gamma * args.gae_lambda * nonterminal * last
            adv[t] = last
        ret = adv + vals

        # ------------------------------------------------------------ update
        bact = torch.cat(acts)
        blogp = torch.cat(logps)
        badv = torch.from_numpy(adv.reshape(-1))
        bret = torch.from_numpy(ret.reshape(-1).astype(np.float32))
        bval = torch.from_numpy(vals.reshape(-1).astype(np.float32))
        bhint = torch.from_numpy(np.stack(hints).reshape(-1))

        clipfracs, approx_kl = [], torch.tensor(0.0)
        for _epoch in range(args.update_epochs):
            perm = torch.randperm(args.batch_size, generator=gen)
            for lo in range(0, args.batch_size, args.minibatch_size):
                mb = perm[lo : lo + args.minibatch_size]
                batch = store.batch(mb)
                logits, newv = net(batch)
                newv = newv + bhint[mb]  # the network learns the residual on the hint
                logprobs = P.segment_log_softmax(logits, batch["seg"], batch["n"])
                newlogp = logprobs[batch["starts"] + bact[mb]]
                entropy = P.segment_entropy(logprobs, batch["seg"], batch["n"])
                logratio = newlogp - blogp[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                mb_adv = badv[mb]
                if args.norm_adv:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(
                    -mb_adv * ratio, -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                if args.clip_vloss:
                    v_unclipped = (newv - bret[mb]) ** 2
                    v_clipped = bval[mb] + (newv - bval[mb]).clamp(-args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - bret[mb]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((newv - bret[mb]) ** 2).mean()
                ent = entropy.mean()
                loss = pg_loss - args.ent_coef * ent + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break
        var_y = np.var(ret)
        explained_var = float("nan") if var_y == 0 else float(1 - np.var(ret - vals) / var_y)

        # ------------------------------------------------------------ log, validate, checkpoint
        val_score = val_atc = float("nan")
        if validator is not None and (it % args.eval_every == 0 or it == args.iterations):
            val_score, val_atc = validator(net, meta), validator.atc
            if val_score < best["score"]:
                best = {
                    "score": val_score,
                    "iteration": it,
                    "state": {k: v.detach().clone() for k, v in net.state_dict().items()},
                }
        wall = time.perf_counter() - t0
        rows.append(
            {
                "iteration": it,
                "env_steps": env_steps,
                "episodes": episodes,
                "mean_episode_weighted_tardiness_s": float(np.mean(recent)) if recent else float("nan"),
                "policy_loss": pg_loss.item(),
                "value_loss": v_loss.item(),
                "entropy": ent.item(),
                "approx_kl": float(approx_kl),
                "clip_fraction": float(np.mean(clipfracs)),
                "explained_variance": explained_var,
                "steps_per_s": args.batch_size / max(time.perf_counter() - t_iter, 1e-9),
                "wall_s": wall,
                "learning_rate": optimizer.param_groups[0]["lr"],
                "val_weighted_tardiness_s": val_score,
                "val_atc_weighted_tardiness_s": val_atc,
            }
        )
        if bar is not None:
            post = {"wt": f"{rows[-1]['mean_episode_weighted_tardiness_s']:.0f}"}
            if not math.isnan(val_score):
                post["val/atc"] = f"{val_score / val_atc:.3f}"
            bar.set_postfix(post, refresh=False)
            bar.update(1)
        if args.checkpoint_every > 0 and it % args.checkpoint_every == 0 and it < args.iterations:
            _write_log(log_path, rows)
            ck = {
                "fingerprint": fingerprint,
                "iteration": it,
                "net": net.state_dict(),
                "optimizer": optimizer.state_dict(),
                "torch_gen": gen.get_state(),
                "env": env.get_state(),
                "rows": rows,
                "best": best,
                "env_steps": env_steps,
                "episodes": episodes,
                "wall": wall,
                "recent": recent,
            }
            with atomic_path(ckpt_path) as tmp:
                torch.save(ck, tmp)
    if bar is not None:
        bar.close()

    if best["state"] is not None:
        net.load_state_dict(best["state"])
    meta["best_iteration"] = int(best["iteration"]) if best["state"] is not None else args.iterations
    meta["val_weighted_tardiness_s"] = None if math.isinf(best["score"]) else float(best["score"])
    meta["val_atc_weighted_tardiness_s"] = None if validator is None else float(validator.atc)
    P.save(out, net, meta)
    _write_log(log_path, rows)
    if ckpt_path.exists():
        os.unlink(ckpt_path)
    return {
        "policy_file": str(out),
        "log": str(log_path),
        "iterations": args.iterations,
        "env_steps": env_steps,
        "episodes": episodes,
        "wall_s": rows[-1]["wall_s"] if rows else 0.0,
        "best_iteration": meta["best_iteration"],
        "val_weighted_tardiness_s": meta["val_weighted_tardiness_s"],
        "val_atc_weighted_tardiness_s": meta["val_atc_weighted_tardiness_s"],
    }


def _write_log(path, rows):
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=LOG_COLUMNS)
            w.writeheader()
            w.writerows(rows)


def plot_learning_curve(log_csv, png, title=None):
    """Learning curve from a training log: episode and validation weighted tardiness."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    df = pd.read_csv(log_csv)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(
        df["iteration"],
        df["mean_episode_weighted_tardiness_s"] / 1000,
        lw=1,
        alpha=0.6,
        label="training episodes (sampled actions, last 50)",
    )
    val = df.dropna(subset=["val_weighted_tardiness_s"])
    if len(val):
        ax.plot(
            val["iteration"],
            val["val_weighted_tardiness_s"] / 1000,
            "o-",
            ms=3,
            label="validation, greedy policy",
        )
        ax.axhline(
            val["val_atc_weighted_tardiness_s"].iloc[0] / 1000,
            color="k",
            ls="--",
            lw=1,
            label="validation, ATC",
        )
    ax.set_xlabel("iteration")
    ax.set_ylabel("weighted tardiness per scenario (1,000 s)")
    ax.set_title(title or "PPO learning curve")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
