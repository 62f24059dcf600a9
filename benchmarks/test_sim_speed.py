"""Speed of the compiled core against the Python reference, in the same run.

    python -m pytest benchmarks/test_sim_speed.py --benchmark-only

Decisions per second = tasks scheduled / wall time (one dispatching decision
per task). The compiled functions are warmed up (compiled or loaded from
numba's cache) before any timed round. Three implementations are timed:

* ``reference``: the plain-Python simulator, from task arrays to schedule;
* ``compiled``: ``core.simulate_batch``, from the same arrays to the same
  schedule (packing into a State, the rollout, unpacking);
* ``compiled-core``: the rollout alone on an already packed State, what the
  benchmark and PPO evaluation pay per scenario once data are loaded; a batch
  is spread over numba's threads (one per core unless NUMBA_NUM_THREADS says
  otherwise);
* ``compiled-core-serial``: the same rollout on one thread, the
  like-for-like comparison with the single-threaded reference.

GPUs of different speeds (issue 16): the same implementations on 4 GPUs of
speeds ``2x1.0,2x0.6`` and, in the same run, on 4 identical GPUs, each on
its own scenarios at the same load (0.85 of the farm's capacity, the sum of
the speeds) and size; the summary prints each implementation's ratio to the
reference and the mixed farm's decisions per second against the identical
one's (targets: >= 100x the reference, a drop of at most 20 %).
"""

import time

import numpy as np
import pytest

from sched.config import validate_config
from sched.data.scenario import generate, scenario_model
from sched.sim import core, reference, rules

CFG = validate_config({})
MODEL = scenario_model(CFG)
# Task arrays are prepared once, outside the timed rounds: both implementations
# receive the same (arrival, duration, estimate, weight, due) arrays.
BIG = [generate(MODEL, 1, tasks=10_000).arrays]  # one scenario, load 0.85
BATCH = [generate(MODEL, s, tasks=400).arrays for s in range(100)]  # 100 scenarios
MIXED = "2x1.0,2x0.6"
FARMS = {MIXED: [generate(MODEL, s, tasks=400, machines=MIXED).arrays for s in range(100)]}
FARMS["4"] = [generate(MODEL, s, tasks=400, machines=4).arrays for s in range(100)]


def _compiled_batch(scs, machines=1):
    return core.simulate_batch(scs, "atc", machines=machines)


def _reference_batch(scs, machines=1):
    return [reference.simulate(*sc, "atc", machines=machines) for sc in scs]


def _core(state):
    core.rollout_batch(state, rules.ATC, 2.0)
    return state


def _core_serial(state):
    core._rollout_serial(state, rules.ATC, 2.0)
    return state


def _timed(benchmark, impl, scs, ref_rounds, machines=1):
    if impl.startswith("compiled-core"):
        rollout = _core_serial if impl == "compiled-core-serial" else _core
        state, _ = core.pack(scs, machines)
        rollout(state)  # warm-up
        out = benchmark.pedantic(rollout, args=(state,), rounds=20, iterations=1)
        assert (out.nstarted == out.n).all()
        return
    fn = _compiled_batch if impl == "compiled" else _reference_batch
    # warm-up: JIT compile or cache load stays out of the timed rounds; the compiled
    # batch sees every scenario, so that its parallel path (chosen by batch size) is warm too
    fn(scs if impl == "compiled" else scs[:2], machines)
    rounds = 20 if impl == "compiled" else ref_rounds
    result = benchmark.pedantic(fn, args=(scs, machines), rounds=rounds, iterations=1)
    assert len(result) == len(scs) and len(result[0][0]) == len(scs[0][0])


IMPLS = ["compiled", "compiled-core", "compiled-core-serial", "reference"]


@pytest.mark.parametrize("impl", IMPLS)
def test_atc_one_10k_scenario(benchmark, impl):
    benchmark.group = "atc, 1 scenario x 10,000 tasks"
    benchmark.extra_info["decisions"] = len(BIG[0][0])
    _timed(benchmark, impl, BIG, ref_rounds=3)


@pytest.mark.parametrize("impl", IMPLS)
def test_atc_batch_of_100_scenarios(benchmark, impl):
    benchmark.group = "atc, batch of 100 scenarios x 400 tasks"
    benchmark.extra_info["decisions"] = sum(len(sc[0]) for sc in BATCH)
    _timed(benchmark, impl, BATCH, ref_rounds=2)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("farm", list(FARMS))
def test_atc_batch_on_mixed_and_identical_gpus(benchmark, impl, farm):
    benchmark.group = f"atc, 4 GPUs {'identical' if farm == '4' else MIXED}, batch of 100 x 400 tasks"
    benchmark.extra_info["decisions"] = sum(len(sc[0]) for sc in FARMS[farm])
    _timed(benchmark, impl, FARMS[farm], ref_rounds=2, machines=farm)


def _paired(fa, fb, rounds):
    """Times of ``fa`` and ``fb`` called alternately ``rounds`` times each (a, b, a, b, ...):
    both see the same machine load, so their per-round ratios cancel most of its noise."""
    ta, tb = np.empty(rounds), np.empty(rounds)
    for i in range(rounds):
        for f, out in ((fa, ta), (fb, tb)) if i % 2 == 0 else ((fb, tb), (fa, ta)):
            t0 = time.perf_counter()
            f()
            out[i] = time.perf_counter() - t0
    return ta, tb


def _median_interval(r, rng):
    """Median of the per-round ratios ``r`` and a bootstrap 95 % interval of it."""
    boots = np.median(rng.choice(r, (2000, len(r))), axis=1)
    return float(np.median(r)), [float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))]


def test_paired_speed_ratios_with_mixed_gpus(benchmark):
    """Mixed speeds against identical GPUs, and the compiled core against the reference on
    mixed speeds, each timed alternately in one test (paired rounds); ratios of decisions/s."""
    benchmark.group = "paired ratios, 4 GPUs 2x1.0,2x0.6 against 4 identical, core on one thread"
    states = {f: core.pack(FARMS[f], f)[0] for f in FARMS}
    few = FARMS[MIXED][:5]  # the reference is slow: 5 scenarios (2,000 decisions) a round
    few_state = core.pack(few, MIXED)[0]
    for st in (*states.values(), few_state):
        _core_serial(st)  # warm-up

    def both():
        ta, tb = _paired(lambda: _core_serial(states[MIXED]), lambda: _core_serial(states["4"]), 41)
        tr, tc = _paired(lambda: _reference_batch(few, MIXED), lambda: _core_serial(few_state), 15)
        return ta, tb, tr, tc

    ta, tb, tr, tc = benchmark.pedantic(both, rounds=1, iterations=1)
    rng = np.random.default_rng(0)
    # decisions/s ratio = inverse time ratio (same decision counts within each pair of farms)
    n_mixed = sum(len(sc[0]) for sc in FARMS[MIXED])
    n_same = sum(len(sc[0]) for sc in FARMS["4"])
    mixed_vs_same = (n_mixed / ta) / (n_same / tb)
    benchmark.extra_info["mixed_over_identical"] = _median_interval(mixed_vs_same, rng)
    benchmark.extra_info["core_over_reference_mixed"] = _median_interval(tr / tc, rng)
    benchmark.extra_info["rounds"] = [len(ta), len(tr)]
    assert np.isfinite(mixed_vs_same).all()
