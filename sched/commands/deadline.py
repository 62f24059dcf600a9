"""`sched deadline sync`: set an AWS Deadline Cloud queue's job priorities in rank() order
(docs/deadline.md; optional extra ``deadline``)."""

import math
import os
import sys

from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "deadline",
        help="AWS Deadline Cloud adapter: set a queue's job priorities in rank() order "
        "(optional extra deadline)",
    )
    verbs = s.add_subparsers(dest="verb", required=True, metavar="VERB")
    v = verbs.add_parser("sync", help="rank the queue's waiting jobs and set their priorities")
    v.add_argument("--farm-id", dest="farm_id", required=True, metavar="F", help="the farm (farm-...)")
    v.add_argument("--queue-id", dest="queue_id", required=True, metavar="Q", help="the queue (queue-...)")
    v.add_argument("--dry-run", dest="dry_run", action="store_true", help="print the changes, make none")
    v.add_argument(
        "--mapping",
        metavar="FILE",
        help="CSV kept by production: job (a name pattern), weight or priority, due or due_after_h, "
        "task_s, kind (docs/deadline.md)",
    )
    v.add_argument("--region", metavar="R", help="AWS region (default: boto3's, e.g. $AWS_DEFAULT_REGION)")
    v.add_argument(
        "--endpoint-url",
        dest="endpoint_url",
        metavar="URL",
        help="the service's endpoint, as boto3's endpoint_url (a local or recorded one); used as given",
    )
    v.add_argument("--policy", default="auto", help="rank()'s policy (default auto: the benchmark's verdict)")
    v.add_argument(
        "--machines",
        default="1",
        metavar="M",
        help="the farm as rank() sees it, in sched rank --machines' forms: a count, a spec NxSPEED, "
        "a machines CSV or free times (default 1: one queue; 1xN: N workers' worth of work at once)",
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
        default="0:100",
        metavar="LO:HI",
        help="priorities the adapter may assign, within Deadline Cloud's 0 to 100 (default 0:100)",
    )
    v.add_argument(
        "--middle-priority",
        dest="middle",
        type=int,
        default=50,
        metavar="P",
        help="the priority at the middle of the order, within the range (default 50, a new job's)",
    )
    v.add_argument(
        "--decision-log",
        dest="decision_log",
        metavar="FILE",
        help="append one JSON line per sync: the order, what it meant to set and what it set",
    )
    s.set_defaults(func=run)


def _range(text, middle):
    from sched.farms.deadline import HIGHEST, LOWEST

    lo, sep, hi = text.partition(":")
    try:
        lo, hi = int(lo), int(hi)
    except ValueError:
        raise UsageError(f"--priority-range: expected LO:HI (two integers), got {text!r}") from None
    if not sep or not LOWEST <= lo < hi <= HIGHEST:
        raise UsageError(
            f"--priority-range: expected {LOWEST} <= LO < HI <= {HIGHEST} (Deadline Cloud's "
            f"priorities), got {text!r}"
        )
    if not lo <= middle <= hi:
        raise UsageError(f"--middle-priority: expected a priority within {lo}:{hi}, got {middle}")
    return lo, hi


def run(args):
    from sched.commands.rank import parse_machines  # the same forms as sched rank --machines
    from sched.farms import deadline, mapping
    from sched.limits import MAX_SECONDS
    from sched.serve.decision_log import DecisionLog

    bounds = _range(args.priority_range, args.middle)
    machines = parse_machines(args.machines)
    if not (math.isfinite(args.default_due_h) and 0 <= args.default_due_h <= MAX_SECONDS / 3600):
        raise UsageError(
            f"--default-due-h: expected hours >= 0 and at most {MAX_SECONDS / 3600:g} "
            f"(sched.limits.MAX_SECONDS), got {args.default_due_h:g}"
        )
    rules = mapping.read_mapping(args.mapping, unit="task") if args.mapping else []
    log = DecisionLog(args.decision_log) if args.decision_log else None  # refused now, not after
    try:
        report = deadline.sync(
            args.farm_id,
            args.queue_id,
            rules,
            dry_run=args.dry_run,
            now=args.now,
            machines=machines,
            policy=args.policy,
            config=os.path.abspath(args.config) if args.config else None,
            default_due_h=args.default_due_h,
            bounds=bounds,
            middle=args.middle,
            region=args.region,
            endpoint_url=args.endpoint_url,
            decision_log=log,
        )
    finally:
        if log is not None:
            log.close()
    verb = "would set" if report.dry_run else "set"
    shown = mapping.printable  # a name with a new line would forge a line of output
    for name, before, after in report.changes:
        print(f"{verb} {shown(name)}: priority {before} -> {after}")
    for name, why in report.skipped:
        print(f"skipped {shown(name)}: {why}")
    kept = len(report.ranked) - len(report.changes)
    policy = f" by {report.policy}" if report.policy else ""
    print(
        f"{report.scope}: {len(report.ranked)} waiting jobs ranked{policy}, "
        f"{len(report.changes)} priorities {'to change' if report.dry_run else 'changed'}, {kept} kept, "
        f"{len(report.skipped)} skipped" + (" (dry run: nothing set)" if report.dry_run else "")
    )
    for line in report.warnings:
        print(f"sched deadline: warning: {line}", file=sys.stderr)
