"""`sched opencue sync`: set an OpenCue show's job priorities in rank() order (docs/opencue.md;
optional extra ``opencue``)."""

import math
import os

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
    v.add_argument("--policy", default="auto", help="rank()'s policy (default auto: the benchmark's verdict)")
    v.add_argument(
        "--machines",
        default="1",
        metavar="M",
        help="the farm as rank() sees it, in sched rank --machines' forms: a count, a spec NxSPEED, "
        "a machines CSV or free times (default 1: one queue; 1xN: N hosts' worth of work at once)",
    )
    v.add_argument(
        "--now", type=float, metavar="T", help="current time in POSIX seconds (default: the clock)"
    )
    v.add_argument(
        "--default-due-h",
        dest="default_due_h",
        type=float,
        default=24.0,
        metavar="H",
        help="due time of an unmapped job, in hours after its submission (default 24)",
    )
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


def _range(text, most):
    lo, sep, hi = text.partition(":")
    try:
        lo, hi = int(lo), int(hi)
    except ValueError:
        raise UsageError(f"--priority-range: expected LO:HI (two integers), got {text!r}") from None
    if not sep or not 0 <= lo < hi <= most:  # most: OpenCue's largest, the dry run's too
        raise UsageError(
            f"--priority-range: expected 0 <= LO < HI <= {most} (OpenCue's priorities are "
            f"32-bit integers), got {text!r}"
        )
    return lo, hi


def run(args):
    from sched.commands.rank import parse_machines  # the same forms as sched rank --machines
    from sched.farms import mapping, opencue
    from sched.limits import MAX_SECONDS

    bounds = _range(args.priority_range, opencue.MAX_PRIORITY)
    machines = parse_machines(args.machines)
    # hours a due time may lie after a submission: rank() bounds every time by MAX_SECONDS
    if not (math.isfinite(args.default_due_h) and 0 <= args.default_due_h <= MAX_SECONDS / 3600):
        raise UsageError(
            f"--default-due-h: expected hours >= 0 and at most {MAX_SECONDS / 3600:g} "
            f"(sched.limits.MAX_SECONDS), got {args.default_due_h:g}"
        )
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
        now=args.now,
        machines=machines,
        policy=args.policy,
        config=os.path.abspath(args.config) if args.config else None,
        default_due_h=args.default_due_h,
        bounds=bounds,
        timeout_s=args.timeout_s,
    )
    verb = "would set" if report.dry_run else "set"
    shown = mapping.printable  # a name with a new line would forge a line of output
    for name, before, after in report.changes:
        print(f"{verb} {shown(name)}: priority {before} -> {after}")
    for name, why in report.skipped:
        print(f"skipped {shown(name)}: {why}")
    kept = len(report.ranked) - len(report.changes)
    policy = f" by {report.policy}" if report.policy else ""
    print(
        f"{report.scope}: {len(report.ranked)} pending jobs ranked{policy}, "
        f"{len(report.changes)} priorities {'to change' if report.dry_run else 'changed'}, {kept} kept, "
        f"{len(report.skipped)} skipped" + (" (dry run: nothing set)" if report.dry_run else "")
    )
