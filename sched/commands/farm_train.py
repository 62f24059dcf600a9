"""`sched farm-train`: PPO for the farm scorer on a chunked setting (sched.learn.farm.train)."""

import sys

from sched import threads
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser(
        "farm-train",
        help="train the learned scorer of a chunked setting (scenario.chunks) by PPO from the ATC prior "
        "with the setting's tuned k, on its training seeds; the best weights on its validation seeds",
    )
    s.add_argument("--tuned", required=True, help="the setting's tuned.json (`sched farm-bench`): ATC's k")
    s.add_argument("--out", required=True, help="output folder (farm_policy.pt, farm_learning_curve.csv)")
    s.add_argument("--seed", type=int, default=1, help="the training seed (default: %(default)s)")
    s.add_argument(
        "--init", default=None, help="a warm start (`sched farm-teach`'s farm_policy.pt), kept if better"
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from pathlib import Path

    from sched import files, layout
    from sched.errors import UsageError
    from sched.evaluate.policies import read_tuned
    from sched.learn.farm import policy_file
    from sched.learn.farm import train as farm_train

    cfg = load_cfg(args)
    if not cfg.scenario.get("chunks"):
        raise UsageError("farm-train: the config has no scenario.chunks (a chunked setting)")
    k = float(read_tuned(args.tuned)["atc_k"])
    init = policy_file.load(args.init) if args.init else None
    if init is not None and init.meta["atc_k"] != k:
        raise UsageError(
            f"farm-train: --init {args.init}: field atc_k: {init.meta['atc_k']}, the tuned k is {k}"
        )
    net, meta, curve = farm_train.train(cfg, k, seed=args.seed, threads=args.threads, init=init)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    policy_file.save(out / layout.FARM_POLICY, net, meta)
    files.write_csv(out / layout.FARM_CURVE, curve)
    v, a = meta["val_weighted_tardiness_s"], meta["val_atc_tuned_weighted_tardiness_s"]
    print(
        f"best iteration {meta['best_iteration']}: validation mean {v / 1e3:.3f} k w.s, atc-tuned "
        f"{a / 1e3:.3f} k ({(v / a - 1) * 100 if a else 0.0:+.2f} %) on {meta['validation_seeds'][1]} seeds"
    )
    print(f"wrote {out / layout.FARM_POLICY} and {out / layout.FARM_CURVE}", file=sys.stderr)
