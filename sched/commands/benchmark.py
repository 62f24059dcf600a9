"""`sched benchmark`: every policy on the test scenarios (a shard or all of them)."""

import sys
from pathlib import Path

from sched import threads
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser(
        "benchmark", help="run the policies on test scenarios; per-scenario CSV (+ summary for a full run)"
    )
    s.add_argument(
        "--policies",
        help="comma-separated policy names (default: fifo,spt,edd,wspt,"
        "atc,wmdd,atc-tuned and ppo-<S> for each S in train.seeds)",
    )
    s.add_argument(
        "--seeds", metavar="RANGE", help="test seeds A-B (inclusive) or N: a shard (default: every test seed)"
    )
    s.add_argument(
        "--tuned",
        default="results/benchmark/tuned.json",
        help="`sched tune` output giving atc-tuned's k (default: %(default)s)",
    )
    s.add_argument(
        "--policy-file",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="policy file of a PPO policy, e.g. ppo-1=results/train/seed-1/politique.pt "
        "(default: results/train/seed-<S>/politique.pt); repeatable",
    )
    s.add_argument(
        "--out",
        help="output folder (default: results/benchmark for a full run, "
        "results/benchmark/shards/A-B for a shard)",
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from sched.evaluate import benchmark as bm

    cfg = load_cfg(args)
    threads.apply(args.threads)
    all_seeds = bm.benchmark_seeds(cfg)
    seeds = (
        all_seeds
        if args.seeds is None
        else bm.check_within(bm.parse_seed_range(args.seeds), all_seeds, "--seeds")
    )
    full = seeds == all_seeds
    out = (
        Path(args.out)
        if args.out
        else (
            Path(bm.DEFAULT_BENCH_DIR)
            if full
            else Path(bm.DEFAULT_BENCH_DIR) / "shards" / bm.range_text(seeds)
        )
    )
    names = bm.parse_policies(args.policies, cfg)
    if full:
        missing = [r for r in ("fifo", "atc") if r not in names]
        if missing:
            raise bm.BenchmarkError(
                f"--policies: a full run writes resume.csv, which compares to "
                f"{' and '.join(missing)}; add {','.join(missing)}"
            )
    specs, _ = bm.resolve_policies(
        cfg, names, tuned=args.tuned, policy_files=bm.parse_policy_files(args.policy_file)
    )
    timings = {}
    frame = bm.run_policies(cfg, seeds, specs, progress=True, timings=timings)
    written = bm.write_outputs(out, frame, cfg, specs, full)
    means = frame.groupby("policy")["total_weighted_tardiness_s"].mean()
    print(
        f"{len(seeds)} scenarios ({bm.range_text(seeds)}), {len(specs)} policies{'' if full else ' (shard)'}"
    )
    print(f"{'policy':12} {'mean TWT (k w.s)':>17} {'time (s)':>9}")
    for name in sorted(specs, key=bm.policy_key):
        print(f"{name:12} {means[name] / bm.UNIT:17.3f} {timings[name]:9.3f}")
    for p in written:
        print(f"wrote {p}", file=sys.stderr)
