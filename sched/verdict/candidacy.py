"""plan's candidacy: ``plan`` on the verdict becomes the verdict only on validation evidence.

The settings of config plan.grid (sched.learn.search.planner.grid_setting), each run on the
selection winner on the validation seeds that chose it (:func:`candidacy_results`), and the
rule, fixed before looking, that picks one (:func:`choose_setting`): the best setting has the
lowest mean paired difference to the base; the picked one is the first of the grid (listed
cheapest first, docs/plan.md measures each) whose mean lies within plan.choice_se bootstrap
standard errors of the best's. It ships, plan then being the verdict, only when its own paired
interval lies entirely below zero (:func:`plan_gate`, every setting, before the studio's
gates); the test scenarios only confirm, and the studio's validation days veto it when plan is
significantly worse there. Nothing measured in wall-clock time decides: a setting's decision
time is a run record (plan.run.json beside its validation table), shown by the report, never
read here. Also here: the file beside each validation run (``plan.json``,
:func:`plan_run_record`, :func:`read_plan_run`).
"""

import numpy as np

from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import check_complete, matrix
from sched.evaluate.policies import PLAN
from sched.evaluate.statistics import bootstrap_counts, paired_difference, paired_standard_error, win_tie_loss
from sched.verdict.periods import against, days_of


def candidacy_results(runs, selection, bench):
    """Each validation run of ``runs`` ((per-scenario table, plan.json record), one per setting)
    against the base's totals on the same seeds of ``selection`` (paired): a list of dicts
    (setting, settings, seeds, mean_difference_pct, ci95_pct, se_pct, wins_ties_losses).
    Every run must be on the same base and the same seeds."""
    sel_seeds, sel = matrix(selection)
    pos = {int(x): i for i, x in enumerate(sel_seeds)}
    out, first = [], None
    for table, run in runs:
        where = f"plan selection table of {run.get('setting')!r}"
        check_complete(table, where)
        seeds, twt = matrix(table)
        if PLAN not in twt:
            raise BenchmarkError(f"{where}: it holds no plan rows")
        missing = [int(x) for x in seeds if int(x) not in pos]
        if missing:
            raise BenchmarkError(f"{where}: seed {missing[0]} is not a selection seed")
        if first is None:
            first = (run["base"], seeds.tolist())
        elif (run["base"], seeds.tolist()) != first:
            raise BenchmarkError(
                f"{where}: run on {run['base']!r}, seeds {int(seeds[0])}.. ({len(seeds)}); the first "
                f"setting's on {first[0]!r}, seeds {first[1][0]}.. ({len(first[1])}): run every setting alike"
            )
        if run["base"] not in sel:
            raise BenchmarkError(f"{where}: its base {run['base']!r} is not in the selection table")
        ref = sel[run["base"]][[pos[int(x)] for x in seeds]]
        counts = bootstrap_counts(len(seeds), bench["bootstrap_resamples"], bench["bootstrap_seed"])
        d, lo, hi = paired_difference(twt[PLAN], ref, counts, bench["ci_level"])
        w, t, lz = win_tie_loss(twt[PLAN], ref, bench["tie_relative"], bench["tie_absolute_s"])
        out.append(
            {
                "setting": run.get("setting"),
                "settings": run["settings"],
                "seeds": [int(seeds[0]), len(seeds)],
                "mean_difference_pct": d,
                "ci95_pct": [lo, hi],
                "se_pct": paired_standard_error(twt[PLAN], ref, counts),
                "wins_ties_losses": [w, t, lz],
            }
        )
    return out


def choose_setting(results, choice_se):
    """Index in ``results`` (:func:`candidacy_results`, grid order: cheapest first) of the setting the rule
    picks: the first whose mean lies within ``choice_se`` standard errors of the best mean; None
    when no setting has a finite mean (no tardiness at all)."""
    finite = [i for i, r in enumerate(results) if np.isfinite(r["mean_difference_pct"])]
    if not finite:
        return None
    best = min(finite, key=lambda i: results[i]["mean_difference_pct"])
    se = results[best]["se_pct"]
    bound = results[best]["mean_difference_pct"] + choice_se * (se if np.isfinite(se) else 0.0)
    return next(i for i in finite if results[i]["mean_difference_pct"] <= bound)


