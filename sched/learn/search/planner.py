"""The planner's settings, its base policy and its runs (the compiled part: ``sched.learn.search.plan``).

A :class:`Planner` holds what every decision needs: the base policy (a rule
and its k, or a learned scorer's weights), the pool of sampled futures and
the calibrated estimate noise. It schedules a whole scenario
(:meth:`Planner.schedule`, what ``sched simulate`` and the benchmark run,
with a fixed sample count: deterministic), or orders the queue waiting now
(:meth:`Planner.order`, what ``rank()`` runs): the first task to start is
planned, the rest follow the base policy (the tail), and with ``budget_ms``
samples are added while the budget, less the tail's estimated time, lasts; a
sample that would go past it is interrupted inside its rollouts (then the
decision depends on the machine's speed: how many samples fit; without it, on
nothing but the inputs and the seed). The tail is the base policy's rollout of
the queue, whatever the budget: the bound of a call is the larger of the budget
and that rollout (docs/plan.md).
"""

import math
import time
from collections import namedtuple

import numpy as np

from sched.cache import Cache
from sched.errors import SchedError
from sched.learn.policy import kernel
from sched.learn.search import lookahead as L
from sched.learn.search import plan as P
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

#: A base policy: its name, rule id (or P.LEARNED), ATC k, compiled network (``kernel.Net``), and a
#: delayed rule's alpha and bound on a hold (``rules.delayed_start``; inf: a rule that never holds).
Base = namedtuple("Base", "name base k net alpha max_wait", defaults=(math.inf, math.inf))


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
    out["depth"] = check_depth(out.get("depth"), f"{where}.depth")
    if out.get("wait_s") is not None:  # absent or null: plan never holds (and its settings are today's)
        out["wait_s"] = check_wait(out["wait_s"], f"{where}.wait_s")
    # in range each, their products bounded before the pool or a decision's rollouts are sized
    from sched.limits import MAX_DECISION_ROLLOUT_STEPS, MAX_FUTURE_VALUES, refuse_product

    terms = [(f"{where}.futures", out["futures"]), (f"{where}.horizon", out["horizon"])]
    what = "sampled arrivals in the planner's pool"
    refuse_product(where, PlanError, terms, MAX_FUTURE_VALUES, "MAX_FUTURE_VALUES", what)
    terms = [(f"{where}.{k}", out[k]) for k in ("candidates", "samples", "horizon")]
    what = "rollout steps a decision"
    refuse_product(where, PlanError, terms, MAX_DECISION_ROLLOUT_STEPS, "MAX_DECISION_ROLLOUT_STEPS", what)
    return out


def check_depth(depth, where="depth"):
    """None (every rollout to its end) or the decisions a rollout takes before its terminal
    estimate (``lookahead.terminal``): an integer in [1, 100000]."""
    if depth is None:
        return None
    number = not isinstance(depth, bool) and isinstance(depth, (int, float)) and math.isfinite(depth)
    if not number or depth != int(depth) or not 1 <= depth <= 100000:
        raise PlanError(f"{where}: expected null or an integer in [1, 100000], got {str(depth)[:30]}")
    return int(depth)


def check_wait(wait_s, where="wait_s"):
    """plan.wait_s: a finite number of seconds > 0 (the longest a free GPU stays idle since it freed)."""
    number = not isinstance(wait_s, bool) and isinstance(wait_s, (int, float)) and math.isfinite(wait_s)
    if not number or not 0 < wait_s <= 10**7:
        raise PlanError(f"{where}: expected null or a number of seconds in (0, 1e7], got {str(wait_s)[:30]}")
    return float(wait_s)


def check_budget(budget_ms, where="budget_ms"):
    """None (a fixed sample count) or a finite number of milliseconds > 0."""
    if budget_ms is None:
        return None
    ok = not isinstance(budget_ms, bool) and isinstance(budget_ms, (int, float))
    if ok and isinstance(budget_ms, int) and budget_ms > 2**53:  # (an integer beyond any float)
        ok = False
    if not ok or not math.isfinite(budget_ms) or budget_ms <= 0:
        raise PlanError(f"{where}: expected a number of milliseconds > 0, got {str(budget_ms)[:30]}")
    return float(budget_ms)


