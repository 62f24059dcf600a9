"""`sched rank`: the order in which to start the tasks waiting now (JSON in, JSON out)."""

import json
import sys

from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "rank", help="order the tasks waiting now; prints their ids as JSON, first to start first"
    )
    s.add_argument(
        "file",
        nargs="?",
        default="-",
        metavar="FILE",
        help="JSON list of task objects (id, estimate_s, weight or priority, due, "
        "optional arrival, kind); '-' or absent: standard input",
    )
    s.add_argument(
        "--now",
        help="current time: seconds on the tasks' clock, or an ISO 8601 "
        "datetime with time zone (default: 0 for seconds, the current "
        "time for datetimes)",
    )
    s.add_argument(
        "--policy",
        default=None,
        help="auto (default: the benchmark's winner, else ATC), fifo, spt, edd, wspt, "
        "atc, wmdd, atc-tuned, ppo-<seed>, or a policy file",
    )
    s.add_argument(
        "--policy-file", dest="policy_file", metavar="F", help="trained policy file (implies --policy ppo)"
    )
    s.add_argument(
        "--machines",
        default="1",
        metavar="M",
        help="count of free GPUs, or comma-separated times at which each GPU becomes "
        "free, e.g. 0,1800 (one busy GPU: '1800,')",
    )
    s.add_argument(
        "--explain",
        action="store_true",
        help="print the plan as JSON records: machine, start, end, lateness, tardiness, policy",
    )
    s.set_defaults(func=run)


def _time_arg(text):
    try:
        return float(text)
    except ValueError:
        return text.strip()  # a datetime: rank() parses and checks it


def parse_machines(text):
    """``--machines``: a count, or comma-separated free times."""
    text = text.strip()
    if "," not in text:
        try:
            return int(text)
        except ValueError:
            raise UsageError(
                f"--machines: expected a count of GPUs or comma-separated free times, got {text!r}"
            ) from None
    items = [t.strip() for t in text.split(",")]
    if items and items[-1] == "":
        items.pop()  # "1800," is a list of one
    if not items or any(t == "" for t in items):
        raise UsageError(f"--machines: empty item in {text!r}")
    return [_time_arg(t) for t in items]


def read_tasks(source):
    """The JSON list of task objects in ``source`` (a path, or '-' for standard input)."""
    name = "standard input" if source == "-" else source
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            with open(source, encoding="utf-8") as fh:
                text = fh.read()
    except FileNotFoundError:
        raise UsageError(f"{source}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name}: not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise UsageError(f"{name}: expected a JSON list of task objects, got {type(data).__name__}")
    return data


def run(args):
    from sched.serve.explain import explain_records
    from sched.serve.ranker import rank

    policy = args.policy
    if policy is None:
        policy = "ppo" if args.policy_file else "auto"
    machines = parse_machines(args.machines)
    now = _time_arg(args.now) if args.now is not None else None
    tasks = read_tasks(args.file)
    cfg = load_cfg(args)
    out = rank(
        tasks,
        now=now,
        policy=policy,
        machines=machines,
        explain=args.explain,
        config=cfg,
        policy_file=args.policy_file,
    )
    if args.explain:
        # one record a line: still one JSON document, and readable
        records = [json.dumps(r) for r in explain_records(out)]
        print("[" + ",\n ".join(records) + "]")
    else:
        print(json.dumps(out))
