"""The ``sched`` command line.

Each subcommand lives in ``sched/commands/<name>.py`` with ``register`` (adds
its parser) and ``run`` (does the work). Heavy libraries (torch above all) are
imported inside ``run`` of the commands that need them, so that
``sched scenario`` or ``sched simulate --policy atc`` start fast. Invalid input
ends a command with exit status 2 and a one-line message on standard error.
"""

import argparse
import importlib
import sys

from sched.errors import SchedError, UsageError  # noqa: F401  (UsageError: for the commands)

#: Subcommands, in the order ``sched --help`` lists them.
COMMANDS = (
    "calibrate",
    "calibrate_workload",
    "calibrate_frames",
    "scenario",
    "simulate",
    "teach",
    "distill",
    "train",
    "tune",
    "benchmark",
    "farm_bench",
    "farm_train",
    "farm_teach",
    "farm_learned",
    "replay",
    "fidelity",
    "gather",
    "clairvoyant",
    "report",
    "manifest",
    "demo",
    "rank",
    "serve",
    "opencue",
    "deadline",
)


def load_cfg(args):
    """The validated config named by ``--config`` (or the default one)."""
    from sched.config import load_config

    return load_config(args.config)


def add_chooser_options(ap):
    """A setting-choosing script's seed options: --skip, --split (validation, or test with
    --confirm) and --confirm (read by :func:`chooser_seeds_or_exit`)."""
    ap.add_argument("--skip", type=int_in(0), default=0, help="start this many seeds later in the split")
    ap.add_argument(
        "--split",
        choices=("validation", "test"),
        default="validation",
        help="validation (default): seeds no workflow step uses; test: needs --confirm",
    )
    ap.add_argument("--confirm", action="store_true", help="with --split test: run on test seeds anyway")


def chooser_seeds_or_exit(cfg, split, count, skip, confirm, script):
    """``sched.evaluate.seeds.chooser_seeds`` for a setting-choosing script (benchmarks/): test
    seeds without ``confirm`` exit 2 with one line; with it, a one-line warning goes to stderr."""
    from sched.evaluate.seeds import UnconfirmedTestSeeds, chooser_seeds, range_text

    try:
        chosen = chooser_seeds(cfg, split, count, skip, confirm, script)
    except UnconfirmedTestSeeds as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    if split == "test":
        print(
            f"{script}: warning: test seeds {range_text(chosen)} can no longer confirm what they choose",
            file=sys.stderr,
        )
    return chosen


def add_farm_sync_options(v, workers, held="paused", limit="max cores"):
    """A farm adapter's `sync` options that rank() reads (--policy, --machines, --now,
    --default-due-h; read by :func:`farm_sync_arguments`) and its holds and limits (--hold, --limits:
    sched.farms.hold, off by default); ``workers``: what the farm calls a machine (hosts, workers);
    ``held``, ``limit``: what a hold and a limit are on the farm."""
    v.add_argument("--policy", default="auto", help="rank()'s policy (default auto: the benchmark's verdict)")
    v.add_argument(
        "--machines",
        default=None,
        metavar="M",
        help="the farm as rank() sees it, in sched rank --machines' forms: a count, a spec NxSPEED, "
        f"a machines CSV or free times (default: the farm's count of {workers} when it reports one, else 1)",
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
        "--hold",
        metavar="FILE",
        help=f"hold jobs (off by default): the jobs a delayed rule (wspt-wait, atc-wait) holds now "
        f"are {held}, and released at a later sync; FILE keeps the ids this adapter {held}, so only "
        "those are ever released, and they are still ranked while held",
    )
    v.add_argument(
        "--limits",
        action="store_true",
        help=f"set job limits (off by default): under a farm verdict shipping a job limit (atc-tuned-cap), "
        f"each ranked job's {limit} set to its limit, where it differs",
    )


def farm_sync_arguments(args, machines):
    """The keyword arguments of a farm adapter's ``sync`` from :func:`add_farm_sync_options`'s
    options, checked (a UsageError naming the option); ``machines``: ``--machines`` read by
    ``sched.commands.rank.parse_machines`` (the forms of ``sched rank --machines``), None when
    not given (the adapter then asks the farm)."""
    import math
    import os

    from sched.limits import MAX_SECONDS

    # hours a due time may lie after a submission: rank() bounds every time by MAX_SECONDS
    if not (math.isfinite(args.default_due_h) and 0 <= args.default_due_h <= MAX_SECONDS / 3600):
        raise UsageError(
            f"--default-due-h: expected hours >= 0 and at most {MAX_SECONDS / 3600:g} "
            f"(sched.limits.MAX_SECONDS), got {args.default_due_h:g}"
        )
    return {
        "now": args.now,
        "machines": machines,
        "policy": args.policy,
        "config": os.path.abspath(args.config) if args.config else None,
        "default_due_h": args.default_due_h,
        "hold": os.path.abspath(args.hold) if args.hold else None,
        "limits": bool(args.limits),
    }


