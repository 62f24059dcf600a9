"""`sched scenario`: write a generated scenario as CSV."""

import math
import sys

from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser("scenario", help="write a generated scenario as CSV")
    s.add_argument("--seed", type=int, required=True, help="scenario seed (integer >= 0)")
    s.add_argument("--out", help="output CSV (default: standard output)")
    s.add_argument("--tasks", type=int, help="override scenario.tasks")
    s.add_argument("--load", type=float, help="override scenario.load")
    s.add_argument(
        "--machines",
        help="override scenario.machines: a count, NxSPEED[,NxSPEED...] or a machines CSV "
        "(the sum of the speeds sets the arrival rate)",
    )
    s.add_argument(
        "--calibration",
        metavar="FILE",
        help="calibration file from `sched calibrate` (overrides scenario.calibration)",
    )
    s.set_defaults(func=run)


def run(args):
    from sched.data.scenario import generate, scenario_model, write_scenario
    from sched.formats.csv_input import safe_frame

    check_overrides(args)
    cfg = load_cfg(args)
    if args.calibration:
        cfg = cfg.replace(scenario={"calibration": args.calibration})
    sc = generate(scenario_model(cfg), args.seed, tasks=args.tasks, load=args.load, machines=args.machines)
    if args.out:
        write_scenario(args.out, sc)
        print(f"wrote {args.out} ({len(sc)} tasks, seed {args.seed})", file=sys.stderr)
    else:
        safe_frame(sc.frame).to_csv(sys.stdout, index=False)  # as write_scenario writes it


def check_overrides(args):
    """The command-line overrides within the schema's bounds, refused naming the option."""
    from sched.data.machines import speeds
    from sched.data.scenario import check_size

    if args.tasks is not None and args.tasks < 1:
        raise UsageError(f"--tasks: must be >= 1, got {args.tasks}")
    if args.machines is not None:
        speeds(args.machines, "--machines")
    check_size(args.tasks, None, names=("--tasks", "--machines"))
    if args.load is not None and not 0 < args.load < math.inf:
        raise UsageError(f"--load: must be a finite number > 0, got {args.load}")
