"""The report's "Lookahead (plan)" section: plan's candidacy on validation, then its test result.

The workflow's ``plan_candidacy`` jobs run plan on the winner at each setting of config
``plan.grid`` on the validation seeds that chose the winner; gather's gate picks a setting by
the rule fixed before looking (:func:`sched.verdict.candidacy.choose_setting`) and records every setting in
winner.json's ``plan``. ``benchmark_plan`` runs the picked setting on every test seed (and, in
the longer run, the gated teacher as a policy): their rows are in the main per-scenario table.
The measured decision times are run records (``plan.run.json`` beside each validation run),
shown apart from the results and never in the README.
"""

from pathlib import Path

from sched.report.format import ci, level_text, pct


def read_plan(plan_dir):
    """{setting: decision_ms} of the candidacy's run records under ``plan_dir`` ({} when none)."""
    from sched import files
    from sched.errors import SchedError
    from sched.formats import json_input
    from sched.limits import MAX_VERDICT_BYTES
    from sched.verdict.candidacy import PLAN_TIMES

    out = {}
    for path in sorted(Path(plan_dir).glob(f"validation/*/{PLAN_TIMES}")):
        try:  # bounded and non-blocking: a FIFO or a device in its place is skipped, not waited on
            ms = json_input.parse(
                files.read_bytes(path, SchedError, MAX_VERDICT_BYTES), path, SchedError, nan=True
            )
            ms = ms["decision_ms"]
        except (SchedError, KeyError, TypeError):
            continue  # a run record: the report shows what it can read of it
        if ms is None or _times_ok(ms):
            out[path.parent.name] = ms
    return out


def _times_ok(ms):
    """Whether a run record's ``decision_ms`` is what the section prints: p50 and p99, numbers."""
    return isinstance(ms, dict) and all(
        isinstance(ms.get(q), (int, float)) and not isinstance(ms.get(q), bool) for q in ("p50", "p99")
    )


def _shape(st):
    """A setting's candidates x samples x horizon (and depth)."""
    depth = f", depth {st['depth']}" if st.get("depth") else ""
    return f"{st['candidates']} x {st['samples']} x {st['horizon']}{depth}"


def _ms(times):
    return f"{times['p50']:.2f} / {times['p99']:.2f}" if times else "n/a"


def plan_section(cfg, times, winner, per):
    """plan's candidacy (every setting's paired validation result against the base, the pick) and
    the picked setting's result on the test scenarios; [] when the verdict records no candidacy."""
    rec = winner.get("plan")
    if not rec or not rec.get("candidacy"):
        return []
    from sched.evaluate.per_scenario import matrix
    from sched.evaluate.policies import TEACHER
    from sched.evaluate.statistics import win_tie_loss

    b = cfg.benchmark
    lv = level_text(b["ci_level"])
    base, cand = rec["base"], rec["candidacy"]
    first, n = rec["validation"]["seeds"]
    lines = [
        "## Lookahead (plan)",
        "",
        f"Policy plan (docs/plan.md) at each decision compares the base policy's best tasks on sampled "
        f"futures (common random numbers; waiting durations drawn around their estimates), each "
        f"continued by a rollout policy, and leaves the base's choice only when the paired test "
        f"(z = {cfg.plan['z']:g}) says so. Its candidacy runs each setting of config `plan.grid` on "
        f"**{base}**, the winner, on the {n} validation scenarios that chose it (seeds from {first}), "
        f"paired with {base} there; the rule, fixed before looking: {cand['rule']}. Decision time: "
        f"median / 99th percentile of rank()'s planned decision, one thread, measured (a run record, "
        f"`plan.run.json`; it decides nothing).",
        "",
        f"| setting | continuation | candidates x samples x horizon | plan vs {base} on validation "
        f"[{lv} CI] | W/T/L | ms a decision (p50 / p99) |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in cand["settings"]:
        st, name = r["settings"], r["setting"] or "(plan's own)"
        mark = f"**{name}** (picked)" if r["setting"] == cand["picked"] else name
        w, t, lz = r["wins_ties_losses"]
        lo, hi = r["ci95_pct"]
        lines.append(
            f"| {mark} | {st['rollout']} | {_shape(st)} | {pct(r['mean_difference_pct'])} {ci(lo, hi)} "
            f"| {w}/{t}/{lz} | {_ms(times.get(r['setting']))} |"
        )
    lo, hi = rec["validation"]["ci95_pct"]
    lines += [
        "",
        f"The candidacy picks {rec['setting']}: {pct(rec['validation']['mean_difference_pct'])} "
        f"{ci(lo, hi)} against {base} on validation, "
        + (
            "entirely below zero: plan on it is the verdict (what `rank()` runs)."
            if rec["chosen"]
            else f"not entirely below zero: {base} stays the verdict, plan is not shipped."
        ),
    ]
    seeds, twt = matrix(per)
    if "plan" in twt and base in twt and rec.get("test"):
        t = rec["test"]
        w, ti, lz = win_tie_loss(twt["plan"], twt[base], b["tie_relative"], b["tie_absolute_s"])
        verdict = (
            "better"
            if t["ci95_pct"][1] < 0
            else "worse"
            if t["ci95_pct"][0] > 0
            else "not significantly different"
        )
        lines += [
            "",
            f"plan against its base {base} on the {t['scenarios']} test scenarios (at {rec['setting']}, the "
            f"candidacy's pick, confirming only): {pct(t['mean_difference_pct'])} {ci(*t['ci95_pct'])}, "
            f"W/T/L {w}/{ti}/{lz}: {verdict}.",
        ]
    if TEACHER in twt:
        tr = cfg.train
        lines += [
            "",
            f"teacher (its row in the results table) is the gated teacher of training run as a policy "
            f"on every test scenario: the planner on {tr['teacher_base']} continued by itself, "
            f"{tr['teacher_samples']} samples at most ({tr['teacher_chunk']} at a time, the paired "
            f"stopping rule) of {tr['teacher_horizon']} arrivals, z = {tr['teacher_z']}.",
        ]
    return lines


def plan_test_line(section):
    """The section's sentence on the test scenarios (the README's "In short" repeats it), or None."""
    found = [x for x in section if x.startswith("plan against its base")]
    return found[-1] if found else None
