"""Running policies over scenarios: the dispatching rules (compiled core) and,
once trained, the PPO policy (its compiled decision, ``sched.learn.policy.kernel``:
what ``rank()`` runs); the benchmark's per-scenario table of named policies."""

import time

import numpy as np
import pandas as pd

from sched.errors import InternalError, UsageError, shorten
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS, schedule_metrics, sort_frame
from sched.evaluate.policies import policy_key
from sched.evaluate.progress import bar
from sched.sim import rules


def schedule_scenarios(
    scenarios, policy, machines=1, k=rules.ATC_K_DEFAULT, policy_file=None, machine_free=None
):
    """(start, end, machine) arrays, row order, for each scenario under ``policy``.

    ``policy``: a rule name (``sched.sim.rules.RULES``) or ``"ppo"`` with
    ``policy_file``. ``machine_free``: when each machine is first free
    (default: all free from the start).
    """
    if policy in rules.RULES:
        if policy_file:
            raise UsageError(f"--policy-file is only used with --policy ppo, not {policy!r}")
        from sched.sim.core import simulate_batch

        return simulate_batch(
            [s.arrays for s in scenarios], policy, machines=machines, k=k, machine_free=machine_free
        )
    if policy == "ppo":
        if not policy_file:
            raise UsageError("policy ppo needs a policy file (--policy-file, from `sched train`)")
        from sched.learn.policy import kernel
        from sched.learn.policy.policy_file import load

        weeks = [s.week_start_s for s in scenarios]  # the time of week the policy reads
        return kernel.run(load(policy_file), [s.arrays for s in scenarios], machines, machine_free, weeks)
    raise UsageError(f"unknown policy {shorten(policy)}; expected one of {', '.join(rules.RULES)} or ppo")


def generate_scenarios(cfg, seeds, progress=False):
    """The scenario of each seed, in order, after the config's warm-up days (``scenario.warm_up_days``:
    the tuning, validation and test scenarios)."""
    from sched.data.scenario import generate, scenario_model

    model = scenario_model(cfg)
    return [generate(model, s, warm_up=True) for s in bar(list(seeds), "scenarios", progress)]


def schedule_policy(spec, scenarios, arrays, machines, cfg=None):
    """(start, end, machine) per scenario under one policy spec, in one batched call
    (``plan``: one call a scenario, on ``sched.threads.allowed()`` threads side by side: its
    compiled rollout releases the GIL and a Planner holds no state of a call; it needs
    ``cfg``, the scenario model)."""
    if spec["kind"] == "plan":
        from concurrent.futures import ThreadPoolExecutor

        from sched.threads import allowed

        planner = make_planner(cfg, spec)

        def one(pair):
            return planner.schedule(pair[1], machines, week_start_s=pair[0].week_start_s)

        with ThreadPoolExecutor(max_workers=max(1, allowed())) as pool:
            return list(pool.map(one, zip(scenarios, arrays)))
    if spec["kind"] == "rule":
        from sched.sim.core import simulate_batch

        k = spec["atc_k"] if spec["atc_k"] is not None else rules.ATC_K_DEFAULT
        if spec["rule"] in rules.WAIT_RULES:  # a delayed rule (policies.delayed_spec)
            from sched.sim import waiting

            return waiting.simulate_batch(
                arrays, spec["rule"], spec["wait_alpha"], spec["max_wait_s"], machines=machines, k=k
            )
        return simulate_batch(arrays, spec["rule"], machines=machines, k=k)
    return schedule_scenarios(scenarios, "ppo", machines=machines, policy_file=spec["policy_file"])


def make_planner(cfg, spec):
    """The :class:`sched.learn.search.planner.Planner` of a ``plan`` spec (``policies.plan_spec``)."""
    from sched.learn.search.planner import Planner, learned_base, rule_base

    def rule_of(s):  # a delayed rule with its tuned alpha and bound (policies.resolve_policies)
        k = s["atc_k"] if s["atc_k"] is not None else rules.ATC_K_DEFAULT
        return rule_base(s["rule"], k, s.get("wait_alpha"), s.get("max_wait_s"))

    base = spec["base_spec"]
    if base["kind"] == "rule":
        b = rule_of(base)
    else:
        from sched.learn.policy.policy_file import load

        b = learned_base(load(base["policy_file"]), spec["base"])
    roll = spec.get("rollout_spec")
    settings = spec.get("settings") or cfg.plan  # the teacher's own (policies.teacher_spec)
    # what the benchmark scores is decided by counts (every sample), never by the clock: a wall-clock
    # budget (plan.budget_ms) is rank()'s anytime guard only, and would make a result depend on the
    # machine's speed and load (issue 45)
    settings = {**dict(settings), "budget_ms": None}
    return Planner(cfg, b, settings, rule_of(roll) if roll else None, chunk=spec.get("chunk", 0))


def warm_up(machines):
    """Compile (or load from numba's cache) the rollouts, serial and parallel, outside timings."""
    import numba

    from sched.sim.core import simulate_batch

    tiny = (np.array([0.0, 1.0]), np.ones(2), np.ones(2), np.ones(2), np.full(2, 5.0))
    simulate_batch([tiny], "fifo", machines=machines)
    simulate_batch([tiny] * (2 * numba.get_num_threads()), "fifo", machines=machines)


