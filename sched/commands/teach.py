"""`sched teach`: label training scenarios with the Monte Carlo rollout teacher."""

import json
import sys

from sched import layout
from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "teach",
        help="label training scenarios with the rollout teacher "
        "(the policy's warm start; sched/learn/teacher.py)",
    )
    s.add_argument(
        "--seeds",
        help="training seeds A-B or N (default: the first train.teacher_scenarios "
        "of seeds.train); shards of that range can run in parallel",
    )
    s.add_argument("--out", default=layout.DEFAULT_TEACHER_LABELS, help="label file (default: %(default)s)")
    s.add_argument(
        "--atc-k",
        type=float,
        dest="atc_k",
        help="ATC k of the candidates, rollouts and features (default: train.atc_k)",
    )
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=run)


def teacher_seeds(cfg, args):
    from sched.config import seed_range
    from sched.learn.ppo import Args

    a = Args.from_config(cfg, atc_k=args.atc_k)
    if a.atc_k is not None and not a.atc_k > 0:
        raise UsageError(f"--atc-k: must be > 0, got {a.atc_k}")
    if a.teacher_scenarios <= 0:
        raise UsageError("train.teacher_scenarios is 0: there is nothing to label")
    wanted = seed_range(cfg, "train")[: a.teacher_scenarios]
    if not args.seeds:
        return list(wanted), a
    from sched.evaluate.seeds import check_within, parse_seed_range

    seeds = check_within(
        parse_seed_range(args.seeds),
        wanted,
        "--seeds",
        "the teacher's scenarios",
        "the first train.teacher_scenarios of seeds.train",
    )
    return list(seeds), a


def run(args):
    from sched.learn.teacher import LABEL_FORMAT, label_settings, make_labels, save_labels

    cfg = load_cfg(args)
    seeds, a = teacher_seeds(cfg, args)
    labels = make_labels(
        cfg,
        seeds,
        a.teacher_horizon,
        a.teacher_samples,
        a.top_k,
        progress=not args.no_progress,
        atc_k=a.atc_k,
    )
    meta = {"format": LABEL_FORMAT, **label_settings(cfg, a), "seeds": [seeds[0], seeds[-1]]}
    save_labels(args.out, labels, meta)
    print(
        json.dumps(
            {
                "out": args.out,
                "scenarios": len(seeds),
                "decisions": int(len(labels["count"])),
                "teacher_differs_from_atc": float((labels["label"].min(1) < 0).mean()),
            }
        ),
        file=sys.stdout,
    )
