"""``rank(tasks, policy="plan")``: the planner's order of the queue waiting now.

The first task to start is the planner's decision (``sched.learn.search.planner``:
lookahead on sampled futures from the config's scenario model); the rest of
the order follows the base policy, config ``plan.base`` (``rank()`` is called
again at the next decision). ``budget_ms`` (or config ``plan.budget_ms``)
makes the call anytime: counted from the start of the ``rank()`` call, samples
are added while it lasts, the tail's (the base policy's rollout of the rest)
estimated time kept; once it is spent the first start is the base policy's
own too. The explain table's ``why`` says which (:func:`note`).
"""

import numpy as np

from sched.cache import Cache
from sched.ranking.tasks import RankInputError, RankSetupError
from sched.ranking.times import WEEK_START_S
from sched.sim import rules

#: Planners per (config, base, rollout). A Planner holds no state of a call (its base, settings,
#: estimate noise and pool of futures are only read), so threads share one.
_planners = Cache(9)


def plan_order(q, cfg, resolve, budget_ms, started=None, verdict=None):
    """(order, start, end, machine, note) of queue ``q`` under the planner on config
    ``plan.base`` with config ``plan``'s settings, or, ``verdict`` (a winner.json's plan
    Choice), on its base with its settings (``resolve``: rank's policy name -> Choice;
    ``started``: the call's start, a ``time.perf_counter()``; ``note``: which starts were
    planned, :func:`note`). Bad settings or a bad base raise RankInputError naming them."""
    from sched.errors import SchedError
    from sched.learn.search.planner import check_budget

    if verdict is not None:
        base = base_of(verdict)
        settings = verdict.plan["settings"]
        roll = settings["rollout"]
        if budget_ms is None:
            budget_ms = settings["budget_ms"]
    else:
        try:
            base = resolve(cfg.plan.base)
        except RankInputError as exc:
            raise RankSetupError(f"plan.base: {exc}") from exc
        settings, roll = cfg.plan, cfg.plan.rollout
    untuned = ""
    if roll != "base":
        try:
            roll = resolve(roll)
        except RankInputError as exc:
            if roll != "atc-tuned" or verdict is not None:
                raise RankSetupError(f"plan.rollout: {exc}") from exc
            # before any benchmark tuned k (a fresh clone): config plan's own rollouts by ATC with
            # rules.atc_k, said in why (a plan verdict names its tuning: no such case)
            roll = resolve("atc")
            untuned = f"rollouts by atc (k {roll.k:g}, config rules.atc_k: no tuned k yet); "
        if roll.rule is None:
            raise RankSetupError(f"plan.rollout: expected base or a rule, got {roll.name!r}")
    try:
        check_budget(budget_ms)
        from sched.config import config_hash

        frozen = tuple(sorted((k, str(v)) for k, v in dict(settings).items()))
        key = (config_hash(cfg, ["scenario", "seeds"]), frozen, base, roll)
        if key not in _planners and base.name == "plan":
            raise RankSetupError("plan.base: plan cannot be its own base policy")
        planner = _planners.get(key, lambda: _planner(cfg, base, roll, settings))  # built by one thread
        stats = {}
        start, end, mach = planner.order(
            q.arrival, q.estimate, q.weight, q.due, q.machine_free, budget_ms, started, stats, WEEK_START_S
        )
    except RankInputError:
        raise
    except SchedError as exc:  # PlanError, PolicyFileError, ConfigError: one line naming the field
        raise RankSetupError(str(exc)) from exc
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    mach = np.asarray(mach, np.int64)
    order = np.lexsort((np.arange(q.n), mach, start))  # as rank's learned path: the decision order
    return order, start, end, mach, untuned + note(stats)


def note(stats):
    """Which starts the planner planned (``stats``: :meth:`Planner.order`'s), for ``why``."""
    s, of = stats["samples"], stats["of"]
    if stats["planned"]:
        cut = " (the budget cut the samples short)" if stats["budget"] else ""
        return f"planned: the first start, on {s} of {of} samples{cut}; the rest by the base policy"
    if stats["budget"]:
        return (
            f"planned: no start, the budget was spent after {s} of {of} samples (two needed); "
            f"every start by the base policy"
        )
    if s == 0:
        return "planned: no start, fewer than two candidates to compare; every start by the base policy"
    return "planned: no start, one sample per decision (no paired test); every start by the base policy"


def base_of(verdict):
    """The base policy of a plan verdict (a Choice with its ``plan`` record), as a Choice."""
    return verdict._replace(name=verdict.plan["base"], why="", plan=None)


def _planner(cfg, base, roll, settings):
    """A new Planner on the resolved ``base`` and ``roll`` (a Choice, or "base") with ``settings``."""
    from sched.learn.search.planner import Planner, learned_base, rule_base

    if base.rule is not None:
        b = rule_base(rules.RULES[base.rule], base.k)
    else:
        from sched.learn.policy.policy_file import load_cached

        b = learned_base(load_cached(base.policy_file), base.name)
    rollout = None if roll == "base" else rule_base(rules.RULES[roll.rule], roll.k)
    return Planner(cfg, b, settings, rollout)
