"""The studio's validation days weigh the winner chosen on the generated validation scenarios.

The studio's verdict in three steps (docs/workload.md, "The studio setting"). Its
winner is chosen on validation scenarios generated from the fitted workload; the
validation days (``sched replay --validation``: one continuous stream, a row per
day) weigh it (:data:`WEIGHING`, :func:`validation_days_gate`): a winner significantly
worse there than the best rule there (paired bootstrap interval over the days entirely
above zero) becomes that rule, and when the generator ranks the rules unlike the real
days (``sched.data.workload.fidelity``) the days decide on their means, a challenger
replacing the incumbent only on evidence (:data:`CHALLENGE`). The held-out days then
only confirm it against that rule (:mod:`~sched.verdict.held_out`).
"""

from sched.evaluate.per_scenario import matrix
from sched.evaluate.policies import best_heuristic, policy_key
from sched.verdict.incumbent import incumbent_of
from sched.verdict.periods import against, days_of, make_rule

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


def _challenge(candidate, incumbent, twt, days, scenarios, bench):
    """The evidence for ``candidate`` against ``incumbent`` (:data:`CHALLENGE`): its paired difference
    over the validation days (``twt``, ``days``) and over the generated validation scenarios
    (``scenarios``: (seeds, {policy: totals}) or None), and whether it replaces the incumbent."""
    d, lo, hi = against(twt, candidate, incumbent, days, bench)
    record = {"policy": candidate, "days_pct": [d, lo, hi], "scenarios_pct": None}
    on_days = bool(hi < 0)
    pooled = False
    if scenarios is not None and candidate in scenarios[1] and incumbent in scenarios[1]:
        seeds, sc = scenarios
        s = against(sc, candidate, incumbent, seeds, bench)
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
    d, lo, hi = against(twt, chosen, verdict, days, bench)
    words = (
        f"against the incumbent {incumbent} it is {taken['evidence']}" if taken
        else f"no challenger has the evidence to replace the incumbent ({CHALLENGE})"
    )  # fmt: skip
    make_rule(
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
    days, twt = days_of(days_table, "validation-day", chosen, "--validation")
    best = best_heuristic(twt)  # the best rule on the validation days
    d, lo, hi = against(twt, chosen, best, days, bench)
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
        make_rule(
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