#: The settings a setting of config ``plan.grid`` (its candidacy, :func:`sched.verdict.candidacy.plan_gate`)
#: may override; config ``plan``'s own otherwise.
GRID_KEYS = ("rollout", "candidates", "samples", "horizon", "depth", "wait_s")
#: Config ``plan``'s keys that are the candidacy's, not a planner setting.
CANDIDACY_KEYS = ("grid", "validation_scenarios", "choice_se", "elsewhere")


def grid_names(cfg, profile="full"):
    """The names of config ``plan.grid``'s settings, cheapest first (config order); ``profile``
    "default": without those marked ``profile: full`` (the longer run's only). Those marked
    ``profile: off`` run in no workflow run (a setting kept for ``sched benchmark --plan-setting NAME``
    by hand). Two settings of one name are refused (ConfigError)."""
    from sched.config import ConfigError

    every = [str(e["name"]) for e in cfg.plan["grid"]]
    twice = sorted({n for n in every if every.count(n) > 1})
    if twice:
        raise ConfigError(f"config: plan.grid: two settings are named {twice[0]!r}")
    runs = ("default", "full") if profile == "full" else ("default",)
    return [str(e["name"]) for e in cfg.plan["grid"] if e.get("profile", "default") in runs]


def elsewhere_names(cfg, profile="full", setting=None):
    """The names of plan.grid's settings tried under the robustness setting ``setting`` (None:
    every name any setting tries) in a run of ``profile`` (config ``plan.elsewhere``: its
    ``grids`` entry for that setting, else its ``grid``): none when ``plan.elsewhere.profile`` is
    off, or full and the run is not. A name not in plan.grid is refused (ConfigError)."""
    from sched.config import ConfigError

    where = dict(cfg.plan.get("elsewhere") or {})
    wanted = where.get("profile", "full")
    if wanted == "off" or (wanted == "full" and profile != "full"):
        return []
    every = grid_names(cfg, "full")
    grids = {str(k): list(v) for k, v in dict(where.get("grids") or {}).items()}
    lists = [("plan.elsewhere.grid", where.get("grid", []))] + [
        (f"plan.elsewhere.grids.{k}", v) for k, v in grids.items()
    ]
    for field, names in lists:
        unknown = [str(n) for n in names if str(n) not in every]
        if unknown:
            raise ConfigError(
                f"config: {field}: {unknown[0]!r} is not a setting of plan.grid (one of {', '.join(every)})"
            )
    if setting is None:
        names = [n for _, names in lists for n in names]
    else:
        names = grids.get(setting, where.get("grid", []))
    return list(dict.fromkeys(str(n) for n in names))


def grid_setting(cfg, name):
    """plan's settings (a dict, ``rollout`` included) at the setting ``name`` of config ``plan.grid``."""
    entries = {str(e["name"]): e for e in cfg.plan["grid"]}
    if name not in entries:
        raise PlanError(
            f"--plan-setting: {str(name)[:40]!r} is not a setting of plan.grid (one of {', '.join(entries)})"
        )
    out = {k: v for k, v in dict(cfg.plan).items() if k not in CANDIDACY_KEYS}
    out.update({k: entries[name][k] for k in GRID_KEYS if k in entries[name]})
    return out


def rule_base(rule, k=rules.ATC_K_DEFAULT, alpha=None, max_wait=None):
    """A dispatching rule (name) as the planner's base policy; a delayed rule (``rules.WAIT_RULES``)
    with its ``alpha`` and ``max_wait`` (seconds): the rollouts it continues hold the GPU as it
    does, its candidates are its base rule's."""
    if rule in rules.WAIT_RULES:
        return Base(rule, rules.wait_base(rule), float(k), kernel.no_net(), float(alpha), float(max_wait))
    return Base(rule, rules.rule_id(rule), float(k), kernel.no_net())


def learned_base(policy, name="ppo"):
    """A loaded scorer policy (``sched.learn.policy.policy_file.load``) as the planner's base policy
    (one with a wait output, ``train.wait``: its candidates' scores only, it never holds here)."""
    net = kernel.of_policy(policy)
    return Base(name, P.LEARNED, net.atc_k, net)


_pools = Cache(5)


