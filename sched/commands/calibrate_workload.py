"""`sched calibrate-workload`: fit arrivals, priorities and deadlines to the queue's own history."""

import sys
from pathlib import Path

from sched import layout
from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "calibrate-workload",
        help="fit the weekly arrival profile, priority mix and deadlines to a queue history",
        description="Read a queue history (CSV or JSON Lines, one record per submitted task; "
        "docs/workload.md) and write a workload file that generated scenarios follow "
        "(config scenario.workload), with a figure beside it.",
    )
    s.add_argument(
        "history",
        nargs="*",
        metavar="HISTORY",
        help="history files (.csv, .jsonl, .json-lines, optionally .gz); default: config workload.history",
    )
    s.add_argument("--out", default=layout.WORKLOAD, help=f"workload JSON (default: {layout.WORKLOAD})")
    s.add_argument("--figure", help="figure PNG (default: --out with .png)")
    s.add_argument(
        "--calibration",
        help="calibration file whose duration model gives the estimates (default: scenario.calibration)",
    )
    s.add_argument(
        "--machines",
        help="GPUs the implied load is computed on: a count, NxSPEED[,NxSPEED...] or a machines CSV "
        "(default: scenario.machines)",
    )
    s.add_argument("--max-bad-share", type=float, help="override workload.max_bad_share")
    s.set_defaults(func=run)


def run(args):
    from sched.data.workload.workload_fit import calibrate_workload
    from sched.data.workload.workload_output import summary_lines, write_workload

    cfg = load_cfg(args)
    changes = {}
    if args.max_bad_share is not None:
        changes["workload"] = {"max_bad_share": args.max_bad_share}
    if args.machines is not None:
        machines = args.machines.strip()
        changes["scenario"] = {
            "machines": int(machines) if machines.isascii() and machines.isdecimal() else args.machines
        }
    cfg = cfg.replace(changes, "command line")
    calibration = args.calibration or cfg.scenario.calibration
    if not calibration:
        raise UsageError(
            "--calibration: no calibration file (scenario.calibration is null); the estimates need one"
        )
    out = Path(args.out)
    figure = Path(args.figure) if args.figure else out.with_suffix(".png")
    if figure.resolve() == out.resolve():
        raise UsageError(f"--figure: {figure} is also --out")
    result = calibrate_workload(args.history or cfg.workload.history, cfg, calibration, cfg.workload.seed)
    for st in result.stats:
        if st.bad_count:
            print(
                f"sched calibrate-workload: warning: {st.path}: {st.bad_count} of {st.total} records "
                f"malformed, "
                f"skipped: {st.bad_summary()}",
                file=sys.stderr,
            )
    note = (result.data.get("split") or {}).get("note")
    if note:
        print(f"sched calibrate-workload: note: {note}", file=sys.stderr)
    write_workload(result, out, figure)
    for line in summary_lines(result):
        print(line)
    print(f"wrote {out} and {figure}", file=sys.stderr)
