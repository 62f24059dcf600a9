"""The report's "Studio" section: the studio setting (issue 24, docs/workload.md).

Reads the studio's files under the robustness folder (``studio/``): its
summary on test scenarios drawn from the fit (``resume.csv``), its winner
(``winner.json``, gated on the held-out days) and the held-out replay
(``replay/resume.csv``, ``replay/per_scenario.csv``, ``replay/windows.csv``), the
validation-day replay (``replay-validation/``), the fidelity check (``fidelity/``) and the
tuned k (``tuned.json``).
"""

from pathlib import Path

from sched import layout
from sched.evaluate.policies import is_heuristic, is_ppo, policy_key
from sched.report.format import k, level_text, pct
from sched.report.workload import paired_table


def read_studio(robust_dir):
    """The studio's files as a dict (summary, winner, held_summary, held_per, windows), or None
    when the studio setting was not built (no resume.csv)."""
    from sched.evaluate.errors import ReportError
    from sched.evaluate.per_scenario import read_per_scenario
    from sched.files import read_csv
    from sched.ranking.verdict_files import check_winner
    from sched.report.inputs import read_summary, read_verdict_record

    d = Path(robust_dir) / layout.STUDIO
    if not (d / layout.SUMMARY).exists():
        return None
    out = {"summary": read_summary(d / layout.SUMMARY), "winner": None, "held_summary": None}
    if (d / layout.WINNER).exists():
        out["winner"] = read_verdict_record(d / layout.WINNER, check_winner)  # as rank() checks it
    r = d / Path(layout.studio_replay_dir()).name
    if (r / layout.SUMMARY).exists():
        out["held_summary"] = read_summary(r / layout.SUMMARY)
        out["held_per"] = read_per_scenario(r / layout.PER_SCENARIO)
        out["windows"] = read_csv(r / layout.REPLAY_WINDOWS, ReportError)
    v = d / Path(layout.studio_validation_dir()).name
    out["validation_summary"] = read_summary(v / layout.SUMMARY) if (v / layout.SUMMARY).exists() else None
    if out["validation_summary"] is not None:
        out["validation_windows"] = read_csv(v / layout.REPLAY_WINDOWS, ReportError)
    f = d / Path(layout.fidelity_dir()).name
    out["fidelity"] = None
    if (f / layout.FIDELITY_RECORD).exists():
        from sched.data.workload.fidelity import FidelityError, read_fidelity

        try:
            record = read_fidelity(f / layout.FIDELITY_RECORD)
        except FidelityError as exc:
            raise ReportError(str(exc)) from None
        out["fidelity"] = (read_csv(f / layout.FIDELITY_TABLE, ReportError), record)
    out["tuned"] = None
    if (d / layout.TUNED).exists():
        out["tuned"] = read_verdict_record(d / layout.TUNED, _check_tuned)
    return out


def _check_tuned(data, path):
    """tuned.json as rank() checks it, and its ``validation_days`` as the section reads it."""
    from sched.ranking.tasks import RankInputError
    from sched.ranking.verdict_files import check_tuned

    check_tuned(data, path)
    days = data.get("validation_days")
    if days is None:
        return
    num = ("generated_atc_k", "default_atc_k")
    ok = (
        isinstance(days, dict)
        and all(isinstance(days.get(k), (int, float)) and not isinstance(days.get(k), bool) for k in num)
        and type(days.get("days")) is int
        and isinstance(days.get("reason"), str)
    )
    if not ok:
        raise RankInputError(
            f"{path}: field validation_days: expected {{days, generated_atc_k, default_atc_k, reason, ...}}"
        )


def _ordered(summary):
    return summary.iloc[sorted(range(len(summary)), key=lambda i: policy_key(summary["policy"].iloc[i]))]


def _span(split, key):
    v = split.get(key) if split else None
    return f"{v[0]} to {v[1]}" if v else "none"


