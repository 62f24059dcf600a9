"""A parallelism limit as a decision on the chunked farm (issue 60, goal 2; sched.sim.farm_limits,
sched.evaluate.farm.caps): every job runs at most ``cap`` chunks at once. The limit is read by the
compiled loops as ``max_gpus``: they equal the plain-Python reference under it, at sync 0 and at
syncs, and no job ever runs more chunks than its limit; the tuning picks the grid's best; the farm
benchmark's limited policies are tuned ATC and farm-fifo with that limit."""

import numpy as np
import pytest

from sched.sim import chunks, farm_limits, reference, rules, sync
from sched.sim.errors import SimulationError

from .random_farms import random_farm


def test_the_limit_is_the_smaller_of_the_jobs_own_and_the_cap():
    own = np.array([0, 1, 2, 5, 9])  # 0: the job has no limit of its own
    assert farm_limits.capped(own, 3).tolist() == [3, 1, 2, 3, 3]
    assert farm_limits.capped(own, 0).tolist() == own.tolist()  # no cap: as it was
    assert farm_limits.capped(own, 1).dtype == np.int64
    with pytest.raises(SimulationError, match="cap"):
        farm_limits.capped(own, -1)
    assert farm_limits.cap_grid(1) == ()  # one GPU: nothing to limit
    assert farm_limits.cap_grid(3) == (1, 2) and max(farm_limits.cap_grid(1000)) < 1000


def _most_at_once(job, start, end, n):
    """The most chunks each job runs at the same time."""
    most = np.zeros(n, np.int64)
    for j in range(n):
        s, e = start[job == j], end[job == j]
        for t in s:
            most[j] = max(most[j], int(((s <= t) & (e > t)).sum()))
    return most


@pytest.mark.parametrize("sync_s", [0.0, 5.0])
def test_compiled_loops_equal_the_reference_under_a_limit_and_no_job_exceeds_it(sync_s):
    rng = np.random.default_rng(60_200 + int(sync_s))
    for i in range(150):
        arrays, (frames, per, own, setup), speed, free = random_farm(rng, max_jobs=20, max_gpus=6)
        cap = int(rng.integers(1, 4))
        limit = farm_limits.capped(own, cap)
        rule = rules.ALL_RULES[i % len(rules.ALL_RULES)]
        cols = (frames, per, limit, setup)
        got = sync.simulate(*arrays, rule, speed, 2.0, free, *cols, sync_s=sync_s)
        want = reference.simulate_chunked(*arrays, *cols, rule, speed, 2.0, free, sync_s=sync_s)
        assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, want)), (i, rule)
        job, _c, start, end, _m = got
        n = len(arrays[0])
        assert (_most_at_once(job, start, end, n) <= np.minimum(limit, cap)).all()


def test_a_limit_of_every_gpu_is_no_limit():
    rng = np.random.default_rng(60_210)
    for _ in range(40):
        arrays, (frames, per, own, setup), speed, free = random_farm(rng, max_gpus=5)
        free_own = np.zeros_like(own)
        a = chunks.simulate(*arrays, "atc", speed, 1.0, free, frames, per, free_own, setup, compiled=True)
        b = chunks.simulate(
            *arrays, "atc", speed, 1.0, free, frames, per, farm_limits.capped(free_own, len(speed)), setup,
            compiled=True,
        )  # fmt: skip
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_limit_keeps_gpus_for_the_urgent_job_that_arrives_after_a_long_one():
    # the diagnosis in one scenario: a long job of 8 chunks of 100 s finds 4 idle GPUs at 0; an
    # urgent job of one 10 s chunk, due at 20, arrives at 1. Unlimited, the long job holds every GPU
    # until 100 and the urgent job is 90 s late; limited to 2 chunks at once, it starts at 1, on time.
    arrival, dur, est = np.array([0.0, 1.0]), np.array([800.0, 10.0]), np.array([800.0, 10.0])
    w, due = np.array([1.0, 8.0]), np.array([5000.0, 20.0])
    frames, per, setup = np.array([8, 1]), np.array([1, 0]), np.zeros(2)
    for cap, late in ((0, 90.0), (2, 0.0)):
        limit = farm_limits.capped(np.zeros(2, np.int64), cap)
        job, _c, _s, end, _m = chunks.simulate(
            arrival, dur, est, w, due, "atc", 4, 1.0, None, frames, per, limit, setup
        )
        assert max(chunks.job_ends(job, end, 2)[1] - due[1], 0.0) == late


def test_the_benchmarks_limited_policies_and_the_tuning(monkeypatch):
    from types import SimpleNamespace

    from sched.evaluate.farm import bench, caps

    sp = bench.spec(bench.CAPPED, 1.5, 60.0, cap=3)
    assert (sp["rule"], sp["atc_k"], sp["sync_s"], sp["cap"]) == ("atc", 1.5, 60.0, 3)
    assert bench.spec(bench.FIFO_CAPPED, 1.5, cap=3)["rule"] == "farm-fifo"
    assert bench.spec("atc-tuned", 1.5, cap=3)["cap"] == 0  # the unlimited rules ignore the cap
    assert bench.CAPPED not in bench.candidates(0) and bench.CAPPED in bench.candidates(2)
    specs = bench.policy_specs(1.5, {"policy": bench.CAPPED}, 0.0, 2)
    for s in bench.SYNCS:  # the shipped decision and its reference, tuned ATC, at each interval
        assert specs[bench.sync_name(bench.CAPPED, s)] == {**specs[bench.CAPPED], "sync_s": s}
        assert specs[bench.sync_name("atc-tuned", s)]["cap"] == 0

    # the tuning: the grid's lowest mean at the setting's interval (a stub of the simulation)
    cfg = SimpleNamespace(scenario=SimpleNamespace(chunks={"sync_s": 0.0}, machines=6))
    seen = []
    monkeypatch.setattr(
        caps, "mean_twt", lambda scs, sp, m: seen.append(sp) or abs(sp["cap"] - 2) + sp["sync_s"]
    )
    got = caps.tune_cap(cfg, [None], 1.0)
    assert got["cap"] == 2 and [g["cap"] for g in got["cap_grid"]] == [1, 2, 4]
    assert {s["sync_s"] for s in seen} == {0.0, bench.SYNCS[0]}
