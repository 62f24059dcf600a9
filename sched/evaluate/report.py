"""rapport.md and its figures, written from the files the benchmark produced.

Every number in the report is read from (or computed from) those files:
``per_scenario.csv``, ``resume.csv``, ``winner.json``, ``tuned.json``,
``clairvoyant.csv``, the demonstration's ``demo.csv`` and the training logs,
plus the scenario settings of the config. Nothing is typed by hand: the
sentences of the conclusion are templates filled from the numbers, including
the case where the learned policy does not win.
"""

import json
import math
import os
from pathlib import Path

import numpy as np

from sched.errors import SchedError
from sched.evaluate import benchmark as bm
from sched.files import read_csv

TRAIN_LOG_COLUMNS = ("iteration", "env_steps", "mean_episode_weighted_tardiness_s", "wall_s")
FIGURES = {
    "mean_ci": "benchmark_mean_ci.png",
    "paired": "benchmark_paired_vs_atc.png",
    "ecdf": "benchmark_ecdf.png",
    "learning": "learning_curves.png",
    "gantt": "demo_gantt.png",
}


class ReportError(SchedError):
    """A benchmark file is missing, malformed or inconsistent with the others."""


# --------------------------------------------------------------------------- reading


def _read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: not valid JSON: {exc}") from None


def read_resume(path):
    frame = read_csv(path, ReportError)
    if tuple(frame.columns) != bm.RESUME_COLUMNS:
        raise ReportError(
            f"{path}: columns {', '.join(frame.columns)}; expected exactly {', '.join(bm.RESUME_COLUMNS)}"
        )
    return frame


def read_winner(path):
    w = _read_json(path)
    if not isinstance(w, dict) or tuple(w) != bm.WINNER_KEYS:
        got = ", ".join(w) if isinstance(w, dict) else type(w).__name__
        raise ReportError(f"{path}: keys {got}; expected exactly {', '.join(bm.WINNER_KEYS)}")
    return w


def read_train_logs(train_dir, seeds):
    """{seed: log frame} for each training seed that has ``seed-<S>/train_log.csv``."""
    logs = {}
    for s in seeds:
        p = Path(train_dir) / f"seed-{s}" / "train_log.csv"
        if not p.exists():
            continue
        log = read_csv(p, ReportError)
        missing = [c for c in TRAIN_LOG_COLUMNS if c not in log.columns]
        if missing:
            raise ReportError(f"{p}: missing column(s) {', '.join(missing)}")
        if log.empty:
            raise ReportError(f"{p}: no rows")
        logs[s] = log
    return logs


def load(bench_dir, train_dir, demo_dir, cfg):
    """Every input of the report, checked for consistency."""
    bench_dir = Path(bench_dir)
    per = bm.read_per_scenario(bench_dir / "per_scenario.csv")
    bm.check_complete(per, str(bench_dir / "per_scenario.csv"))
    resume = read_resume(bench_dir / "resume.csv")
    winner = read_winner(bench_dir / "winner.json")
    # stale or mixed files would make a report that contradicts itself
    means = per.groupby("policy")["total_weighted_tardiness_s"].mean() / bm.UNIT
    if set(means.index) != set(resume["policy"]):
        raise ReportError(
            f"{bench_dir / 'resume.csv'}: policies {', '.join(resume['policy'])} "
            f"differ from per_scenario.csv's ({', '.join(means.index)})"
        )
    for _, r in resume.iterrows():
        if not math.isclose(r.mean_twt_k, means[r.policy], rel_tol=1e-9, abs_tol=1e-12):
            raise ReportError(
                f"{bench_dir / 'resume.csv'}: policy {r.policy} field mean_twt_k: "
                f"{r.mean_twt_k} does not match per_scenario.csv ({means[r.policy]}); "
                f"rerun `sched gather` or `sched benchmark`"
            )
    if winner["policy"] not in set(resume["policy"]):
        raise ReportError(f"{bench_dir / 'winner.json'}: policy {winner['policy']} is not in resume.csv")
    tuned = _read_json(bench_dir / "tuned.json") if (bench_dir / "tuned.json").exists() else None
    if tuned is None and "atc-tuned" in set(resume["policy"]):
        raise ReportError(f"{bench_dir / 'tuned.json'}: file not found (atc-tuned was benchmarked)")
    # the setup section describes the config: it must be the one the files came from
    sc = {key: cfg["scenario"][key] for key in ("tasks", "load", "machines")}
    if tuned is not None and tuned.get("scenario") != sc:
        raise ReportError(
            f"{bench_dir / 'tuned.json'}: made with scenario settings "
            f"{tuned.get('scenario')}, the config has {sc}; rerun the benchmark"
        )
    if set(per["tasks"]) != {sc["tasks"]}:
        raise ReportError(
            f"{bench_dir / 'per_scenario.csv'}: scenarios of "
            f"{sorted(set(per['tasks']))} tasks, the config has scenario.tasks "
            f"{sc['tasks']}; rerun the benchmark"
        )
    clair = None
    if (bench_dir / "clairvoyant.csv").exists():
        clair = read_csv(bench_dir / "clairvoyant.csv", ReportError)
        from sched.evaluate.headroom import CLAIRVOYANT_COLUMNS

        if tuple(clair.columns) != CLAIRVOYANT_COLUMNS:
            raise ReportError(
                f"{bench_dir / 'clairvoyant.csv'}: columns {', '.join(clair.columns)};"
                f" expected {', '.join(CLAIRVOYANT_COLUMNS)}"
            )
    demo = None
    if demo_dir is not None and (Path(demo_dir) / "demo.csv").exists():
        demo = bm.read_per_scenario(Path(demo_dir) / "demo.csv")
    ppo_seeds = sorted({int(p[4:]) for p in resume["policy"] if bm.is_ppo(p)} | set(bm.train_seeds(cfg)))
    logs = read_train_logs(train_dir, ppo_seeds)
    return {
        "per": per,
        "resume": resume,
        "winner": winner,
        "tuned": tuned,
        "clair": clair,
        "demo": demo,
        "logs": logs,
    }