def pick_setting(runs, selection, bench, choice_se, base):
    """(:func:`candidacy_results`, index of the pick or None) of plan's validation runs ``runs``,
    every one of which must have run on ``base``, the policy the selection table chooses."""
    for _, run in runs:
        if run.get("base") != base:
            raise BenchmarkError(
                f"plan selection: plan ran on {run.get('base')!r}, but the selection table chooses "
                f"{base!r}; rerun it with --plan-on the same selection table"
            )
    results = candidacy_results(runs, selection, bench)
    return results, choose_setting(results, choice_se)


def rule_text(choice_se):
    """The choice rule, as the report and winner.json state it."""
    return (
        f"the first setting of plan.grid (cheapest first) whose mean paired difference to the base on "
        f"the validation seeds lies within {choice_se:g} bootstrap standard errors of the best setting's; "
        f"it ships when its own interval lies entirely below zero"
    )


#: The keys of winner.json's ``plan`` record (docs/file-contract.md).
PLAN_KEYS = (
    "base",
    "chosen",
    "setting",
    "settings",
    "budget_ms",
    "validation",
    "validation_days",
    "test",
    "candidacy",
)


def _plan_on_days(days_table, base, bench):
    """plan against ``base`` over the validation days (``sched replay --validation --plan-on ...``'s
    table): {days, mean_difference_pct, ci95_pct}."""
    days, twt = days_of(days_table, "validation-day", base, "--validation")
    if PLAN not in twt:
        raise BenchmarkError(
            "validation-day table: no rows for plan; replay the days with plan too (`sched replay "
            "--validation --policies ...,plan --plan-on SELECTION.csv --plan-candidacy DIR ...`)"
        )
    d, lo, hi = against(twt, PLAN, base, days, bench)
    return {"days": len(days), "mean_difference_pct": d, "ci95_pct": [lo, hi]}


def _validation_words(base, picked, settings, on_days):
    """The verdict's words for plan's validation result: (the pick's, ``picked`` among ``settings``
    settings; the studio's validation days', ``on_days``, which veto it only when significantly
    worse: "" elsewhere)."""
    d, (lo, hi), n = picked["mean_difference_pct"], picked["ci95_pct"], picked["seeds"][1]
    name = f" at {picked['setting']}" if picked["setting"] else ""
    said = f"plan{name} on {base} against {base} on {n} validation scenarios: "
    said += f"{d:+.2f} % [{lo:+.2f} %, {hi:+.2f} %]"
    if settings > 1:
        said += f" (the setting the candidacy picks among {settings})"
    if on_days is None:
        return said, ""
    dd, (dlo, dhi) = on_days["mean_difference_pct"], on_days["ci95_pct"]
    worse = "significantly worse" if dlo > 0 else "not significantly worse"
    days = f"; on the {on_days['days']} validation days {dd:+.2f} % [{dlo:+.2f} %, {dhi:+.2f} %], {worse}"
    return said, days


