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
