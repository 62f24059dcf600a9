"""`sched calibrate-frames`: frames per job and time per frame from bench logs or a queue history."""

import sys
from pathlib import Path

from sched import layout
from sched.cli import load_cfg
from sched.errors import UsageError


def register(sub):
    s = sub.add_parser(
        "calibrate-frames",
        help="fit frames per job and time per frame by kind (and class) to the frames column of bench "
        "logs or of a queue history",
        description="Write a frames fit (sched.data.frames_fit): per kind, and per priority class for a "
        "history, frames per job as a lognormal (median, sigma, max) and the time per frame. Config "
        "scenario.chunks.frames: {fit: FILE} draws a chunked setting's frames from it.",
    )
    s.add_argument(
        "bench",
        nargs="*",
        metavar="BENCH",
        help="bench logs (.csv, .jsonl); default: config calibration.bench (unless --history)",
    )
    s.add_argument(
        "--history",
        nargs="+",
        metavar="HISTORY",
        help="fit a queue history's optional frames column instead of bench logs",
    )
    s.add_argument(
        "--allow-empty",
        action="store_true",
        help="with --history: a history without frames gives a fit of no kind instead of an error",
    )
    s.add_argument("--out", default=layout.FRAMES_FIT, help=f"frames fit JSON (default: {layout.FRAMES_FIT})")
    s.set_defaults(func=run)


def run(args):
    from sched import files
    from sched.data import frames_fit

    cfg = load_cfg(args)
    if args.allow_empty and not args.history:
        raise UsageError("calibrate-frames: --allow-empty goes with --history")
    if args.history and args.bench:
        raise UsageError("calibrate-frames: give bench logs or --history, not both")
    if args.history:
        w = cfg.workload
        data = frames_fit.fit_history(
            args.history, cfg.scenario.priorities, w.max_bad_share, args.allow_empty
        )
    else:
        data = frames_fit.fit_bench(args.bench or cfg.calibration.bench, cfg.calibration)
    out = Path(args.out)
    files.write_json(out, data)
    for name, e in sorted(data["kinds"].items()) + sorted((data["classes"] or {}).items()):
        f, t = e["frames"], e["time_per_frame"]
        per = f"; time per frame median {t['median_s']:.3g} s, sigma {t['sigma']:.2f}" if t else ""
        print(
            f"{name}: {e['jobs']} jobs, frames median {f['median']:.3g}, sigma {f['sigma']:.2f}, "
            f"max {f['max']}{per}"
        )
    print(f"wrote {out}", file=sys.stderr)
