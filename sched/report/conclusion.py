"""The report's verdicts: the conclusion and the other settings (robustness).

The sentences are templates filled from the summary and the winner record,
including the case where the learned policy does not win.
"""

from sched.evaluate.policies import is_ppo, policy_key
from sched.report.format import ci, k, level_text, pct, rel
from sched.setting import describe as describe_setting
from sched.verdict.summary import UNIT


def conclusion_section(cfg, d):
    r = d["summary"].set_index("policy")
    w = d["winner"]
    level = cfg.benchmark.ci_level
    sel = w.get("selection")
    lines = [_winner_sentence(r, w, level) if sel is None else _chosen_sentence(r, w, level)]
    ppo = [p for p in r.index if is_ppo(p)]
    if not ppo:
        lines.append(
            "No learned policy was benchmarked (no PPO policy file), so this compares "
            "the dispatching rules only."
        )
    else:
        lines += _learned_policy_sentences(cfg, d, r, ppo, level)
    lines += _atc_sentences(r, level)
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
        f"`winner.json` records {w['policy']}{how} for {describe_setting(w['setting'])}; "
        f'`rank(tasks, policy="auto")` runs it for queues on these GPUs, and for other GPUs the '
        f"winner of the setting measured on them (docs/rank.md).",
    ]


def _winner_sentence(r, w, level):
    lo, hi = w["ci95_pct"]
    if w["significant"]:
        kind = "the learned policy" if is_ppo(w["policy"]) else "a dispatching rule"
        return (
            f"**The winner is {w['policy']}** ({kind}): its mean total weighted tardiness, "
            f"{k(r.loc[w['policy'], 'mean_twt_k'])} k w·s, is {rel(w['mean_difference_pct'], 2)} "
            f"than the runner-up {w['runner_up']}'s "
            f"({k(r.loc[w['runner_up'], 'mean_twt_k'])} k w·s), paired "
            f"{level_text(level)} interval {ci(lo, hi, 2)} %, entirely below zero."
        )
    return (
        f"**No policy wins significantly.** {w['reason']} The recorded winner is {w['policy']} "
        f"(mean {k(r.loc[w['policy'], 'mean_twt_k'])} k w·s)."
    )


def selection_sentence(w):
    """How the winner was chosen: on which validation seeds, then confirmed on test."""
    sel = w.get("selection")
    if sel is None:
        return "The winner was chosen on the test scenarios (this winner.json records no selection)."
    start, count = sel["seeds"]
    best = min(sel["means"], key=lambda p: (sel["means"][p], policy_key(p)))
    return (
        f"The winner is chosen on {count:,} validation scenarios (seeds {start}-{start + count - 1} "
        f"of seeds.validation, config `benchmark.selection_scenarios`; none of them tuned ATC's k or "
        f"chose a training checkpoint), among the {len(sel['means'])} policies that may win (the warm "
        f"starts do not compete, and plan, built on the winner, does not either); there {best} has the "
        f"lowest mean, {k(sel['means'][best] / UNIT)} k w·s. The test scenarios below only confirm "
        f"the choice, with the winner's paired interval against the policy it was compared to."
    )


def _chosen_sentence(r, w, level):
    """The winner chosen on validation, and what the test scenarios say of it."""
    lo, hi = w["ci95_pct"]
    x, ru = w["policy"], w["runner_up"]
    confirmed = (
        "entirely below zero: the test scenarios confirm it"
        if hi < 0
        else ("not entirely below zero: the test scenarios do not confirm the lead")
    )
    test = (
        f"on the test scenarios its mean, {k(r.loc[x, 'mean_twt_k'])} k w·s, is "
        f"{rel(w['mean_difference_pct'], 2)} than {ru}'s ({k(r.loc[ru, 'mean_twt_k'])} k w·s), "
        f"paired {level_text(level)} interval {ci(lo, hi, 2)} %, {confirmed}."
    )
    if w["significant"]:
        kind = "the learned policy" if is_ppo(x) else "a dispatching rule"
        return (
            f"{selection_sentence(w)} **The winner is {x}** ({kind}): on the validation scenarios its "
            f"lead over the runner-up {ru} is significant; {test}"
        )
    return (
        f"{selection_sentence(w)} **No policy wins significantly on the validation scenarios.** "
        f"{w['reason'].split(' On the test scenarios,')[0]} The recorded winner is {x}: {test}"
    )


def _learned_policy_sentences(cfg, d, r, ppo, level):
    """The best training seed against the best heuristic, the spread of seeds, the project's goal."""
    bh = r["best_heuristic"].iloc[0]
    best_ppo = min(ppo, key=lambda p: (r.loc[p, "mean_twt_k"], policy_key(p)))
    x = r.loc[best_ppo]
    verdict = (
        "beats"
        if x.diff_vs_best_heuristic_ci_hi_pct < 0
        else "loses to"
        if x.diff_vs_best_heuristic_ci_lo_pct > 0
        else "is not distinguishable from"
    )
    lines = [
        f"The best training seed, {best_ppo}, {verdict} the best heuristic {bh}: "
        f"{rel(x.diff_vs_best_heuristic_pct)} ({level_text(level)} interval "
        f"{ci(x.diff_vs_best_heuristic_ci_lo_pct, x.diff_vs_best_heuristic_ci_hi_pct)} %), "
        f"lower on {int(x.wins_vs_best_heuristic)} of {int(x.scenarios)} scenarios and higher "
        f"on {int(x.losses_vs_best_heuristic)}."
    ]
    lines += seed_spread_lines(d)
    goal = float(cfg.report.goal_pct)
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
    return lines


