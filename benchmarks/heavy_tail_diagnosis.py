"""Why learning gains little under heavy tails (issue 50, point 3; docs/learning.md, "Under heavy
tails"): where tuned ATC's weighted tardiness comes from on a setting's validation scenarios, and
what the estimates' noise and decision-time lookahead are worth there.

    python benchmarks/heavy_tail_diagnosis.py \\
        --config results/robustness/heavy-tails/config/gather.yaml \\
        --tuned results/robustness/heavy-tails/tuned.json [--scenarios 300] [--plan 32x50 8x200]

It prints, on the first ``--scenarios`` validation (selection) seeds of the setting, nothing chosen
on them:

* tuned ATC's mean total, and the share of it that the costliest tenth of the scenarios carries;
* the share of it carried by tasks that arrive while a long task runs (>= 1, 2, 4 h) that started
  with no other task waiting: a start every work-conserving policy makes, whatever it has learned;
* each rule's total with the estimates and with the true durations (what a perfect duration
  model would buy);
* with ``--plan SxH``: plan on tuned ATC (S sampled futures of H arrivals, rollouts continued by
  tuned ATC) against tuned ATC, paired, with the benchmark's bootstrap interval and W/T/L.

The clairvoyant's headroom on the same setting: ``sched --config CONFIG clairvoyant --seeds A-B``.
"""

import json
import sys

import numpy as np

from sched import threads
from sched.config import load_config
from sched.evaluate.policies import plan_spec, rule_spec
from sched.evaluate.runs import generate_scenarios, run_on_scenarios
from sched.evaluate.seeds import selection_seeds
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.sim.core import simulate_batch

RULES = ("atc", "wmdd", "wspt", "spt")
COST = "total_weighted_tardiness_s"


def counted_costs(scenario, end):
    """Each task's weighted tardiness, 0 for the warm-up's tasks (they count toward nothing)."""
    arr, _dur, _est, w, due = scenario.arrays
    return w * np.maximum(end - due, 0.0) * (arr >= scenario.counted_from_s)


def blocked_share(scenarios, schedules, hours):
    """{h: share of the total carried by tasks arriving while a task of >= h hours runs that
    started with no other task waiting}."""
    total, blocked = 0.0, dict.fromkeys(hours, 0.0)
    for sc, (start, end, _m) in zip(scenarios, schedules):
        arr, dur = sc.arrays[0], sc.arrays[1]
        wt = counted_costs(sc, end)
        total += wt.sum()
        for h in hours:
            mask = np.zeros(len(arr), dtype=bool)
            for i in np.flatnonzero(dur >= h * 3600.0):
                if not np.any((arr <= start[i]) & (start > start[i])):  # nobody else was waiting
                    mask |= (arr > start[i]) & (arr < end[i])
            blocked[h] += wt[mask].sum()
    return total, {h: b / total for h, b in blocked.items()}


def estimates_worth(cfg, seeds, scenarios, k):
    """{rule: (mean with the estimates, mean with the true durations)}."""
    specs = {r: rule_spec(r, k if r == "atc" else None) for r in RULES}
    noisy = run_on_scenarios(cfg, seeds, scenarios, specs)
    exact = []
    for sc in scenarios:
        f = sc.frame.copy()
        f["estimate_s"] = f["duration_s"]
        exact.append(type(sc)(sc.name, f, sc.week_start_s, sc.counted_from_s))
    true = run_on_scenarios(cfg, seeds, exact, specs)
    return {r: (noisy[noisy.policy == r][COST].mean(), true[true.policy == r][COST].mean()) for r in RULES}


def plan_against_atc(cfg, tuned, seeds, scenarios, setting):
    """(difference %, low, high, wins, ties, losses) of plan at ``setting`` ("SxH") on tuned ATC
    (``tuned``: the setting's tuned.json)."""
    samples, horizon = (int(x) for x in setting.lower().split("x"))
    name = f"atc-{samples}x{horizon}"
    grid = [{"name": name, "rollout": "atc-tuned", "samples": samples, "horizon": horizon}]
    c = cfg.replace(plan={"grid": grid})
    plan = plan_spec(c, tuned=tuned, base="atc-tuned", setting=name)
    specs = {"atc-tuned": plan["base_spec"], "plan": plan}
    t = run_on_scenarios(c, seeds, scenarios, specs)
    x, ref = t[t.policy == "plan"][COST].to_numpy(), t[t.policy == "atc-tuned"][COST].to_numpy()
    b = cfg.benchmark
    counts = bootstrap_counts(len(x), b["bootstrap_resamples"], b["bootstrap_seed"])
    d, lo, hi = paired_difference(x, ref, counts, b["ci_level"])
    return (d, lo, hi, *win_tie_loss(x, ref, b["tie_relative"], b["tie_absolute_s"]))


def main(argv=None):
    from sched.cli import ScriptParser, int_in

    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="the setting's config (the workflow's step config)")
    ap.add_argument("--tuned", required=True, help="the setting's tuned.json (ATC's k)")
    ap.add_argument("--scenarios", type=int_in(1), default=300, help="validation seeds (default 300)")
    ap.add_argument("--plan", nargs="*", default=[], metavar="SxH", help="plan settings to run, e.g. 32x50")
    ap.add_argument("--threads", type=int_in(1), default=2, help="threads for plan's scenarios (default 2)")
    args = ap.parse_args(argv)
    threads.apply(args.threads)
    cfg = load_config(args.config).replace(robustness={"settings": []})
    with open(args.tuned, encoding="utf-8") as fh:
        k = float(json.load(fh)["atc_k"])
    seeds = list(selection_seeds(cfg)[: args.scenarios])
    scenarios = generate_scenarios(cfg, seeds)
    schedules = simulate_batch([s.arrays for s in scenarios], "atc", machines=cfg.scenario.machines, k=k)
    totals = np.sort([counted_costs(s, e).sum() for s, (_st, e, _m) in zip(scenarios, schedules)])[::-1]
    total, blocked = blocked_share(scenarios, schedules, (1, 2, 4))
    n = len(seeds)
    mean, top = total / n / 1e3, totals[: n // 10].sum() / total * 100
    print(f"{n} validation scenarios ({seeds[0]}-{seeds[-1]}), tuned ATC (k = {k:g}): mean {mean:,.0f} k w.s")
    print(f"| the costliest {n // 10} scenarios carry | {top:.0f} % of the total |")
    for h, share in blocked.items():
        print(f"| tasks arriving during a task of >= {h} h started with none waiting | {share * 100:.1f} % |")
    for rule, (noisy, true) in estimates_worth(cfg, seeds, scenarios, k).items():
        gain = (true - noisy) / noisy * 100
        print(
            f"| {rule}: estimates {noisy / 1e3:,.0f} k, true durations {true / 1e3:,.0f} k | {gain:+.1f} % |"
        )
    for setting in args.plan:
        d, lo, hi, w, t, lo_ = plan_against_atc(cfg, args.tuned, seeds, scenarios, setting)
        print(f"| plan {setting} on tuned ATC | {d:+.2f} % [{lo:+.2f}, {hi:+.2f}], {w}/{t}/{lo_} |")


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/heavy_tail_diagnosis.py"))