def studio_section(cfg, studio, fit):
    """The section's lines ([] when the studio setting was not built)."""
    if studio is None:
        return []
    lv = level_text(cfg.benchmark.ci_level)
    split = (fit or {}).get("split") or {}
    s = _ordered(studio["summary"])
    bh = s["best_heuristic"].iloc[0]
    n = int(s["scenarios"].iloc[0])
    lines = [
        "## Studio",
        "",
        f'The studio\'s own queue (docs/workload.md, "The studio setting"): the workload fitted on '
        f"**{_span(split, 'fitted')}** of its history; the validation days **{_span(split, 'validation')}** "
        f"(config `workload.validation_days`), where the verdict and its tuned k are chosen with the "
        f"generated validation scenarios; **{_span(split, 'held_out')}** held out "
        f"(config `workload.test_days`), which only confirm. The fit reads neither. Policies "
        f"`ppo-<S>` trained for it on "
        f"scenarios drawn from the fit (arrivals by hour of the week, priorities by hour, deadline "
        f"allowances, durations scaled to the history's load), each spanning at least a day; "
        f"`main-ppo-<S>` are the main setting's policies, run as they are. Mean total weighted "
        f"tardiness in k w·s; differences with the best rule, paired ({lv} bootstrap intervals; "
        f"negative is better).",
        "",
        f"**Test scenarios drawn from the fit** ({n} seeds; best rule **{bh}**):",
        "",
        *paired_table(s, bh, lv),
    ]
    lines += _fidelity_lines(studio.get("fidelity"))
    lines += _tuned_lines(studio.get("tuned"))
    val = studio.get("validation_summary")
    if val is not None:
        v = _ordered(val)
        vb = v["best_heuristic"].iloc[0]
        vw = studio["validation_windows"]
        lines += [
            "",
            f"**Validation days** ({len(vw)} days, {int(vw['tasks'].sum()):,} tasks, replayed as one stream "
            f"from the day before; best rule **{vb}**, the reference the held-out days confirm against):",
            "",
            *paired_table(v, vb, lv),
        ]
    held = studio.get("held_summary")
    if held is not None:
        h = _ordered(held)
        hb = h["best_heuristic"].iloc[0]
        w = studio["windows"]
        lines += [
            "",
            f"**Held-out days** ({len(w)} days, {int(w['tasks'].sum()):,} tasks, replayed as one stream "
            f"from the day before, the backlog kept over midnight; each task counts toward its submission "
            f"day; the scheduler sees the duration model's estimates; best rule **{hb}**):",
            "",
            *paired_table(h, hb, lv),
            "",
            *_per_day(studio["held_per"], w, hb),
        ]
    lines += ["", *_verdict_lines(studio.get("winner"))]
    return lines


def _fidelity_lines(fidelity):
    """The fidelity table and figure (``sched fidelity``)."""
    if fidelity is None:
        return []
    from sched.data.workload.fidelity import KINDS
    from sched.data.workload.fidelity_text import misses_text, switches_text, verdict_text

    table, record = fidelity
    lines = [
        "",
        f'**Fidelity of the generator** (docs/workload.md, "Fidelity"): the validation days against '
        f"{record['streams']} streams generated from the fit over the same hours of the week (a warm-up "
        f"day first, counted toward nothing, as the real stream) and {record['scenarios']} generated "
        f"validation scenarios as the studio draws them ({_warm_up_words(record)}); queue, backlog "
        f"and late tasks under {record['reference']}. "
        + " ".join(t for t in (verdict_text(record), misses_text(record), switches_text(record)) if t),
        "",
        "| metric | rule | " + " | ".join(KINDS) + " |",
        "|---|---|" + "---:|" * len(KINDS),
    ]
    for row in table.itertuples(index=False):
        rule = row.rule if isinstance(row.rule, str) else ""
        lines.append(
            f"| {row.metric} | {rule} | " + " | ".join(f"{getattr(row, kd):.3f}" for kd in KINDS) + " |"
        )
    fig = f"{Path(layout.fidelity_dir()).relative_to(layout.RESULTS)}/{layout.FIDELITY_FIGURE}"
    return [*lines, "", f"![fidelity of the generator]({fig})"]


def _warm_up_words(record):
    days = record.get("scenario_warm_up_days") or 0
    if not days:
        return "each from an empty queue"
    return f"after {days:g} warm-up day(s) whose tasks count toward nothing (`studio.warm_up_days`)"


