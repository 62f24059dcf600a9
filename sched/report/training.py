"""The report's training sections: PPO's vital signs, the training throughput, PPO's
share of the gain (each ``ppo-<S>`` against its warm start ``ppo-<S>-warm``) and PPO
alone (a robustness setting that trains without the teacher).

The numbers come from each seed's ``train_log.csv`` (written by ``sched train``),
the benchmark's ``per_scenario.csv`` and ``resume.csv`` (``sched benchmark`` /
``sched gather``) and the robustness settings' ``resume.csv``. The PPO rows of a
log are those with iteration > 0 (-1 and 0 are the starting points).
"""

import numpy as np
import pandas as pd

from sched import layout
from sched.evaluate.per_scenario import matrix
from sched.evaluate.policies import is_ppo, ppo_seed, warm_name
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.report.format import ci, k, level_text, pct
from sched.report.rounds import rounds_section
from sched.verdict.summary import UNIT

#: Issue 14's target ranges of PPO's vital signs: the median approx_kl and the mean
#: clip_fraction over the PPO iterations of a seed.
TARGETS = {"approx_kl": (0.002, 0.03), "clip_fraction": (0.02, 0.3)}
#: Issue 14's other goals, counted per seed in the report: PPO's median decisions per
#: second, PPO's difference with its warm start and PPO alone's difference with the best
#: heuristic (in %, with the paired interval's upper end below zero).
GOAL_STEPS_PER_S = 30_000
GOAL_WARM_GAIN_PCT = -2.0
GOAL_ALONE_PCT = -3.0

VITAL_COLUMNS = (
    "seed",
    "iterations",
    "median_approx_kl",
    "mean_clip_fraction",
    "median_explained_variance",
    "mean_entropy",
    "kl_in_range",
    "clip_in_range",
)
THROUGHPUT_COLUMNS = (
    "seed",
    "iterations",
    "median_steps_per_s",
    "collect_s",
    "update_s",
    "collect_share",
    "update_share",
)
WARM_GAIN_COLUMNS = (
    "seed",
    "ppo_mean_k",
    "warm_mean_k",
    "diff_pct",
    "ci_lo_pct",
    "ci_hi_pct",
    "wins",
    "ties",
    "losses",
)


def ppo_iterations(log):
    """The PPO rows of a training log (iteration > 0)."""
    return log[log["iteration"] > 0]


def in_range(x, bounds):
    """Whether ``x`` lies in the closed interval ``bounds`` (False when undefined)."""
    return bool(np.isfinite(x) and bounds[0] <= x <= bounds[1])


def vital_signs(logs):
    """Per seed, over the PPO iterations: median approx_kl, mean clip_fraction, median
    explained_variance, mean entropy, and whether the first two are in :data:`TARGETS`."""
    rows = []
    for seed, log in sorted(logs.items()):
        p = ppo_iterations(log)
        kl, clip = p["approx_kl"].median(), p["clip_fraction"].mean()
        rows.append(
            {
                "seed": seed,
                "iterations": len(p),
                "median_approx_kl": kl,
                "mean_clip_fraction": clip,
                "median_explained_variance": p["explained_variance"].median(),
                "mean_entropy": p["entropy"].mean(),
                "kl_in_range": in_range(kl, TARGETS["approx_kl"]),
                "clip_in_range": in_range(clip, TARGETS["clip_fraction"]),
            }
        )
    return pd.DataFrame(rows, columns=list(VITAL_COLUMNS))


