"""Speed of ``rank(tasks)`` as a render queue calls it: a list of dicts in, ids out.

    python -m pytest benchmarks/test_rank_speed.py --benchmark-only

Queues of 24, 100 and 1,000 waiting tasks (the first tasks of a generated
scenario, every one arrived by ``now``), one free GPU, parsed from plain
Python values as ``json.loads`` gives them. Targets (issue 7), medians:
ATC <= 0.2 ms for 24 tasks; PPO <= 2 ms for 24 and <= 250 ms for 1,000.

The PPO cases need a trained policy file: ``SCHED_RANK_POLICY_FILE`` or
``results/train/seed-1/politique.pt``; they are skipped without one.
"""

import os
from pathlib import Path

import pytest

from sched import layout, rank
from sched.config import validate_config
from sched.data.scenario import generate

ROOT = Path(__file__).resolve().parents[1]
TARGETS_S = {("atc", 24): 0.2e-3, ("ppo", 24): 2e-3, ("ppo", 1000): 250e-3}


def queue(n, seed=2026):
    f = generate(validate_config({}), seed, tasks=n).frame
    tasks = [
        {
            "id": f"task-{i}",
            "estimate_s": float(e),
            "weight": float(w),
            "due": float(d),
            "arrival": float(a),
            "kind": str(k),
        }
        for i, (e, w, d, a, k) in enumerate(zip(f.estimate_s, f.weight, f.due_s, f.arrival_s, f.kind))
    ]
    return tasks, float(f.arrival_s.iloc[-1])


def policy_file():
    f = os.environ.get("SCHED_RANK_POLICY_FILE") or str(ROOT / layout.policy_file(1))
    return f if Path(f).is_file() else None


@pytest.mark.parametrize("n", [24, 100, 1000])
@pytest.mark.parametrize("policy", ["atc", "ppo"])
def test_rank_speed(benchmark, policy, n):
    kw = {"policy": policy}
    if policy == "ppo":
        if policy_file() is None:
            pytest.skip(f"no trained policy file (SCHED_RANK_POLICY_FILE or {layout.policy_file(1)})")
        kw["policy_file"] = policy_file()
    tasks, now = queue(n)
    first = rank(tasks, now=now, **kw)  # warm-up: JIT load, config and policy caches
    benchmark.group = f"rank {n} tasks"
    benchmark.extra_info["target_p50_s"] = TARGETS_S.get((policy, n))
    out = benchmark(rank, tasks, now=now, **kw)
    assert out == first and sorted(out) == sorted(t["id"] for t in tasks)
