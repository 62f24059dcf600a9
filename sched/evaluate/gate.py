"""The gates a verdict passes after the choice among the rules and the learned policies.

:func:`plan_gate` (every setting): lookahead on the verdict, ``plan`` on the policy
chosen on the validation scenarios, replaces it when the paired interval of their
difference on validation scenarios of its own run lies entirely below zero; the test
scenarios only confirm. :func:`validation_days_gate` and :func:`held_out_gate` (the studio
setting): the first weighs the validation days with the generated validation scenarios and
names the best rule there; the second, described below, confirms on the held-out days.

The studio's verdict in three steps (docs/workload.md, "The studio setting"). Its
winner is chosen on validation scenarios generated from the fitted workload; the
validation days (``sched replay --validation``: one continuous stream, a row per
day) weigh it (:data:`WEIGHING`): a winner significantly worse there than the best
rule there (paired bootstrap interval over the days entirely above zero) becomes
that rule, and when the generator ranks the rules unlike the real days
(``sched.data.workload.fidelity``) the days decide on their means. The held-out days
(``sched replay --held-out``) then only confirm it against that rule, named before
they are read: ``winner.json``'s ``held_out`` says whether it is confirmed, and
nothing changes. Without validation days the held-out gate is the earlier one: it
picks its own best rule on the held-out days and replaces a winner significantly
worse than it.
"""

# size: one concept, the gates a verdict passes after the choice among the policies: plan's
# candidacy (its settings' results and the rule that picks one), the studio's validation and
# held-out days, each with the record it writes into winner.json

import numpy as np

from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import check_complete, matrix
from sched.evaluate.policies import PLAN, best_heuristic, is_heuristic, policy_key
from sched.evaluate.statistics import bootstrap_counts, paired_difference, paired_standard_error, win_tie_loss


def _days(table, what, chosen, option):
    """(days, {policy: totals}) of a replayed period's per-scenario table, which must hold the
    policy ``chosen`` on the validation scenarios (``sched replay OPTION`` replays it)."""
    check_complete(table, f"{what} table")
    days, twt = matrix(table)
    if chosen not in twt:
        raise BenchmarkError(
            f"{what} table: no rows for {chosen}, the winner chosen on the validation scenarios; run it "
            f"on the {what} days too (`sched replay {option}`)"
        )
    return days, twt


def _against(twt, chosen, best, days, bench):
    """(difference %, low %, high %) of ``chosen`` against ``best``, paired over the days."""
    if chosen == best:
        return 0.0, 0.0, 0.0
    counts = bootstrap_counts(len(days), bench["bootstrap_resamples"], bench["bootstrap_seed"])
    return paired_difference(twt[chosen], twt[best], counts, bench["ci_level"])


def _rule_verdict(winner, best, specs, d, lo, hi, reason):
    """``winner`` made the rule ``best`` (its paired difference to the policy it replaces:
    ``d`` [``lo``, ``hi``] %, the policy against the rule)."""
    spec = specs.get(best) or {}
    if not is_heuristic(best):
        raise BenchmarkError(f"verdict gate: {best} is not a rule")
    chosen = winner["policy"]
    winner.update(
        policy=best,
        rule=spec.get("rule"),
        atc_k=spec.get("atc_k") if spec.get("rule") == "atc" else None,
        policy_file=None,
        policy_sha256=None,
        significant=False,
        runner_up=chosen,
        mean_difference_pct=-d,
        ci95_pct=[-hi, -lo],
        reason=reason,
    )


#: The rule fixed in advance by which a challenger replaces the incumbent when the generator
#: ranks the rules unlike the real days (few noisy days must not flip the verdict; issue 50).
CHALLENGE = (
    "the scenarios' winner, then the validation days' best rule, each in turn, replaces the "
    "incumbent when its paired interval against it over the validation days lies below zero, or "
    "when its paired interval against it over the generated validation scenarios lies below zero "
    "and its mean over the validation days is not above the incumbent's"
)

#: How the validation days and the generated validation scenarios are weighed (winner.json
#: ``selection.days.weighing``; docs/workload.md, "The studio setting").
WEIGHING = (
    "the generated validation scenarios choose (many, so they resolve small differences, but drawn "
    "from a fit that may not imitate the real days); the validation days veto (few, so their "
    "intervals are wide, but real): a choice significantly worse there than the best rule there "
    "becomes that rule; when the generator ranks the rules unlike the real days (fidelity), a "
    "challenger replaces the incumbent (atc-tuned, else atc) only on evidence: " + CHALLENGE
)

