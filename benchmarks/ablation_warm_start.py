"""Where the learned policy's gain comes from: the teacher's warm start, PPO, or both.

    python benchmarks/ablation_warm_start.py [--config config.yaml] [--seed 1] [--out DIR]

Trains three policies with the config's training settings and one training
seed, and compares them with ATC (k tuned on the first validation seeds, as
the benchmark does) on 200 *other* validation scenarios (never used for
training, tuning or checkpoint selection):

* ``ppo-only``: PPO from the untrained network (its ATC prior), no teacher;
* ``warm-start``: the teacher's warm start, no PPO iteration kept (1 iteration,
  the checkpoint chosen among the prior, the warm start and that iteration);
* ``warm-start+ppo``: the shipped recipe.

Prints one line per policy and writes them to ``OUT/ablation.csv`` (the
file the docs quote): the checkpoint each policy file kept (-1: the untrained
prior, 0: the warm start, N: PPO iteration N), mean total weighted
tardiness, difference with the tuned ATC and its paired bootstrap interval,
computed with the benchmark's statistics (the same resamples for every
variant, so two variants that kept the same weights get the same interval).
Takes minutes: it trains three policies with the config's full training
settings.
"""

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from sched import files, layout
from sched.config import load_config, seed_range
from sched.data.scenario import draw
from sched.evaluate.statistics import bootstrap_counts, paired_difference
from sched.learn import policy_file
from sched.learn.ppo import Args, teacher_labels, train
from sched.learn.vec_env import run_greedy
from sched.sim import core
from sched.sim.objective import weighted_tardiness


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=f"{layout.RESULTS}/ablation")
    a = ap.parse_args()
    cfg = load_config(a.config)
    out = Path(a.out)
    val = list(seed_range(cfg, "validation"))
    tune_seeds, eval_seeds = val[:100], val[100:300]
    M = cfg["scenario"]["machines"]

    def arrays(seeds):
        return [
            tuple(d[k] for k in ("arrival", "duration", "estimate", "weight", "due"))
            for d in (draw(cfg, s) for s in seeds)
        ]

    def twt(scs, res):
        return np.array([weighted_tardiness(end, sc[4], sc[3]) for sc, (_, end, _) in zip(scs, res)])

    tune, ev = arrays(tune_seeds), arrays(eval_seeds)
    grid = cfg["benchmark"]["atc_k_grid"]
    k = min(grid, key=lambda kk: twt(tune, core.simulate_batch(tune, "atc", M, kk)).mean())
    ref = twt(ev, core.simulate_batch(ev, "atc", M, k))

    base = Args.from_config(cfg, seed=a.seed)
    labels = teacher_labels(cfg, base, progress=True)
    variants = {
        "ppo-only": dict(teacher_scenarios=0),
        "warm-start": dict(iterations=1),
        "warm-start+ppo": {},
    }
    print(
        f"reference: ATC with k = {k:g} (tuned on validation seeds {tune_seeds[0]}-{tune_seeds[-1]}), "
        f"evaluated on validation seeds {eval_seeds[0]}-{eval_seeds[-1]}: mean {ref.mean() / 1000:.3f} k w.s"
    )
    b = cfg["benchmark"]
    counts = bootstrap_counts(len(ev), b["bootstrap_resamples"], b["bootstrap_seed"])
    rows = []
    for name, change in variants.items():
        args = dataclasses.replace(base, **change)
        path = out / name / layout.POLICY_FILE
        train(
            cfg,
            args,
            path,
            progress=True,
            resume=False,
            labels=labels if args.teacher_scenarios > 0 else None,
        )
        policy = policy_file.load(path)
        got = twt(ev, run_greedy(policy, ev, M))
        diff, lo, hi = paired_difference(got, ref, counts, b["ci_level"])
        kept = policy.meta.get("best_iteration")
        rows.append(
            {
                "variant": name,
                "training_seed": a.seed,
                "kept_iteration": kept,
                "mean_twt_k": got.mean() / 1000,
                "atc_tuned_k": k,
                "atc_tuned_mean_twt_k": ref.mean() / 1000,
                "diff_vs_atc_tuned_pct": diff,
                "ci_lo_pct": lo,
                "ci_hi_pct": hi,
                "ci_level": b["ci_level"],
                "eval_seeds": f"{eval_seeds[0]}-{eval_seeds[-1]}",
            }
        )
        print(
            f"{name:15s} kept iteration {kept}, mean {got.mean() / 1000:.3f} k w.s, "
            f"vs tuned ATC {diff:+.2f} % [{lo:+.2f}, {hi:+.2f}]",
            flush=True,
        )
    files.write_csv(out / "ablation.csv", pd.DataFrame(rows))
    print(f"wrote {out / 'ablation.csv'}")


if __name__ == "__main__":
    main()
