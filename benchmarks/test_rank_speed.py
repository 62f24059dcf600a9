"""Speed of ``rank(tasks)`` as a render queue calls it: a list of dicts in, ids out.

    python -m pytest benchmarks/test_rank_speed.py --benchmark-only

Queues of 24, 100, 1,000 and 10,000 waiting tasks (the first tasks of a
generated scenario, every one arrived by ``now``), one free GPU, parsed from
plain Python values as ``json.loads`` gives them. ATC, in the same run, is
the reference the PPO times are read against (rank's cost is dominated by
the rollout, quadratic in the queue for both: each decision looks at every
waiting task). Targets, medians: ATC <= 0.2 ms for 24 tasks, PPO <= 2 ms for
24 (issue 7); PPO <= 10 ms for 1,000 and <= 0.3 s for 10,000 (issue 13).

``test_compiled_rollout_speed`` times the learned policy's compiled rollout
alone (``sched.learn.policy.kernel.run_one``, what rank() runs: one arithmetic pass
over the queue per decision, then its candidates' features and scores)
against ATC's, on 1,000 tasks.

The PPO cases need a trained policy file: ``SCHED_RANK_POLICY_FILE`` or
``results/train/seed-1/politique.pt``; they are skipped without one.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from sched import layout, rank
from sched.config import validate_config
from sched.data.scenario import generate, scenario_model

ROOT = Path(__file__).resolve().parents[1]
TARGETS_S = {("atc", 24): 0.2e-3, ("ppo", 24): 2e-3, ("ppo", 1000): 10e-3, ("ppo", 10000): 0.3}


def queue(n, seed=2026):
    f = generate(scenario_model(validate_config({})), seed, tasks=n).frame
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


@pytest.mark.parametrize("n", [24, 100, 1000, 10000])
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


@pytest.mark.parametrize("path", ["ppo", "atc"])
def test_compiled_rollout_speed(benchmark, path):
    """The learned policy's compiled rollout alone (``sched.learn.policy.kernel.run_one``: what
    rank() runs) on 1,000 waiting tasks, against ATC's rollout of the same queue."""
    from sched.learn.policy import kernel
    from sched.learn.policy.policy_file import load
    from sched.sim.core import simulate_batch

    if policy_file() is None:
        pytest.skip(f"no trained policy file (SCHED_RANK_POLICY_FILE or {layout.policy_file(1)})")
    policy = load(policy_file())
    f = generate(scenario_model(validate_config({})), 2026, tasks=1000).frame
    scenario = (
        np.full(len(f), 0.0),
        f.estimate_s.values,
        f.estimate_s.values,
        f.weight.values,
        f.due_s.values,
    )
    run = (
        (lambda: kernel.run_one(policy, scenario))
        if path == "ppo"
        else (lambda: simulate_batch([scenario], "atc", k=policy.meta["atc_k"])[0])
    )
    first = run()  # warm-up: JIT load
    benchmark.group = "compiled rollout 1000 tasks"
    out = benchmark(run)
    assert all(np.array_equal(a, b) for a, b in zip(out, first))


@pytest.mark.parametrize("n", [24, 1000])
@pytest.mark.parametrize("budget_ms", [20.0, 100.0])
def test_rank_plan_speed(benchmark, n, budget_ms):
    """rank(policy="plan", budget_ms=B) on the learned policy, rollouts by ATC (config.yaml's
    recipe, with rules.atc_k for the tuned k) (issue 15: p50 <= B + 10 %)."""
    if policy_file() is None:
        pytest.skip(f"no trained policy file (SCHED_RANK_POLICY_FILE or {layout.policy_file(1)})")
    cfg = validate_config({"plan": {"base": policy_file(), "rollout": "atc", "samples": 4096}})
    tasks, now = queue(n)
    first = rank(tasks, now=now, policy="plan", config=cfg, budget_ms=budget_ms)  # warm-up, pool built
    benchmark.group = f"rank plan {n} tasks"
    benchmark.extra_info["target_p50_s"] = budget_ms * 1.1e-3
    out = benchmark(rank, tasks, now=now, policy="plan", config=cfg, budget_ms=budget_ms)
    assert sorted(out) == sorted(first)


def farm_jobs(n=1000, seed=2026):
    """``n`` waiting jobs of frames as a farm adapter hands them (issue 59, point 9): frames
    log-normal (median 7, a chunk each), a frame 2.5 min (log-normal), weights 1 to 8, due within
    6 h, a host limit of 5 to 50, three in ten running a chunk; and the same jobs as whole tasks."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        frames = int(min(10_000, max(1, rng.lognormal(2.0, 1.0))))
        jobs.append(
            {
                "id": f"job-{i}",
                "frames": frames,
                "frame_s": float(rng.lognormal(5.0, 0.8)),
                "weight": float(rng.choice([1.0, 2.0, 4.0, 8.0])),
                "due": float(rng.uniform(0, 6 * 3600)),
                "max_gpus": int(rng.choice([5, 10, 20, 50])),
                **({"running": 1} if rng.random() < 0.3 else {}),
            }
        )
    whole = [
        {"id": j["id"], "estimate_s": j["frames"] * j["frame_s"], "weight": j["weight"], "due": j["due"]}
        for j in jobs
    ]
    return jobs, whole


@pytest.mark.parametrize("kind", ["frames", "whole"])
def test_rank_frames_speed(benchmark, kind):
    """rank() with ATC on 1,000 waiting jobs of frames on 500 GPUs (target: <= 50 ms, issue 59),
    against the same jobs as whole tasks on the same GPUs in the same run (the reference)."""
    jobs, whole = farm_jobs()
    tasks = jobs if kind == "frames" else whole
    first = rank(tasks, now=0.0, policy="atc", machines=500)  # warm-up: JIT load, config cache
    benchmark.group = "rank 1000 jobs on 500 GPUs"
    benchmark.extra_info["target_p50_s"] = 50e-3 if kind == "frames" else None
    benchmark.extra_info["chunks"] = sum(j["frames"] for j in jobs)
    out = benchmark(rank, tasks, now=0.0, policy="atc", machines=500)
    assert out == first and sorted(out) == sorted(j["id"] for j in jobs)
