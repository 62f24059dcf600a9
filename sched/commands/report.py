"""`sched report`: rapport.md and the figures, from the benchmark's files."""

import sys

from sched import layout
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser("report", help="write rapport.md and the figures from the benchmark's files")
    s.add_argument(
        "--bench",
        default=layout.BENCH_DIR,
        help="folder with per_scenario.csv, resume.csv, winner.json, tuned.json, "
        "clairvoyant.csv (default: %(default)s)",
    )
    s.add_argument("--out", default=layout.REPORT_PATH, help="report file (default: %(default)s)")
    s.add_argument("--figures", default=layout.FIGURES_DIR, help="figure folder (default: %(default)s)")
    s.add_argument(
        "--train-dir",
        default=layout.train_dir(),
        help="training output folder with seed-<S>/train_log.csv (default: %(default)s)",
    )
    s.add_argument(
        "--demo", default=layout.DEMO_DIR, help="`sched demo` output folder (default: %(default)s)"
    )
    s.add_argument(
        "--robustness",
        default=layout.ROBUST_DIR,
        help="folder with <setting>/resume.csv for each robustness setting (default: %(default)s)",
    )
    s.add_argument(
        "--replay",
        default=layout.REPLAY_DIR,
        help="`sched replay` output folder; its tables go in the report when present (default: %(default)s)",
    )
    s.add_argument(
        "--workload",
        default=layout.WORKLOAD,
        help="`sched calibrate-workload` output; summarised beside the replay when present "
        "(default: %(default)s)",
    )
    s.add_argument(
        "--manifest",
        default=layout.MANIFEST,
        help="the results' manifest (`sched manifest write`), whose digest the report prints "
        "(default: %(default)s)",
    )
    s.add_argument(
        "--farm",
        nargs="*",
        default=[],
        metavar="DIR",
        help="the chunked farm settings' folders (`sched farm-bench`: farm.csv, farm_verdict.json), in "
        "the report's order; those not built are left out",
    )
    s.add_argument(
        "--readme",
        metavar="README",
        help="also rewrite the results block of this README (its lines between the markers) "
        "with the report's tables; the workflow never does, run it after a full run",
    )
    s.set_defaults(func=run)


def run(args):
    from sched.report.document import build

    cfg = load_cfg(args)
    written = build(
        cfg,
        args.bench,
        args.out,
        args.figures,
        args.train_dir,
        args.demo,
        config_path=args.config,
        robust_dir=args.robustness,
        readme=args.readme,
        replay_dir=args.replay,
        workload=args.workload,
        manifest_path=args.manifest,
        farm_dirs=args.farm,
    )
    for p in written:
        print(f"wrote {p}", file=sys.stderr)