#: The incumbent a studio challenger has to beat: the setting's tuned rule, else ATC.
INCUMBENTS = ("atc-tuned", "atc")


def incumbent_of(twt, what):
    """The incumbent among the policies of ``twt`` (:data:`INCUMBENTS`, the first present)."""
    for name in INCUMBENTS:
        if name in twt:
            return name
    raise BenchmarkError(
        f"{what} table: no rows for {' or '.join(INCUMBENTS)}, the incumbent a verdict is held to"
    )


def _challenge(candidate, incumbent, twt, days, scenarios, bench):
    """The evidence for ``candidate`` against ``incumbent`` (:data:`CHALLENGE`): its paired difference
    over the validation days (``twt``, ``days``) and over the generated validation scenarios
    (``scenarios``: (seeds, {policy: totals}) or None), and whether it replaces the incumbent."""
    d, lo, hi = _against(twt, candidate, incumbent, days, bench)
    record = {"policy": candidate, "days_pct": [d, lo, hi], "scenarios_pct": None}
    on_days = bool(hi < 0)
    pooled = False
    if scenarios is not None and candidate in scenarios[1] and incumbent in scenarios[1]:
        seeds, sc = scenarios
        s = _against(sc, candidate, incumbent, seeds, bench)
        record["scenarios_pct"] = list(s)
        pooled = bool(s[2] < 0 and d <= 0)
    record["replaces"] = on_days or pooled
    record["evidence"] = (
        "significantly better on the validation days" if on_days
        else "significantly better on the generated validation scenarios and not worse on the days' mean"
        if pooled else "not enough"
    )  # fmt: skip
    return record


def _lean_verdict(winner, specs, twt, days, scenarios, bench):
    """The verdict when the generator ranks the rules unlike the real days (:data:`CHALLENGE`):
    ``winner`` is kept, made the days' best rule, or made the incumbent. Returns (incumbent, the
    challengers' records, whether the winner was kept)."""
    chosen = winner["policy"]
    incumbent = incumbent_of(twt, "validation-day")
    best = best_heuristic(twt)
    challengers = [
        _challenge(c, incumbent, twt, days, scenarios, bench)
        for c in dict.fromkeys((chosen, best))
        if c != incumbent
    ]
    taken = next((c for c in challengers if c["replaces"]), None)
    verdict = taken["policy"] if taken else incumbent
    if verdict == chosen:
        if taken:
            d, lo, hi = taken["days_pct"]
            winner["reason"] += (
                f" The generator ranks the rules unlike the real days: against the incumbent {incumbent} it "
                f"is {taken['evidence']} ({d:+.2f} % [{lo:+.2f} %, {hi:+.2f} %] over the {len(days)} "
                "days): kept."
            )
        return incumbent, challengers, True
    d, lo, hi = _against(twt, chosen, verdict, days, bench)
    words = (
        f"against the incumbent {incumbent} it is {taken['evidence']}" if taken
        else f"no challenger has the evidence to replace the incumbent ({CHALLENGE})"
    )  # fmt: skip
    _rule_verdict(
        winner, verdict, specs, d, lo, hi,
        f"{chosen} was chosen on the generated validation scenarios ({winner['reason']}), but the generator "
        f"ranks the rules unlike the {len(days)} validation days, so a challenger must show evidence; "
        f"{words}: the verdict is {verdict}.",
    )  # fmt: skip
    return incumbent, challengers, False


