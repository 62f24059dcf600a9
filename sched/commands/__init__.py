"""One module per `sched` subcommand: `register(subparsers)` adds it, `run(args)` runs it.

The modules, by step: ``calibrate``, ``calibrate_workload``, ``calibrate_frames``, ``fidelity``
(the inputs);
``scenario``, ``simulate`` (one scenario); ``teach``, ``distill``, ``train`` (the policies);
``tune``, ``benchmark``, ``gather``, ``clairvoyant``, ``replay`` (the benchmark), ``farm_bench``
(the chunked farm settings' benchmark), ``farm_train``, ``farm_teach``, ``farm_learned`` (their
learned scorer); ``demo``, ``report``, ``manifest`` (the evidence); ``rank``, ``serve``, ``deadline``,
``opencue`` (the
entry point a render queue calls, and the farms' adapters). Here: the options several of them
share (the policies' inputs, plan's candidacy).
"""


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


def add_plan_inputs(parser, selection=True):
    """``--plan-on``, ``--plan-setting``, ``--plan-candidacy`` and (with ``selection``)
    ``--plan-selection``: lookahead as a candidate for the verdict (one definition)."""
    parser.add_argument(
        "--plan-on",
        nargs="+",
        metavar="CSV",
        help="policy plan's base: the policy these selection tables choose (winner.json's rule on the "
        "validation seeds), instead of config plan.base; with --split selection, plan.json (its base "
        "and settings) is written beside the table, and plan.run.json (its measured decision time)",
    )
    parser.add_argument(
        "--plan-setting",
        metavar="NAME",
        help="plan at the setting NAME of config plan.grid (its candidacy) instead of config plan's own",
    )
    parser.add_argument(
        "--plan-candidacy",
        nargs="+",
        metavar="DIR",
        help="with --plan-on: plan at the setting its candidacy picks on these validation runs (one "
        "per setting of plan.grid: `--split selection --plan-on ... --plan-setting NAME`'s folders; "
        "the rule: docs/plan.md); `sched benchmark` then writes per_scenario.csv only",
    )
    if not selection:
        return
    parser.add_argument(
        "--plan-selection",
        nargs="+",
        metavar="DIR",
        help="a full test run: plan's validation runs (`--split selection --plan-on`: per_scenario.csv "
        "and plan.json; one per setting of its candidacy); plan on the winner, at the setting the "
        "candidacy picks, becomes the verdict when significantly better than it there",
    )


def plan_runs(folders):
    """The validation runs of plan's candidacy in ``folders`` (``sched.verdict.candidacy.read_plan_run``)."""
    from sched.verdict.candidacy import read_plan_run

    return [read_plan_run(f) for f in folders]


def plan_setting_of(args, cfg, base):
    """The grid setting plan runs at: ``--plan-setting``, or the one its candidacy picks on the
    runs of ``--plan-candidacy`` (paired with ``--plan-on``'s selection tables); None: config
    plan's own settings."""
    from sched.evaluate.errors import BenchmarkError

    setting, folders = getattr(args, "plan_setting", None), getattr(args, "plan_candidacy", None)
    if setting and folders:
        raise BenchmarkError("--plan-setting, --plan-candidacy: give one (the candidacy picks the setting)")
    if (setting or folders) and base is None:
        raise BenchmarkError("--plan-setting, --plan-candidacy: plan's base comes from --plan-on; give it")
    if not folders:
        return setting
    from pathlib import Path

    from sched.evaluate.per_scenario import gather
    from sched.evaluate.seeds import check_selection
    from sched.verdict.candidacy import pick_setting

    sel = gather([Path(p) for p in args.plan_on], check_selection(cfg), "selection", "selection tables")
    results, pick = pick_setting(plan_runs(folders), sel, cfg.benchmark, cfg.plan["choice_se"], base)
    picked = results[pick if pick is not None else 0]
    lo, hi = picked["ci95_pct"]
    print(
        f"plan's candidacy picks {picked['setting']} of {len(results)}: "
        f"{picked['mean_difference_pct']:+.2f} % [{lo:+.2f}, {hi:+.2f}] "
        f"against {base} on {picked['seeds'][1]} validation scenarios"
    )
    if picked["setting"] is None:
        raise BenchmarkError(
            "--plan-candidacy: the runs name no setting of plan.grid (run with --plan-setting)"
        )
    return picked["setting"]


def plan_base_of(args, cfg, names, policy_files):
    """The name of plan's base policy from ``--plan-on`` or ``--plan-selection`` (None: config
    plan.base); ``names``: the policies run, ``policy_files``: ``--policy-file``'s."""
    from pathlib import Path

    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import PLAN, competes, resolve_policies

    if not (getattr(args, "plan_on", None) or getattr(args, "plan_selection", None)):
        return None
    if PLAN not in names and not getattr(args, "planners", None):
        raise BenchmarkError("--plan-on, --plan-selection: the policies run do not include plan")
    if getattr(args, "plan_on", None):
        from sched.evaluate.per_scenario import gather
        from sched.evaluate.seeds import check_selection
        from sched.verdict.winner import chosen_on

        sel = gather([Path(p) for p in args.plan_on], check_selection(cfg), "selection", "selection tables")
        competing = sorted({p for p in sel["policy"] if competes(p)})
        files = {n: policy_files[n] for n in competing if n in policy_files}
        specs, _ = resolve_policies(cfg, competing, tuned=args.tuned, policy_files=files)
        return chosen_on(sel, specs, cfg.benchmark)
    from sched.verdict.candidacy import read_plan_run

    return read_plan_run(args.plan_selection[0])[1]["base"]
