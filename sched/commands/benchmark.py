"""`sched benchmark`: every policy on the test scenarios (a shard or all of them)."""

import sys
from pathlib import Path

from sched import layout, threads
from sched.cli import load_cfg
from sched.commands import add_plan_inputs, add_policy_inputs, plan_base_of, plan_runs, plan_setting_of


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
        "--seeds",
        metavar="RANGE",
        help="seeds A-B (inclusive) or N of the split: a shard (default: every seed of the split)",
    )
    s.add_argument(
        "--split",
        choices=("test", "selection"),
        default="test",
        help="test (default): the test seeds; selection: the validation seeds the winner is chosen on "
        "(benchmark.selection_scenarios from benchmark.selection_offset), per_scenario.csv only, "
        f"default --out {layout.SELECTION_DIR}; --policies defaults to those that may win (no warm start)",
    )
    s.add_argument(
        "--selection",
        nargs="+",
        metavar="CSV",
        help="a full test run: choose winner.json on these selection tables (`--split selection`'s "
        "per_scenario.csv, or its shards) and confirm it on the test seeds "
        "(default: chosen on the test seeds)",
    )
    s.add_argument(
        "--held-out",
        metavar="CSV",
        help="a full test run: confirm winner.json on the held-out days (`sched replay --held-out`'s "
        "per_scenario.csv) against the best rule of the validation days (--validation-days); without "
        "them, a winner significantly worse than the best rule there is replaced by it",
    )
    s.add_argument(
        "--validation-days",
        metavar="CSV",
        help="a full test run with --selection: weigh the winner with the validation days (`sched "
        "replay --validation`'s per_scenario.csv): a winner significantly worse there than the best "
        'rule there is replaced by it (docs/workload.md, "Three periods")',
    )
    s.add_argument(
        "--fidelity",
        metavar="JSON",
        help="with --validation-days: `sched fidelity`'s record; when it says the generator ranks the "
        "rules unlike the real days, the validation days decide alone",
    )
    add_plan_inputs(s)
    s.add_argument(
        "--planners",
        metavar="CSV",
        help="a full test run: the planners' table on the same test seeds (`sched benchmark --policies "
        "plan --plan-candidacy ...`), joined to this run's before the winner is chosen; plan's rows "
        "need --plan-selection",
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
        "a subset's summary)",
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.per_scenario import gather
    from sched.evaluate.policies import (
        benchmark_policies,
        default_policies,
        parse_policies,
        parse_policy_files,
        resolve_policies,
    )
    from sched.evaluate.runs import run_policies
    from sched.evaluate.seeds import check_selection, check_within, parse_seed_range, range_text
    from sched.verdict.outputs import write_outputs

    cfg = load_cfg(args)
    threads.apply(args.threads)
    selecting = args.split == "selection"
    if selecting and (args.summary or args.selection):
        raise BenchmarkError("--split selection writes per_scenario.csv only: drop --summary and --selection")
    all_seeds, allowed = _split_seeds(cfg, selecting)
    seeds = (
        all_seeds
        if args.seeds is None
        else check_within(parse_seed_range(args.seeds), all_seeds, "--seeds", *allowed)
    )
    full = seeds == all_seeds and not selecting and not args.plan_candidacy  # (a table only: gather joins it)
    if args.selection and not full:
        raise BenchmarkError("--selection: the winner is written by a full test run only (drop --seeds)")
    out = Path(args.out) if args.out else _default_out(seeds, seeds == all_seeds, selecting)
    names = parse_policies(args.policies, cfg, default=default_policies if selecting else benchmark_policies)
    if full:
        missing = [r for r in ("fifo", "atc") if r not in names]
        if missing:
            raise BenchmarkError(
                f"--policies: a full run writes resume.csv, which compares to "
                f"{' and '.join(missing)}; add {','.join(missing)}"
            )
    policy_files = parse_policy_files(args.policy_file)
    base = plan_base_of(args, cfg, names, policy_files)
    setting = plan_setting_of(args, cfg, base)
    specs, _ = resolve_policies(
        cfg, names, tuned=args.tuned, policy_files=policy_files, plan_base=base, plan_setting=setting
    )
    plan_run = None
    if args.plan_selection:
        if not full:
            raise BenchmarkError(
                "--plan-selection: the winner is written by a full test run only (drop --seeds)"
            )
        plan_run = plan_runs(args.plan_selection)
    selection = None
    if args.selection:  # read before the run: a bad table stops it at once
        selection = gather(
            [Path(p) for p in args.selection], check_selection(cfg), "selection", "selection tables"
        )
    held_out = None
    if args.held_out:
        if not full:
            raise BenchmarkError("--held-out: the winner is written by a full test run only (drop --seeds)")
        from sched.evaluate.per_scenario import read_per_scenario

        held_out = read_per_scenario(args.held_out)
    validation_days = _validation_days(args, cfg, full, selection)
    planners = _planners(args, full, plan_run)
    timings = {}
    frame = run_policies(cfg, seeds, specs, progress=True, timings=timings)
    if planners is not None:  # plan's rows (and the teacher's) from their own job, on the same seeds
        frame = _join(frame, planners, seeds, specs, cfg, args.tuned, policy_files, base)
    written = write_outputs(
        out, frame, cfg, specs, full, subset_summary=args.summary, selection=selection, held_out=held_out,
        plan_run=plan_run, validation_days=validation_days,
    )  # fmt: skip
    if selecting and base is not None:  # plan's validation run: what its verdict records
        written += _write_plan_run(out, cfg, specs, seeds, base)
    kind = " (selection seeds)" if selecting else "" if full else " (shard)"
    print(f"{len(seeds)} scenarios ({range_text(seeds)}), {len(specs)} policies{kind}")
    _print_means(frame, specs, timings)
    for p in written:
        print(f"wrote {p}", file=sys.stderr)


def _write_plan_run(out, cfg, specs, seeds, base):
    """plan.json beside plan's validation table (its base, setting and settings: what its verdict
    records), and its run record plan.run.json (the measured decision time: a wall-clock
    measurement, which decides nothing and no later step hashes)."""
    from sched import files
    from sched.evaluate.policies import PLAN
    from sched.evaluate.runs import generate_scenarios, plan_decision_times
    from sched.learn.search.planner import check_settings
    from sched.verdict.candidacy import PLAN_RUN, PLAN_TIMES, plan_run_record

    spec = specs[PLAN]
    settings = check_settings(spec.get("settings") or cfg.plan)  # its rollout among them
    scenarios = generate_scenarios(cfg, list(seeds)[:10])
    times = plan_decision_times(cfg, spec, scenarios, cfg.scenario.machines)
    at = f" at {spec['setting']}" if spec.get("setting") else ""
    print(f"plan{at} on {base}: {times['p50']:.3f} ms p50, {times['p99']:.3f} ms p99 a decision (one thread)")
    path, timed = Path(out) / PLAN_RUN, Path(out) / PLAN_TIMES
    record = plan_run_record(base, settings, spec.get("setting"))
    files.write_set([(path, files.json_writer(record)), (timed, files.json_writer({"decision_ms": times}))])
    return [path, timed]


def _print_means(frame, specs, timings):
    """Each policy's mean total weighted tardiness and the seconds its run took (joined: none)."""
    from sched.evaluate.policies import policy_key
    from sched.verdict.summary import UNIT

    means = frame.groupby("policy")["total_weighted_tardiness_s"].mean()
    print(f"{'policy':12} {'mean TWT (k w.s)':>17} {'time (s)':>9}")
    for name in sorted(specs, key=policy_key):
        took = f"{timings[name]:9.3f}" if name in timings else f"{'(joined)':>9}"
        print(f"{name:12} {means[name] / UNIT:17.3f} {took}")


def _planners(args, full, plan_run):
    """The planners' table of --planners (its path), checked before the run: a full test run
    only, and plan's rows gated by --plan-selection. None without --planners."""
    if not args.planners:
        return None
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.per_scenario import read_per_scenario
    from sched.evaluate.policies import PLAN

    if not full:
        raise BenchmarkError("--planners: joined to a full test run only (drop --seeds and --plan-candidacy)")
    if PLAN in set(read_per_scenario(args.planners)["policy"]) and plan_run is None:
        raise BenchmarkError(
            "--planners: plan's rows need its candidacy's validation runs: give --plan-selection"
        )
    return Path(args.planners)


def _join(frame, planners, seeds, specs, cfg, tuned, policy_files, base):
    """``frame`` with the planners' table joined (its policies' specs added to ``specs``)."""
    from sched.evaluate.per_scenario import join_planners
    from sched.evaluate.policies import policy_key, resolve_policies

    frame = join_planners(frame, planners, seeds)
    more = sorted(set(frame["policy"]) - set(specs), key=policy_key)
    specs.update(resolve_policies(cfg, more, tuned=tuned, policy_files=policy_files, plan_base=base)[0])
    return frame


def _split_seeds(cfg, selecting):
    """(every seed of the split, how check_within names them)."""
    from sched.evaluate.seeds import benchmark_seeds, check_selection

    if selecting:
        return check_selection(cfg), (
            "the selection seeds",
            "benchmark.selection_scenarios of seeds.validation from benchmark.selection_offset",
        )
    return benchmark_seeds(cfg), ()


def _default_out(seeds, whole, selecting):
    """The output folder without --out: the split's folder for all its seeds, else a shard's."""
    from sched.evaluate.seeds import range_text

    if selecting:
        return Path(layout.SELECTION_DIR if whole else layout.selection_shard_dir(range_text(seeds)))
    return Path(layout.BENCH_DIR if whole else layout.shard_dir(range_text(seeds)))


def _validation_days(args, cfg, full, selection):
    """``(table, period, lean)`` of --validation-days and --fidelity, read before the run (a bad
    file stops it at once); None without --validation-days."""
    from sched.errors import UsageError

    if not args.validation_days:
        if args.fidelity:
            raise UsageError("--fidelity: it weighs the validation days; give --validation-days too")
        return None
    if not full or selection is None:
        raise UsageError("--validation-days: a full test run with --selection only (drop --seeds)")
    from sched.data.workload.fidelity import read_fidelity
    from sched.data.workload.workload import load_workload, period_days
    from sched.evaluate.per_scenario import read_per_scenario

    period = (
        period_days(load_workload(cfg.scenario.workload), "validation") if cfg.scenario.workload else None
    )
    lean = read_fidelity(args.fidelity)["lean_on_days"] if args.fidelity else False
    return read_per_scenario(args.validation_days), period, lean