# --------------------------------------------------------------------------- formatting


def k(x, digits=3):
    return "n/a" if x is None or not np.isfinite(x) else f"{x:,.{digits}f}"


def pct(x, digits=1):
    return "n/a" if x is None or not np.isfinite(x) else f"{x:+.{digits}f} %"


def ci(lo, hi, digits=1):
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "n/a"
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


def rel(x, digits=1):
    """'3.2 % lower' / '3.2 % higher' for a signed difference."""
    if x is None or not np.isfinite(x):
        return "n/a"
    if x == 0:
        return "equal"
    return f"{abs(x):.{digits}f} % {'lower' if x < 0 else 'higher'}"


def label(row):
    if isinstance(row.atc_k, float) and np.isfinite(row.atc_k):
        return f"{row.policy} (k = {row.atc_k:g})"
    return row.policy


def _lv(level):
    return f"{level * 100:g} %"


def _minutes(seconds):
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


# --------------------------------------------------------------------------- sections


def setup_section(cfg, d):
    per, tuned, logs = d["per"], d["tuned"], d["logs"]
    sc = cfg["scenario"]
    seeds = sorted(set(per["scenario_seed"]))
    tasks = sorted(set(per["tasks"]))
    b = cfg["benchmark"]
    lines = ["## Setup", ""]
    lines.append(
        f"* **Test scenarios**: {len(seeds)} scenarios, seeds {seeds[0]}-{seeds[-1]} "
        f"(the first of `seeds.test`, never used in training or tuning), "
        f"{'/'.join(str(t) for t in tasks)} tasks each, streaming Poisson arrivals at load "
        f"{sc['load']:g} on {sc['machines']} identical GPU(s). Every policy runs on the same "
        f"scenarios (common random numbers)."
    )
    from sched.data.scenario import estimate_noise_sigma, kind_specs

    kinds = ", ".join(
        f"{name} {spec['share'] * 100:.1f} % ({_dist(spec)})" for name, spec in kind_specs(cfg).items()
    )
    source = (
        f"the calibration file `{sc['calibration']}`" if sc.get("calibration") else "the config's task kinds"
    )
    lines.append(f"* **Durations**: from {source}: {kinds}.")
    noise = estimate_noise_sigma(cfg)
    lines.append(
        "* **Estimates**: "
        + (
            "the scheduler sees the true durations."
            if noise == 0
            else f"the scheduler sees estimates with log-normal noise, sigma {noise:.3g}."
        )
    )
    if tuned is not None:
        vs = tuned["validation_seeds"]
        grid = ", ".join(f"{g['atc_k']:g}: {k(g['mean_twt_s'] / bm.UNIT)}" for g in tuned["grid"])
        lines.append(
            f"* **ATC tuning**: k chosen on {vs['count']} validation scenarios (seeds "
            f"{vs['first']}-{vs['last']}) by the lowest mean total weighted tardiness; "
            f"chosen k = {tuned['atc_k']:g} (grid k: mean in 1,000 weighted s: {grid})."
        )
    if logs:
        parts = []
        for s, log in sorted(logs.items()):
            last = log.iloc[-1]
            parts.append(
                f"ppo-{s}: {int(last['iteration']):,} iterations, "
                f"{int(last['env_steps']):,} environment steps, {_minutes(last['wall_s'])}"
            )
        lines.append("* **Training budget** (from each seed's `train_log.csv`): " + "; ".join(parts) + ".")
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
            warm = any(
                (log["iteration"] == 0).any() and (log["iteration"] == -1).any() for log in logs.values()
            )
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
    else:
        lines.append("* **Training**: no training log found; no learned policy is described.")
    lines.append(
        f"* **Statistics**: differences are (mean policy - mean reference) / mean reference, "
        f"paired over the same scenarios; intervals are {_lv(b['ci_level'])} percentile intervals "
        f"of a paired bootstrap ({b['bootstrap_resamples']:,} resamples of the scenarios, seed "
        f"{b['bootstrap_seed']}). W/T/L count the scenarios where the policy's total weighted "
        f"tardiness is lower / equal within {b['tie_absolute_s']:g} weighted s + "
        f"{b['tie_relative']:g} relative / higher."
    )
    return lines


