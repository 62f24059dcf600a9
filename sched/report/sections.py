"""The sections of the report that describe the setup and the results, one function each.

Each takes the config and the report's inputs (:func:`sched.report.inputs.load`)
and returns its Markdown lines. Every number is read from those inputs.
"""

from pathlib import Path

from sched import layout
from sched.evaluate.policies import benchmark_policies, policy_key
from sched.evaluate.seeds import range_text, shard_ranges
from sched.report.format import (
    ci,
    ci_k,
    distribution,
    duration,
    k,
    label,
    level_text,
    link,
    pct,
    rel,
)
from sched.verdict.summary import UNIT

#: The report's figures: key -> file name in the figure folder.
FIGURES = {
    "mean_ci": "benchmark_mean_ci.png",
    "paired": "benchmark_paired_vs_atc.png",
    "ecdf": "benchmark_ecdf.png",
    "learning": "learning_curves.png",
    "chains": "learning_by_chain.png",
    "gantt": layout.DEMO_GANTT,
}
CAPTIONS = {
    "mean_ci": "Mean total weighted tardiness per policy with its bootstrap interval",
    "paired": "Per-scenario paired differences against ATC",
    "ecdf": "ECDF of the per-scenario total weighted tardiness",
    "learning": "Learning curves of each training seed, with PPO's diagnostics",
    "chains": "Validation cost against PPO's decisions simulated, per training chain",
}


# --------------------------------------------------------------------------- setup


def setup_section(cfg, d):
    return [
        "## Setup",
        "",
        _test_scenarios_line(cfg, d["per"]),
        *_task_lines(cfg),
        *_tuning_lines(d["tuned"]),
        *_training_lines(d["logs"]),
        _statistics_line(cfg.benchmark),
    ]


def _gpus(machines):
    """The config's GPUs in words: "1 identical GPU", or a spec "1x1.0,3x0.6" with its GPUs' speeds."""
    from sched.data.machines import describe, speeds

    sp = speeds(machines, "scenario.machines")
    text = describe(sp)
    return text if text.endswith(("GPU", "GPUs")) else f"{len(sp)} GPUs of speeds {text}"


def _test_scenarios_line(cfg, per):
    sc = cfg.scenario
    seeds = sorted(set(per["scenario_seed"]))
    tasks = sorted(set(per["tasks"]))
    if sc.get("workload"):
        from sched.report.workload import arrivals_text

        arrivals = arrivals_text(sc)
    else:
        arrivals = f"streaming Poisson arrivals at load {sc['load']:g}"
    return (
        f"* **Test scenarios**: {len(seeds)} scenarios, seeds {seeds[0]}-{seeds[-1]} "
        f"(the first of `seeds.test`, never used in training or tuning), "
        f"{'/'.join(str(t) for t in tasks)} tasks each, {arrivals} on {_gpus(sc['machines'])}. "
        f"Every policy runs on the same scenarios (common random numbers)."
    )


def _task_lines(cfg):
    """Where the durations come from, and what the scheduler sees of them."""
    from sched.data.model import scenario_model

    sc = cfg.scenario
    model = scenario_model(cfg)
    kinds = ", ".join(
        f"{name} {spec['share'] * 100:.1f} % ({distribution(spec)})"
        for name, spec in model.kind_specs().items()
    )
    source = (
        f"the calibration file `{sc['calibration']}`" if sc.get("calibration") else "the config's task kinds"
    )
    noise = model.sigma
    return [
        f"* **Durations**: from {source}: {kinds}.",
        "* **Estimates**: "
        + (
            "the scheduler sees the true durations."
            if noise == 0
            else f"the scheduler sees estimates with log-normal noise, sigma {noise:.3g}."
        ),
    ]


def _tuning_lines(tuned):
    if tuned is None:
        return []
    vs = tuned["validation_seeds"]
    grid = ", ".join(f"{g['atc_k']:g}: {k(g['mean_twt_s'] / UNIT)}" for g in tuned["grid"])
    return [
        f"* **ATC tuning**: k chosen on {vs['count']} validation scenarios (seeds "
        f"{vs['first']}-{vs['last']}) by the lowest mean total weighted tardiness; "
        f"chosen k = {tuned['atc_k']:g} (grid k: mean in 1,000 weighted s: {grid})."
    ]


