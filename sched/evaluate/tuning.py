"""ATC's look-ahead k, chosen on the validation seeds (``sched tune``)."""

import numpy as np

from sched import config as config_mod
from sched import setting
from sched.config import ConfigError
from sched.evaluate.per_scenario import schedule_metrics
from sched.evaluate.progress import bar
from sched.evaluate.runs import generate_scenarios
from sched.evaluate.seeds import benchmark_seeds, overlap, validation_seeds


def tune_atc_k(cfg, progress=False):
    """ATC's k with the lowest mean total weighted tardiness on the validation seeds.

    Returns the record ``sched tune`` writes (``tuned.json``): the chosen k,
    the mean at each k of ``benchmark.atc_k_grid``, and what it was tuned on.
    """
    from sched.sim.core import simulate_batch

    seeds = validation_seeds(cfg)
    if overlap(seeds, benchmark_seeds(cfg)):
        raise ConfigError("config: validation seeds overlap the test seeds")
    machines = cfg.scenario.machines
    arrays = [s.arrays for s in generate_scenarios(cfg, seeds, progress)]
    grid = []
    for k in bar(cfg.benchmark.atc_k_grid, "atc k grid", progress):
        res = simulate_batch(arrays, "atc", machines=machines, k=float(k))
        twt = [schedule_metrics(a, s, e)["total_weighted_tardiness_s"] for a, (s, e, _) in zip(arrays, res)]
        grid.append({"atc_k": float(k), "mean_twt_s": float(np.mean(twt))})
    best = min(range(len(grid)), key=lambda i: (grid[i]["mean_twt_s"], i))
    return {
        "rule": "atc",
        "atc_k": grid[best]["atc_k"],
        "criterion": "lowest mean total weighted tardiness on the validation seeds "
        "(first in grid order on a tie)",
        "validation_seeds": {"first": seeds.start, "last": seeds.stop - 1, "count": len(seeds)},
        "scenario": {k: cfg.scenario[k] for k in ("tasks", "load", "machines")},
        "setting": setting.of_config(cfg),  # the farm rank() matches a call against
        "reference_atc_k": float(cfg.rules.atc_k),
        "grid": grid,
        "config_hash": config_mod.config_hash(cfg, ["scenario", "rules", "seeds", "benchmark"]),
    }
