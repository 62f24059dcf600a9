"""Time of one rank() call on N random waiting tasks (docs/plan.md, "The true bound of a call").

python benchmarks/plan_budget.py N BUDGET_MS|none [POLICY [REPEATS]]: policy plan (base atc,
rollout base, 4 candidates, 64 samples, horizon 50) or a rule; prints each call's time and why.
"""

import sys
import time

import numpy as np

from sched import rank

n = int(sys.argv[1])
budget = None if sys.argv[2] == "none" else float(sys.argv[2])
pol = sys.argv[3] if len(sys.argv) > 3 else "plan"
rng = np.random.default_rng(0)
tasks = [
    dict(
        id=f"t{i}",
        estimate_s=float(rng.lognormal(3.5, 1.0)),
        weight=float(rng.choice([1, 2, 4, 8])),
        due=float(rng.uniform(0, 3600 * 24)),
    )
    for i in range(n)
]
cfg = {
    "scenario": {"calibration": None},
    "plan": {"base": "atc", "rollout": "base", "candidates": 4, "samples": 64, "horizon": 50},
    "rank": {"winner": "/nonexistent/w.json", "tuned": "/nonexistent/t.json", "settings": "/nonexistent/r"},
}
rank(
    tasks[:50], now=0, policy=pol, config=cfg, **({"budget_ms": budget} if pol == "plan" else {})
)  # warm (compile)
for _rep in range(int(sys.argv[4]) if len(sys.argv) > 4 else 1):
    t = time.perf_counter()
    out = rank(
        tasks, now=0, policy=pol, config=cfg, explain=True, **({"budget_ms": budget} if pol == "plan" else {})
    )
    print(f"n={n} policy={pol} budget_ms={budget}: {time.perf_counter() - t:.3f} s; why: {out.why.iloc[0]}")