def _training_lines(logs):
    """Each seed's training budget and the checkpoint its policy file kept, from the logs."""
    if not logs:
        return ["* **Training**: no training log found; no learned policy is described."]
    parts = []
    for s, log in sorted(logs.items()):
        last = log.iloc[-1]
        parts.append(
            f"ppo-{s}: {int(last['iteration']):,} iterations, "
            f"{int(last['env_steps']):,} environment steps, {duration(last['wall_s'])}"
        )
    lines = ["* **Training budget** (from each seed's `train_log.csv`): " + "; ".join(parts) + "."]
    kept = []
    for s, log in sorted(logs.items()):
        if "val_weighted_tardiness_s" in log.columns and log["val_weighted_tardiness_s"].notna().any():
            v = log.dropna(subset=["val_weighted_tardiness_s"])
            it = int(v.loc[v["val_weighted_tardiness_s"].idxmin(), "iteration"])
            what = {-1: "the untrained ATC prior", 0: "the teacher warm start"}.get(
                it, f"PPO iteration {it:,}"
            )
            kept.append(f"ppo-{s}: {what}")
    if kept:
        warm = any((log["iteration"] == 0).any() and (log["iteration"] == -1).any() for log in logs.values())
        lines.append(
            "* **Kept checkpoint** (lowest validation weighted tardiness in the log"
            + (
                ", the teacher warm start logged as iteration 0 and the untrained network as -1"
                if warm
                else ""
            )
            + "): "
            + "; ".join(kept)
            + "."
        )
    return lines


def _statistics_line(b):
    return (
        f"* **Statistics**: differences are (mean policy - mean reference) / mean reference, "
        f"paired over the same scenarios; intervals are {level_text(b['ci_level'])} percentile intervals "
        f"of a paired bootstrap ({b['bootstrap_resamples']:,} resamples of the scenarios, seed "
        f"{b['bootstrap_seed']}). W/T/L count the scenarios where the policy's total weighted "
        f"tardiness is lower / equal within {b['tie_absolute_s']:g} weighted s + "
        f"{b['tie_relative']:g} relative / higher."
    )


# --------------------------------------------------------------------------- results