def seed_spread_lines(d):
    """How the learned policy varies across training seeds (none with fewer than two seeds)."""
    r = d["summary"]
    ppo = r[r["policy"].map(is_ppo)]
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


def _atc_sentences(r, level):
    """ATC (the field's reference) against the best heuristic, and what tuning its k changed."""
    bh = r["best_heuristic"].iloc[0]
    atc = r.loc["atc"]
    lines = []
    if bh == "atc":
        lines.append(f"ATC with k = {atc.atc_k:g}, the field's reference, is the best heuristic.")
    else:
        b = r.loc[bh]
        lines.append(
            f"The field's reference, ATC with k = {atc.atc_k:g}, is not the best heuristic: {bh} "
            f"is {rel(b.diff_vs_atc_pct)} ({level_text(level)} interval "
            f"{ci(b.diff_vs_atc_ci_lo_pct, b.diff_vs_atc_ci_hi_pct)} %, "
            f"{int(b.wins_vs_atc)}/{int(b.ties_vs_atc)}/{int(b.losses_vs_atc)} W/T/L)."
        )
    if "atc-tuned" in r.index and r.loc["atc-tuned", "atc_k"] == atc.atc_k:
        lines.append(f"Tuning k on validation scenarios kept k = {atc.atc_k:g}: atc-tuned is ATC.")
    elif "atc-tuned" in r.index:
        t = r.loc["atc-tuned"]
        lines.append(
            f"Tuning k on validation scenarios (k = {t.atc_k:g}) changes ATC's mean on the test "
            f"scenarios by {pct(t.diff_vs_atc_pct)} ({level_text(level)} interval "
            f"{ci(t.diff_vs_atc_ci_lo_pct, t.diff_vs_atc_ci_hi_pct)} %)."
        )
    return lines


# --------------------------------------------------------------------------- other settings


def robustness_section(cfg, robust):
    """``robust``: [(setting, its summary or None)] (:func:`sched.report.inputs.read_robustness`)."""
    if not robust:
        return []
    lines = [
        "## Other settings",
        "",
        f"The same test seeds under other settings (config `robustness.settings`), each with "
        f"ATC's k tuned for it on the validation seeds. Difference of each learned policy "
        f"with the setting's best heuristic, {level_text(cfg.benchmark.ci_level)} paired interval, "
        f"and the verdict (better / worse when the interval excludes zero).",
        "",
        "| setting | policies | best heuristic (mean k w·s) | learned policies vs best heuristic | verdict |",
        "|---|---|---|---|---|",
    ]
    for setting, summary in robust:
        lines.append(_robustness_row(cfg.scenario, setting, summary))
    return lines


def _value(v):
    """A setting's value as the config gives it: a number, or text (a machines spec)."""
    return f"{v:g}" if isinstance(v, (int, float)) else str(v)


def _robustness_row(sc, setting, summary):
    keys = ("load", "machines", "tasks")
    what = ", ".join(f"{key} {_value(setting[key])}" for key in keys if key in setting)
    base = ", ".join(f"{key} {_value(sc[key])}" for key in keys[:2] if key not in setting)
    if setting.get("workload"):  # drawn from a workload file: its arrivals set the load
        on = [k for k, v in (setting.get("workload_model") or {}).items() if v]
        scale = setting.get("workload_scale", 1.0)
        desc = (
            f"{setting['name']}: scenarios from {setting['workload']}"
            + (f" ({', '.join(on)})" if on else "")
            + (f", arrival rates x {_value(scale)}" if scale != 1.0 else "")
            + (f", {what}" if what else "")
        )
    elif what:
        desc = f"{setting['name']}: {what}" + (f" ({base})" if base else "")
    else:
        desc = f"{setting['name']}: {base} (the main ones)"
    train = setting.get("train") or {}
    trained = "retrained for it" if train else "trained on the main setting"
    if train.get("teacher_scenarios") == 0:
        trained += ", by PPO alone (no teacher)"
    if summary is None:
        if setting.get("profile") == "full":
            return f"| {desc} | {trained} | in the longer run only (`--config profile=full`) | | |"
        return f"| {desc} | {trained} | not run | | |"
    r = summary.set_index("policy")
    bh = r["best_heuristic"].iloc[0]
    diffs, verdicts = [], []
    for p in (p for p in r.index if is_ppo(p)):
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
    return (
        f"| {desc} | {trained} | {bh} ({k(r.loc[bh, 'mean_twt_k'])}) | "
        f"{'; '.join(diffs) or 'none'} | {verdict or 'no learned policy'} |"
    )
