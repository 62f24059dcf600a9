"""`sched simulate`: schedule scenarios with a policy and summarise them.

A chunked scenario (one with ``frames``, ``chunk_frames``, ``max_gpus`` or ``setup_s``:
``sched.data.chunked``) is scheduled chunk by chunk (``sched.sim.chunks``) by the rules, the farm's
own dispatchers included, and gets one schedule row a chunk; its JSON line's totals are per job.
The learned policy and ``plan`` still schedule whole tasks: they refuse a scenario with a job of
several chunks or a setup time. A scenario without those columns gets today's schedule, byte for
byte (the farm's dispatchers, which today's benchmarks do not run, on it too).

``--sync-s S`` (a rule only; default 0): the farm as ``sched opencue sync`` and ``sched deadline
sync`` drive it, the rule ranking the jobs at syncs every S seconds and the farm dispatching by those
ranks between them (``sched.sim.sync``); the JSON line then says ``sync_s``. 0 changes no byte.
"""

import json
import math
from pathlib import Path

import numpy as np

from sched.cli import load_cfg
from sched.errors import UsageError, shorten
from sched.sim import rules


def register(sub):
    s = sub.add_parser("simulate", help="schedule scenarios with a policy and summarise them")
    s.add_argument(
        "--policy",
        required=True,
        help=f"one of {', '.join(rules.ALL_RULES)}, ppo (with --policy-file), or plan (the planner on "
        "config plan.base, or on --policy-file)",
    )
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--scenario", nargs="+", metavar="FILE", help="scenario CSV file(s)")
    src.add_argument("--seed", nargs="+", type=int, metavar="N", help="generated scenario seed(s)")
    s.add_argument(
        "--machines",
        help="GPUs: a count, speeds as NxSPEED[,NxSPEED...] (e.g. 2x1.0,2x0.6) or a machines CSV "
        "(name,speed) (default: config scenario.machines)",
    )
    s.add_argument("--atc-k", type=float, dest="atc_k", help="ATC look-ahead k (default: config rules.atc_k)")
    s.add_argument("--policy-file", dest="policy_file", help="trained policy file for --policy ppo")
    s.add_argument("--out", help="schedule CSV for one scenario, or a folder for several")
    s.add_argument(
        "--sync-s",
        default="0",
        dest="sync_s",
        help="seconds between two syncs of the farm's priorities, as `sched opencue sync` and `sched "
        "deadline sync` run (a rule only): the rule ranks the jobs at each sync, the farm dispatches by "
        "those ranks between syncs, a job submitted since by its class then submission (docs/model.md); "
        "0 (default): the rule decides at each free GPU; else 1 to 1e12 (sched.limits)",
    )
    s.set_defaults(func=run)


def check_policy(args):
    """Refuse --policy (and --policy-file) in one line, naming the option, before any work."""
    named = (*rules.RULES, *rules.FARM_RULES)
    if args.policy not in (*named, "ppo", "plan"):
        raise UsageError(
            f"--policy: unknown policy {shorten(args.policy)}; expected one of {', '.join(named)}, "
            "ppo (with --policy-file) or plan"
        )
    if args.policy in named and args.policy_file:
        raise UsageError(f"--policy-file: only used with --policy ppo or plan, not {args.policy!r}")
    if args.policy == "ppo" and not args.policy_file:
        raise UsageError("--policy ppo: needs a policy file (--policy-file, from `sched train`)")


