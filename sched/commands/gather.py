"""`sched gather`: join benchmark shards into the full per-scenario table and its summary."""

import sys
from pathlib import Path

from sched import layout
from sched.cli import load_cfg
from sched.commands import add_policy_inputs, plan_runs


def register(sub):
    s = sub.add_parser(
        "gather",
        help="join benchmark shards: per_scenario.csv, resume.csv, winner.json (chosen on --selection)",
    )
    s.add_argument("shards", nargs="+", metavar="SHARD.csv", help="per-scenario CSV of each shard")
    add_policy_inputs(
        s,
        "`sched tune` output, for atc-tuned's k",
        "policy file of a learned policy (ppo-<S> or ppo-<S>-warm) as given to `sched benchmark`",
    )
    s.add_argument(
        "--selection",
        nargs="+",
        metavar="CSV",
        help="the selection tables (`sched benchmark --split selection`: the policies that may win on "
        "the validation seeds of benchmark.selection_scenarios): winner.json is chosen on them and "
        f"confirmed on the test shards (the workflow: {layout.SELECTION_TABLE}); without it, "
        "chosen on the test shards",
    )
    s.add_argument(
        "--plan-selection",
        nargs="+",
        metavar="DIR",
        help="plan's validation runs (`sched benchmark --split selection --plan-on`: per_scenario.csv and "
        "plan.json; one per setting of its candidacy, config plan.grid); plan on the winner, at the "
        "setting the candidacy picks, becomes the verdict when significantly better than it there",
    )
    s.add_argument(
        "--planners",
        metavar="CSV",
        help="the planners' table on the same test seeds (`sched benchmark --policies plan,teacher "
        "--plan-candidacy ...`: the workflow's benchmark_plan), joined to the shards' table",
    )
    s.add_argument("--out", default=layout.BENCH_DIR, help="output folder (default: %(default)s)")
    s.set_defaults(func=run)


def run(args):
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.per_scenario import gather, join_planners
    from sched.evaluate.policies import PLAN, parse_policy_files, policy_key, resolve_policies
    from sched.evaluate.seeds import benchmark_seeds, selection_seeds
    from sched.verdict.outputs import write_outputs

    cfg = load_cfg(args)
    frame = gather([Path(p) for p in args.shards], seeds=benchmark_seeds(cfg))
    if args.planners:
        frame = join_planners(frame, Path(args.planners), benchmark_seeds(cfg))
    selection = None
    if args.selection:
        paths = [Path(p) for p in args.selection]
        selection = gather(paths, selection_seeds(cfg), "selection", "selection tables")
    names = sorted(set(frame["policy"]), key=policy_key)
    plan_run = plan_runs(args.plan_selection) if args.plan_selection else None
    if PLAN in names and not plan_run:
        raise BenchmarkError("plan's rows need its candidacy's validation runs: give --plan-selection")
    specs, _ = resolve_policies(
        cfg,
        names,
        tuned=args.tuned,
        policy_files=parse_policy_files(args.policy_file),
        plan_base=plan_run[0][1]["base"] if plan_run else None,
    )
    written = write_outputs(args.out, frame, cfg, specs, full=True, selection=selection, plan_run=plan_run)
    print(
        f"gathered {len(args.shards)} shard(s): {frame['scenario_seed'].nunique()} scenarios x "
        f"{len(names)} policies"
    )
    if selection is not None:
        print(
            f"winner chosen on {selection['scenario_seed'].nunique()} selection scenarios x "
            f"{selection['policy'].nunique()} policies"
        )
    for p in written:
        print(f"wrote {p}", file=sys.stderr)