def futures(cfg, horizon, count):
    """The pool of sampled futures (``sched.learn.search.teacher.future_pool``), cached per config:
    filled under a lock (checked again inside it); the pool's arrays are only read (the
    compiled rollouts copy from them into each call's own scratch state)."""
    from sched.config import config_hash
    from sched.learn.search.teacher import future_pool

    key = (config_hash(cfg, ["scenario", "seeds"]), horizon, count)
    return _pools.get(key, lambda: L.Futures(*future_pool(cfg, [], horizon, count)))


class Planner:
    """The planner with its base policy ``base`` (:func:`rule_base`, :func:`learned_base`)
    and settings ``settings`` (config ``plan``, checked by :func:`check_settings`)."""

    def __init__(self, cfg, base, settings, rollout=None, chunk=0):
        from sched.data.model import scenario_model

        self.base = base
        #: > 0: the paired stopping rule of :func:`plan.sample_gated` in :meth:`schedule` (the
        #: teacher's); 0: every sample (plan's)
        self.chunk = int(chunk)
        self.rollout = rollout  # a rule_base continuing the rollouts; None: the base policy
        self.settings = st = check_settings(settings)
        self.sigma = float(scenario_model(cfg).sigma)
        self.pool = futures(cfg, st["horizon"], st["futures"])
        #: seconds a work unit of the samples took in this planner's last budgeted call (None:
        #: not measured yet): a budgeted call starts from it rather than from an unbounded probe
        self.per_unit = None

    def _lookahead(self):
        """The rollouts' settings (``lookahead.Lookahead``): estimates only, continued by the
        rollout rule, or by the base policy."""
        st, b, r = self.settings, self.base, self.rollout
        roll = b if r is None else r
        depth = -1 if st["depth"] is None else st["depth"]
        if roll.alpha < math.inf:  # a delayed rule continues (its holds included)
            held = (roll.alpha, roll.max_wait)
            return L.Lookahead(st["horizon"], self.sigma, True, roll.base, roll.k, depth, *held)
        return L.Lookahead(st["horizon"], self.sigma, True, roll.base, roll.k, depth)

    def schedule(self, scenario, machines=1, machine_free=None, stats=None, week_start_s=0.0):
        """(start, end, machine) of one scenario (arrays in row order) under the planner;
        ``stats``, a dict, receives the planned decisions, those that left the base's
        choice and the samples drawn (``decisions``, ``deviations``, ``samples``): a Planner
        itself holds no state of a call.
        ``week_start_s``: the scenario's week start (a learned base policy's time of week)."""
        st = self.settings
        state, (order,) = S.pack([scenario], machines, machine_free)
        scratch = S.empty_state(1, state.arr.shape[1] + st["horizon"], machines)
        b = self.base
        net = kernel.at_week(b.net, week_start_s)
        ws = kernel.workspace(scratch.queue.shape[1], net)
        gate = P.Gate(int(st["candidates"]), int(st["samples"]), self.chunk, float(st["z"]))
        if st.get("wait_s") is not None:  # holding the GPU is one more candidate (docs/plan.md)
            gate = gate._replace(wait=float(st["wait_s"]))
        if b.alpha < math.inf:  # a delayed base: its own choice may be a hold
            gate = gate._replace(alpha=float(b.alpha), hold_max=float(b.max_wait))
        ev = L.evaluator(scratch, ws, self.pool, self._lookahead(), net)
        dec, moved, drawn = P.plan_rollout(state, gate, st["seed"], b.base, b.k, ev)
        if stats is not None:
            stats.update(decisions=int(dec), deviations=int(moved), samples=int(drawn))
        return S._unpack(state, [order])[0]

    def order(
        self, arrival, estimate, weight, due, machine_free, budget_ms=None, started=None, stats=None,
        week_start_s=0.0,
    ):  # fmt: skip
        """(start, end, machine) of the queue waiting now: the first start planned, the rest by
        the base policy (the tail). ``budget_ms`` (default: the settings'): a bound on the call,
        counted from ``started`` (a ``time.perf_counter()``; default: now): samples are added
        while the budget, less the tail's estimated time, lasts, and a sample that would go past
        it is interrupted inside its rollouts (:func:`lookahead.sample_costs_upto`); the tail
        itself is not bounded (docs/plan.md). None: every one of ``samples`` (deterministic).
        ``stats``, a dict, receives ``samples`` (those the decision used), ``of`` (the
        setting), ``planned`` (False: the first start is the base policy's own, with fewer than
        two candidates or two samples) and ``budget`` (True: the budget cut the samples short).
        ``week_start_s``: the clock's time 0 in seconds since Monday 00:00 UTC (the week features
        of a learned base policy; rank(): ``EPOCH_WEEK_OFFSET_S``, its times are epoch seconds)."""
        t0 = time.perf_counter() if started is None else started
        st = self.settings
        budget = check_budget(budget_ms if budget_ms is not None else st["budget_ms"])
        scen = (arrival, estimate, estimate, weight, due)  # true durations unknown: the estimates
        state, (order,) = S.pack([scen], len(machine_free), machine_free)
        scratch = S.empty_state(1, state.arr.shape[1] + st["horizon"], len(machine_free))
        b = self.base
        net = kernel.at_week(b.net, week_start_s)
        S.set_rule(state, 0, b.base if b.base >= 0 else rules.ATC)
        ws = kernel.workspace(scratch.queue.shape[1], net)
        n, cut, planned = 0, False, False
        if S._advance(state, 0, True):
            cands = P.candidates(state, st["candidates"], b.base, b.k, net, ws)
            costs = np.empty((cands.shape[0], st["samples"]))
            if cands.shape[0] >= 2:
                n, cut = self._sample(state, scratch, cands, costs, ws, budget, t0, net)
            planned = n >= 2
            c = P.choose(costs, n, st["z"]) if planned else 0
            S._start(state, 0, cands[c], state.pending[0])
            P.continue_base(state, b.base, b.k, net, ws)
        if stats is not None:
            stats.update(samples=int(n), of=st["samples"], planned=planned, budget=cut)
        return S._unpack(state, [order])[0]

    def _sample(self, state, scratch, cands, costs, ws, budget, t0, net):
        """Fill ``costs`` until ``samples`` or the budget; returns (samples filled, whether the
        budget cut them short). Every array it writes is the call's own: a Planner is shared
        between threads.

        With a budget, the samples are computed in calls of at most a given amount of work
        (:func:`lookahead.sample_costs_upto`): a first small one (PROBE units) measures the
        time per unit (or the planner's last budgeted call measured it, ``per_unit``, and the
        first call is bounded too); each next one gets the work that fits in what is left of
        the budget less the tail's estimated time (the base policy's rollout of the rest of the queue,
        ``tail_units``). A call that reaches its bound has spent the budget: the samples it
        did not complete are dropped. A budget already spent when the call begins (counted
        from ``t0``, the call's start as its caller gives it) samples nothing."""
        st = self.settings
        total = st["samples"]
        ev = L.evaluator(scratch, ws, self.pool, self._lookahead(), net)
        seeds = P.futures_of(st["seed"], 0)
        if budget is None:
            L.sample_costs(state, cands, 0, total, costs, ev, seeds)
            return total, False
        tail = tail_units(int(state.qlen[0]) - 1)
        if (time.perf_counter() - t0) * 1e3 >= budget:  # spent before the call ran (a wait for a worker)
            return 0, True
        r, units, secs, cap = 0, 0, 0.0, PROBE
        while r < total:
            per = max(secs, 1e-9) / units if units else self.per_unit
            if per is not None:  # the work that fits in what is left of the budget, the tail's time kept
                cap = min(int((budget / 1e3 - (time.perf_counter() - t0)) / per) - tail, 2**62)
                if cap <= 0:
                    return r, True
            t = time.perf_counter()
            done, used = L.sample_costs_upto(state, cands, r, total, costs, ev, seeds, cap)
            secs += time.perf_counter() - t
            probe, units, r = per is None, units + used, done
            if units:
                self.per_unit = max(secs, 1e-9) / units  # one float: threads sharing it only race on a guess
            if r < total and not probe:  # interrupted at the budget's bound
                return r, True
        return r, False


#: Work units (:func:`lookahead.sample_costs_upto`) of the first, measuring call of a budgeted
#: decision: a few samples of a short queue, one decision of a rollout over 20,000 tasks.
PROBE = 20_000


def tail_units(n):
    """Estimated work units of the base policy's rollout of ``n`` waiting tasks (each decision
    scans the tasks still waiting): n (n + 1) / 2 + n."""
    return n * (n + 1) // 2 + n
