"""`sched clairvoyant`: the headroom reference, a local search knowing the future."""

import sys
import time

from sched import layout, threads
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser(
        "clairvoyant", help="best schedule found knowing all future arrivals (headroom reference)"
    )
    s.add_argument(
        "--seeds",
        metavar="RANGE",
        help="test seeds A-B or N (default: the first benchmark.clairvoyant.scenarios test seeds)",
    )
    s.add_argument(
        "--out", default=f"{layout.BENCH_DIR}/{layout.CLAIRVOYANT}", help="output CSV (default: %(default)s)"
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from sched import files
    from sched.evaluate.headroom import run_reference
    from sched.evaluate.seeds import (
        benchmark_seeds,
        check_within,
        clairvoyant_seeds,
        parse_seed_range,
        range_text,
    )
    from sched.verdict.summary import UNIT

    cfg = load_cfg(args)
    threads.apply(args.threads)
    seeds = (
        clairvoyant_seeds(cfg)
        if args.seeds is None
        else check_within(parse_seed_range(args.seeds), benchmark_seeds(cfg), "--seeds")
    )
    t0 = time.perf_counter()
    table = run_reference(cfg, seeds, progress=True)
    wall = time.perf_counter() - t0
    files.write_csv(args.out, table)
    start, clair = table["start_twt_s"].sum(), table["clairvoyant_twt_s"].sum()
    print(
        f"{len(table)} scenarios ({range_text(seeds)}), {wall:.1f} s: best rule "
        f"{start / UNIT:.3f} k w.s, clairvoyant {clair / UNIT:.3f} k w.s in total "
        f"({(start - clair) / start * 100 if start > 0 else 0.0:.1f} % lower)"
    )
    print(f"wrote {args.out}", file=sys.stderr)
