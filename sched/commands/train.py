"""`sched train`: train a PPO policy on the compiled simulator."""
import json
import sys
from pathlib import Path

from ..cli import UsageError, load_cfg


def register(sub):
    s = sub.add_parser("train", help="train a PPO dispatching policy (resumes from its checkpoint)")
    s.add_argument("--iterations", type=int, help="PPO iterations (default: config train.iterations)")
    s.add_argument("--out", default="results/politique.pt", help="policy file (default: %(default)s)")
    s.add_argument("--seed", type=int, help="training seed (default: config train.seeds[0])")
    s.add_argument("--threads", type=int, help="torch/numba threads (default: config train.threads)")
    s.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=run)


def run(args):
    from ..ppo import Args, plot_learning_curve, train

    cfg = load_cfg(args)
    if args.iterations is not None and args.iterations < 1:
        raise UsageError(f"--iterations: must be >= 1, got {args.iterations}")
    seed = args.seed if args.seed is not None else cfg["train"]["seeds"][0]
    a = Args.from_config(cfg, iterations=args.iterations, seed=seed, threads=args.threads)
    out = Path(args.out)
    summary = train(cfg, a, out, progress=not args.no_progress, resume=not args.fresh,
                    log=lambda m: print(m, file=sys.stderr))
    png = out.with_name("learning_curve.png")
    plot_learning_curve(summary["log"], png, title=f"PPO learning curve, training seed {seed}")
    summary["learning_curve"] = str(png)
    print(json.dumps(summary))
