"""Choosing the winner (``winner.json``'s verdict fields) from the per-scenario totals.

:func:`choose_winner` moves the verdict off the incumbent (:mod:`~sched.verdict.incumbent`)
only on evidence, in two steps: the rules, then the learned policies
(docs/benchmark-and-report.md, "How the winner is chosen"). :func:`choose_on_selection`
makes the choice on the selection table (the competing policies on validation seeds,
:func:`sched.evaluate.seeds.selection_seeds`) and confirms it on the test table;
:func:`chosen_on` is the policy the selection table alone chooses, the base of plan's
candidacy. Also here: the keys of ``winner.json`` (:data:`WINNER_KEYS`).
"""

import numpy as np

from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import check_complete, matrix
from sched.evaluate.policies import competes, is_heuristic, is_ppo, policy_key, same_rule
from sched.evaluate.statistics import bootstrap_counts, paired_difference
from sched.verdict.incumbent import incumbent_of

WINNER_KEYS = (
    "policy",
    "rule",
    "atc_k",
    "policy_file",
    "policy_sha256",  # the SHA-256 of policy_file's bytes (null for a rule); rank() checks it
    "significant",
    "runner_up",
    "mean_difference_pct",
    "ci95_pct",
    "reason",
    "setting",  # sched.setting.of_config: the farm and load the verdict was measured on
)
#: The keys of a winner.json of earlier versions (no policy_sha256): still read.
EARLIER_WINNER_KEYS = tuple(k for k in WINNER_KEYS if k != "policy_sha256")
#: The last key of a winner chosen on validation scenarios (absent from one chosen on the test
#: scenarios, as the robustness settings and the replay still do, and from earlier files).
SELECTION_KEY = "selection"
SELECTION_KEYS = ("on", "seeds", "means")
#: ``selection.days``, the studio's validation days (:mod:`~sched.verdict.validation_days`).
SELECTION_DAYS_KEY = "days"


