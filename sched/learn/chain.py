"""The training chain in one process: the gated teacher's warm start (``sched.learn.search``),
then PPO (``sched.learn.ppo``) from it.

PPO's loop takes the warm start as a callable and imports nothing of the search; this module is
where the two meet (``sched train``, the tests and the benchmarks call it). In the workflow the
main chain runs them as separate steps instead: ``sched teach``, ``sched distill --stage warm``,
the rounds, then ``sched train --init`` (docs/learning.md).
"""

from sched.learn.ppo import loop
from sched.learn.search.distill import warm_start


def train(cfg, settings, out, labels=None, init=None, **kw):
    """:func:`sched.learn.ppo.loop.train`, with the warm start its ``settings`` (a
    ``sched.learn.settings.Training``) ask for (``train.teacher_scenarios`` > 0, no ``init``): the
    teacher's ``labels`` distilled (labelled in this process when None). ``kw``: the loop's
    ``progress``, ``resume`` and ``log``."""
    warm = warm_start(cfg, settings, labels) if init is None and settings.teacher.scenarios > 0 else None
    return loop.train(cfg, settings, out, warm_start=warm, init=init, **kw)
