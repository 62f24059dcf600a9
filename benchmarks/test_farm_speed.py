"""Speed of the chunked farm loop (issue 59, point 9): a farm day, and the compiled loop against
the plain-Python reference in the same run.

    python -m pytest benchmarks/test_farm_speed.py --benchmark-only

* **A farm day**: 100 GPUs, 3,000 jobs, about 300,000 chunks, load 0.85 over 24 h, ATC; the
  compiled loop on one thread (numba's ``njit`` loop runs on one), from the scenario's arrays to
  the schedule's rows (``compiled``: :func:`sched.sim.sync.simulate`) and the loop alone on a
  loaded farm (``compiled-core``). Target: a median <= 1 s (printed after the table, not
  asserted). At sync 0 (the rule decides at each free GPU) and at sync 60 s (the rule ranks at
  syncs, the farm dispatches between them).
* **Against the reference**: a smaller farm (10 GPUs, 100 jobs, about 3,000 chunks, the same
  load over a proportionally shorter day), the compiled loop and
  ``reference.simulate_chunked`` on the same arrays; the summary prints each one's chunks a
  second and the compiled one's ratio to the reference (medians), at sync 0 and 60 s.

Every compiled function is warmed up (compiled, or loaded from numba's cache) before any timed
round. The farm: jobs arrive uniformly over the day; frames per job log-normal (a heavy tail, 1 to
10,000), a chunk a frame; time per frame log-normal, scaled to the load; estimates off by a
log-normal factor; weights 1, 2 or 4; due dates a few hours out; half the jobs limited to 1-19
GPUs; a setup of 0 to 30 s a chunk.
"""

import numpy as np
import pytest

from sched.sim import chunks, reference, rules, sync

DAY = 86_400.0


def farm_day(seed, gpus=100, jobs=3000, total_chunks=300_000, load=0.85):
    """(arrays, chunk columns) of a day on a farm of ``gpus`` GPUs (the day shortened in proportion
    to jobs / gpus against 3,000 / 100, so that every farm has the same load and queue depth)."""
    rng = np.random.default_rng(seed)
    day = DAY * (jobs / gpus) / 30.0
    arr = np.sort(rng.uniform(0.0, day, jobs))
    raw = rng.lognormal(0.0, 1.0, jobs)
    frames = np.clip(np.round(raw * total_chunks / raw.sum()), 1, 10_000).astype(np.int64)
    per = np.ones(jobs, np.int64)
    setup = rng.choice([0.0, 5.0, 30.0], jobs)
    work = rng.lognormal(0.0, 1.0, jobs) * frames
    work *= (load * gpus * day - setup @ frames) / work.sum()
    est = work * rng.lognormal(0.0, 0.3, jobs)
    weight = rng.choice([1.0, 2.0, 4.0], jobs)
    due = arr + work / rng.uniform(1.0, 10.0, jobs) + rng.uniform(600.0, 7_200.0, jobs)
    limit = np.where(rng.random(jobs) < 0.5, 0, rng.integers(1, 20, jobs))
    return (arr, work, est, weight, due), (frames, per, limit, setup)


DAY_FARM = farm_day(59)
SMALL = farm_day(60, gpus=10, jobs=100, total_chunks=3_000)
SYNCS = [0.0, 60.0]


def _chunks(farm):
    return int(chunks.counts(farm[1][0], farm[1][1]).sum())


def _compiled(farm, gpus, sync_s):
    return sync.simulate(*farm[0], "atc", gpus, 2.0, None, *farm[1], compiled=True, sync_s=sync_s)


def _reference(farm, gpus, sync_s):
    return reference.simulate_chunked(*farm[0], *farm[1], "atc", gpus, 2.0, None, sync_s)


def _core(farm, gpus, sync_s):
    """The loop alone, on a farm loaded once (returned for the rounds to run)."""
    cols = chunks.check_chunks(len(farm[0][0]), *farm[1])
    state, _ = chunks.load(farm[0], cols, gpus)
    n = len(farm[0][0])
    y = sync.Synced(np.zeros(n), np.zeros(n), np.zeros(n, np.int64))

    def run():
        if sync_s == 0:
            return chunks.run_farm(state, rules.ATC, 2.0)
        return sync.run_synced(state, y, rules.ATC, 2.0, sync_s)

    return run


@pytest.mark.parametrize("impl", ["compiled", "compiled-core"])
@pytest.mark.parametrize("sync_s", SYNCS)
def test_farm_day(benchmark, impl, sync_s):
    benchmark.group = f"farm day: 100 GPUs, 3,000 jobs, {_chunks(DAY_FARM):,} chunks, atc, sync {sync_s:g} s"
    benchmark.extra_info["target_p50_s"] = 1.0
    benchmark.extra_info["chunks"] = _chunks(DAY_FARM)
    if impl == "compiled":
        fn, args = _compiled, (DAY_FARM, 100, sync_s)
    else:
        fn, args = _core(DAY_FARM, 100, sync_s), ()
    fn(*args)  # warm-up: the JIT (or numba's cache) out of the timed rounds
    out = benchmark.pedantic(fn, args=args, rounds=5, iterations=1)
    if impl == "compiled":
        assert len(out[0]) == _chunks(DAY_FARM) and np.isfinite(out[3]).all()
    else:
        assert out == _chunks(DAY_FARM)  # one decision a chunk


@pytest.mark.parametrize("impl", ["compiled", "reference"])
@pytest.mark.parametrize("sync_s", SYNCS)
def test_compiled_against_reference(benchmark, impl, sync_s):
    benchmark.group = f"farm of 10 GPUs, 100 jobs, {_chunks(SMALL):,} chunks, atc, sync {sync_s:g} s"
    benchmark.extra_info["decisions"] = _chunks(SMALL)  # one a chunk: the summary's ratio per second
    fn = _compiled if impl == "compiled" else _reference
    fn(SMALL, 10, sync_s)  # warm-up
    out = benchmark.pedantic(
        fn, args=(SMALL, 10, sync_s), rounds=20 if impl == "compiled" else 3, iterations=1
    )
    want = _compiled(SMALL, 10, sync_s)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(out, want))