def priority_range(text, lowest, highest, farm):
    """``--priority-range LO:HI`` as (LO, HI), within the farm's [lowest, highest]."""
    lo, sep, hi = text.partition(":")
    try:
        lo, hi = int(lo), int(hi)
    except ValueError:
        raise UsageError(f"--priority-range: expected LO:HI (two integers), got {text!r}") from None
    if not sep or not lowest <= lo < hi <= highest:  # the farm's own range: the dry run's too
        raise UsageError(
            f"--priority-range: expected {lowest} <= LO < HI <= {highest} ({farm}), got {text!r}"
        )
    return lo, hi


def print_sync_report(report, waiting):
    """A farm sync's report (``sched.farms.adapter.SyncReport``) on stdout: each change (or, in a
    dry run, each change it would make), each skipped job with its reason, then one summary line;
    ``waiting``: what the ranked jobs are called (pending, waiting)."""
    from sched.farms.mapping import printable  # a name with a new line would forge a line of output

    verb = "would set" if report.dry_run else "set"
    for name, before, after in report.changes:
        print(f"{verb} {printable(name)}: priority {before} -> {after}")
    for name, why in report.skipped:
        print(f"skipped {printable(name)}: {why}")
    kept = len(report.ranked) - len(report.changes) - len(report.gone_ids)
    policy = f" by {report.policy}" if report.policy else ""
    print(
        f"{report.scope}: {len(report.ranked)} {waiting} jobs ranked{policy}, "
        f"{len(report.changes)} priorities {'to change' if report.dry_run else 'changed'}, {kept} kept, "
        f"{len(report.skipped)} skipped" + (" (dry run: nothing set)" if report.dry_run else "")
    )


class ScriptParser(argparse.ArgumentParser):
    """The argument parser of a script shipped with the project (benchmarks/): a bad argument
    ends it with one line on standard error (``PROG: error: ...``, no usage text), exit 2."""

    def error(self, message):
        print(f"{self.prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
        raise SystemExit(2)


def int_in(lo, hi=None):
    """An argparse type: an integer in [lo, hi] (hi None: no upper bound)."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r:.40}") from None
        if value < lo or (hi is not None and value > hi):
            most = f" and at most {hi}" if hi is not None else ""
            raise argparse.ArgumentTypeError(f"expected an integer >= {lo}{most}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def float_in(lo, hi=None, above=False):
    """An argparse type: a finite number >= lo (> lo with ``above``), at most hi when given."""
    import math

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r:.40}") from None
        low_ok = value > lo if above else value >= lo
        if not (math.isfinite(value) and low_ok and (hi is None or value <= hi)):
            most = f" and at most {hi:g}" if hi is not None else ""
            raise argparse.ArgumentTypeError(
                f"expected a finite number {'>' if above else '>='} {lo:g}{most}, got {text!r:.40}"
            )
        return value

    parse.__name__ = "number"
    return parse


def run_script(main, prog, argv=None):
    """``main(argv)`` of a shipped script, its bad input (a SchedError, ValueError or OSError)
    ended as one line on standard error with exit status 2; returns the exit status."""
    try:
        return main(argv) or 0
    except BrokenPipeError:
        return 0
    except (SchedError, ValueError) as exc:
        message = str(exc) or type(exc).__name__
    except OSError as exc:
        message = f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc.strerror or exc)
    except RecursionError:
        message = "input nested too deeply"
    lines = message.strip().splitlines() or ["error"]
    print(f"{prog}: error: {lines[0]}", file=sys.stderr)
    return 2


def build_parser():
    p = argparse.ArgumentParser(
        prog="sched",
        description="Render-queue scheduler: scenarios, simulation, dispatching rules and PPO.",
    )
    p.add_argument(
        "--config",
        default=None,
        help="config file; its relative paths are read from its folder (default: $SCHED_CONFIG, "
        "else ./config.yaml if present, else built-in defaults)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"sched.commands.{name}").register(sub)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except BrokenPipeError:
        return 0
    except (SchedError, ValueError) as exc:
        return _fail(args.command, str(exc) or type(exc).__name__)
    except OSError as exc:  # a file or folder that cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args.command, f"{where}{exc.strerror or exc}")
    except RecursionError:
        return _fail(args.command, "input nested too deeply")
    return 0


def _fail(command, message):
    """One line on standard error, exit status 2."""
    lines = message.strip().splitlines() or ["error"]
    print(f"sched {command}: error: {lines[0]}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
