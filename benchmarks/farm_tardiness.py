"""How much tardiness the rules leave on a few GPU farms: why `mixed-4` (docs/benchmark-and-report.md).

    python benchmarks/farm_tardiness.py [--scenarios 16] [--calibration results/calibration.json]

Mean total weighted tardiness per scenario (k w·s) of FIFO, EDD, WMDD and ATC
at k 0.5, 1 and 2, on the first test seeds, for each farm below (a count or
a machines spec), at load 0.95, with the config's workload and deadlines.
"""

import argparse

import numpy as np

from sched.config import validate_config
from sched.data.scenario import generate, scenario_model
from sched.evaluate.per_scenario import schedule_metrics
from sched.sim.core import simulate_batch

#: (machines, tasks): 400 tasks per GPU, as the main setting's 400 on one.
FARMS = ((1, 400), (4, 1600), ("1x1.25,1x1.0,2x0.6", 1600), ("1x1.0,3x0.6", 1600))
RULES = (("fifo", None), ("edd", None), ("wmdd", None), ("atc", 0.5), ("atc", 1.0), ("atc", 2.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int, default=16)
    ap.add_argument("--calibration", default="results/calibration.json")
    ap.add_argument("--load", type=float, default=0.95)
    a = ap.parse_args()
    cfg = validate_config({"scenario": {"calibration": a.calibration}})
    first = cfg["seeds"]["test"]["start"]
    model = scenario_model(cfg)
    print("| setting | " + " | ".join(r if k is None else f"{r} k {k:g}" for r, k in RULES) + " |")
    print("|---" * (len(RULES) + 1) + "|")
    for machines, tasks in FARMS:
        arrays = [
            generate(model, first + s, tasks=tasks, load=a.load, machines=machines).arrays
            for s in range(a.scenarios)
        ]
        cells = []
        for rule, k in RULES:
            kw = {} if k is None else {"k": k}
            res = simulate_batch(arrays, rule, machines=machines, **kw)
            twt = [
                schedule_metrics(x, s, e)["total_weighted_tardiness_s"] for x, (s, e, _) in zip(arrays, res)
            ]
            cells.append(f"{np.mean(twt) / 1000:.1f}")
        print(f"| {machines} GPUs, {tasks} tasks | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
