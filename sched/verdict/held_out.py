"""The studio's held-out days confirm the verdict (:func:`held_out_gate`).

The held-out days (``sched replay --held-out``) are read last. After the validation days
(:mod:`~sched.verdict.validation_days`) they only confirm the verdict against references
named before they are read, the incumbent and their own best rule: ``winner.json``'s
``held_out`` says whether it is confirmed, and an unconfirmed verdict becomes the incumbent.
Without validation days the held-out gate is the earlier one: it picks its own best rule on
the held-out days and replaces a winner significantly worse than it.
"""

import numpy as np

from sched.evaluate.per_scenario import matrix
from sched.evaluate.policies import best_heuristic
from sched.verdict.incumbent import incumbent_of
from sched.verdict.periods import against, days_of, make_rule


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
    di, loi, hii = against(twt, chosen, incumbent, days, bench)
    do, loo, hio = against(twt, chosen, own, days, bench)
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
    days (:mod:`~sched.verdict.validation_days`): the held-out days then confirm the verdict against
    independent references, the incumbent (atc-tuned, else atc) and the held-out days' own
    best rule, and the confirmation can fail: a verdict significantly worse than either, worse
    than the incumbent by more than ``margin`` % (config studio.confirm_margin_pct), or worse
    than the incumbent on both the generated test scenarios (``test``, their per-scenario
    table) and the held-out days is ``not confirmed``, and the verdict becomes the incumbent.
    Without validation days (a history too short for them) the best rule is the held-out
    days' own, and a verdict significantly worse than it there becomes that rule.
    """
    chosen = winner["policy"]
    days, twt = days_of(held, "held-out", chosen, "--held-out")
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
            make_rule(
                winner, inc, specs, d, lo, hi,
                f"{winner['reason']} {said}: not confirmed ({'; '.join(record['failed'])}); "
                f"rank() follows the incumbent, {inc}.",
            )  # fmt: skip
        winner["held_out"] = record
        return winner
    best = best_heuristic(twt)
    d, lo, hi = against(twt, chosen, best, days, bench)
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
        make_rule(
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
