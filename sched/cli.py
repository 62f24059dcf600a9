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
    "scenario",
    "simulate",
    "teach",
    "distill",
    "train",
    "tune",
    "benchmark",
    "replay",
    "fidelity",
    "gather",
    "clairvoyant",
    "report",
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
    ap.add_argument("--skip", type=int, default=0, help="start this many seeds later in the split")
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
