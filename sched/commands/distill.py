"""`sched distill`: distil teacher labels into a policy file (the warm start, or a round of expert
iteration), kept only when it beats its start on the validation scenarios."""

import json
import sys

from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "distill",
        help="distil the gated teacher's labels into a policy (the warm start, or a round of expert "
        "iteration with --start); sched/learn/search/iterate.py",
    )
    s.add_argument(
        "--labels", nargs="+", required=True, metavar="LABELS", help="label files of `sched teach`"
    )
    s.add_argument(
        "--start",
        help="the policy file the student starts from (a round's previous policy; default: the ATC prior)",
    )
    s.add_argument("--stage", default="warm", help="what the file is, recorded in its meta (warm, round-R)")
    s.add_argument("--out", required=True, help="policy file to write")
    s.add_argument("--seed", type=int, help="training seed (default: config train.seeds[0])")
    s.add_argument(
        "--atc-k", type=float, dest="atc_k", help="ATC k of the features and prior (default: train.atc_k)"
    )
    s.add_argument("--threads", type=int, help="torch/numba threads (default: config train.threads)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=run)


def run(args):
    from sched import threads
    from sched.learn.search.iterate import distill_stage
    from sched.learn.search.teacher import load_labels
    from sched.learn.settings import Training

    cfg = load_cfg(args)
    seed = args.seed if args.seed is not None else cfg.train.seeds[0]
    a = Training.from_config(cfg, seed=seed, threads=args.threads, atc_k=args.atc_k)
    if a.network.atc_k is not None and not a.network.atc_k > 0:
        raise UsageError(f"--atc-k: must be > 0, got {a.network.atc_k}")
    threads.apply(a.threads, torch=True)
    labels = _labels(cfg, load_labels, args.labels)
    summary = distill_stage(
        cfg, a, labels, args.out, start=args.start, progress=not args.no_progress, stage=args.stage
    )
    print(json.dumps(summary), file=sys.stdout)


def _labels(cfg, load_labels, paths):
    """The label files, each loaded and checked on its own (a round's and the warm start's differ in
    their teacher's settings), made for this config; concatenated in a fixed order."""
    import numpy as np

    from sched.config import training_hash

    want = training_hash(cfg)
    parts = []
    for p in paths:
        labels, meta = load_labels([p])
        if meta.get("config_hash") != want:
            raise UsageError(
                f"--labels: {p}: made for another config (scenario, rules, seeds); rerun `sched teach`"
            )
        parts.append(labels)
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.argsort(out["scenario_seed"], kind="stable")
    return {k: v[order] for k, v in out.items()}