def throughput(logs):
    """Per seed, over the PPO iterations: the median decisions per second, and the time
    spent collecting and updating (sums in seconds, and their shares of the two together)."""
    rows = []
    for seed, log in sorted(logs.items()):
        p = ppo_iterations(log)
        collect, update = float(p["collect_s"].sum()), float(p["update_s"].sum())
        total = collect + update
        rows.append(
            {
                "seed": seed,
                "iterations": len(p),
                "median_steps_per_s": p["steps_per_s"].median(),
                "collect_s": collect,
                "update_s": update,
                "collect_share": collect / total if total > 0 else float("nan"),
                "update_share": update / total if total > 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=list(THROUGHPUT_COLUMNS))


def warm_gain(per, b):
    """Per seed with both ``ppo-<S>`` and ``ppo-<S>-warm`` in the per-scenario table: the
    means, the paired difference of PPO against its warm start with its bootstrap interval
    (the summary's statistics: same resamples, same level) and PPO's wins/ties/losses."""
    seeds, twt = matrix(per)
    counts = bootstrap_counts(len(seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    rows = []
    for name in (p for p in twt if is_ppo(p) and warm_name(ppo_seed(p)) in twt):
        x, ref = twt[name], twt[warm_name(ppo_seed(name))]
        d, lo, hi = paired_difference(x, ref, counts, b["ci_level"])
        w, t, loss = win_tie_loss(x, ref, b["tie_relative"], b["tie_absolute_s"])
        rows.append(
            {
                "seed": ppo_seed(name),
                "ppo_mean_k": x.mean() / UNIT,
                "warm_mean_k": ref.mean() / UNIT,
                "diff_pct": d,
                "ci_lo_pct": lo,
                "ci_hi_pct": hi,
                "wins": w,
                "ties": t,
                "losses": loss,
            }
        )
    return pd.DataFrame(rows, columns=list(WARM_GAIN_COLUMNS))


def verdict(lo, hi, better="better", worse="worse"):
    """'better' / 'worse' when the interval [lo, hi] of a difference excludes zero."""
    if np.isfinite(hi) and hi < 0:
        return better
    if np.isfinite(lo) and lo > 0:
        return worse
    return "no significant difference"


def _num(x, fmt):
    return "n/a" if x is None or not np.isfinite(x) else format(x, fmt)


# --------------------------------------------------------------------------- the section


def training_section(cfg, d):
    """'## Training diagnostics': vital signs, throughput, PPO's share of the gain."""
    lines = ["## Training diagnostics", ""]
    logs = d["logs"]
    if not logs:
        lines += [f"No training log (`{layout.train_log('<S>')}`, written by `sched train`) was found.", ""]
    else:
        lines += _vital_lines(logs) + [""] + _throughput_lines(logs) + [""]
    return lines + rounds_section(cfg, d["per"]) + _warm_gain_lines(cfg, d)


def _vital_lines(logs):
    v = vital_signs(logs)
    (kl_lo, kl_hi), (cl_lo, cl_hi) = TARGETS["approx_kl"], TARGETS["clip_fraction"]
    lines = [
        "### PPO vital signs",
        "",
        f"From each seed's `train_log.csv` (written by `sched train`), over its PPO iterations "
        f"(iteration > 0). Target ranges (issue 14): median approx_kl in [{kl_lo:g}, {kl_hi:g}], "
        f"mean clip_fraction in [{cl_lo:g}, {cl_hi:g}].",
        "",
        "| policy | PPO iterations | median approx_kl | mean clip_fraction | median explained variance "
        "| mean entropy | approx_kl in range | clip_fraction in range |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in v.itertuples():
        lines.append(
            f"| ppo-{r.seed} | {r.iterations:,} | {_num(r.median_approx_kl, '.4g')} "
            f"| {_num(r.mean_clip_fraction, '.4g')} | {_num(r.median_explained_variance, '.3f')} "
            f"| {_num(r.mean_entropy, '.4g')} | {'yes' if r.kl_in_range else 'no'} "
            f"| {'yes' if r.clip_in_range else 'no'} |"
        )
    both = int((v["kl_in_range"] & v["clip_in_range"]).sum())
    lines += ["", f"Both in range for {both} of {len(v)} seed(s)."]
    return lines


def _throughput_lines(logs):
    lines = [
        "### Training throughput",
        "",
        "From each seed's `train_log.csv`, over its PPO iterations: the median decisions per "
        "second (`steps_per_s`), and the time spent collecting decisions and updating the "
        "networks (sums of `collect_s` and `update_s`, and their shares of the two together).",
        "",
        "| policy | PPO iterations | median decisions/s | collecting | updating |",
        "|---|---:|---:|---:|---:|",
    ]
    t = throughput(logs)
    for r in t.itertuples():
        lines.append(
            f"| ppo-{r.seed} | {r.iterations:,} | {_num(r.median_steps_per_s, ',.0f')} "
            f"| {r.collect_s:,.1f} s ({_num(r.collect_share * 100, '.1f')} %) "
            f"| {r.update_s:,.1f} s ({_num(r.update_share * 100, '.1f')} %) |"
        )
    met = int((t["median_steps_per_s"] >= GOAL_STEPS_PER_S).sum())
    lines += ["", f"At least {GOAL_STEPS_PER_S:,} decisions/s (the goal) for {met} of {len(t)} seed(s)."]
    return lines


def _warm_gain_lines(cfg, d):
    b = cfg.benchmark
    lv = level_text(b["ci_level"])
    g = warm_gain(d["per"], b)
    lines = ["### PPO's share of the gain", ""]
    if g.empty:
        return lines + [
            "No warm start was benchmarked (`ppo-<S>-warm`, the teacher's warm start, "
            "`warm_start.pt`, exists only when training has a teacher): nothing to compare."
        ]
    s = d["summary"].set_index("policy")
    bh = s["best_heuristic"].iloc[0]
    lines += [
        f"Each learned policy ppo-<S> (after PPO) against its own warm start ppo-<S>-warm "
        f"(the teacher's distilled policy before PPO, `warm_start.pt`) on the test scenarios, "
        f"from `per_scenario.csv` (`sched benchmark`, `sched gather`): the paired difference of "
        f"the means with its {lv} bootstrap interval (the summary's resamples) and PPO's "
        f"wins/ties/losses. The columns against {bh}, the best heuristic, are the summary's.",
        "",
        f"| seed | warm start vs {bh} [{lv} CI] | PPO vs {bh} [{lv} CI] "
        f"| PPO vs its warm start [{lv} CI] | W/T/L | PPO's effect |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in g.itertuples():
        ppo, warm = s.loc[f"ppo-{r.seed}"], s.loc[warm_name(r.seed)]
        lines.append(
            f"| {r.seed} | {_vs_best(warm)} | {_vs_best(ppo)} "
            f"| {pct(r.diff_pct, 2)} {ci(r.ci_lo_pct, r.ci_hi_pct, 2)} | {r.wins}/{r.ties}/{r.losses} "
            f"| {verdict(r.ci_lo_pct, r.ci_hi_pct, 'improves', 'worsens')} |"
        )
    met = int(((g["diff_pct"] <= GOAL_WARM_GAIN_PCT) & (g["ci_hi_pct"] < 0)).sum())
    lines += [
        "",
        f"PPO at least {-GOAL_WARM_GAIN_PCT:g} % below its warm start with the interval below zero "
        f"(the goal) for {met} of {len(g)} seed(s).",
    ]
    return lines


def _vs_best(row):
    return (
        f"{pct(row.diff_vs_best_heuristic_pct)} "
        f"{ci(row.diff_vs_best_heuristic_ci_lo_pct, row.diff_vs_best_heuristic_ci_hi_pct)}"
    )


# --------------------------------------------------------------------------- PPO alone


def trains_ppo_alone(setting, scenario):
    """Whether the robustness setting ``setting`` (its config entry) trains PPO alone
    (train.teacher_scenarios 0) on the main queue: the main ``scenario``'s load, machines and
    tasks, and no workload of its own (its scenarios, and so its validation and test scores, are
    then the main setting's kind). The report's "PPO alone" table and its chain curves, and the
    workflow's report inputs, all ask this."""
    return (
        (setting.get("train") or {}).get("teacher_scenarios") == 0
        and not setting.get("workload")
        and all(setting.get(key, scenario[key]) == scenario[key] for key in ("load", "machines", "tasks"))
    )


def ppo_alone_settings(cfg, robust):
    """The robustness settings that train PPO alone on the main queue (:func:`trains_ppo_alone`),
    with their summaries: [(setting, summary or None)]."""
    return [(setting, summary) for setting, summary in robust if trains_ppo_alone(setting, cfg.scenario)]


def ppo_alone_lines(cfg, robust, main_summary=None):
    """'### PPO alone': per training seed of each such setting, its ppo-<S> against the
    setting's best heuristic (the setting's ``resume.csv``)."""
    chosen = ppo_alone_settings(cfg, robust)
    if not chosen:
        return []
    lv = level_text(cfg.benchmark.ci_level)
    main = None if main_summary is None else main_summary.set_index("policy")
    lines = [
        "",
        "### PPO alone",
        "",
        f"Policies trained by PPO from the ATC prior alone (no teacher, `train.teacher_scenarios: 0`) "
        f"at the main load and machines, on the same test scenarios, against the setting's best "
        f"heuristic (ATC's k tuned for it included), {lv} paired interval: from "
        f"`{layout.robust_root('<name>')}/{layout.SUMMARY}` (the workflow's `robust_train` and "
        f"`robust_benchmark` jobs: `sched train`, `sched benchmark`). The main run's policy of the "
        f"same seed (teacher, then PPO) is shown for comparison.",
        "",
        f"| setting | policy | mean (k w·s) | best heuristic (mean) | vs best heuristic [{lv} CI] "
        f"| W/T/L | verdict | main run's policy (mean) |",
        "|---|---|---:|---|---:|---:|---|---:|",
    ]
    goals = []
    for setting, summary in chosen:
        if summary is None:
            lines.append(f"| {setting['name']} | not run | | | | | | |")
            continue
        r = summary.set_index("policy")
        bh = r["best_heuristic"].iloc[0]
        ppo = [p for p in r.index if is_ppo(p)]
        met = sum(
            r.loc[p, "diff_vs_best_heuristic_pct"] <= GOAL_ALONE_PCT
            and r.loc[p, "diff_vs_best_heuristic_ci_hi_pct"] < 0
            for p in ppo
        )
        goals.append(
            f"{setting['name']}: at least {-GOAL_ALONE_PCT:g} % below {bh} with the interval below zero "
            f"(the goal) for {met} of {len(ppo)} seed(s)."
        )
        for p in ppo:
            x = r.loc[p]
            ref = k(main.loc[p, "mean_twt_k"]) if main is not None and p in main.index else "n/a"
            lines.append(
                f"| {setting['name']} | {p} | {k(x.mean_twt_k)} | {bh} ({k(r.loc[bh, 'mean_twt_k'])}) "
                f"| {_vs_best(x)} | {int(x.wins_vs_best_heuristic)}/{int(x.ties_vs_best_heuristic)}/"
                f"{int(x.losses_vs_best_heuristic)} "
                f"| {verdict(x.diff_vs_best_heuristic_ci_lo_pct, x.diff_vs_best_heuristic_ci_hi_pct)} "
                f"| {ref} |"
            )
    return lines + ([""] + goals if goals else [])
