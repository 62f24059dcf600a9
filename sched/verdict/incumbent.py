"""The incumbent of a verdict: the policy it keeps unless a challenger shows evidence.

One definition for every step of the verdict: the choice of the winner
(:mod:`~sched.verdict.winner`), the studio's validation days
(:mod:`~sched.verdict.validation_days`) and its held-out confirmation
(:mod:`~sched.verdict.held_out`).
"""

from sched.evaluate.errors import BenchmarkError

#: The incumbent of a verdict, first present wins: the field's reference rule with its k tuned
#: for the setting, else with the config's k. A challenger replaces it only on evidence.
INCUMBENTS = ("atc-tuned", "atc")


def incumbent_of(twt, what=None):
    """The policy a verdict keeps unless another is significantly better (:data:`INCUMBENTS`, the
    first present among the policies of ``twt``). ``what``: the table of real days it is looked
    up in, named by the error when absent (None: the table the winner is chosen on)."""
    for p in INCUMBENTS:
        if p in twt:
            return p
    if what is None:
        raise BenchmarkError(
            f"the winner needs the incumbent, {' or '.join(INCUMBENTS)}; it is not among {', '.join(twt)}"
        )
    raise BenchmarkError(
        f"{what} table: no rows for {' or '.join(INCUMBENTS)}, the incumbent a verdict is held to"
    )
