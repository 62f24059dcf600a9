"""`sched rank`: the order in which to start the tasks waiting now (JSON in, JSON out).

The input is read bounded: at most ``sched.limits.MAX_RANK_BYTES`` bytes of
UTF-8 JSON, nested at most as deep as Python's JSON parser goes (about 1,000
levels), without ``NaN`` or ``Infinity`` (not JSON); anything else is one
line and exit status 2, naming the file. The output is strict JSON.
"""

import json
import os
import sys

from sched.cli import load_cfg
from sched.data.machines import MachinesError, is_spec, speeds
from sched.errors import UsageError
from sched.limits import MAX_RANK_BYTES


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
        "datetime with time zone (one without: UTC, as the tasks' naive datetimes; default: 0 "
        "for seconds, the current time for datetimes)",
    )
    s.add_argument(
        "--policy",
        default=None,
        help="auto (default: the benchmark's winner, else ATC), fifo, spt, edd, wspt, "
        "atc, wmdd, atc-tuned, ppo-<seed>, plan (lookahead on config plan.base), or a policy file",
    )
    s.add_argument(
        "--policy-file", dest="policy_file", metavar="F", help="trained policy file (implies --policy ppo)"
    )
    s.add_argument(
        "--machines",
        default="1",
        metavar="M",
        help="count of free GPUs; GPU speeds as NxSPEED[,NxSPEED...], e.g. 2x1.0,2x0.6, or a "
        "machines CSV (name,speed), every GPU free now; or comma-separated times at which each "
        "GPU becomes free, e.g. 0,1800 (one busy GPU: '1800,')",
    )
    s.add_argument(
        "--budget-ms",
        dest="budget_ms",
        type=float,
        metavar="N",
        help="--policy plan: time budget per call in milliseconds (default: config plan.budget_ms; "
        "none: every sample)",
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
    """``--machines``: a count, a spec or CSV path (passed on to rank()), or comma-separated free times.

    The ``x`` of a spec (``2x1.0,2x0.6``) tells it from a list of free times.
    """
    text = text.strip()
    if is_spec(text) or os.path.isfile(text) or text.lower().endswith(".csv"):
        try:  # checked here, naming the option; rank() reads it again with sched.data.machines
            speeds(text, "--machines")
        except MachinesError as exc:
            raise UsageError(str(exc)) from None
        return text
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
    """The JSON list of task objects in ``source`` (a path, or '-' for standard input).

    Refused in one line naming the source (``sched.ranking.request``, which ``sched serve``
    shares): more than MAX_RANK_BYTES bytes, text that is not UTF-8 or not JSON, ``NaN`` or
    ``Infinity``, nesting too deep for the parser, anything but a list.
    """
    from sched import files
    from sched.ranking.request import task_list, too_large

    name = "standard input" if source == "-" else source
    try:
        if source == "-":
            stream = getattr(sys.stdin, "buffer", sys.stdin)
            data = stream.read(MAX_RANK_BYTES + 1)
        else:  # the one bounded reader: a regular file, opened without blocking (a FIFO refused)
            if os.path.isfile(source) and os.stat(source).st_size > MAX_RANK_BYTES:
                raise UsageError(too_large(name))
            data = files.read_bytes(source, UsageError, MAX_RANK_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{source}: file not found") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    return task_list(data, name)


def run(args):
    from sched.ranking.explain import explain_records
    from sched.ranking.ranker import rank

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
        budget_ms=args.budget_ms,
    )
    if args.explain:
        # one record a line: still one JSON document, and readable
        records = [json.dumps(r, allow_nan=False) for r in explain_records(out)]
        print("[" + ",\n ".join(records) + "]")
    else:
        print(json.dumps(out, allow_nan=False))