def _dist(spec):
    d = spec.get("distribution")
    try:
        if d == "lognormal":
            return f"log-normal, median {spec['median_s']:.4g} s, sigma {spec['sigma']:.3g}"
        if d == "gamma":
            return f"gamma, shape {spec['shape']:.4g}, scale {spec['scale_s']:.4g} s"
        if d == "empirical":
            return f"empirical, {len(spec['samples_s'])} samples"
    except (KeyError, TypeError):
        pass
    return str(d)


def results_section(cfg, d):
    r = d["resume"].copy()
    r = r.iloc[sorted(range(len(r)), key=lambda i: bm.policy_key(r["policy"].iloc[i]))]
    level = cfg["benchmark"]["ci_level"]
    bh = r["best_heuristic"].iloc[0]
    lv = _lv(level)
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
    ranked = d["resume"].sort_values("rank")
    lines += [
        "",
        "### Ranking",
        "",
        "By mean total weighted tardiness (lowest first): "
        + ", ".join(f"{int(x.rank)}. {x.policy} ({k(x.mean_twt_k)})" for x in ranked.itertuples())
        + ".",
    ]
    return lines


def ci_k(lo, hi):
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f"[{k(lo)}, {k(hi)}]"


def ppo_lines(d):
    r = d["resume"]
    ppo = r[r["policy"].map(bm.is_ppo)]
    if ppo.empty:
        return []
    bh = r["best_heuristic"].iloc[0]
    below = int((ppo["diff_vs_best_heuristic_ci_hi_pct"] < 0).sum())
    above = int((ppo["diff_vs_best_heuristic_ci_lo_pct"] > 0).sum())
    n = len(ppo)
    if n < 2:
        return []
    return [
        f"Across the {n} training seeds, the learned policy's mean ranges from "
        f"{k(ppo['mean_twt_k'].min())} to {k(ppo['mean_twt_k'].max())} k w·s, that is from "
        f"{pct(ppo['diff_vs_best_heuristic_pct'].min())} to "
        f"{pct(ppo['diff_vs_best_heuristic_pct'].max())} against the best heuristic {bh}; "
        f"it is significantly below {bh} for {below} of {n} seeds and significantly above it "
        f"for {above} of {n}."
    ]


def clairvoyant_section(cfg, d):
    clair = d["clair"]
    lines = ["## Clairvoyant headroom", ""]
    if clair is None or clair.empty:
        return lines + ["Not computed (`clairvoyant.csv` is absent; run `sched clairvoyant`)."]
    per, resume = d["per"], d["resume"]
    best = resume.sort_values("rank")["policy"].iloc[0]
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
            f"{k(c_tot / n / bm.UNIT)} k w·s per scenario on average against "
            f"{k(b_tot / n / bm.UNIT)} k w·s for the best policy, {best}: "
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


