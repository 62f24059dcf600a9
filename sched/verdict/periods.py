"""A replayed period of real days (the studio's validation or held-out days) as evidence.

:func:`days_of` reads a period's per-scenario table (a row per day and policy) with the
policy chosen on the validation scenarios in it; :func:`against` is a paired difference
over its days; :func:`make_rule` turns a winner record into the rule the days point to.
Used by :mod:`~sched.verdict.validation_days`, :mod:`~sched.verdict.held_out` and plan's
veto by the validation days (:mod:`~sched.verdict.candidacy`).
"""

from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import check_complete, matrix
from sched.evaluate.policies import is_heuristic
from sched.evaluate.statistics import bootstrap_counts, paired_difference


def days_of(table, what, chosen, option):
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


def against(twt, chosen, best, days, bench):
    """(difference %, low %, high %) of ``chosen`` against ``best``, paired over the days."""
    if chosen == best:
        return 0.0, 0.0, 0.0
    counts = bootstrap_counts(len(days), bench["bootstrap_resamples"], bench["bootstrap_seed"])
    return paired_difference(twt[chosen], twt[best], counts, bench["ci_level"])


def make_rule(winner, best, specs, d, lo, hi, reason):
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
