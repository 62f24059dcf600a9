"""The demonstration: one reproducible scenario under every policy (``sched demo``)."""

import numpy as np
import pandas as pd

from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS, schedule_metrics
from sched.evaluate.policies import is_ppo, policy_key, same_rule
from sched.evaluate.runs import schedule_policy


def run_demo(cfg, seed, specs):
    """One scenario under every policy: (scenario, {policy: (start, end, machine)}, table).

    The table has the per-scenario columns, one row per policy.
    """
    from sched.data.scenario import generate, scenario_model

    sc = generate(scenario_model(cfg), seed)
    machines = cfg.scenario.machines
    schedules, rows = {}, []
    for name in sorted(specs, key=policy_key):
        start, end, mach = schedule_policy(specs[name], [sc], [sc.arrays], machines)[0]
        schedules[name] = (np.asarray(start), np.asarray(end), np.asarray(mach))
        rows.append({"scenario_seed": seed, "policy": name, **schedule_metrics(sc.arrays, start, end)})
    return sc, schedules, pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS))


def demo_pair(table, specs=None):
    """The two policies the demonstration's Gantt chart shows: ATC and its challenger.

    The challenger is the PPO policy with the lowest weighted tardiness on the
    scenario, or, without PPO, the best other heuristic on it (not ATC again
    under another name: atc-tuned when the tuning kept ATC's k).
    """
    specs = specs or {}
    twt = dict(zip(table["policy"], table["total_weighted_tardiness_s"]))
    ppo = [p for p in twt if is_ppo(p)]
    pool = ppo or [p for p in twt if p != "atc" and not same_rule(specs.get("atc"), specs.get(p))]
    if "atc" not in twt or not pool:
        raise BenchmarkError("demo: the Gantt chart needs atc and at least one other policy")
    return "atc", min(pool, key=lambda p: (twt[p], policy_key(p)))
