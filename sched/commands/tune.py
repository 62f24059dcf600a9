"""`sched tune`: choose ATC's look-ahead k on the validation seeds."""

import sys

from sched import layout, threads
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser("tune", help="tune ATC's k on validation seeds (benchmark.atc_k_grid)")
    s.add_argument("--out", default=layout.TUNED_PATH, help="output JSON (default: %(default)s)")
    s.add_argument(
        "--validation-days",
        nargs="+",
        metavar="HISTORY",
        help="the queue history: also run each k on the validation days of scenario.workload "
        "(split.validation) replayed as one stream, and keep a k at most 5 %% worse there than "
        'rules.atc_k (docs/workload.md, "Three periods")',
    )
    s.add_argument(
        "--fidelity",
        metavar="JSON",
        help="with --validation-days: `sched fidelity`'s record; when the generator ranks the rules "
        "unlike the real days, the k of lowest tardiness on them is chosen",
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from sched import files
    from sched.evaluate.tuning import tune_atc_k
    from sched.verdict.summary import UNIT

    cfg = load_cfg(args)
    threads.apply(args.threads)
    result = tune_atc_k(cfg, progress=True, days=_days(args, cfg))
    files.write_json(args.out, result)
    vs = result["validation_seeds"]
    print(f"ATC k on {vs['count']} validation seeds {vs['first']}-{vs['last']}:")
    for g in result["grid"]:
        mark = "  <- chosen" if g["atc_k"] == result["atc_k"] else ""
        print(
            f"  k = {g['atc_k']:<6g} mean total weighted tardiness {g['mean_twt_s'] / UNIT:10.3f} k w.s{mark}"
        )
    if "validation_days" in result:
        v = result["validation_days"]
        print(f"on the {v['days']} validation days: k = {result['atc_k']:g} ({v['reason']})")
    print(f"wrote {args.out}", file=sys.stderr)


def _days(args, cfg):
    """``(stream, lean)`` of --validation-days and --fidelity; None without them."""
    from sched.errors import UsageError

    if not args.validation_days:
        if args.fidelity:
            raise UsageError("--fidelity: it weighs the validation days; give --validation-days too")
        return None
    from sched.data.workload.fidelity import read_fidelity
    from sched.data.workload.replay import held_out_stream
    from sched.data.workload.workload import load_workload, period_days

    path = cfg.scenario.workload
    if not path or not cfg.scenario.calibration:
        raise UsageError("--validation-days: needs scenario.workload and scenario.calibration in the config")
    workload = load_workload(path)
    period = period_days(workload, "validation")
    if period is None:
        raise UsageError(
            f"--validation-days: workload file {path} holds no validation days (split.validation)"
        )
    stream = held_out_stream(
        args.validation_days, cfg, cfg.scenario.calibration, period,
        fitted_on=(path, workload.get("sources")), label="validation",
    )  # fmt: skip
    lean = read_fidelity(args.fidelity)["lean_on_days"] if args.fidelity else False
    return stream, lean
