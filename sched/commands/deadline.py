"""`sched deadline sync`: set an AWS Deadline Cloud queue's job priorities in rank() order
(docs/deadline.md; optional extra ``deadline``)."""

import sys

from sched.cli import add_farm_sync_options, farm_sync_arguments, print_sync_report, priority_range
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
    add_farm_sync_options(v, "workers", "suspended", "maxWorkerCount")
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
        help="append one JSON line per sync: the order, what it meant to set and what it set "
        "(none by a dry run, which writes nothing)",
    )
    v.add_argument(
        "--calls",
        type=int,
        default=8,
        metavar="N",
        help="per-job calls (SearchTasks; GetJob on an older botocore) at once, 1 to 64 (default 8)",
    )
    v.add_argument(
        "--task-times",
        dest="task_times",
        metavar="FILE",
        help="the measured task times kept between syncs: a job whose succeeded tasks did not change "
        "costs no call (default: FILE.task-times.json beside --decision-log FILE; none without it)",
    )
    s.set_defaults(func=run)


def _range(text, middle):
    from sched.farms.deadline_jobs import HIGHEST, LOWEST

    lo, hi = priority_range(text, LOWEST, HIGHEST, "Deadline Cloud's priorities")
    if not lo <= middle <= hi:
        raise UsageError(f"--middle-priority: expected a priority within {lo}:{hi}, got {middle}")
    return lo, hi


def _task_times(args):
    """The task-times file: --task-times, else beside the decision log, else none."""
    if args.task_times:
        return args.task_times
    return f"{args.decision_log}.task-times.json" if args.decision_log else None


def run(args):
    from sched.commands.rank import parse_machines
    from sched.farms import deadline, mapping
    from sched.serve.decision_log import DecisionLog

    bounds = _range(args.priority_range, args.middle)
    ranking = farm_sync_arguments(args, None if args.machines is None else parse_machines(args.machines))
    rules = mapping.read_mapping(args.mapping, unit="task") if args.mapping else []
    # refused now, not after; a dry run writes nothing: neither the log nor the task times
    log = DecisionLog(args.decision_log) if args.decision_log and not args.dry_run else None
    try:
        report = deadline.sync(
            args.farm_id,
            args.queue_id,
            rules,
            dry_run=args.dry_run,
            bounds=bounds,
            middle=args.middle,
            region=args.region,
            endpoint_url=args.endpoint_url,
            decision_log=log,
            calls=args.calls,
            task_times=_task_times(args),
            **ranking,
        )
    finally:
        if log is not None:
            log.close()
    print_sync_report(report, "waiting")
    for line in report.warnings:
        print(f"sched deadline: warning: {line}", file=sys.stderr)
