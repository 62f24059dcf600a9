"""`sched replay`: every policy on the queue history cut into windows (days), each a scenario."""

import os
import re
import sys
from pathlib import Path

import numpy as np

from sched import layout, threads
from sched.cli import load_cfg
from sched.commands import add_plan_inputs, add_policy_inputs

#: The name of a window's scenario file (sched.data.workload.replay: replay-DATE, or replay-DATETHHMM for
#: windows that are not whole days): the only files --scenarios-out removes.
WINDOW_FILE = re.compile(r"replay-[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{4})?\.csv")


def register(sub):
    s = sub.add_parser(
        "replay",
        help="run the policies on the queue history cut into windows; per-window CSV and summary",
        description="Cut a queue history (docs/workload.md) into windows, each a scenario with its real "
        "arrivals, priorities, deadlines and measured durations (estimates from the duration model), "
        "and run every policy on them: per_scenario.csv (scenario_seed = window index), resume.csv with "
        "paired intervals, and windows.csv naming each window.",
    )
    s.add_argument(
        "history", nargs="*", metavar="HISTORY", help="history files; default: config workload.history"
    )
    s.add_argument("--window-hours", type=float, default=24.0, help="window length in hours (default: 24)")
    s.add_argument(
        "--min-tasks", type=int, default=10, help="windows with fewer tasks are left out (default: 10)"
    )
    s.add_argument(
        "--calibration",
        help="calibration file whose duration model gives the estimates (default: scenario.calibration)",
    )
    s.add_argument("--policies", help="comma-separated policy names (default: those of `sched benchmark`)")
    add_policy_inputs(s, "`sched tune` output giving atc-tuned's k", "policy file of a learned policy")
    add_plan_inputs(s, selection=False)  # plan on the verdict's base, at its candidacy's setting
    s.add_argument(
        "--held-out",
        nargs="?",
        const="",
        metavar="WORKLOAD",
        help="replay only the days the workload file (default: scenario.workload, else "
        f"{layout.WORKLOAD}) held out of its fit, as one continuous stream from the day before "
        "(the backlog carried over midnight stays queued); each task counts toward its submission day",
    )
    s.add_argument(
        "--validation",
        nargs="?",
        const="",
        metavar="WORKLOAD",
        help="as --held-out, on the validation days the workload file kept before its held-out days "
        "(split.validation, workload.validation_days): the days the studio's verdict is chosen on",
    )
    s.add_argument("--out", default=layout.REPLAY_DIR, help="output folder (default: %(default)s)")
    s.add_argument("--scenarios-out", help="also write each window as a scenario CSV in this folder")
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    import pandas as pd

    from sched.data.scenario import write_scenario
    from sched.data.workload.replay import replay_scenarios
    from sched.errors import UsageError
    from sched.evaluate.runs import run_on_scenarios
    from sched.verdict.outputs import write_outputs

    cfg = load_cfg(args)
    threads.apply(args.threads)
    calibration = args.calibration or cfg.scenario.calibration
    if not calibration:
        raise UsageError(
            "--calibration: no calibration file (scenario.calibration is null); the estimates need one"
        )
    if args.min_tasks < 1:
        raise UsageError(f"--min-tasks: must be >= 1, got {args.min_tasks}")
    if not 0 < args.window_hours <= 24 * 7 * 52:
        raise UsageError(f"--window-hours: must be in (0, 8736], got {args.window_hours:g}")
    if args.held_out is not None and args.validation is not None:
        raise UsageError("--held-out, --validation: give one period to replay, not both")
    if args.held_out is not None:
        return run_held_out(args, cfg, calibration, "held_out", args.held_out)
    if args.validation is not None:
        return run_held_out(args, cfg, calibration, "validation", args.validation)
    specs = _specs(args, cfg)  # every argument checked before any window is cut or run
    replay = replay_scenarios(
        args.history or cfg.workload.history, cfg, calibration, args.window_hours, args.min_tasks
    )
    for note in replay.notes:
        print(f"sched replay: note: {note}", file=sys.stderr)
    keys = list(range(len(replay.scenarios)))
    frame = run_on_scenarios(cfg, keys, replay.scenarios, specs, progress=True)
    out = Path(args.out)
    windows = pd.DataFrame(
        {
            "scenario_seed": keys,
            "window": [s.name for s in replay.scenarios],
            "tasks": [len(s) for s in replay.scenarios],
            "window_hours": args.window_hours,
        }
    )
    written = write_outputs(out, frame, cfg, specs, full=True, extra=[(layout.REPLAY_WINDOWS, windows)])
    if args.scenarios_out:
        folder = Path(args.scenarios_out)
        for s in replay.scenarios:
            write_scenario(folder / f"{s.name}.csv", s)
        stale = remove_old_windows(folder, {f"{s.name}.csv" for s in replay.scenarios})
        if stale:
            print(
                f"sched replay: removed {len(stale)} window file(s) of an earlier replay from {folder}",
                file=sys.stderr,
            )
    print(
        f"{len(keys)} windows of {args.window_hours:g} h ({int(np.sum(windows['tasks']))} tasks), "
        f"{len(specs)} policies"
    )
    _print_means(frame, "k w.s")
    for p in written:
        print(f"wrote {p}", file=sys.stderr)


