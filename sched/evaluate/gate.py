"""The held-out gate of a verdict chosen on validation scenarios (the studio setting).

The studio's winner is chosen on validation scenarios generated from the fitted
workload and confirmed on test scenarios from the same fit; both come from the
fit, not from the studio's own days. Before ``rank()`` deploys it, the gate
compares it with the best dispatching rule on the days the fit held out
(``sched replay --held-out``: one continuous stream, a row per day): when the
paired bootstrap interval over the days of its difference to that rule lies
entirely above zero (significantly worse), the verdict becomes that rule, and
``winner.json`` says why. The record gains ``held_out``: the days, the best
rule on them, the chosen policy's paired difference to it and whether it was
deployed (docs/workload.md, "The studio setting").
"""

from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import check_complete, matrix
from sched.evaluate.policies import best_heuristic, is_heuristic
from sched.evaluate.statistics import bootstrap_counts, paired_difference


def held_out_gate(winner, held, specs, bench):
    """``winner`` (a winner record, changed in place and returned) gated on the held-out days.

    ``held``: the held-out replay's per-scenario table (a row per day and policy);
    ``specs``: the benchmark's policy specs; ``bench``: the config's benchmark section
    (bootstrap resamples, seed and level).
    """
    check_complete(held, "held-out table")
    days, twt = matrix(held)
    chosen = winner["policy"]
    if chosen not in twt:
        raise BenchmarkError(
            f"held-out table: no rows for {chosen}, the winner chosen on validation; run it on the "
            "held-out days too (`sched replay --held-out`)"
        )
    best = best_heuristic(twt)  # the best rule on the held-out days
    counts = bootstrap_counts(len(days), bench["bootstrap_resamples"], bench["bootstrap_seed"])
    level = bench["ci_level"]
    if chosen == best:
        d, lo, hi = 0.0, 0.0, 0.0
    else:
        d, lo, hi = paired_difference(twt[chosen], twt[best], counts, level)
    worse = bool(lo > 0)  # NaN (no tardiness at all): not worse
    record = {
        "days": len(days),
        "best_rule": best,
        "chosen": chosen,
        "mean_difference_pct": d,
        "ci95_pct": [lo, hi],
        "deployed": not worse,
    }
    if worse:
        spec = specs.get(best) or {}
        if not is_heuristic(best):
            raise BenchmarkError(f"held-out gate: {best} is not a rule")
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
            reason=(
                f"{chosen} was chosen on the validation scenarios ({winner['reason']}) but on the "
                f"{len(days)} held-out days it is significantly worse than the best rule there, {best}: "
                f"{d:+.2f} % [{lo:+.2f} %, {hi:+.2f} %] (paired bootstrap over the days); the verdict "
                f"is {best}."
            ),
        )
    elif chosen != best:
        winner["reason"] += (
            f" On the {len(days)} held-out days, against the best rule there ({best}): {d:+.2f} % "
            f"[{lo:+.2f} %, {hi:+.2f} %]: not significantly worse, deployed."
        )
    winner["held_out"] = record
    return winner