def choose_on_selection(selection, twt, specs, counts, b):
    """The winner chosen on the selection table and confirmed on the test totals ``twt``.

    The selection table holds exactly the policies of ``twt`` that may win (the warm starts
    may be left out; they are ignored), each on every selection seed.
    """
    check_complete(selection, "selection table")
    sel_seeds, sel = matrix(selection)
    sel = {p: v for p, v in sel.items() if competes(p)}
    competing = [p for p in twt if competes(p)]
    missing = [p for p in competing if p not in sel]
    extra = [p for p in sel if p not in twt]
    if missing:
        raise BenchmarkError(
            f"selection table: no rows for policy {missing[0]}, which may win on the test scenarios; "
            f"every competing policy ({', '.join(competing)}) must run on the selection seeds"
        )
    if extra:
        raise BenchmarkError(f"selection table: policy {extra[0]} is not in the test table")
    sel_counts = bootstrap_counts(len(sel_seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    first = int(sel_seeds[0])
    if list(sel_seeds) != list(range(first, first + len(sel_seeds))):
        raise BenchmarkError("selection table: its seeds are not one consecutive range")
    record = choose_winner(sel, specs, sel_counts, b["ci_level"], confirm=(twt, counts))
    record[SELECTION_KEY] = {
        "on": "validation",
        "seeds": [first, len(sel_seeds)],
        "means": {p: float(sel[p].mean()) for p in sorted(sel, key=policy_key)},
    }
    return record


def choose_winner(twt, specs, counts, level, confirm=None):
    """The winner record (see docs/benchmark-and-report.md, "How the winner is chosen").

    The verdict moves only on evidence, in two steps, each a paired interval that must lie
    entirely below zero:

    1. **The rules.** The incumbent is atc-tuned (atc when the run has no atc-tuned): the
       field's reference rule. Another rule replaces it only when significantly better than
       it; of those, the one with the lowest mean. The rule kept is the *champion*.
    2. **The learned policies.** The learned policy with the lowest mean replaces the
       champion only when significantly better than it and than the runner-up: the policy
       with the next-lowest mean, leaving out the other training seeds of PPO (replicas of
       the same method: the question winner.json answers is whether the learned policy
       beats the rules).

    A policy that is the same rule with the same k as another (atc when the tuning kept
    k = 2) is not its own challenger; a tie goes to the incumbent's name. ``significant``:
    whether the winner's lead over ``runner_up`` is significant (false when the incumbent
    is kept against a better mean within the noise).

    ``runner_up`` is the policy the winner was compared with: for a learned winner the
    runner-up; for a rule that replaced the incumbent, the incumbent; for the incumbent, the
    policy with the lowest mean among the others (its lead, or the challenger it was kept
    against). ``mean_difference_pct`` and ``ci95_pct`` are the winner's paired difference with
    it.

    ``twt`` are the totals the choice is made on. ``confirm``: ``(totals, counts)`` of the
    test scenarios when the choice is made on the selection (validation) scenarios: the record's
    ``mean_difference_pct`` and ``ci95_pct`` are then measured on the test scenarios
    (``significant`` stays the choice's: on the selection scenarios).

    The warm starts (``ppo-<S>-warm``) take no part: neither winner nor runner-up. They are
    benchmarked to measure what PPO adds to them; the winner is chosen among the final
    policies and the heuristics.
    """
    inc = incumbent_of(twt)
    means = {p: v.mean() for p, v in twt.items()}
    order = [
        p
        for p in sorted((p for p in twt if competes(p)), key=lambda p: (means[p], policy_key(p)))
        if p == inc or not same_rule(specs.get(p), specs.get(inc))  # the incumbent's name on a tie
    ]
    if len(order) < 2:
        raise BenchmarkError("the winner needs at least two policies to compare")

    def diff(a, b):
        return paired_difference(twt[a], twt[b], counts, level)

    champion, steps = _rule_champion(order, inc, diff)
    winner, runner, tests = _learned_challenge(order, means, champion, diff)
    steps += tests
    if winner == inc:
        runner_up = next(p for p in order if p != inc)
        significant = False
        if order[0] == inc:  # its lead over the next mean, said as it is
            lead = diff(inc, runner_up)
            steps.append((inc, runner_up, lead))
            significant = _below(lead)
    elif winner == champion:
        runner_up, significant = inc, True
    else:
        runner_up, significant = runner, True
    reason = _reason(winner, inc, champion, steps, level, confirm is not None)
    if confirm is not None:
        test, test_counts = confirm
        d, lo, hi = paired_difference(test[winner], test[runner_up], test_counts, level)
        reason += (
            f" On the test scenarios, {winner} against {runner_up}: {d:+.2f} % [{lo:+.2f} %, {hi:+.2f} %]."
        )
    else:
        d, lo, hi = diff(winner, runner_up)
    return _record(winner, specs.get(winner) or {}, significant, runner_up, (d, lo, hi), reason)


def _below(d):
    """Whether a paired difference's interval lies entirely below zero."""
    return bool(np.isfinite(d[2]) and d[2] < 0)


def _rule_champion(order, inc, diff):
    """Step 1: (the champion, its comparisons): the incumbent, unless a rule before it in
    ``order`` (by mean) is significantly better than it."""
    steps = []
    for p in order:
        if p == inc:
            break
        if is_heuristic(p):
            d = diff(p, inc)
            steps.append((p, inc, d))
            if _below(d):
                return p, steps
    return inc, steps


def _learned_challenge(order, means, champion, diff):
    """Step 2: (the winner, the runner-up it was tested against or None, the comparisons): the
    best learned policy replaces the champion only when significantly better than it and than
    the runner-up (the next-lowest mean that is no learned policy)."""
    learned = [p for p in order if is_ppo(p)]
    if not learned or means[learned[0]] >= means[champion]:
        return champion, None, []
    best = learned[0]
    runner = next(p for p in order if p != best and not is_ppo(p))
    against = [runner] + ([champion] if champion != runner else [])
    tests = [(best, p, diff(best, p)) for p in against]
    return (best if all(_below(d) for _, _, d in tests) else champion), runner, tests


def _record(winner, spec, significant, runner_up, difference, reason):
    """winner.json's verdict fields (``difference``: the paired (mean %, low %, high %))."""
    d, lo, hi = difference
    return {
        "policy": winner,
        "rule": spec.get("rule") if is_heuristic(winner) else None,
        "atc_k": spec.get("atc_k") if spec.get("rule") == "atc" else None,
        "policy_file": spec.get("policy_file") if is_ppo(winner) else None,
        "policy_sha256": None,  # write_outputs hashes the policy file
        "significant": significant,
        "runner_up": runner_up,
        "mean_difference_pct": d,
        "ci95_pct": [lo, hi],
        "reason": reason,
    }


def _reason(winner, inc, champion, steps, level, on_selection):
    """The winner record's ``reason``: each comparison the choice made, then the verdict."""
    where = " on the selection (validation) scenarios" if on_selection else ""

    def said(a, b, d):
        lies = "lies" if np.isfinite(d[2]) and d[2] < 0 else "does not lie"
        return (
            f"{a} against {b}: {d[0]:+.2f} % (paired bootstrap {level * 100:g} % interval "
            f"[{d[1]:+.2f} %, {d[2]:+.2f} %], which {lies} entirely below zero)"
        )

    lines = "; ".join(said(a, b, d) for a, b, d in steps)
    if winner == inc and steps and steps[-1][0] == inc:
        verdict = f"The incumbent, {inc}, has the lowest mean total weighted tardiness{where} and is kept"
    elif winner == inc:
        verdict = f"The incumbent, {inc}, is kept: no policy is significantly better than it{where}"
    elif winner == champion:
        verdict = f"{winner} replaces the incumbent, {inc}: significantly better than it{where}"
    else:
        over = champion if champion == inc else f"{champion}, which replaced the incumbent {inc}"
        verdict = (
            f"{winner} replaces {over}: significantly better than every rule it was compared with{where}"
        )
    return f"{verdict}." + (f" Compared: {lines}." if lines else "")


def chosen_on(selection, specs, b):
    """The policy the selection table alone chooses (:func:`choose_winner` on it): the base of
    ``plan``'s candidacy (``sched benchmark --plan-on``). ``b``: the config's benchmark section."""
    check_complete(selection, "selection table")
    seeds, sel = matrix(selection)
    sel = {p: v for p, v in sel.items() if competes(p)}
    counts = bootstrap_counts(len(seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    return choose_winner(sel, specs, counts, b["ci_level"])["policy"]
