"""`sched train`: train a PPO policy on the compiled simulator."""

import json
import sys
from pathlib import Path

from sched import layout
from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser("train", help="train a PPO dispatching policy (resumes from its checkpoint)")
    s.add_argument("--iterations", type=int, help="PPO iterations (default: config train.iterations)")
    s.add_argument("--out", default=layout.DEFAULT_POLICY, help="policy file (default: %(default)s)")
    s.add_argument("--seed", type=int, help="training seed (default: config train.seeds[0])")
    s.add_argument("--threads", type=int, help="torch/numba threads (default: config train.threads)")
    s.add_argument(
        "--teacher",
        nargs="+",
        metavar="LABELS",
        help="teacher label files from `sched teach` (default: label in this process)",
    )
    s.add_argument(
        "--init",
        metavar="POLICY",
        help="start PPO from this policy file (the last round of expert iteration): no warm start here",
    )
    s.add_argument(
        "--atc-k",
        type=float,
        dest="atc_k",
        help="ATC k of the features, prior, teacher and critic (default: train.atc_k)",
    )
    s.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=run)


def run(args):
    from sched.learn.chain import train
    from sched.learn.ppo.train_log import plot_learning_curve
    from sched.learn.settings import Training

    cfg = load_cfg(args)
    if args.iterations is not None and args.iterations < 1:
        raise UsageError(f"--iterations: must be >= 1, got {args.iterations}")
    seed = args.seed if args.seed is not None else cfg.train.seeds[0]
    a = Training.from_config(
        cfg, iterations=args.iterations, seed=seed, threads=args.threads, atc_k=args.atc_k
    )
    if a.network.atc_k is not None and not a.network.atc_k > 0:
        raise UsageError(f"--atc-k: must be > 0, got {a.network.atc_k}")
    out = Path(args.out)
    labels = None
    if args.teacher and args.init:
        raise UsageError("--teacher: not with --init (PPO starts from the --init policy, not a warm start)")
    if args.teacher:
        labels = _checked_labels(cfg, a, args.teacher)
    summary = train(
        cfg,
        a,
        out,
        progress=not args.no_progress,
        resume=not args.fresh,
        log=lambda m: print(m, file=sys.stderr),
        labels=labels,
        init=args.init,
    )
    png = out.with_name("learning_curve.png")
    plot_learning_curve(summary["log"], png, title=f"PPO learning curve, training seed {seed}")
    summary["learning_curve"] = str(png)
    print(json.dumps(summary))


def _checked_labels(cfg, a, paths):
    """Teacher labels from files, refused unless made for this config and these settings."""
    import numpy as np

    from sched.config import seed_range
    from sched.learn.search.teacher import label_settings, load_labels

    if a.teacher.scenarios <= 0:
        raise UsageError("--teacher: train.teacher_scenarios is 0 (no warm start configured)")
    labels, meta = load_labels(paths)
    want = label_settings(cfg, a)
    for key, value in want.items():
        if meta.get(key) != value:
            raise UsageError(
                f"--teacher: {paths[0]}: {key} is {meta.get(key)!r}, this config "
                f"needs {value!r}; rerun `sched teach`"
            )
    seeds = list(seed_range(cfg, "train"))[: a.teacher.scenarios]
    got = np.unique(labels["scenario_seed"])
    if len(got) != len(seeds) or (got != np.array(seeds)).any():
        raise UsageError(
            f"--teacher: the files cover {len(got)} scenarios, train.teacher_scenarios "
            f"needs seeds {seeds[0]}-{seeds[-1]}"
        )
    # a fixed order whatever the order of the shards on the command line (one row per decision)
    order = np.argsort(labels["scenario_seed"], kind="stable")
    out = {k: v[order] for k, v in labels.items()}
    return out