def demo_section(d, rapport_dir, figures_dir):
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
            f"| {row.policy} | {k(row.total_weighted_tardiness_s / bm.UNIT, 3)} | "
            f"{int(round(row.tardy_fraction * row.tasks))} |"
        )
    g = Path(figures_dir) / FIGURES["gantt"]
    if g.exists():
        lines += ["", f"![Gantt chart of the demonstration scenario]({_rel(g, rapport_dir)})"]
    return lines


def conclusion_section(cfg, d):
    r = d["resume"].set_index("policy")
    w = d["winner"]
    bh = r["best_heuristic"].iloc[0]
    level = cfg["benchmark"]["ci_level"]
    lines = []
    lo, hi = w["ci95_pct"]
    if w["significant"]:
        kind = "the learned policy" if bm.is_ppo(w["policy"]) else "a dispatching rule"
        lines.append(
            f"**The winner is {w['policy']}** ({kind}): its mean total weighted tardiness, "
            f"{k(r.loc[w['policy'], 'mean_twt_k'])} k w·s, is {rel(w['mean_difference_pct'], 2)} "
            f"than the runner-up {w['runner_up']}'s "
            f"({k(r.loc[w['runner_up'], 'mean_twt_k'])} k w·s), paired "
            f"{_lv(level)} interval {ci(lo, hi, 2)} %, entirely below zero."
        )
    else:
        lines.append(
            f"**No policy wins significantly.** {w['reason']} The recorded winner is {w['policy']} "
            f"(mean {k(r.loc[w['policy'], 'mean_twt_k'])} k w·s)."
        )
    ppo = [p for p in r.index if bm.is_ppo(p)]
    if not ppo:
        lines.append(
            "No learned policy was benchmarked (no PPO policy file), so this compares "
            "the dispatching rules only."
        )
    else:
        best_ppo = min(ppo, key=lambda p: (r.loc[p, "mean_twt_k"], bm.policy_key(p)))
        x = r.loc[best_ppo]
        verdict = (
            "beats"
            if x.diff_vs_best_heuristic_ci_hi_pct < 0
            else "loses to"
            if x.diff_vs_best_heuristic_ci_lo_pct > 0
            else "is not distinguishable from"
        )
        lines.append(
            f"The best training seed, {best_ppo}, {verdict} the best heuristic {bh}: "
            f"{rel(x.diff_vs_best_heuristic_pct)} ({_lv(level)} interval "
            f"{ci(x.diff_vs_best_heuristic_ci_lo_pct, x.diff_vs_best_heuristic_ci_hi_pct)} %), "
            f"lower on {int(x.wins_vs_best_heuristic)} of {int(x.scenarios)} scenarios and higher "
            f"on {int(x.losses_vs_best_heuristic)}."
        )
        lines += ppo_lines(d)
        goal = float(cfg["report"]["goal_pct"])
        met = [
            p
            for p in ppo
            if r.loc[p, "diff_vs_best_heuristic_pct"] <= -goal
            and r.loc[p, "diff_vs_best_heuristic_ci_hi_pct"] < 0
        ]
        lines.append(
            f"The project's goal, a learned policy at least {goal:g} % below the best heuristic "
            f"with its interval entirely below zero for every training seed, is "
            f"{'met' if len(met) == len(ppo) else 'not met'}: {len(met)} of {len(ppo)} seeds "
            f"({', '.join(met) if met else 'none'})."
        )
    atc = r.loc["atc"]
    if bh == "atc":
        lines.append(f"ATC with k = {atc.atc_k:g}, the field's reference, is the best heuristic.")
    else:
        b = r.loc[bh]
        lines.append(
            f"The field's reference, ATC with k = {atc.atc_k:g}, is not the best heuristic: {bh} "
            f"is {rel(b.diff_vs_atc_pct)} ({_lv(level)} interval "
            f"{ci(b.diff_vs_atc_ci_lo_pct, b.diff_vs_atc_ci_hi_pct)} %, "
            f"{int(b.wins_vs_atc)}/{int(b.ties_vs_atc)}/{int(b.losses_vs_atc)} W/T/L)."
        )
    if "atc-tuned" in r.index and r.loc["atc-tuned", "atc_k"] == atc.atc_k:
        lines.append(f"Tuning k on validation scenarios kept k = {atc.atc_k:g}: atc-tuned is ATC.")
    elif "atc-tuned" in r.index:
        t = r.loc["atc-tuned"]
        lines.append(
            f"Tuning k on validation scenarios (k = {t.atc_k:g}) changes ATC's mean on the test "
            f"scenarios by {pct(t.diff_vs_atc_pct)} ({_lv(level)} interval "
            f"{ci(t.diff_vs_atc_ci_lo_pct, t.diff_vs_atc_ci_hi_pct)} %)."
        )
    lines.append(f"Against FIFO, {w['policy']}'s gain is {pct(r.loc[w['policy'], 'gain_vs_fifo_pct'])}.")
    how = ""
    if w["rule"]:
        how = f" (rule {w['rule']}" + (f", k = {w['atc_k']:g}" if w["atc_k"] is not None else "") + ")"
    if w["policy_file"]:
        how = f" (policy file `{w['policy_file']}`)"
    return [
        "## Conclusion",
        "",
        " ".join(lines),
        "",
        f'`winner.json` records {w["policy"]}{how}; `rank(tasks, policy="auto")` uses it.',
    ]