def run_policies(cfg, seeds, specs, progress=False, timings=None):
    """Per-scenario table of every policy in ``specs`` on the scenarios of ``seeds``.

    All policies see the same scenarios (common random numbers). ``timings``,
    a dict, receives each policy's scheduling wall time in seconds.
    """
    seeds = list(seeds)
    return run_on_scenarios(cfg, seeds, generate_scenarios(cfg, seeds, progress), specs, progress, timings)


def run_on_scenarios(cfg, keys, scenarios, specs, progress=False, timings=None):
    """:func:`run_policies` on given scenarios; ``keys`` fill the table's ``scenario_seed`` column
    (the seeds, or the index of each replayed window)."""
    seeds = list(keys)
    machines = cfg.scenario.machines
    arrays = [s.arrays for s in scenarios]
    if any(s["kind"] == "rule" for s in specs.values()):
        warm_up(machines)
    rows = []
    for name in bar(sorted(specs, key=policy_key), "policies", progress):
        t0 = time.perf_counter()
        results = schedule_policy(specs[name], scenarios, arrays, machines, cfg)
        if timings is not None:
            timings[name] = time.perf_counter() - t0
        if len(results) != len(arrays):
            raise InternalError(f"policy {name}: {len(results)} schedules for {len(arrays)} scenarios")
        for seed, sc, arr, (start, end, _mach) in zip(seeds, scenarios, arrays, results):
            metrics = schedule_metrics(arr, start, end, sc.counted_from_s)
            rows.append({"scenario_seed": seed, "policy": name, **metrics})
    return sort_frame(pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS)))


def run_on_stream(cfg, scenario, day, days, specs, progress=False):
    """Per-day table of every policy in ``specs`` on one continuous ``scenario`` (a replayed
    stream, ``sched.data.workload.replay.held_out_stream``): each policy schedules the whole stream
    once, and each task's metrics count toward its ``day`` (0 .. days-1; -1: toward none).
    ``scenario_seed`` is the day's index, so the days pair across policies."""
    machines = cfg.scenario.machines
    arrays = scenario.arrays
    if any(s["kind"] == "rule" for s in specs.values()):
        warm_up(machines)
    masks = [np.asarray(day) == d for d in range(days)]
    subsets = [tuple(a[m] for a in arrays) for m in masks]  # each day's tasks, the same for every policy
    rows = []
    for name in bar(sorted(specs, key=policy_key), "policies", progress):
        ((start, end, _mach),) = schedule_policy(specs[name], [scenario], [arrays], machines, cfg)
        for d, (m, sub) in enumerate(zip(masks, subsets)):
            rows.append({"scenario_seed": d, "policy": name, **schedule_metrics(sub, start[m], end[m])})
    return sort_frame(pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS)))


#: Decisions :func:`plan_decision_times` times (evenly spread over its scenarios' decisions).
TIMED_DECISIONS = 300


def plan_decision_times(cfg, spec, scenarios, machines, most=TIMED_DECISIONS):
    """What one planned decision costs as ``rank()`` runs it (``Planner.order``: the first start
    planned, the rest by the base policy) on this thread: {"p50", "p99"} in milliseconds,
    ``decisions`` timed and their ``median_queue``. The queues are those ATC meets in
    ``scenarios`` (each decision's waiting tasks and the GPUs' known free times), ``most`` of
    them spread evenly; the compilation is left out of the timings."""
    from sched.data.machines import speeds
    from sched.sim.core import simulate

    planner = make_planner(cfg, spec)
    sp = speeds(machines)
    queues = []
    for sc in scenarios:
        arr, _dur, est, w, due = sc.arrays
        start, end, mach = simulate(*sc.arrays, "atc", machines=machines)
        for i in np.argsort(start, kind="stable"):
            t = start[i]
            wait = (arr <= t) & (start >= t)
            if wait.sum() < 2:
                continue
            free = np.full(len(sp), t)
            for j in np.flatnonzero((start < t) & (end > t)):  # busy: its known end, start + estimate
                free[mach[j]] = max(t, start[j] + est[j] / sp[mach[j]])
            queues.append((arr[wait], est[wait], w[wait], due[wait], free, sc.week_start_s))
    if not queues:
        return {"p50": None, "p99": None, "decisions": 0, "median_queue": None}
    picked = [queues[i] for i in np.unique(np.linspace(0, len(queues) - 1, most).astype(int))]
    a, e, w, d, f, wk = picked[0]
    planner.order(a, e, w, d, f, week_start_s=wk)  # compiled (or loaded from the cache) here
    ms = []
    for a, e, w, d, f, wk in picked:
        t0 = time.perf_counter()
        planner.order(a, e, w, d, f, week_start_s=wk)
        ms.append((time.perf_counter() - t0) * 1e3)
    return {
        "p50": float(np.percentile(ms, 50)),
        "p99": float(np.percentile(ms, 99)),
        "decisions": len(ms),
        "median_queue": float(np.median([len(q[0]) for q in picked])),
    }
