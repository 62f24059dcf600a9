"""`sched farm-teach`: the gated teacher's warm start of the farm scorer (sched.learn.farm.teach)."""

import sys

from sched import threads
from sched.cli import int_in, load_cfg


def register(sub):
    s = sub.add_parser(
        "farm-teach",
        help="label a chunked setting's training seeds with plan's gated teacher on tuned ATC and distil "
        "the farm scorer (from the ATC prior) onto the labels: the warm start of `sched farm-train --init`",
    )
    s.add_argument("--tuned", required=True, help="the setting's tuned.json (`sched farm-bench`): ATC's k")
    s.add_argument(
        "--out",
        required=True,
        help="output folder (farm_policy.pt; teacher_labels.json: the label counts and the warm "
        "start's validation score)",
    )
    s.add_argument("--seed", type=int, default=1, help="the distillation's seed (default: %(default)s)")
    s.add_argument(
        "--scenarios",
        type=int_in(1),
        default=None,
        help="training seeds labelled (default: train.teacher_scenarios)",
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from pathlib import Path

    from sched import files, layout
    from sched.errors import UsageError
    from sched.evaluate.policies import read_tuned
    from sched.learn.farm import policy_file, teach

    cfg = load_cfg(args)
    if not cfg.scenario.get("chunks"):
        raise UsageError("farm-teach: the config has no scenario.chunks (a chunked setting)")
    k = float(read_tuned(args.tuned)["atc_k"])
    over = {"threads": args.threads, "teacher_scenarios": args.scenarios}
    net, meta = teach.warm_start(cfg, k, seed=args.seed, **over)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    policy_file.save(out / layout.FARM_POLICY, net, meta)
    v, a, t = meta["val_weighted_tardiness_s"], meta["val_atc_tuned_weighted_tardiness_s"], meta["teacher"]
    val = {"val_weighted_tardiness_s": v, "val_atc_tuned_weighted_tardiness_s": a}
    files.write_json(
        out / layout.FARM_TEACHER_LABELS, {**t, **val, "validation_seeds": meta["validation_seeds"]}
    )
    print(
        f"{t['labelled']} labels ({t['deviations']} deviations, {t['missed']} outside top_k) on "
        f"{t['scenarios']} scenarios; warm start: validation mean {v / 1e3:.3f} k w.s, atc-tuned "
        f"{a / 1e3:.3f} k ({(v / a - 1) * 100 if a else 0.0:+.2f} %) on {meta['validation_seeds'][1]} seeds"
    )
    print(f"wrote {out / layout.FARM_POLICY}", file=sys.stderr)