def validation_days_gate(winner, days_table, specs, bench, lean=False, period=None, selection=None):
    """``winner`` (chosen on the generated validation scenarios; changed in place and returned)
    weighed with the validation days (:data:`WEIGHING`): the best rule on the days, the winner's
    paired difference to it, and the verdict.

    ``days_table``: the validation-day replay's per-scenario table (a row per day and policy,
    ``sched replay --validation``); ``lean``: whether the generator ranks the rules unlike the
    real days (``sched.data.workload.fidelity``), when a challenger replaces the incumbent only
    on evidence (:data:`CHALLENGE`); ``period``: the days ([FIRST_DAY, LAST_DAY]);
    ``selection``: the generated validation scenarios' table, the pooled evidence's other half.
    Returns the record for winner.json's ``selection.days``.
    """
    chosen = winner["policy"]
    days, twt = _days(days_table, "validation-day", chosen, "--validation")
    best = best_heuristic(twt)  # the best rule on the validation days
    d, lo, hi = _against(twt, chosen, best, days, bench)
    record = {
        "period": list(period) if period else None,
        "days": len(days),
        "means": {p: float(twt[p].mean()) for p in sorted(twt, key=policy_key)},
        "best_rule": best,
        "chosen": chosen,
        "mean_difference_pct": d,
        "ci95_pct": [lo, hi],
        "leaned_on_days": bool(lean),
        "weighing": WEIGHING,
    }
    if lean:
        scenarios = matrix(selection) if selection is not None else None
        incumbent, challengers, kept = _lean_verdict(winner, specs, twt, days, scenarios, bench)
        record.update(kept=kept, incumbent=incumbent, challengers=challengers)
        return record
    said = f"{d:+.2f} % [{lo:+.2f} %, {hi:+.2f} %] (paired bootstrap over the days)"
    record["kept"] = not bool(lo > 0)
    if not record["kept"]:
        _rule_verdict(
            winner, best, specs, d, lo, hi,
            f"{chosen} was chosen on the generated validation scenarios ({winner['reason']}) but on the "
            f"{len(days)} validation days, against the best rule there, {best}, it is {said}: it is "
            f"significantly worse there; the verdict is {best}.",
        )  # fmt: skip
    elif chosen != best:
        winner["reason"] += (
            f" On the {len(days)} validation days, against the best rule there ({best}): {said}: kept."
        )
    return record


def _mean_difference(twt, chosen, ref):
    """The difference % of the means of ``chosen`` and ``ref`` (NaN when the reference's is 0)."""
    r = float(np.mean(twt[ref]))
    return (float(np.mean(twt[chosen])) - r) / r * 100.0 if r > 0 else float("nan")


def _confirmation(twt, chosen, days, bench, test, margin):
    """The held-out days' confirmation of ``chosen``: its paired differences to the incumbent and
    to the held-out days' own best rule, its mean difference to the incumbent on the generated
    test scenarios (``test``: {policy: totals} or None), and the reasons it fails (none: confirmed).
    """
    incumbent = incumbent_of(twt, "held-out")
    own = best_heuristic(twt)
    di, loi, hii = _against(twt, chosen, incumbent, days, bench)
    do, loo, hio = _against(twt, chosen, own, days, bench)
    on_test = (
        _mean_difference(test, chosen, incumbent)
        if test is not None and chosen in test and incumbent in test else None
    )  # fmt: skip
    failed = []
    if loi > 0:
        failed.append(f"significantly worse than the incumbent {incumbent}")
    elif di > margin:
        failed.append(f"worse than the incumbent {incumbent} by more than the margin ({margin:g} %)")
    if loo > 0 and own != incumbent:
        failed.append(f"significantly worse than {own}, the held-out days' best rule")
    if on_test is not None and on_test > 0 and di > 0:
        failed.append(
            f"worse than the incumbent {incumbent} on both the generated test scenarios ({on_test:+.2f} %) "
            "and the held-out days"
        )
    return {
        "days": len(days),
        "chosen": chosen,
        "incumbent": incumbent,
        "best_rule": incumbent,  # the reference the verdict falls back to (files before issue 50: the days')
        "best_rule_on": "incumbent",
        "mean_difference_pct": di,
        "ci95_pct": [loi, hii],
        "best_rule_there": own,
        "against_best_rule_there_pct": [do, loo, hio],
        "test_against_incumbent_pct": on_test,
        "margin_pct": float(margin),
        "failed": failed,
        "confirmed": not failed,
    }


