"""`sched opencue sync`: set an OpenCue show's job priorities in rank() order (docs/opencue.md;
optional extra ``opencue``)."""

import math
import sys

from sched.cli import add_farm_sync_options, farm_sync_arguments, print_sync_report, priority_range
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "opencue",
        help="OpenCue adapter: set a show's job priorities in rank() order (optional extra opencue)",
    )
    verbs = s.add_subparsers(dest="verb", required=True, metavar="VERB")
    v = verbs.add_parser("sync", help="rank the show's pending jobs and set their priorities")
    v.add_argument("--show", required=True, help="the OpenCue show whose pending jobs are ranked")
    v.add_argument("--dry-run", dest="dry_run", action="store_true", help="print the changes, make none")
    v.add_argument(
        "--mapping",
        metavar="FILE",
        help="CSV kept by production: job (a name pattern), weight or priority, due or due_after_h, "
        "frame_s, kind (docs/opencue.md)",
    )
    v.add_argument(
        "--cuebot",
        action="append",
        metavar="HOST:PORT",
        help="Cuebot address (repeatable; default: $CUEBOT_HOSTS, else pycue's config)",
    )
    add_farm_sync_options(v, "hosts", "paused", "max cores (one core a frame)")
    v.add_argument(
        "--priority-range",
        dest="priority_range",
        default="1:100000",
        metavar="LO:HI",
        help="priorities the adapter may assign, within OpenCue's 0 to 2147483647 (default 1:100000)",
    )
    v.add_argument(
        "--timeout-s",
        dest="timeout_s",
        type=float,
        default=10.0,
        help="timeout of each Cuebot call, in seconds (default 10, at most 86400)",
    )
    s.set_defaults(func=run)


def run(args):
    from sched.commands.rank import parse_machines
    from sched.farms import mapping, opencue

    bounds = priority_range(
        args.priority_range, 0, opencue.MAX_PRIORITY, "OpenCue's priorities are 32-bit integers"
    )
    ranking = farm_sync_arguments(args, None if args.machines is None else parse_machines(args.machines))
    # else pycue's calls fail at once, as if Cuebot could not be reached
    if not (math.isfinite(args.timeout_s) and 0 < args.timeout_s <= opencue.MAX_TIMEOUT_S):
        raise UsageError(
            f"--timeout-s: expected a finite number > 0 and at most {opencue.MAX_TIMEOUT_S:g} "
            f"(seconds), got {args.timeout_s:g}"
        )
    rules = mapping.read_mapping(args.mapping) if args.mapping else []
    hosts = [h.strip() for item in args.cuebot or [] for h in item.split(",") if h.strip()] or None
    report = opencue.sync(
        args.show,
        rules,
        dry_run=args.dry_run,
        hosts=hosts,
        bounds=bounds,
        timeout_s=args.timeout_s,
        **ranking,
    )
    print_sync_report(report, "pending")
    for line in report.warnings:
        print(f"sched opencue: warning: {line}", file=sys.stderr)
