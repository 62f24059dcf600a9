"""How the dispatching rules compare on generated scenarios (the config's scenario model).

    python benchmarks/rule_mix.py [--config config.yaml] [--seeds 0-199]

Prints each rule's mean total weighted tardiness relative to the best rule,
how many scenarios each rule wins, and the mean of the per-scenario best rule
relative to the best single rule (room left for a state-aware policy).
"""

import argparse

import numpy as np

from sched.config import load_config
from sched.data.scenario import generate, scenario_model
from sched.sim import core, rules
from sched.sim.objective import weighted_tardiness


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config")
    ap.add_argument("--seeds", default="0-199")
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.seeds.split("-"))
    cfg = load_config(a.config)
    model = scenario_model(cfg)
    scs = [generate(model, s) for s in range(lo, hi + 1)]
    arrays = [s.arrays for s in scs]
    twt = {}
    for r in rules.RULES:
        out = core.simulate_batch(arrays, r, machines=cfg["scenario"]["machines"], k=cfg["rules"]["atc_k"])
        twt[r] = np.array([weighted_tardiness(e, d, w) for (_, e, _), (_, _, _, w, d) in zip(out, arrays)])
    table = np.array([twt[r] for r in rules.RULES])
    best = table.mean(1).min()
    wins = np.bincount(table.argmin(0), minlength=len(rules.RULES))
    print(f"{len(scs)} scenarios, load {cfg['scenario']['load']}, machines {cfg['scenario']['machines']}")
    print(f"{'rule':6} {'mean TWT':>12} {'/ best':>7} {'wins':>5}")
    for i, r in enumerate(rules.RULES):
        print(f"{r:6} {table[i].mean():12.0f} {table[i].mean() / best:7.3f} {wins[i]:5d}")
    print(f"best rule per scenario: {table.min(0).mean() / best:.3f} of the best single rule")


if __name__ == "__main__":
    main()
