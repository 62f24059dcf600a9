"""The planner's settings, its base policy and its runs (the compiled part: ``sched.learn.plan``).

A :class:`Planner` holds what every decision needs: the base policy (a rule
and its k, or a learned scorer's weights), the pool of sampled futures and
the calibrated estimate noise. It schedules a whole scenario
(:meth:`Planner.schedule`, what ``sched simulate`` and the benchmark run,
with a fixed sample count: deterministic), or orders the queue waiting now
(:meth:`Planner.order`, what ``rank()`` runs): the first task to start is
planned, the rest follow the base policy, and with ``budget_ms`` samples are
added until the budget is spent (then the decision depends on the machine's
speed: how many samples fit; without it, on nothing but the inputs and the seed).
"""

import math
import time
from collections import namedtuple

import numpy as np

from sched.data.machines import describe, speeds
from sched.errors import SchedError
from sched.learn import plan as P
from sched.learn import scorer
from sched.sim import core as S
from sched.sim import rules

#: Ranges of the numeric settings (the schema's, checked again for rank()'s arguments).
RANGES = {
    "candidates": (2, 16),
    "samples": (1, 4096),
    "horizon": (1, 10000),
    "z": (0.0, 10.0),
    "futures": (1, 100000),
    "seed": (0, 2**31 - 1),
}

Base = namedtuple("Base", "name base k p_ref load top_k weights")


class PlanError(SchedError):
    """A planning setting or argument is out of range; the message names it."""


def check_settings(plan, where="plan"):
    """The ``plan`` settings (a mapping), each number checked against :data:`RANGES`."""
    out = dict(plan)
    for key, (lo, hi) in RANGES.items():
        v = out.get(key)
        integral = isinstance(lo, int)
        ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
        if not ok or (integral and v != int(v)) or not lo <= v <= hi:
            kind = "an integer" if integral else "a number"
            raise PlanError(f"{where}.{key}: expected {kind} in [{lo}, {hi}], got {str(v)[:30]}")
        out[key] = int(v) if integral else float(v)
    out["budget_ms"] = check_budget(out.get("budget_ms"), f"{where}.budget_ms")
    return out


def check_budget(budget_ms, where="budget_ms"):
    """None (a fixed sample count) or a finite number of milliseconds > 0."""
    if budget_ms is None:
        return None
    ok = not isinstance(budget_ms, bool) and isinstance(budget_ms, (int, float))
    if not ok or not math.isfinite(budget_ms) or budget_ms <= 0:
        raise PlanError(f"{where}: expected a number of milliseconds > 0, got {str(budget_ms)[:30]}")
    return float(budget_ms)


#: A rule base's stand-in for the scorer's weights (never read: the compiled code takes both kinds).
_NO_WEIGHTS = tuple(np.zeros((1, 1)) if i % 2 == 0 and i < 6 else np.zeros(1) for i in range(7))


def rule_base(rule, k=rules.ATC_K_DEFAULT):
    """A dispatching rule (name) as the planner's base policy."""
    return Base(rule, rules.rule_id(rule), float(k), 1.0, 0.0, 0, _NO_WEIGHTS)


def learned_base(policy, name="ppo"):
    """A loaded scorer policy (``sched.learn.policy_file.load``) as the planner's base policy."""
    if policy.meta["arch"]["name"] != "scorer":
        raise PlanError(f"plan.base: {name} is not a scorer policy (the planner runs scorer policies only)")
    enc = policy.encoder
    load = float(np.asarray(enc.load).ravel()[0])
    return Base(
        name,
        P.LEARNED,
        float(enc.k),
        float(enc.p_ref),
        load,
        int(policy.net.top_k),
        scorer.weights_of(policy),
    )


_pools = {}


def futures(cfg, horizon, count):
    """The pool of sampled futures (``sched.learn.teacher.future_pool``), cached per config."""
    from sched.config import config_hash
    from sched.learn.teacher import future_pool

    key = (config_hash(cfg, ["scenario", "seeds"]), horizon, count)
    if key not in _pools:
        if len(_pools) > 4:
            _pools.clear()
        _pools[key] = future_pool(cfg, [], horizon, count)
    return _pools[key]


