"""The cost of a teacher's label: rollouts continued by ATC against rollouts of a learned policy.

python benchmarks/label_cost.py POLICY [SAMPLES [HORIZON [SCENARIOS]]]: the gated teacher's
decision (``sched.learn.search.planner.Planner.schedule``: 4 candidates, SAMPLES sampled futures of
HORIZON arrivals, every sample) on the first SCENARIOS (default 3) test seeds of the shipped
config, with three bases: ATC continued by ATC (the warm start's teacher), the policy continued
by ATC, and the policy continued by itself (a round of expert iteration, plan on the final
policy). Prints the milliseconds a planned decision and the microseconds a rollout decision
(a decision inside one sampled future), and their ratio to ATC's, measured in this run after a
warm-up call (numba's compilation is not timed). docs/learning.md quotes its output.
"""

import sys
import time

from sched.config import load_config
from sched.data.scenario import draw, scenario_model
from sched.learn.policy.policy_file import load
from sched.learn.search import planner as PL

policy = load(sys.argv[1])
samples = int(sys.argv[2]) if len(sys.argv) > 2 else 16
horizon = int(sys.argv[3]) if len(sys.argv) > 3 else 50
n = int(sys.argv[4]) if len(sys.argv) > 4 else 3
cfg = load_config("config.yaml")
model = scenario_model(cfg)
seeds = range(cfg["seeds"]["test"]["start"], cfg["seeds"]["test"]["start"] + n)
scenarios = [draw(model, s) for s in seeds]
k = float(policy.meta["atc_k"])
learned = PL.learned_base(policy, "policy")
cases = [
    ("ATC, continued by ATC", PL.rule_base("atc", k), None),
    ("policy, continued by ATC", learned, PL.rule_base("atc", k)),
    ("policy, continued by itself", learned, None),
]
settings = dict(cfg["plan"], candidates=4, samples=samples, horizon=horizon, budget_ms=None)
first = None
for name, base, roll in cases:
    p = PL.Planner(cfg, base, settings, roll)
    d0 = scenarios[0]
    p.schedule((d0["arrival"], d0["duration"], d0["estimate"], d0["weight"], d0["due"]))  # warm-up
    decisions, seconds = 0, 0.0
    for d in scenarios:
        stats = {}
        t = time.perf_counter()
        p.schedule((d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"]), stats=stats,
                   week_start_s=d["week_start_s"])  # fmt: skip
        seconds += time.perf_counter() - t
        decisions += stats["decisions"]
    ms = 1e3 * seconds / decisions
    # a rollout decision: each planned decision runs candidates x samples rollouts of about
    # (queue + horizon) decisions; the ratio between the cases does not depend on that estimate
    per_rollout_us = 1e6 * seconds / (decisions * 4 * samples * horizon)
    first = first or ms
    print(
        f"{name}: {ms:.2f} ms a planned decision, ~{per_rollout_us:.2f} us a rollout decision "
        f"({ms / first:.1f} x ATC's), {samples} samples of {horizon} arrivals, {decisions} decisions"
    )
