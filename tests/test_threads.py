"""--threads: how many threads the compiled core and torch may use."""

import pytest

from sched import threads

from .conftest import run_cli


def test_apply_limits_numba_and_torch():
    import numba
    import torch

    before = numba.get_num_threads(), torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    try:
        threads.apply(1, torch=True)
        assert numba.get_num_threads() == 1 and torch.get_num_threads() == 1
        threads.apply(64, torch=True)  # more than the machine has
        n = threads.usable_cpus()
        # numba runs independent scenarios: at most the usable CPUs, for speed only
        assert numba.get_num_threads() == min(n, 64, numba.config.NUMBA_NUM_THREADS)
        # torch's count decides bits (MKL's reproducible mode holds per thread count): the config's
        assert torch.get_num_threads() == 64
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        numba.set_num_threads(before[0])
        torch.set_num_threads(before[1])
        torch.use_deterministic_algorithms(before[2])


@pytest.mark.parametrize(
    "command, out",
    [("tune", "tuned.json"), ("benchmark", "bench"), ("clairvoyant", "clairvoyant.csv"), ("demo", "demo")],
)
def test_commands_refuse_fewer_than_one_thread(command, out, tmp_path):
    r = run_cli(command, "--threads", "0", "--out", tmp_path / out)
    assert r.returncode == 2
    assert r.stderr.strip() == f"sched {command}: error: --threads: must be >= 1, got 0"
    assert not any(tmp_path.iterdir())


def test_the_compiled_core_and_the_learned_decision_give_the_same_bits_on_any_thread_count(
    tiny_cfg, tiny_policy
):
    """numba's threads run independent scenarios (prange over the batch), each computed whole by
    one thread: 1 or 2 threads give the same schedules to the bit, for a rule and for the compiled
    learned decision (issue 45)."""
    import numba
    import numpy as np

    from sched.evaluate.runs import generate_scenarios, schedule_policy

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here (NUMBA_NUM_THREADS=1)")
    sc = generate_scenarios(tiny_cfg, range(2000000, 2000008))
    arrays = [s.arrays for s in sc]
    specs = [
        {"kind": "rule", "rule": "atc", "atc_k": 2.0, "policy_file": None},
        {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": str(tiny_policy[0])},
    ]
    before = numba.get_num_threads()
    try:
        out = []
        for n in (1, 2):
            numba.set_num_threads(n)
            out.append([schedule_policy(spec, sc, arrays, 1, tiny_cfg) for spec in specs])
    finally:
        numba.set_num_threads(before)
    for one, two in zip(*out):
        for a, b in zip(one, two):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
