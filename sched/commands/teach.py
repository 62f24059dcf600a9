"""`sched teach`: label training scenarios with the gated rollout teacher (the warm start's, or a
round of expert iteration's with ``--round R --policy FILE``)."""

import json
import sys

from sched import layout
from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "teach",
        help="label training scenarios with the gated rollout teacher "
        "(the warm start, or a round of expert iteration; sched/learn/search/teacher.py)",
    )
    s.add_argument(
        "--round",
        type=int,
        dest="round_",
        metavar="R",
        help="label round R of expert iteration (its train.round_scenarios seeds) with --policy, "
        "the policy of round R - 1, as the teacher's base and continuation",
    )
    s.add_argument("--policy", help="with --round: the policy file of round R - 1")
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
    from sched.learn.settings import Training

    a = Training.from_config(cfg, atc_k=args.atc_k)
    if a.network.atc_k is not None and not a.network.atc_k > 0:
        raise UsageError(f"--atc-k: must be > 0, got {a.network.atc_k}")
    if a.teacher.scenarios <= 0:
        raise UsageError("train.teacher_scenarios is 0: there is nothing to label")
    wanted = seed_range(cfg, "train")[: a.teacher.scenarios]
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
    from sched.learn.search.distill import teacher_base
    from sched.learn.search.teacher import LABEL_FORMAT, label_settings, make_labels, save_labels

    cfg = load_cfg(args)
    if args.round_ is not None:
        labels, stats, meta = _round(cfg, args)
    else:
        if args.policy:
            raise UsageError("--policy: only with --round (the warm start's base is train.teacher_base)")
        seeds, a = teacher_seeds(cfg, args)
        labels, stats = make_labels(
            cfg,
            seeds,
            a.teacher.labelling(),
            teacher_base(cfg, a),
            a.network.top_k,
            progress=not args.no_progress,
        )
        meta = {"format": LABEL_FORMAT, **label_settings(cfg, a), "seeds": [seeds[0], seeds[-1]]}
    save_labels(args.out, labels, meta)
    print(json.dumps({"out": args.out, **stats}), file=sys.stdout)


def _round(cfg, args):
    """Round ``args.round_``'s labels with ``args.policy``: (labels, statistics, file meta)."""
    from sched.config import training_hash
    from sched.learn.policy import policy_file
    from sched.learn.search.iterate import round_labels, round_seeds
    from sched.learn.search.teacher import LABEL_FORMAT
    from sched.learn.settings import Training

    if args.round_ < 1:
        raise UsageError(f"--round: expected a round >= 1, got {args.round_}")
    if not args.policy:
        raise UsageError("--round: needs --policy, the policy file of the round before")
    if args.seeds:
        raise UsageError("--seeds: not with --round (a round labels its own train.round_scenarios seeds)")
    a = Training.from_config(cfg, atc_k=args.atc_k)
    policy = policy_file.load(args.policy)
    labels, stats = round_labels(cfg, a, policy, args.round_, progress=not args.no_progress)
    seeds = round_seeds(cfg, a, args.round_)
    meta = {
        "format": LABEL_FORMAT,
        "config_hash": training_hash(cfg),
        "teacher": list(a.rounds.labelling(a.teacher)),
        "base": f"round {args.round_ - 1}",
        "continuation": a.rounds.continuation,
        "top_k": int(policy.meta["arch"]["top_k"]),
        "round": args.round_,
        "seeds": [seeds[0], seeds[-1]],
    }
    return labels, stats, meta
