"""The report's first table: what ``rank()`` runs in each setting, and the evidence for it (issue 46).

One row a setting (the main one, each robustness setting the run built, the studio): the
verdict's policy (``plan`` with its base and settings when lookahead won its candidacy), its
paired difference to tuned ATC and to the best rule on the setting's test scenarios (interval,
wins/ties/losses), plan's paired validation interval against its base where the candidacy ran,
and plan's measured decision time there (a run record: ``plan.run.json``, p50 / p99 on one
thread), in the report only: the README's copy leaves that column out, so that its block is the
same bytes from any run of the same commit (issue 45). Every number is read from the run's files;
a setting the run did not build says so.
"""

from pathlib import Path

from sched import layout
from sched.evaluate.errors import ReportError
from sched.evaluate.per_scenario import matrix, read_per_scenario
from sched.evaluate.policies import PLAN, best_heuristic
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.ranking.verdict_files import check_winner
from sched.report.format import ci, pct
from sched.report.inputs import read_json, read_verdict_record

ATC_TUNED = "atc-tuned"


def read_setting(folder):
    """(winner, per-scenario table) of a setting's folder, or None when it was not built."""
    folder = Path(folder)
    if not (folder / layout.WINNER).exists() or not (folder / layout.PER_SCENARIO).exists():
        return None
    winner = read_verdict_record(folder / layout.WINNER, check_winner)  # as rank() checks it
    return winner, read_per_scenario(folder / layout.PER_SCENARIO)


def runs_text(winner):
    """What rank() runs, as the verdict names it."""
    p = winner["policy"]
    if p == PLAN and winner.get("plan"):
        return f"plan on {winner['plan']['base']} at {winner['plan'].get('setting') or 'its settings'}"
    if p == ATC_TUNED and winner.get("atc_k") is not None:
        return f"{p} (k = {winner['atc_k']:g})"
    return p


def _against(twt, x, ref, counts, bench):
    """'d % [lo, hi], W/T/L' of ``x`` against ``ref`` paired over the scenarios; '—' for itself."""
    if x == ref:
        return "— (itself)"
    if ref not in twt:
        return "not benchmarked"
    d, lo, hi = paired_difference(twt[x], twt[ref], counts, bench["ci_level"])
    w, t, lo_ = win_tie_loss(twt[x], twt[ref], bench["tie_relative"], bench["tie_absolute_s"])
    return f"{pct(d)} {ci(lo, hi)}, {w}/{t}/{lo_}"


def plan_cells(winner, plan_dir, absent="not run here"):
    """(plan's validation interval, its decision time) of the setting whose verdict records a
    candidacy (``plan_dir``: its plan folder, the candidacy's runs under validation/<setting>/);
    (``absent``, "") elsewhere. The studio's adds plan's result on its validation days."""
    from sched.verdict.candidacy import PLAN_TIMES

    p = winner.get("plan")
    if not p:
        return absent, ""
    v = p["validation"]
    shipped = "shipped" if p.get("chosen") else "not shipped"
    val = f"{pct(v['mean_difference_pct'])} {ci(*v['ci95_pct'])} at {p.get('setting')}"
    days = p.get("validation_days")
    if days:
        val += f"; {days['days']} days: {pct(days['mean_difference_pct'])} {ci(*days['ci95_pct'])}"
    val += f" ({shipped})"
    timed = Path(plan_dir) / "validation" / str(p.get("setting")) / PLAN_TIMES
    if not timed.exists():
        return val, ""
    t = read_json(timed).get("decision_ms") or {}
    if not all(isinstance(t.get(k), (int, float)) for k in ("p50", "p99")):
        raise ReportError(f"{timed}: field decision_ms: expected p50 and p99 in ms")
    return val, f"{t['p50']:.2f} / {t['p99']:.2f} ms"


def shipped_row(name, verdict, bench, plan_dir=None, full_only=False, times=True, absent="not run here"):
    """One row: the setting ``name`` and its (winner, per-scenario table) or None; ``plan_dir``:
    the setting's plan folder; ``full_only``: a setting of the longer run alone (config
    ``profile: full``); ``times``: with the column of plan's decision time (a run record);
    ``absent``: plan's cell where its candidacy did not run."""
    if verdict is None:
        why = "in the longer run only (`--config profile=full`)" if full_only else "not built by this run"
        return f"| {name} | {why} | | |{' |' if times else ''} |"
    winner, per = verdict
    seeds, twt = matrix(per)
    x = winner["policy"]
    if x not in twt:
        raise ReportError(f"setting {name}: the verdict {x} has no rows in its per_scenario.csv")
    counts = bootstrap_counts(len(seeds), bench["bootstrap_resamples"], bench["bootstrap_seed"])
    best = best_heuristic(twt)
    val, timed = plan_cells(winner, plan_dir, absent) if plan_dir else (absent, "")
    return (
        f"| {name} | {runs_text(winner)} | {_against(twt, x, ATC_TUNED, counts, bench)} | "
        f"{best}: {_against(twt, x, best, counts, bench)} | {val} |" + (f" {timed} |" if times else "")
    )


def shipped_section(
    cfg, main, settings, studio, plan_dir=layout.PLAN_BENCH_DIR, times=True, robust_dir=layout.ROBUST_DIR
):
    """The table: ``main`` (winner, per) of the main setting; ``settings`` [(setting, verdict or
    None)] of the robustness settings (config robustness.settings); ``studio`` (winner, per) or
    None; ``plan_dir``: the main setting's plan folder; ``times``: with plan's decision time (the
    report), or without it (the README's block, which holds results only); ``robust_dir``: the
    robustness settings' folder (plan's runs under each, config plan.elsewhere)."""
    bench = cfg.benchmark
    where = (cfg.plan.get("elsewhere") or {}).get("profile", "full")
    absent = {
        "off": "not run (plan.elsewhere.profile: off)",
        "full": "in the longer run only (`--config profile=full`)",
    }.get(where, "not run here")

    def robust(name, verdict, full_only=False):
        folder = layout.robust_plan_dir(name, robust_dir)
        return shipped_row(name, verdict, bench, folder, full_only, times, absent)

    timed = (
        " and plan's decision time there (p50 / p99, one thread: a run record)"
        if times
        else "; its decision time, a run record, is in `results/rapport.md`"
    )
    lines = [
        "## What rank() runs",
        "",
        "One row a setting: the verdict `rank()` follows there, against tuned ATC and against the best "
        f"rule on the setting's {bench['scenarios']:,} test scenarios that chose nothing (paired "
        "difference of the means, its interval, wins/ties/losses), plan's candidacy on the validation "
        f"scenarios (its chosen setting against its base){timed}.",
        "",
        "| setting | rank() runs | vs atc-tuned (test) | vs the best rule (test) | plan on validation |"
        + (" plan's decision time |" if times else ""),
        "|---|---|---|---|---|" + ("---|" if times else ""),
        shipped_row("main", main, bench, plan_dir, times=times),
    ]
    lines += [robust(s["name"], verdict, s.get("profile") == "full") for s, verdict in settings]
    if studio is not None:
        lines.append(robust(layout.STUDIO, studio))
    return lines
