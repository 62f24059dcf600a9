"""`sched benchmark`: every policy on the test scenarios (a shard or all of them)."""

import sys
from pathlib import Path

from sched import layout, threads
from sched.cli import load_cfg
from sched.commands import add_policy_inputs


def register(sub):
    s = sub.add_parser(
        "benchmark", help="run the policies on test scenarios; per-scenario CSV (+ summary for a full run)"
    )
    s.add_argument(
        "--policies",
        help="comma-separated policy names (default: fifo,spt,edd,wspt,"
        "atc,wmdd,atc-tuned, ppo-<S> for each S in train.seeds and, when train.teacher_scenarios > 0, "
        "its warm start ppo-<S>-warm); plan (the planner on config plan.base) on request",
    )
    s.add_argument(
        "--seeds", metavar="RANGE", help="test seeds A-B (inclusive) or N: a shard (default: every test seed)"
    )
    add_policy_inputs(
        s,
        "`sched tune` output giving atc-tuned's k",
        f"policy file of a learned policy, e.g. ppo-1={layout.policy_file(1)} or "
        f"ppo-1-warm={layout.warm_policy_file(1)} "
        f"(default: {layout.policy_file('<S>')}, {layout.warm_policy_file('<S>')})",
    )
    s.add_argument(
        "--out",
        help=f"output folder (default: {layout.BENCH_DIR} for a full run, "
        f"{layout.shard_dir('A-B')} for a shard)",
    )
    s.add_argument(
        "--summary",
        action="store_true",
        help="with --seeds: write resume.csv over that subset too (every policy on the same seeds; "
        "how the workflow benchmarks plan)",
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import (
        benchmark_policies,
        parse_policies,
        parse_policy_files,
        policy_key,
        resolve_policies,
    )
    from sched.evaluate.runs import run_policies
    from sched.evaluate.seeds import benchmark_seeds, check_within, parse_seed_range, range_text
    from sched.evaluate.summary import UNIT, write_outputs

    cfg = load_cfg(args)
    threads.apply(args.threads)
    all_seeds = benchmark_seeds(cfg)
    seeds = (
        all_seeds if args.seeds is None else check_within(parse_seed_range(args.seeds), all_seeds, "--seeds")
    )
    full = seeds == all_seeds
    if args.out:
        out = Path(args.out)
    else:
        out = Path(layout.BENCH_DIR) if full else Path(layout.shard_dir(range_text(seeds)))
    names = parse_policies(args.policies, cfg, default=benchmark_policies)
    if full:
        missing = [r for r in ("fifo", "atc") if r not in names]
        if missing:
            raise BenchmarkError(
                f"--policies: a full run writes resume.csv, which compares to "
                f"{' and '.join(missing)}; add {','.join(missing)}"
            )
    specs, _ = resolve_policies(
        cfg, names, tuned=args.tuned, policy_files=parse_policy_files(args.policy_file)
    )
    timings = {}
    frame = run_policies(cfg, seeds, specs, progress=True, timings=timings)
    written = write_outputs(out, frame, cfg, specs, full, subset_summary=args.summary)
    means = frame.groupby("policy")["total_weighted_tardiness_s"].mean()
    print(f"{len(seeds)} scenarios ({range_text(seeds)}), {len(specs)} policies{'' if full else ' (shard)'}")
    print(f"{'policy':12} {'mean TWT (k w.s)':>17} {'time (s)':>9}")
    for name in sorted(specs, key=policy_key):
        print(f"{name:12} {means[name] / UNIT:17.3f} {timings[name]:9.3f}")
    for p in written:
        print(f"wrote {p}", file=sys.stderr)
