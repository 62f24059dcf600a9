"""Wall time of the benchmark: 300 test scenarios x every heuristic policy.

    python -m pytest benchmarks/test_benchmark_speed.py --benchmark-only

The target (issue 5) is <= 60 s on this machine once numba has compiled. The
timed call is what `sched benchmark` does for the heuristics: generate the 300
test scenarios of the default config, schedule them with each policy (one
batched compiled call per policy) and compute the per-scenario columns. The
PPO part is timed the same way when a trained policy file is present.
"""

from pathlib import Path

import pytest

from sched import layout
from sched.config import validate_config
from sched.evaluate.policies import HEURISTICS
from sched.evaluate.runs import run_policies, warm_up
from sched.evaluate.seeds import benchmark_seeds, train_seeds

CFG = validate_config({})
SEEDS = benchmark_seeds(CFG)
HEURISTIC_SPECS = {
    name: {
        "kind": "rule",
        "rule": "atc" if name == "atc-tuned" else name,
        "atc_k": 2.0 if name in ("atc", "atc-tuned") else None,
        "policy_file": None,
    }
    for name in HEURISTICS
}


def _run(specs):
    return run_policies(CFG, SEEDS, specs)


def test_300_scenarios_all_heuristics(benchmark):
    warm_up(1)
    run_policies(CFG, SEEDS[:4], HEURISTIC_SPECS)  # compile or load from cache, untimed
    benchmark.extra_info["target_p50_s"] = 60.0  # reported against the median, not asserted
    frame = benchmark.pedantic(_run, args=(HEURISTIC_SPECS,), rounds=5, iterations=1)
    assert len(frame) == len(SEEDS) * len(HEURISTICS)


def test_300_scenarios_ppo(benchmark):
    path = Path(layout.policy_file(train_seeds(CFG)[0]))
    if not path.exists():
        pytest.skip(f"no trained policy at {path}")
    specs = {"ppo": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": str(path)}}
    run_policies(CFG, SEEDS[:4], specs)  # warm-up: load the policy, compile
    frame = benchmark.pedantic(_run, args=(specs,), rounds=2, iterations=1)
    assert len(frame) == len(SEEDS)