def _specs(args, cfg):
    """The policies to replay (--policies, --tuned, --policy-file; plan's base and setting:
    --plan-on with --plan-setting or --plan-candidacy), as benchmark specs."""
    from sched.commands import plan_base_of, plan_setting_of
    from sched.evaluate.policies import (
        benchmark_policies,
        parse_policies,
        parse_policy_files,
        resolve_policies,
    )

    names = parse_policies(args.policies, cfg, default=benchmark_policies)
    missing = [r for r in ("fifo", "atc") if r not in names]  # resume.csv's references
    if missing:
        from sched.evaluate.errors import BenchmarkError

        raise BenchmarkError(
            f"--policies: the replay writes resume.csv, which compares to {' and '.join(missing)}; "
            f"add {','.join(missing)}"
        )
    files = parse_policy_files(args.policy_file)
    base = plan_base_of(args, cfg, names, files)
    setting = plan_setting_of(args, cfg, base)
    specs, _ = resolve_policies(
        cfg, names, tuned=args.tuned, policy_files=files, plan_base=base, plan_setting=setting
    )
    return specs


def _print_means(frame, unit):
    """Each policy's mean total weighted tardiness, lowest first."""
    from sched.verdict.summary import UNIT

    means = frame.groupby("policy")["total_weighted_tardiness_s"].mean()
    for name, m in means.sort_values().items():
        print(f"{name:12} {m / UNIT:12.3f} {unit}")


def remove_old_windows(folder, kept):
    """Remove the window files of an earlier replay from ``folder`` (names matching WINDOW_FILE,
    regular files only, not in ``kept``); any other file is left alone. The removed paths."""
    removed = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if (
            WINDOW_FILE.fullmatch(entry.name)
            and entry.name not in kept
            and entry.is_file(follow_symlinks=False)
        ):
            os.unlink(entry.path)
            removed.append(entry.path)
    return removed


#: What each period of `sched replay`'s streams is called in its messages, and its option.
PERIOD_WORDS = {
    "held_out": ("held-out", "--held-out", "workload.test_days"),
    "validation": ("validation", "--validation", "workload.validation_days"),
}


def run_held_out(args, cfg, calibration, period="held_out", given="", specs=None):
    """`sched replay --held-out` (or ``--validation``): the days of that period of the workload
    file's split as one stream, a row per day and policy."""
    import pandas as pd

    from sched.data.workload.replay import held_out_stream
    from sched.data.workload.workload import load_workload, period_days
    from sched.errors import UsageError
    from sched.evaluate.runs import run_on_stream
    from sched.verdict.outputs import write_outputs

    word, option, field = PERIOD_WORDS[period]
    path = given or cfg.scenario.workload or layout.WORKLOAD
    workload = load_workload(path)
    days = period_days(workload, period)
    if days is None:
        why = (workload.get("split") or {}).get("note") or f"see {field}"
        raise UsageError(
            f"{option}: workload file {path} holds no {word} days (split.{period} is null: {why})"
        )
    if specs is None:  # the period's file first, then every argument, before any day is replayed
        specs = _specs(args, cfg)
    stream = held_out_stream(
        args.history or cfg.workload.history,
        cfg,
        calibration,
        days,
        fitted_on=(path, workload.get("sources")),
        label=word,
    )
    if stream.unmeasured:
        print(
            f"sched replay: note: {stream.unmeasured} tasks without a measured duration were left out",
            file=sys.stderr,
        )
    if stream.skipped:
        print(
            f"sched replay: note: {word} day(s) {', '.join(stream.skipped)} hold no task with a measured "
            f"duration: skipped, {len(stream.days)} of the {len(stream.days) + len(stream.skipped)} "
            f"{word} days judged (the stream runs on through them)",
            file=sys.stderr,
        )
    frame = run_on_stream(cfg, stream.scenario, stream.day, len(stream.days), specs, progress=True)
    counts = np.bincount(stream.day[stream.day >= 0], minlength=len(stream.days))
    windows = pd.DataFrame(
        {
            "scenario_seed": range(len(stream.days)),
            "window": stream.days,
            "tasks": counts,
            "window_hours": 24.0,
        }
    )
    out = Path(args.out)
    written = write_outputs(
        out, frame, cfg, specs, full=False, subset_summary=True, extra=[(layout.REPLAY_WINDOWS, windows)]
    )
    print(
        f"{len(stream.days)} {word} days replayed as one stream ({len(stream.scenario)} tasks, "
        f"{int((stream.day < 0).sum())} of them the day before's), {len(specs)} policies"
    )
    _print_means(frame, "k w.s a day")
    for p in written:
        print(f"wrote {p}", file=sys.stderr)
