"""`sched tune`: choose ATC's look-ahead k on the validation seeds."""

import sys

from sched import layout, threads
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser("tune", help="tune ATC's k on validation seeds (benchmark.atc_k_grid)")
    s.add_argument("--out", default=layout.TUNED_PATH, help="output JSON (default: %(default)s)")
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from sched import files
    from sched.evaluate.summary import UNIT
    from sched.evaluate.tuning import tune_atc_k

    cfg = load_cfg(args)
    threads.apply(args.threads)
    result = tune_atc_k(cfg, progress=True)
    files.write_json(args.out, result)
    vs = result["validation_seeds"]
    print(f"ATC k on {vs['count']} validation seeds {vs['first']}-{vs['last']}:")
    for g in result["grid"]:
        mark = "  <- chosen" if g["atc_k"] == result["atc_k"] else ""
        print(
            f"  k = {g['atc_k']:<6g} mean total weighted tardiness {g['mean_twt_s'] / UNIT:10.3f} k w.s{mark}"
        )
    print(f"wrote {args.out}", file=sys.stderr)