def run(args):
    from sched import files
    from sched.data import chunked, schedule
    from sched.data.machines import spec_of, speeds
    from sched.data.scenario import generate, read_scenario, scenario_model
    from sched.evaluate.runs import schedule_scenarios

    check_policy(args)  # before any work: the config, the scenarios
    cfg = load_cfg(args)
    if args.machines is not None:
        machines = speeds(args.machines, "--machines")  # refused here, naming the option
    else:
        machines = speeds(cfg.scenario.machines, "scenario.machines")
    # the summary's machines: a count for identical GPUs (as before speeds), else the spec
    shown = len(machines) if (machines == 1.0).all() else spec_of(machines)
    k = args.atc_k if args.atc_k is not None else cfg.rules.atc_k
    if not 0 < k < math.inf:  # an infinite k would print Infinity in the JSON lines
        raise UsageError(f"--atc-k: must be a finite number > 0, got {k}")
    if args.scenario:
        scenarios = [read_scenario(p) for p in args.scenario]
        stems = [s.name for s in scenarios]
        if args.out and len(stems) > 1 and len(set(stems)) != len(stems):
            raise UsageError(
                "--out: several scenario files share a file name; their schedules would overwrite each other"
            )
    else:
        model = scenario_model(cfg).replace(machines=machines)
        scenarios = [generate(model, s) for s in args.seed]

    sync_s = _sync_s(args)
    if args.policy in rules.ALL_RULES and (
        args.policy in rules.FARM_RULES or sync_s > 0 or any(sc.chunked for sc in scenarios)
    ):
        if args.policy_file:
            raise UsageError(f"--policy-file is only used with --policy ppo, not {args.policy!r}")
        from sched.sim import sync

        results = [
            sync.simulate(*sc.arrays, args.policy, machines, k, None, *sc.chunks, sync_s=sync_s)
            for sc in scenarios
        ]
    elif args.policy == "plan":
        _whole_tasks_only(scenarios, args.policy)
        from sched.evaluate.policies import plan_spec
        from sched.evaluate.runs import schedule_policy

        spec = plan_spec(cfg, policy_file=args.policy_file)
        results = schedule_policy(spec, scenarios, [s.arrays for s in scenarios], machines, cfg)
    else:
        _whole_tasks_only(scenarios, args.policy)
        results = schedule_scenarios(
            scenarios, args.policy, machines=machines, k=k, policy_file=args.policy_file
        )
    out = Path(args.out) if args.out else None
    many = len(scenarios) > 1
    if out is not None and many and out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} is a file; several scenarios need a folder")
    for sc, result in zip(scenarios, results):
        if len(result) == 3:  # a whole task a row
            result = (np.arange(len(sc)), np.zeros(len(sc), np.int64), *result)
        job, chunk, start, end, mach = result
        if sc.chunked:
            sched_frame = chunked.schedule_frame(sc, job, chunk, start, end, mach)
            per_job = chunked.job_frame(sc, job, end)
        else:
            sched_frame = per_job = schedule.schedule_frame(sc, start, end, mach)
        if out is not None:
            target = out / f"{sc.name}.csv" if many or out.is_dir() else out
            files.write_csv(target, sched_frame)
        summary = {"scenario": sc.name, "policy": args.policy, "machines": shown}
        if args.policy == "atc":
            summary["atc_k"] = k
        if sync_s > 0:
            summary["sync_s"] = sync_s
        if args.policy == "plan":
            summary["base"] = spec["base"]
        summary.update(schedule.summarize(per_job))
        if sc.chunked:
            summary["chunks"] = len(sched_frame)
        print(json.dumps(summary), flush=True)


def _sync_s(args):
    """``--sync-s`` checked (sched.sim.sync.check_sync): a float; > 0 only with a rule."""
    from sched.sim.errors import SimulationError
    from sched.sim.sync import check_sync

    try:
        sync_s = check_sync(args.sync_s, "--sync-s")
    except SimulationError as exc:
        raise UsageError(str(exc)) from None
    if sync_s > 0 and args.policy not in rules.ALL_RULES:
        raise UsageError(
            f"--sync-s: syncs run a rule's ranking ({', '.join(rules.ALL_RULES)}), not --policy {args.policy}"
        )
    return sync_s


def _whole_tasks_only(scenarios, policy):
    """Refuse a scenario with a job of several chunks or a setup time for a policy of whole tasks."""
    from sched.sim.chunks import single_chunks

    for sc in scenarios:
        if sc.chunked and not (single_chunks(sc.chunks) and not sc.chunks[3].any()):
            raise UsageError(
                f"--policy {policy}: scenario {sc.name} has jobs of several chunks or a setup_s; "
                f"{policy} schedules whole tasks (issue 59): use a rule ({', '.join(rules.ALL_RULES)})"
            )
