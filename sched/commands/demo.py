"""`sched demo`: the reproducible demonstration scenario under every policy."""

import sys
from pathlib import Path

from sched import layout, threads
from sched.cli import load_cfg
from sched.commands import add_policy_inputs


def register(sub):
    s = sub.add_parser(
        "demo",
        help="the demonstration scenario: each policy's weighted tardiness "
        "and a Gantt chart of ATC against PPO (or the best other heuristic)",
    )
    s.add_argument("--seed", type=int, help="scenario seed (default: config benchmark.demo_seed)")
    s.add_argument(
        "--policies",
        help="comma-separated policies (default: every heuristic and every "
        "PPO policy whose file exists; atc-tuned when the tuned file exists)",
    )
    add_policy_inputs(
        s, "`sched tune` output giving atc-tuned's k", "policy file of a PPO policy, e.g. ppo-1=PATH"
    )
    s.add_argument(
        "--out",
        default=layout.DEMO_DIR,
        help="folder for demo.csv and each policy's schedule (default: %(default)s)",
    )
    s.add_argument(
        "--figures", default=layout.FIGURES_DIR, help="folder for demo_gantt.png (default: %(default)s)"
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from sched import files
    from sched.data.machines import speeds
    from sched.data.scenario import check_seed
    from sched.data.schedule import schedule_frame
    from sched.evaluate.demo import demo_pair, run_demo
    from sched.evaluate.policies import parse_policies, parse_policy_files, resolve_policies
    from sched.report import figures
    from sched.verdict.summary import UNIT

    cfg = load_cfg(args)
    threads.apply(args.threads)
    seed = check_seed(args.seed if args.seed is not None else cfg.benchmark.demo_seed)
    explicit = args.policies is not None
    names = parse_policies(args.policies, cfg)
    specs, skipped = resolve_policies(
        cfg,
        names,
        tuned=args.tuned,
        policy_files=parse_policy_files(args.policy_file),
        missing_ok=not explicit,
    )
    for s in skipped:
        print(f"sched demo: left out {s}", file=sys.stderr)
    sc, schedules, table = run_demo(cfg, seed, specs)
    left, right = demo_pair(table, specs)
    out = Path(args.out)
    twt = dict(zip(table["policy"], table["total_weighted_tardiness_s"]))

    def label(p):
        return f"{p} (k = {specs[p]['atc_k']:g})" if specs[p]["rule"] == "atc" else p

    fig = figures.gantt(
        sc,
        {
            f"{label(p)}: total weighted tardiness {twt[p] / UNIT:.3f} k w.s": schedules[p]
            for p in (left, right)
        },
        len(speeds(cfg.scenario.machines, "scenario.machines")),  # a count or a spec
        Path(args.figures) / layout.DEMO_GANTT,
        cfg.report.figure_dpi,
        cfg.report.gantt_hours,
        f"Demonstration scenario, seed {seed}: the first {cfg.report.gantt_hours:g} h",
    )
    # one set, the table last (sched.files.write_set)
    items = [
        (layout.demo_schedule(name, out), files.csv_writer(schedule_frame(sc, start, end, mach)))
        for name, (start, end, mach) in schedules.items()
    ]
    files.write_set([*items, (out / layout.DEMO_TABLE, files.csv_writer(table))])
    print(
        f"demonstration scenario seed {seed}: {len(sc)} tasks, load {cfg.scenario.load}, "
        f"{cfg.scenario.machines} machine(s)"
    )
    print(f"{'policy':12} {'total weighted tardiness (k w.s)':>34} {'tardy tasks':>12}")
    for _, r in table.sort_values("total_weighted_tardiness_s", kind="stable").iterrows():
        print(f"{r.policy:12} {r.total_weighted_tardiness_s / UNIT:34.3f} {r.tardy_fraction * r.tasks:12.0f}")
    print(f"wrote {out / layout.DEMO_TABLE}, {fig}", file=sys.stderr)
