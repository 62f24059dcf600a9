"""Where plan loses against its base: the per-scenario tables of ``benchmarks/plan_quality.py --out``,
one per setting, side by side (issue 46, point 1; docs/plan.md, "Why plan loses where it loses").

    python benchmarks/plan_diagnosis.py NAME=plan_quality_out.csv [NAME=...] [--config config.yaml]

Every table must hold the same scenarios (the same ``--scenarios`` and ``--skip``): the settings are
compared paired. For each setting it prints, as a Markdown table: plan's mean paired difference to
its base with the benchmark's bootstrap interval, W/T/L, the median scenario's difference, how much
of plan's extra weighted tardiness (summed over the scenarios it loses) the worst 5 % of the
scenarios carry, the share of decisions that left the base's choice, and the CPU time a decision.
Then plan's difference by fifth of the scenarios ranked by the base's total (a short horizon should
hurt most where queues are long), and, for the first setting, the scenarios it loses most on and
what the other settings do there.
"""

import sys

import numpy as np
import pandas as pd

from sched.config import load_config
from sched.errors import UsageError
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss


def read(spec):
    """(name, table) of a NAME=CSV argument."""
    name, _, path = spec.partition("=")
    if not path:
        raise UsageError(f"{spec[:60]!r}: expected NAME=CSV (a `plan_quality.py --out` table)")
    frame = pd.read_csv(path)
    want = {"seed", "base", "plan", "decisions", "deviations", "cpu_s"}
    if not want <= set(frame.columns):
        raise UsageError(f"{path}: columns {', '.join(frame.columns)}; expected {', '.join(sorted(want))}")
    return name, frame.sort_values("seed").reset_index(drop=True)


def row(name, f, bench):
    """The table's line for one setting."""
    counts = bootstrap_counts(len(f), bench["bootstrap_resamples"], bench["bootstrap_seed"])
    d, lo, hi = paired_difference(f["plan"], f["base"], counts, bench["ci_level"])
    w, t, lz = win_tie_loss(f["plan"], f["base"], bench["tie_relative"], bench["tie_absolute_s"])
    extra = (f["plan"] - f["base"]).clip(lower=0).sort_values(ascending=False)
    worst = max(1, round(0.05 * len(f)))
    share = extra.iloc[:worst].sum() / extra.sum() if extra.sum() > 0 else float("nan")
    per = 100 * (f["plan"] / f["base"] - 1)
    dev = f["deviations"].sum() / f["decisions"].sum()
    ms = 1e3 * f["cpu_s"].sum() / f["decisions"].sum()
    return (
        f"| {name} | {len(f)} | {d:+.2f} % [{lo:+.2f}, {hi:+.2f}] | {w}/{t}/{lz} | {per.median():+.2f} % "
        f"| {100 * share:.0f} % | {100 * dev:.2f} % | {ms:.2f} |"
    )


def main(argv=None):
    from sched.cli import ScriptParser, int_in

    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", metavar="NAME=CSV")
    ap.add_argument("--config", default="config.yaml")
    ap.add_argument("--worst", type=int_in(1), default=8, help="scenarios listed where the first loses most")
    a = ap.parse_args(argv)
    bench = load_config(a.config)["benchmark"]
    tables = [read(s) for s in a.tables]
    seeds = tables[0][1]["seed"].tolist()
    for name, f in tables[1:]:
        if f["seed"].tolist() != seeds:
            raise UsageError(f"{name}: its scenarios differ from {tables[0][0]}'s (paired: the same seeds)")
    print(
        "| setting | scenarios | plan vs base [95 % CI] | W/T/L | median scenario "
        "| extra TWT in the worst 5 % of scenarios | decisions deviated | ms CPU / decision |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, f in tables:
        print(row(name, f, bench))
    first, f0 = tables[0]
    fifth = pd.qcut(f0["base"].rank(method="first"), 5, labels=False).to_numpy()
    print()
    print("Plan against its base by fifth of the scenarios, ranked by the base's total (ratio of sums):")
    print()
    print("| fifth (base k w.s, mean) | " + " | ".join(n for n, _ in tables) + " |")
    print("|---|" + "---:|" * len(tables))
    for q in range(5):
        m = fifth == q
        cells = [f"{100 * (f['plan'][m].sum() / f['base'][m].sum() - 1):+.2f} %" for _, f in tables]
        print(f"| {q + 1} ({f0['base'][m].mean() / 1e3:.1f}) | " + " | ".join(cells) + " |")
    loss = (f0["plan"] / f0["base"] - 1).to_numpy()
    order = np.argsort(-loss)[: a.worst]
    print()
    print(f"Where {first} loses most (plan against its base in each scenario; its deviations):")
    print()
    print("| seed | base (k w.s) | " + " | ".join(n for n, _ in tables) + " |")
    print("|---:|---:|" + "---:|" * len(tables))
    for i in order:
        cells = [
            f"{100 * (f['plan'][i] / f['base'][i] - 1):+.1f} % ({f['deviations'][i]})" for _, f in tables
        ]
        print(f"| {f0['seed'][i]} | {f0['base'][i] / 1e3:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/plan_diagnosis.py"))
