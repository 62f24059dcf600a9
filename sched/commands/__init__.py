"""One module per `sched` subcommand: `register(subparsers)` adds it, `run(args)` runs it."""


def add_policy_inputs(parser, tuned_help, policy_file_help):
    """``--tuned`` and ``--policy-file``, the options naming the policies' inputs (one definition)."""
    from sched import layout

    parser.add_argument("--tuned", default=layout.TUNED_PATH, help=f"{tuned_help} (default: %(default)s)")
    parser.add_argument(
        "--policy-file",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help=f"{policy_file_help}; repeatable",
    )


def add_plan_inputs(parser):
    """``--plan-on`` and ``--plan-selection``: lookahead as a candidate for the verdict (one definition)."""
    parser.add_argument(
        "--plan-on",
        nargs="+",
        metavar="CSV",
        help="policy plan's base: the policy these selection tables choose (winner.json's rule on the "
        "validation seeds), instead of config plan.base; with --split selection, plan.json (its base, "
        "settings and measured decision time) is written beside the table",
    )
    parser.add_argument(
        "--plan-selection",
        metavar="DIR",
        help="a full test run: plan's validation run (`--split selection --plan-on`: per_scenario.csv and "
        "plan.json); plan on the winner becomes the verdict when significantly better than it there",
    )


def plan_base_of(args, cfg, names, policy_files):
    """The name of plan's base policy from ``--plan-on`` or ``--plan-selection`` (None: config
    plan.base); ``names``: the policies run, ``policy_files``: ``--policy-file``'s."""
    from pathlib import Path

    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import PLAN, competes, resolve_policies

    if not (getattr(args, "plan_on", None) or getattr(args, "plan_selection", None)):
        return None
    if PLAN not in names:
        raise BenchmarkError("--plan-on, --plan-selection: the policies run do not include plan")
    if getattr(args, "plan_on", None):
        from sched.evaluate.per_scenario import gather
        from sched.evaluate.seeds import check_selection
        from sched.evaluate.summary import chosen_on

        sel = gather([Path(p) for p in args.plan_on], check_selection(cfg), "selection", "selection tables")
        competing = sorted({p for p in sel["policy"] if competes(p)})
        files = {n: policy_files[n] for n in competing if n in policy_files}
        specs, _ = resolve_policies(cfg, competing, tuned=args.tuned, policy_files=files)
        return chosen_on(sel, specs, cfg.benchmark)
    from sched.evaluate.gate import read_plan_run

    return read_plan_run(args.plan_selection)[1]["base"]
