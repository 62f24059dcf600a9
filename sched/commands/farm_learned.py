"""`sched farm-learned`: a learned farm policy beside its benchmark (sched.evaluate.farm.learned)."""

import sys

from sched import threads
from sched.cli import load_cfg


def register(sub):
    s = sub.add_parser(
        "farm-learned",
        help="judge a farm policy (`sched farm-train`) beside a chunked setting's benchmark (`sched "
        "farm-bench`): its candidacy on the selection (validation) seeds, its rows at the setting's sync "
        "and at 60 and 300 s on the test seeds against every reference",
    )
    s.add_argument("--bench", required=True, help="the setting's `sched farm-bench` folder")
    s.add_argument("--policy", required=True, help="the farm policy file (`sched farm-train`)")
    s.add_argument("--out", required=True, help="output folder (farm_learned.json, farm_learned.csv, "
                   "farm_learned_scenarios.csv)")  # fmt: skip
    s.add_argument("--rules-verdict", default=None, help="the benchmark's verdict (default: --bench's "
                   "farm_verdict.json)")  # fmt: skip
    s.add_argument("--verdict", default=None, help="write the setting's farm verdict here: the learned "
                   "policy's when it ships, else the rules' one (sched.ranking.farm.learned)")  # fmt: skip
    s.add_argument("--test-scenarios", type=int, default=None, help="the first N test seeds only")
    threads.add_option(s)
    s.set_defaults(func=run)


def run(args):
    from pathlib import Path

    import pandas as pd

    from sched import files, layout
    from sched.errors import UsageError
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.farm import bench as farm
    from sched.evaluate.farm import learned
    from sched.evaluate.seeds import benchmark_seeds
    from sched.ranking.farm.plan import check_farm_verdict
    from sched.report.inputs import read_json

    cfg = load_cfg(args)
    threads.apply(args.threads)
    if not cfg.scenario.get("chunks"):
        raise UsageError("farm-learned: the config has no scenario.chunks (a chunked setting)")
    src = Path(args.bench)
    rules_verdict = args.rules_verdict or src / layout.FARM_VERDICT
    verdict = read_json(rules_verdict)
    check_farm_verdict(verdict, rules_verdict)  # as rank() checks it: a bad field named, before any work
    policy = learned.load(args.policy)
    sync_s = float(cfg.scenario.chunks.get("sync_s", 0.0))
    selection = files.read_csv(src / layout.FARM_SELECTION, BenchmarkError, dtype={"policy": str})
    frame = files.read_csv(src / layout.PER_SCENARIO, BenchmarkError, dtype={"policy": str})
    sel = farm.selection_seeds(cfg)
    sel_rows = learned.run(cfg, policy, sel, farm.scenarios(cfg, sel, True), {learned.NAME: sync_s}, True)
    record = learned.judge(cfg, selection, sel_rows, args.policy, policy.meta)
    test = benchmark_seeds(cfg)
    if args.test_scenarios is not None:
        if not 1 <= args.test_scenarios <= len(test):
            raise UsageError(f"--test-scenarios: expected 1 to {len(test)}, got {args.test_scenarios}")
        test = test[: args.test_scenarios]
    rows = learned.run(cfg, policy, test, farm.scenarios(cfg, test, True), learned.test_syncs(sync_s), True)
    both = pd.concat([frame[frame["scenario_seed"].isin(list(test))], rows], ignore_index=True)
    table = farm.comparisons(both, cfg, verdict["policy"])
    table = table[table["policy"].str.startswith(learned.NAME)].reset_index(drop=True)
    out = Path(args.out)
    written = [
        (out / layout.FARM_LEARNED, files.json_writer(record)),
        (out / layout.FARM_LEARNED_TABLE, files.csv_writer(table)),
        (out / layout.FARM_LEARNED_SCENARIOS, files.csv_writer(rows)),
    ]
    if args.verdict is not None:  # the setting's farm verdict, rank()'s
        shipped = learned.shipped_verdict(verdict, record, policy.meta)
        written.append((Path(args.verdict), files.json_writer(shipped)))
    files.write_set(written)
    v = record["versus_atc_tuned"]
    print(
        f"selection (validation, {v['seeds']} seeds): {learned.NAME} vs atc-tuned {v['diff_pct']:+.2f} % "
        f"[{v['ci_lo_pct']:+.2f}, {v['ci_hi_pct']:+.2f}]; {record['reason']}"
    )
    for r in table[table["reference"].isin(["atc-tuned", "shipped", "farm-fifo"]) |
                   table["reference"].str.startswith("atc-tuned-sync-")].itertuples():  # fmt: skip
        print(
            f"  {r.policy:<26} vs {r.reference:<22} {r.mean_twt_k:10.3f} k w.s  {r.diff_pct:+7.2f} % "
            f"[{r.ci_lo_pct:+.2f}, {r.ci_hi_pct:+.2f}]"
        )
    print(f"wrote {out} ({len(test)} test scenarios)", file=sys.stderr)
