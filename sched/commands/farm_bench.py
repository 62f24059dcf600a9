"""`sched farm-bench`: the farm benchmark of a chunked setting (sched.evaluate.farm.bench)."""

import sys

from sched import threads
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser(
        "farm-bench",
        help="benchmark a chunked setting (scenario.chunks): ATC's k tuned at frame level, the shipped "
        "rule chosen on validation seeds, every rule, the farm's dispatchers, the jobs run whole and the "
        "shipped rule at sync 60 and 300 s on the test seeds",
    )
    s.add_argument(
        "--out",
        required=True,
        help="output folder (tuned.json, selection.csv, per_scenario.csv, farm.csv, farm_verdict.json, "
        "clairvoyant.csv)",
    )
    s.add_argument(
        "--test-scenarios",
        type=int,
        default=None,
        help="the first N test seeds only (a quick look; default: benchmark.scenarios)",
    )
    s.add_argument(
        "--plan",
        action="store_true",
        help="run plan's candidacy on the selection (validation) seeds; plan joins the test table when it "
        "pays there (plan_candidacy.json; the longer run's, profile: full)",
    )
    s.add_argument(
        "--verdict-file",
        default=None,
        help="the file name of the shipped rule's verdict in --out (default farm_verdict.json; a setting "
        "whose learned policy `sched farm-learned` judges: farm_verdict_rules.json)",
    )
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from pathlib import Path

    import pandas as pd

    from sched import files, layout
    from sched.errors import UsageError
    from sched.evaluate.farm import bench as farm
    from sched.evaluate.farm import caps, headroom
    from sched.evaluate.farm import plan_candidacy as pcand
    from sched.evaluate.seeds import benchmark_seeds, range_text, validation_seeds
    from sched.verdict.summary import UNIT

    cfg = load_cfg(args)
    threads.apply(args.threads)
    chunks = cfg.scenario.get("chunks")
    if not chunks:
        raise UsageError("farm-bench: the config has no scenario.chunks (a chunked setting)")
    out = Path(args.out)
    val = validation_seeds(cfg)
    val_scs = farm.scenarios(cfg, val, True)
    tuned = farm.tune(cfg, val_scs, val, progress=True)
    k = tuned["atc_k"]
    tuned.update(caps.tune_cap(cfg, val_scs, k, progress=True))
    cap = tuned["cap"]
    sel = farm.selection_seeds(cfg)
    sync_s = float(chunks.get("sync_s", 0.0))
    sel_specs = {n: farm.spec(n, k, sync_s, cap=cap) for n in farm.candidates(cap)}
    sel_scs = farm.scenarios(cfg, sel, True)
    selection = farm.run(cfg, sel, sel_scs, sel_specs, progress=True)
    verdict = farm.choose(cfg, selection, k, sel, cap)
    record = pcand.not_run(cfg)
    if args.plan:
        cand = pcand.seeds(cfg, sel)
        plan_sel, counts = pcand.run(cfg, cand, sel_scs[: len(cand)], k, progress=True)
        record = pcand.judge(cfg, selection, plan_sel, cand, counts, verdict["policy"])
    test = benchmark_seeds(cfg)
    if args.test_scenarios is not None:
        if not 1 <= args.test_scenarios <= len(test):
            raise UsageError(f"--test-scenarios: expected 1 to {len(test)}, got {args.test_scenarios}")
        test = test[: args.test_scenarios]
    test_scs = farm.scenarios(cfg, test, True)
    frame = farm.run(cfg, test, test_scs, farm.policy_specs(k, verdict, sync_s, cap), True)
    if record["pays"]:  # plan joins the test table
        frame = pd.concat([frame, pcand.run(cfg, test, test_scs, k, progress=True)[0]], ignore_index=True)
    table = farm.comparisons(frame, cfg, verdict["policy"])
    n_cv = min(headroom.budget(cfg)[0], len(test))  # the clairvoyant headroom on the first test seeds
    cv = headroom.run(cfg, test[:n_cv], test_scs[:n_cv], frame, k, progress=True)
    table = pd.concat([table, headroom.comparisons(cv, frame, cfg, verdict["policy"])], ignore_index=True)
    files.write_set(
        [
            (out / layout.TUNED, files.json_writer(tuned)),
            (out / layout.FARM_SELECTION, files.csv_writer(selection)),
            (out / layout.PER_SCENARIO, files.csv_writer(frame)),
            (out / layout.FARM_TABLE, files.csv_writer(table)),
            (out / (args.verdict_file or layout.FARM_VERDICT), files.json_writer(verdict)),
            (out / layout.FARM_CLAIRVOYANT, files.csv_writer(cv)),
            (out / layout.FARM_PLAN, files.json_writer(record)),
        ]
    )
    print(f"ATC k tuned at frame level on validation seeds {range_text(val)}: {k:g}; job limit: {cap}")
    print(f"shipped (chosen on {range_text(sel)}): {verdict['policy']} ({verdict['reason']})")
    if record["run"]:
        v = record["validation"]
        print(
            f"plan on validation {range_text(cand)} vs {record['against']}: {v['diff_pct']:+.2f} % "
            f"[{v['ci_lo_pct']:+.2f}, {v['ci_hi_pct']:+.2f}], {v['wins']}/{v['ties']}/{v['losses']}: "
            f"{record['reason']}"
        )
    mine = table[table["reference"] == "farm-fifo"]
    for r in mine.itertuples():
        print(
            f"  {r.policy:<26} {r.mean_twt_k:10.3f} k w.s  vs farm-fifo {r.diff_pct:+7.2f} % "
            f"[{r.ci_lo_pct:+.2f}, {r.ci_hi_pct:+.2f}]"
        )
    print(f"wrote {out} ({len(test)} test scenarios; totals in {UNIT:g} weighted s)", file=sys.stderr)