def held_out_gate(winner, held, specs, bench, best_rule=None, test=None, margin=2.0):
    """``winner`` (a winner record, changed in place and returned) confirmed on the held-out days.

    ``held``: the held-out replay's per-scenario table (a row per day and policy);
    ``specs``: the benchmark's policy specs; ``bench``: the config's benchmark section
    (bootstrap resamples, seed and level). ``best_rule``: the best rule on the validation
    days (:func:`validation_days_gate`): the held-out days then confirm the verdict against
    independent references, the incumbent (atc-tuned, else atc) and the held-out days' own
    best rule, and the confirmation can fail: a verdict significantly worse than either, worse
    than the incumbent by more than ``margin`` % (config studio.confirm_margin_pct), or worse
    than the incumbent on both the generated test scenarios (``test``, their per-scenario
    table) and the held-out days is ``not confirmed``, and the verdict becomes the incumbent.
    Without validation days (a history too short for them) the best rule is the held-out
    days' own, and a verdict significantly worse than it there becomes that rule.
    """
    chosen = winner["policy"]
    days, twt = _days(held, "held-out", chosen, "--held-out")
    if best_rule is not None:
        tw = matrix(test)[1] if test is not None else None
        record = _confirmation(twt, chosen, days, bench, tw, margin)
        record["validation_best_rule"] = best_rule
        inc, (d, lo, hi) = record["incumbent"], (record["mean_difference_pct"], *record["ci95_pct"])
        said = f"against the incumbent {inc}: {d:+.2f} % [{lo:+.2f} %, {hi:+.2f} %]" if chosen != inc else ""
        own = record["best_rule_there"]
        if own != chosen:
            od, olo, ohi = record["against_best_rule_there_pct"]
            said += "; " if said else ""
            said += f"against {own}, their best rule: {od:+.2f} % [{olo:+.2f} %, {ohi:+.2f} %]"
        said = f"On the {len(days)} held-out days, {chosen} " + (said or "is the best rule there")
        record["deployed"] = record["confirmed"] or chosen == inc
        if record["confirmed"]:
            winner["reason"] += f" {said}: confirmed."
        elif chosen == inc:
            failed = "; ".join(record["failed"])
            winner["reason"] += f" {said}: not confirmed ({failed}); it is the incumbent."
        else:
            _rule_verdict(
                winner, inc, specs, d, lo, hi,
                f"{winner['reason']} {said}: not confirmed ({'; '.join(record['failed'])}); "
                f"rank() follows the incumbent, {inc}.",
            )  # fmt: skip
        winner["held_out"] = record
        return winner
    best = best_heuristic(twt)
    d, lo, hi = _against(twt, chosen, best, days, bench)
    worse = bool(lo > 0)  # NaN (no tardiness at all): not worse
    record = {
        "days": len(days),
        "best_rule": best,
        "best_rule_on": "held-out days",
        "chosen": chosen,
        "mean_difference_pct": d,
        "ci95_pct": [lo, hi],
        "deployed": not worse,
        "confirmed": not worse,
    }
    if worse:
        _rule_verdict(
            winner, best, specs, d, lo, hi,
            f"{chosen} was chosen on the validation scenarios ({winner['reason']}) but on the "
            f"{len(days)} held-out days it is significantly worse than the best rule there, {best}: "
            f"{d:+.2f} % [{lo:+.2f} %, {hi:+.2f} %] (paired bootstrap over the days); the verdict "
            f"is {best} (no validation days: the held-out days choose their own best rule).",
        )  # fmt: skip
    elif chosen != best:
        winner["reason"] += (
            f" On the {len(days)} held-out days, against the best rule there ({best}): {d:+.2f} % "
            f"[{lo:+.2f} %, {hi:+.2f} %]: not significantly worse, deployed."
        )
    winner["held_out"] = record
    return winner


# ------------------------------------------------------------------ plan's candidacy
# The settings of config plan.grid (sched.learn.search.planner.grid_setting), each run on the
# selection winner on the validation seeds that chose it, and the rule, fixed before looking,
# that picks one: the best setting has the lowest mean paired difference to the base; the picked
# one is the first of the grid (listed cheapest first, docs/plan.md measures each) whose mean lies
# within plan.choice_se bootstrap standard errors of the best's. It ships, plan then being the
# verdict, only when its own paired interval lies entirely below zero (plan_gate); the test
# scenarios only confirm. Nothing measured in wall-clock time decides: a setting's decision time
# is a run record (plan.run.json beside its validation table), shown by the report, never read here.


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
    days, twt = _days(days_table, "validation-day", base, "--validation")
    if PLAN not in twt:
        raise BenchmarkError(
            "validation-day table: no rows for plan; replay the days with plan too (`sched replay "
            "--validation --policies ...,plan --plan-on SELECTION.csv --plan-candidacy DIR ...`)"
        )
    d, lo, hi = _against(twt, PLAN, base, days, bench)
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