def _tuned_lines(tuned):
    """ATC's k of the studio, and how the validation days weighed it (tuned.json)."""
    days = (tuned or {}).get("validation_days")
    if not days:
        return []
    return [
        "",
        f"**ATC's k**: {tuned['atc_k']:g} (generated scenarios: {days['generated_atc_k']:g}; default "
        f"{days['default_atc_k']:g}); on the {days['days']} validation days: {days['reason']}.",
    ]


def _per_day(per, windows, best):
    """Per-day totals (k w·s) of the best rule, atc-tuned and each learned policy."""
    names = sorted(
        (p for p in set(per["policy"]) if p in (best, "atc-tuned") or is_ppo(p) or p.startswith("main-")),
        key=policy_key,
    )
    pivot = per.pivot(index="scenario_seed", columns="policy", values="total_weighted_tardiness_s")
    lines = [
        "Per held-out day (k w·s):",
        "",
        "| day | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for row in windows.itertuples():
        vals = [k(pivot.loc[row.scenario_seed, p] / 1000.0) for p in names]
        lines.append(f"| {row.window} | " + " | ".join(vals) + " |")
    return lines


def _verdict_lines(winner):
    if winner is None:
        return ["No studio verdict (winner.json) yet."]
    held = winner.get("held_out") or {}
    kind = "a rule" if is_heuristic(winner["policy"]) else "a learned policy"
    gate = ""
    if held and "held-out days" not in winner["reason"]:  # else the gate's words are in the reason
        gate = (
            f" It is also the best rule on the {held['days']} held-out days."
            if held["chosen"] == held["best_rule"]
            else f" On the {held['days']} held-out days, {held['chosen']} against {held['best_rule']}: "
            f"{pct(held['mean_difference_pct'])} [{pct(held['ci95_pct'][0])}, {pct(held['ci95_pct'][1])}]."
        )
    return [
        f"**Verdict: {winner['policy']}** ({kind}). {winner['reason']}{gate} With a history in the "
        f'config (`workload.history`), `rank(policy="auto")` and `sched rank` follow this verdict for '
        f"calls on the studio's GPUs (docs/rank.md).",
    ]


def studio_readme_line(studio):
    """One line for the README's results block."""
    if studio is None or studio.get("winner") is None:
        return []
    w = studio["winner"]
    held = w.get("held_out") or {}
    s = studio["summary"].set_index("policy")
    ppo = [p for p in s.index if is_ppo(p)]
    test = ", ".join(f"{p} {pct(s.loc[p, 'diff_vs_best_heuristic_pct'])}" for p in ppo)
    days = (w.get("selection") or {}).get("days")
    chosen_on = f"{days['days']} validation days and " if days else ""
    line = (
        f"**Studio** (the example history's fitted workload, chosen on {chosen_on}generated validation "
        f"scenarios, {held.get('days', '?')} held-out days): rank() runs **{w['policy']}**"
        + (" (confirmed on the held-out days)" if held.get("confirmed") else "")
        + (
            f" (not confirmed on the held-out days: {'; '.join(held['failed'])})"
            if held.get("failed")
            else ""
        )
        + f". On test scenarios from the fit vs {s['best_heuristic'].iloc[0]}: {test or 'no learned policy'}"
    )
    if studio.get("validation_summary") is not None:
        v = studio["validation_summary"].set_index("policy")
        line += f"; on the validation days vs {v['best_heuristic'].iloc[0]}: " + ", ".join(
            f"{p} {pct(v.loc[p, 'diff_vs_best_heuristic_pct'])}" for p in v.index if is_ppo(p)
        )
    if studio.get("held_summary") is not None:
        h = studio["held_summary"].set_index("policy")
        line += f"; on the held-out days vs {h['best_heuristic'].iloc[0]}: " + ", ".join(
            f"{p} {pct(h.loc[p, 'diff_vs_best_heuristic_pct'])}" for p in h.index if is_ppo(p)
        )
    return [line + ' (the report\'s "Studio" section).']