def plan_gate(winner, plan_runs, selection, test, bench, choice_se=0.5, days=None):
    """``winner`` (a winner record chosen on ``selection``, changed in place and returned) with
    lookahead as a candidate: the record gains ``plan`` (:data:`PLAN_KEYS`), and becomes
    ``plan`` when plan on the winner, at the setting the candidacy picks, is significantly
    better than it on validation.

    ``plan_runs``: one (per-scenario table, plan.json record) per setting of the candidacy
    (``sched benchmark --split selection --plan-on ... --plan-setting NAME``), on the winner and
    the same validation seeds of the selection. ``selection``: the selection table (the base's
    totals on those seeds, paired). :func:`choose_setting` picks the setting
    (``choice_se``: config plan.choice_se); ``candidacy`` records every setting's result.
    ``test``: the test table, which confirms when it holds ``plan`` (run at the picked
    setting). ``bench``: the config's benchmark section. ``days``: the studio's validation-day
    table, which holds plan at the picked setting: its paired result against the base there is
    recorded (``validation_days``), and vetoes plan when significantly worse. A plan winner keeps
    its base's rule, k and policy file: what ``rank()`` runs under it."""
    base = winner["policy"]
    results, pick = pick_setting(plan_runs, selection, bench, choice_se, base)
    picked = results[pick] if pick is not None else results[0]
    run = plan_runs[pick if pick is not None else 0][1]
    d, (lo, hi) = picked["mean_difference_pct"], picked["ci95_pct"]
    chosen = bool(pick is not None and hi < 0)  # NaN (no tardiness at all): not chosen
    on_days = _plan_on_days(days, base, bench) if days is not None else None
    vetoed = bool(chosen and on_days is not None and on_days["ci95_pct"][0] > 0)
    chosen = chosen and not vetoed
    first, n = picked["seeds"]
    record = {
        "base": base,
        "chosen": chosen,
        "setting": picked["setting"],
        "settings": run["settings"],
        "budget_ms": run.get("budget_ms"),
        "validation": {"seeds": [first, n], "mean_difference_pct": d, "ci95_pct": [lo, hi]},
        "validation_days": on_days,
        "test": None,
        "candidacy": {
            "rule": rule_text(choice_se),
            "choice_se": choice_se,
            "picked": picked["setting"] if pick is not None else None,
            "settings": results,
        },
    }
    said, days_said = _validation_words(base, picked, len(results), on_days)
    t_seeds, t_twt = matrix(test)
    if PLAN in t_twt and base in t_twt:
        tc = bootstrap_counts(len(t_seeds), bench["bootstrap_resamples"], bench["bootstrap_seed"])
        td, tlo, thi = paired_difference(t_twt[PLAN], t_twt[base], tc, bench["ci_level"])
        record["test"] = {"scenarios": len(t_seeds), "mean_difference_pct": td, "ci95_pct": [tlo, thi]}
        confirm = f" On the test scenarios, plan against {base}: {td:+.2f} % [{tlo:+.2f} %, {thi:+.2f} %]."
    else:
        td, tlo, thi, confirm = float("nan"), float("nan"), float("nan"), ""
    if chosen:
        winner.update(
            policy=PLAN,
            significant=True,
            runner_up=base,
            mean_difference_pct=td,
            ci95_pct=[tlo, thi],
            reason=(
                f"{winner['reason']} Lookahead: {said}, which lies entirely below zero{days_said}: plan on "
                f"{base} is the verdict.{confirm}"
            ),
        )
    elif vetoed:
        winner["reason"] += (
            f" Lookahead: {said}, which lies entirely below zero{days_said}: the validation days veto it, "
            f"{base} stays.{confirm}"
        )
    else:
        winner["reason"] += (
            f" Lookahead: {said}, which does not lie entirely below zero{days_said}: {base} stays.{confirm}"
        )
    winner["plan"] = record
    return winner


#: The file beside plan's validation table (``sched benchmark --split selection --plan-on``).
PLAN_RUN = "plan.json"
PLAN_RUN_KEYS = ("base", "setting", "settings", "budget_ms")
#: Its run record: what a decision took, measured (wall clock: never read by a decision).
PLAN_TIMES = "plan.run.json"


def plan_run_record(base, settings, setting=None):
    """What ``plan.json`` holds: the base policy plan ran on, the grid setting's name (None:
    config plan's own settings) and its settings (``budget_ms`` apart)."""
    from sched.learn.search.planner import CANDIDACY_KEYS

    drop = ("budget_ms", *CANDIDACY_KEYS)
    st = {k: v for k, v in settings.items() if k not in drop}
    return {"base": base, "setting": setting, "settings": st, "budget_ms": settings.get("budget_ms")}


def read_plan_run(folder):
    """(per-scenario table, record) of plan's validation run in ``folder`` (per_scenario.csv and
    plan.json), each checked: a malformed one is a BenchmarkError naming the file and field."""
    from pathlib import Path

    from sched import files, layout
    from sched.evaluate.per_scenario import read_per_scenario
    from sched.formats import json_input
    from sched.limits import MAX_VERDICT_BYTES

    path = Path(folder) / PLAN_RUN
    run = json_input.parse(
        files.read_bytes(path, BenchmarkError, MAX_VERDICT_BYTES), path, BenchmarkError, nan=True
    )
    if not isinstance(run, dict) or sorted(run) != sorted(PLAN_RUN_KEYS):
        got = ", ".join(map(str, run)) if isinstance(run, dict) else type(run).__name__
        raise BenchmarkError(f"{path}: keys {got}; expected {', '.join(PLAN_RUN_KEYS)}")
    if not isinstance(run["base"], str) or not run["base"]:
        raise BenchmarkError(f"{path}: field base: expected a policy name, got {run['base']!r:.40}")
    if not isinstance(run["settings"], dict):
        raise BenchmarkError(f"{path}: field settings: expected an object, got {run['settings']!r:.40}")
    if run["setting"] is not None and not isinstance(run["setting"], str):
        raise BenchmarkError(
            f"{path}: field setting: expected a setting name or null, got {run['setting']!r:.40}"
        )
    return read_per_scenario(Path(folder) / layout.PER_SCENARIO), run
