"""`sched calibrate`: fit duration distributions and a duration model to GPU bench logs."""

import sys
from pathlib import Path

from sched import layout
from sched.cli import load_cfg
from sched.errors import UsageError

DISTRIBUTIONS = ("auto", "lognormal", "gamma", "empirical")


def register(sub):
    s = sub.add_parser(
        "calibrate",
        help="fit per-kind duration distributions and a duration model to bench logs",
        description="Read GPU bench logs (CSV or JSON Lines, one record per measured render) and "
        "write a calibration file that `sched scenario` and the simulator sample from.",
    )
    s.add_argument(
        "bench",
        nargs="*",
        metavar="BENCH",
        help="bench logs (.csv, .jsonl, .json-lines); default: config calibration.bench",
    )
    s.add_argument(
        "--out",
        default=layout.CALIBRATION,
        help=f"calibration JSON (default: {layout.CALIBRATION})",
    )
    s.add_argument("--figure", help="figure PNG (default: --out with .png)")
    s.add_argument(
        "--distribution",
        choices=DISTRIBUTIONS,
        help="override calibration.distribution (auto picks by --criterion)",
    )
    s.add_argument("--criterion", choices=("aic", "ks"), help="override calibration.criterion")
    s.add_argument("--kind-column", help="override calibration.columns.kind")
    s.add_argument("--duration-column", help="override calibration.columns.duration_s")
    s.add_argument("--min-records", type=int, help="override calibration.min_records")
    s.add_argument("--max-bad-share", type=float, help="override calibration.max_bad_share")
    s.set_defaults(func=run)


def run(args):
    from sched.data.bench.calibration_output import summary_lines, write_calibration
    from sched.data.bench.fit import calibrate

    cfg = load_cfg(args)
    overrides = {
        "distribution": args.distribution,
        "criterion": args.criterion,
        "min_records": args.min_records,
        "max_bad_share": args.max_bad_share,
    }
    opts = {key: value for key, value in overrides.items() if value is not None}
    columns = {"kind": args.kind_column, "duration_s": args.duration_column}
    opts["columns"] = {key: value for key, value in columns.items() if value is not None}
    cfg = cfg.replace(calibration=opts, source="command line")
    out = Path(args.out)
    figure = Path(args.figure) if args.figure else out.with_suffix(".png")
    if figure.resolve() == out.resolve():
        raise UsageError(f"--figure: {figure} is also --out")
    result = calibrate(args.bench or cfg.calibration.bench, cfg.calibration)
    for level, text in result.notes:
        print(f"sched calibrate: {level}: {text}", file=sys.stderr)
    write_calibration(result, out, figure)
    for line in summary_lines(result):
        print(line)
    print(f"wrote {out} and {figure}", file=sys.stderr)