def results_section(cfg, d):
    r = d["summary"].copy()
    r = r.iloc[sorted(range(len(r)), key=lambda i: policy_key(r["policy"].iloc[i]))]
    bh = r["best_heuristic"].iloc[0]
    lv = level_text(cfg.benchmark.ci_level)
    lines = [
        "## Results",
        "",
        f"Total weighted tardiness per scenario, in k w·s (units of 1,000 weighted seconds), over "
        f"{int(r['scenarios'].iloc[0])} test scenarios. Gain vs FIFO: how much lower than "
        f"FIFO (positive is better). Differences: negative is better than the reference. "
        f"Best heuristic: **{bh}** (lowest mean among the rules).",
        "",
        f"| policy | mean [{lv} CI] | p90 | gain vs FIFO | vs ATC [{lv} CI] | W/T/L vs ATC "
        f"| vs {bh} [{lv} CI] | W/T/L vs {bh} |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in r.itertuples():
        lines.append(
            f"| {label(row)} | {k(row.mean_twt_k)} {ci_k(row.mean_twt_ci_lo_k, row.mean_twt_ci_hi_k)} "
            f"| {k(row.p90_twt_k)} | {pct(row.gain_vs_fifo_pct)} "
            f"| {pct(row.diff_vs_atc_pct)} {ci(row.diff_vs_atc_ci_lo_pct, row.diff_vs_atc_ci_hi_pct)} "
            f"| {row.wins_vs_atc}/{row.ties_vs_atc}/{row.losses_vs_atc} "
            f"| {pct(row.diff_vs_best_heuristic_pct)} "
            f"{ci(row.diff_vs_best_heuristic_ci_lo_pct, row.diff_vs_best_heuristic_ci_hi_pct)} "
            f"| {row.wins_vs_best_heuristic}/{row.ties_vs_best_heuristic}/"
            f"{row.losses_vs_best_heuristic} |"
        )
    ranked = d["summary"].sort_values("rank")
    lines += [
        "",
        "### Ranking",
        "",
        "By mean total weighted tardiness (lowest first): "
        + ", ".join(f"{int(x.rank)}. {x.policy} ({k(x.mean_twt_k)})" for x in ranked.itertuples())
        + ".",
    ]
    return lines


def clairvoyant_section(cfg, d):
    clair = d["clair"]
    lines = ["## Clairvoyant headroom", ""]
    if clair is None or clair.empty:
        return lines + ["Not computed (`clairvoyant.csv` is absent; run `sched clairvoyant`)."]
    per, summary = d["per"], d["summary"]
    best = summary.sort_values("rank")["policy"].iloc[0]
    seeds = [s for s in clair["scenario_seed"] if s in set(per["scenario_seed"])]
    sub = clair[clair["scenario_seed"].isin(seeds)]
    pol = per[(per["policy"] == best) & per["scenario_seed"].isin(seeds)]
    b_tot, c_tot = pol["total_weighted_tardiness_s"].sum(), sub["clairvoyant_twt_s"].sum()
    s_tot = sub["start_twt_s"].sum()
    n = len(sub)
    lines.append(
        f"Method: for each of the first {len(clair)} test scenarios, an iterated local search "
        f"over start sequences that knows every future arrival and true duration (insertion and "
        f"interchange moves within {int(clair['window'].iloc[0])} positions, random "
        f"perturbations, a budget of {int(clair['budget_evaluations'].iloc[0]):,} move evaluations "
        f"per scenario), started from the best dispatching rule's schedule on that scenario. "
        f"A sequence is scheduled by starting each task on the earliest-free GPU at max(free "
        f"time, arrival), so the search may keep a GPU idle for a task about to arrive. It is not "
        f"a contestant: no real scheduler knows the future."
    )
    if n and b_tot > 0:
        lines += [
            "",
            f"On these {n} scenarios, the clairvoyant schedules total "
            f"{k(c_tot / n / UNIT)} k w·s per scenario on average against "
            f"{k(b_tot / n / UNIT)} k w·s for the best policy, {best}: "
            f"{rel((c_tot - b_tot) / b_tot * 100)}, and "
            f"{rel((c_tot - s_tot) / s_tot * 100 if s_tot > 0 else 0.0)} than the best "
            f"rule of each scenario (the search's start).",
        ]
    elif n:
        lines += [
            "",
            f"On these {n} scenarios the best policy, {best}, has no weighted "
            f"tardiness: there is no headroom to measure.",
        ]
    lines += [
        "",
        "Limits: a local search gives an upper bound on the optimum, not the optimum: "
        "the best achievable schedule is at least this far below the policies. Each "
        "move shifts a task by at most the window, and the budget is fixed.",
    ]
    return lines


def demo_section(d, report_dir, figures_dir):
    demo = d["demo"]
    lines = ["## Demonstration scenario", ""]
    if demo is None:
        return lines + ["Not computed (`demo.csv` is absent; run `sched demo`)."]
    seed = int(demo["scenario_seed"].iloc[0])
    t = demo.sort_values("total_weighted_tardiness_s", kind="stable")
    lines += [
        f"Scenario seed {seed} ({int(t['tasks'].iloc[0])} tasks), each policy's total "
        f"weighted tardiness (1,000 weighted s) and tardy tasks:",
        "",
        "| policy | total weighted tardiness | tardy tasks |",
        "|---|---:|---:|",
    ]
    for row in t.itertuples():
        lines.append(
            f"| {row.policy} | {k(row.total_weighted_tardiness_s / UNIT, 3)} | "
            f"{int(round(row.tardy_fraction * row.tasks))} |"
        )
    g = Path(figures_dir) / FIGURES["gantt"]
    if g.exists():
        lines += ["", f"![Gantt chart of the demonstration scenario]({link(g, report_dir)})"]
    return lines


# --------------------------------------------------------------------------- figures and how to rerun


def figures_section(made, notes, report_dir):
    lines = ["## Figures", ""]
    for key, path in made.items():
        lines.append(f"![{CAPTIONS[key]}]({link(path, report_dir)})")
        lines.append("")
    for note in notes:
        lines.append(f"* {note}")
    return lines


def reproduce_section(cfg, d, paths):
    conf = f" --config {paths['config']}" if paths.get("config") else ""
    pols = sorted(d["summary"]["policy"], key=policy_key)
    pol_opt = "" if pols == benchmark_policies(cfg) else f" --policies {','.join(pols)}"
    bench = paths["bench"]
    shards = [range_text(s) for s in shard_ranges(cfg)]
    tuned = f"{bench}/{layout.TUNED}"
    lines = [
        "## Reproduce",
        "",
        "The whole pipeline (calibration, training, benchmark, report) from the repository root:",
        "",
        "```bash",
        f"snakemake -j4 {layout.REPORT_PATH}",
        "```",
        "",
        "The benchmark and report steps by hand (each shard is an independent job):",
        "",
        "```bash",
        f"sched{conf} tune --out {tuned}",
    ]
    for s in shards:
        lines.append(f"sched{conf} benchmark{pol_opt} --tuned {tuned} --seeds {s} --out {bench}/shards/{s}")
    lines.append(
        f"sched{conf} gather "
        + " ".join(f"{bench}/shards/{s}/{layout.PER_SCENARIO}" for s in shards)
        + f" --tuned {tuned} --out {bench}"
    )
    lines += [
        f"sched{conf} clairvoyant --out {bench}/{layout.CLAIRVOYANT}",
        f"sched{conf} demo --tuned {tuned} --out {paths['demo']} --figures {paths['figures']}",
        f"sched{conf} report --bench {bench} --out {paths['out']}",
        "```",
        "",
        f"(`sched{conf} benchmark{pol_opt} --tuned {tuned} --out {bench}` runs "
        f"all test seeds in one job and gives the same files as the shards and `gather`.)",
        "",
        f"The training logs and warm starts the training sections read are written by `sched train`, "
        f"one job per training seed (`snakemake -j4 {layout.policy_file('<S>')}`, the command in "
        f"`{layout.log('train/seed-<S>')}`); a robustness setting's files by "
        f"`snakemake -j4 {layout.robust_root('<name>')}/{layout.SUMMARY}`.",
    ]
    return lines