class Planner:
    """The planner with its base policy ``base`` (:func:`rule_base`, :func:`learned_base`)
    and settings ``settings`` (config ``plan``, checked by :func:`check_settings`)."""

    def __init__(self, cfg, base, settings, rollout=None):
        from sched.data.model import scenario_model

        self.base = base
        self.rollout = rollout  # a rule_base continuing the rollouts; None: the base policy
        self.settings = st = check_settings(settings)
        self.sigma = float(scenario_model(cfg).sigma)
        self.pool = futures(cfg, st["horizon"], st["futures"])
        self.decisions = self.deviations = 0

    def _args(self):
        """The base policy's arguments of the compiled functions (rule or scorer)."""
        b = self.base
        return (b.base, b.k, b.p_ref, b.load, b.top_k) + tuple(b.weights)

    def _roll(self):
        """(rule id, k) of the rollouts' continuation, or (SAME, 0): the base policy."""
        return (P.SAME, 0.0) if self.rollout is None else (self.rollout.base, self.rollout.k)

    def _roll_args(self):
        """The policy arguments of the rollouts: the base's, the continuation rule in front."""
        if self.rollout is None:
            return self._args()
        return (self.rollout.base, self.rollout.k) + self._args()[2:]

    def schedule(self, scenario, machines=1, machine_free=None):
        """(start, end, machine) of one scenario (arrays in row order) under the planner."""
        st = self.settings
        sp = speeds(machines)
        if np.any(sp != 1.0):
            raise PlanError(
                f"machines: the planner plans GPUs of speed 1 only, got {describe(sp)} (its sampled "
                f"futures do not model speeds yet)"
            )
        state, (order,) = S.pack([scenario], machines, machine_free)
        scratch = S.empty_state(1, state.arr.shape[1] + st["horizon"], machines)
        dec, moved = P.plan_rollout(
            state, scratch, st["candidates"], st["samples"], st["z"], *self.pool,
            st["horizon"], self.sigma, st["seed"], *self._roll(), *self._args(),
        )  # fmt: skip
        self.decisions += int(dec)
        self.deviations += int(moved)
        return S._unpack(state, [order])[0]

    def order(self, arrival, estimate, weight, due, machine_free, budget_ms=None):
        """(start, end, machine) of the queue waiting now: the first start planned, the
        rest by the base policy. ``budget_ms`` (default: the settings'): stop adding
        samples when it is spent (anytime); None: every one of ``samples``."""
        t0 = time.perf_counter()
        st = self.settings
        budget = check_budget(budget_ms if budget_ms is not None else st["budget_ms"])
        scen = (arrival, estimate, estimate, weight, due)  # true durations unknown: the estimates
        state, (order,) = S.pack([scen], len(machine_free), machine_free)
        scratch = S.empty_state(1, state.arr.shape[1] + st["horizon"], len(machine_free))
        args = self._args()
        if self.base.base >= 0:
            S.set_rule(state, 0, self.base.base)
        bufs = scorer._buffers(scratch, self.base.weights[0], self.base.weights[2])
        if S._advance(state, 0, True):
            cands = P.candidates(state, st["candidates"], *args, *bufs)
            n = self._sample(state, scratch, cands, bufs, budget, t0) if cands.shape[0] >= 2 else 0
            c = P.choose(self._costs[: cands.shape[0]], n, st["z"]) if n else 0
            self.decisions += 1
            self.deviations += int(c != 0)
            S._start(state, 0, cands[c], state.pending[0])
            P.continue_base(state, *args, *bufs)
        return S._unpack(state, [order])[0]

    def _sample(self, state, scratch, cands, bufs, budget, t0):
        """Fill self._costs sample by sample (in chunks) until ``samples`` or the budget; returns how many."""
        st = self.settings
        total = st["samples"]
        self._costs = np.empty((cands.shape[0], total))
        r = 0
        chunk = 2 if budget is not None else total
        while r < total:
            hi = min(total, r + chunk)
            P.sample_costs(
                state, scratch, cands, r, hi, self._costs, *self.pool, st["horizon"], self.sigma,
                st["seed"], 0, *self._roll_args(), *bufs,
            )  # fmt: skip
            r = hi
            if budget is None:
                continue
            spent = (time.perf_counter() - t0) * 1e3
            per = spent / r
            left = budget - spent - per  # keep a sample's time for the rest of the order
            if left < per:
                break
            chunk = max(1, int(left / per))
        return r