def read_robustness(cfg, robust_dir):
    """[(setting, resume frame or None)] for each setting of robustness.settings."""
    out = []
    for setting in cfg["robustness"]["settings"]:
        p = Path(robust_dir) / setting["name"] / "resume.csv"
        out.append((setting, read_resume(p) if p.exists() else None))
    return out


def robustness_section(cfg, robust):
    if not robust:
        return []
    level = cfg["benchmark"]["ci_level"]
    sc = cfg["scenario"]
    lines = [
        "## Other settings",
        "",
        f"The same test seeds under other settings (config `robustness.settings`), each with "
        f"ATC's k tuned for it on the validation seeds. Difference of each learned policy "
        f"with the setting's best heuristic, {_lv(level)} paired interval, and the verdict "
        f"(better / worse when the interval excludes zero).",
        "",
        "| setting | policies | best heuristic (mean k w·s) | learned policies vs best heuristic | verdict |",
        "|---|---|---|---|---|",
    ]
    for setting, res in robust:
        what = ", ".join(f"{key} {setting[key]:g}" for key in ("load", "machines") if key in setting)
        base = ", ".join(f"{key} {sc[key]:g}" for key in ("load", "machines") if key not in setting)
        desc = f"{setting['name']}: {what}" + (f" ({base})" if base else "")
        trained = "retrained for it" if setting.get("train") else "trained on the main setting"
        if res is None:
            lines.append(f"| {desc} | {trained} | not run | | |")
            continue
        r = res.set_index("policy")
        bh = r["best_heuristic"].iloc[0]
        ppo = [p for p in r.index if bm.is_ppo(p)]
        diffs, verdicts = [], []
        for p in ppo:
            x = r.loc[p]
            diffs.append(
                f"{p} {pct(x.diff_vs_best_heuristic_pct)} "
                f"{ci(x.diff_vs_best_heuristic_ci_lo_pct, x.diff_vs_best_heuristic_ci_hi_pct)}"
            )
            verdicts.append(
                "better"
                if x.diff_vs_best_heuristic_ci_hi_pct < 0
                else "worse"
                if x.diff_vs_best_heuristic_ci_lo_pct > 0
                else "no significant difference"
            )
        verdict = ", ".join(
            f"{v} ({n})" for v in dict.fromkeys(verdicts) for n in [sum(1 for x in verdicts if x == v)]
        )
        lines.append(
            f"| {desc} | {trained} | {bh} ({k(r.loc[bh, 'mean_twt_k'])}) | "
            f"{'; '.join(diffs) or 'none'} | {verdict or 'no learned policy'} |"
        )
    return lines


def figures_section(made, notes, rapport_dir):
    captions = {
        "mean_ci": "Mean total weighted tardiness per policy with its bootstrap interval",
        "paired": "Per-scenario paired differences against ATC",
        "ecdf": "ECDF of the per-scenario total weighted tardiness",
        "learning": "Learning curves of each training seed",
    }
    lines = ["## Figures", ""]
    for key, path in made.items():
        lines.append(f"![{captions[key]}]({_rel(path, rapport_dir)})")
        lines.append("")
    for note in notes:
        lines.append(f"* {note}")
    return lines


def reproduce_section(cfg, d, paths):
    conf = f" --config {paths['config']}" if paths.get("config") else ""
    pols = sorted(d["resume"]["policy"], key=bm.policy_key)
    pol_opt = "" if pols == bm.default_policies(cfg) else f" --policies {','.join(pols)}"
    bench = paths["bench"]
    shards = bm.shard_ranges(cfg)
    lines = [
        "## Reproduce",
        "",
        "The whole pipeline (calibration, training, benchmark, report) from the repository root:",
        "",
        "```bash",
        "snakemake -j4 results/rapport.md",
        "```",
        "",
        "The benchmark and report steps by hand (each shard is an independent job):",
        "",
        "```bash",
        f"sched{conf} tune --out {bench}/tuned.json",
    ]
    for s in shards:
        lines.append(
            f"sched{conf} benchmark{pol_opt} --tuned {bench}/tuned.json --seeds "
            f"{bm.range_text(s)} --out {bench}/shards/{bm.range_text(s)}"
        )
    lines.append(
        f"sched{conf} gather "
        + " ".join(f"{bench}/shards/{bm.range_text(s)}/per_scenario.csv" for s in shards)
        + f" --tuned {bench}/tuned.json --out {bench}"
    )
    lines += [
        f"sched{conf} clairvoyant --out {bench}/clairvoyant.csv",
        f"sched{conf} demo --tuned {bench}/tuned.json --out {paths['demo']} --figures {paths['figures']}",
        f"sched{conf} report --bench {bench} --out {paths['out']}",
        "```",
        "",
        f"(`sched{conf} benchmark{pol_opt} --tuned {bench}/tuned.json --out {bench}` runs "
        f"all test seeds in one job and gives the same files as the shards and `gather`.)",
    ]
    return lines


def _rel(path, start):
    return os.path.relpath(Path(path), Path(start)).replace(os.sep, "/")


# --------------------------------------------------------------------------- building


def make_figures(cfg, d, figures_dir):
    from sched.evaluate import figures

    dpi = cfg["report"]["figure_dpi"]
    fd = Path(figures_dir)
    made, notes = {}, []
    made["mean_ci"] = figures.mean_with_ci(
        d["resume"], fd / FIGURES["mean_ci"], dpi, cfg["benchmark"]["ci_level"]
    )
    made["paired"] = figures.paired_differences(d["per"], fd / FIGURES["paired"], dpi)
    made["ecdf"] = figures.ecdf(d["per"], fd / FIGURES["ecdf"], dpi)
    if d["logs"]:
        ref = None
        atc_val = [
            log["val_atc_weighted_tardiness_s"].dropna()
            for log in d["logs"].values()
            if "val_atc_weighted_tardiness_s" in log
        ]
        atc_val = [v.iloc[0] for v in atc_val if len(v)]
        if atc_val:  # ATC (rules.atc_k) on the same validation scenarios, from the logs
            ref = (f"ATC k = {cfg['rules']['atc_k']:g}, same scenarios", atc_val[0])
        made["learning"] = figures.learning_curves(d["logs"], fd / FIGURES["learning"], dpi, reference=ref)
    else:
        notes.append(
            "Learning curves: no training log (`results/train/seed-<S>/train_log.csv`) "
            "was found, so there is no learning-curve figure."
        )
    return made, notes


def render(cfg, d, made, notes, paths):
    rapport_dir = Path(paths["out"]).parent
    sections = [
        [
            f"# {cfg['report']['title']}",
            "",
            f"Written by `sched report` from the files in `{paths['bench']}`; every number below is "
            f"read from them (and from the scenario settings of the config).",
        ],
        setup_section(cfg, d),
        results_section(cfg, d),
        clairvoyant_section(cfg, d),
        demo_section(d, rapport_dir, paths["figures"]),
        conclusion_section(cfg, d),
        robustness_section(cfg, d.get("robust")),
        figures_section(made, notes, rapport_dir),
        reproduce_section(cfg, d, paths),
    ]
    return "\n".join("\n".join(s) + "\n" for s in sections)


def build(
    cfg, bench_dir, out, figures_dir, train_dir, demo_dir, config_path=None, robust_dir="results/robustness"
):
    """Write the figures and rapport.md; returns the paths written."""
    from sched import files

    d = load(bench_dir, train_dir, demo_dir, cfg)
    d["robust"] = read_robustness(cfg, robust_dir)
    paths = {
        "bench": str(bench_dir),
        "out": str(out),
        "figures": str(figures_dir),
        "demo": str(demo_dir),
        "config": config_path,
    }
    made, notes = make_figures(cfg, d, figures_dir)
    text = render(cfg, d, made, notes, paths)
    files.write_text(out, text)
    return [Path(out), *made.values()]
