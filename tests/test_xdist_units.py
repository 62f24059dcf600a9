"""The test command's own machinery: the units of work of its xdist workers (tests/xdist_units.py)
and the hand-off of the background runs' results between workers (tests/background_runs.py)."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.background_runs import BackgroundRuns, decode, encode, read_result, timings, write_result
from tests.conftest import ROOT
from tests.xdist_units import scope_of


def test_a_module_is_a_unit_a_runs_readers_are_one_and_a_solo_reader_is_alone():
    assert scope_of("tests/test_a.py::test_x") == "tests/test_a.py"
    assert scope_of("tests/test_a.py::TestC::test_x[1]") == "tests/test_a.py"
    assert scope_of("tests/test_a.py::test_x@workflow_runs") == "workflow_runs"
    assert scope_of("tests/test_b.py::test_y[p]@workflow_runs") == "workflow_runs"
    assert scope_of("tests/test_a.py::test_x@solo-tiny_policy") == "tests/test_a.py::test_x"
    # an '@' inside a parameter is not a group
    assert scope_of("tests/test_a.py::test_x[a@b]") == "tests/test_a.py"


def test_every_kind_of_run_result_survives_the_hand_off():
    cp = subprocess.CompletedProcess(["snakemake", Path("/x")], 1, "out", "err")
    cp.output = "out" + "err"
    value = {
        "dir": Path("/tmp/a"),
        "pair": (Path("/tmp/p.pt"), {"best": 0.5, "curve": [1, 2.5, None], "ok": True}),
        "runs": SimpleNamespace(local=Path("/l"), local_run=cp, cluster_rc=0),
    }
    back = decode(encode(value))
    assert back["dir"] == Path("/tmp/a") and back["pair"][0] == Path("/tmp/p.pt")
    assert isinstance(back["pair"], tuple) and back["pair"][1] == value["pair"][1]
    run = back["runs"].local_run
    assert (run.args, run.returncode, run.stdout, run.stderr, run.output) == (
        ["snakemake", Path("/x")],
        1,
        "out",
        "err",
        "outerr",
    )
    assert back["runs"].local == Path("/l") and back["runs"].cluster_rc == 0


def test_a_value_that_cannot_be_handed_on_is_refused_by_its_type():
    with pytest.raises(TypeError, match="set"):
        encode({"x": {1, 2}})
    with pytest.raises(TypeError, match="keys other than strings"):
        encode({1: "a"})


def test_a_reader_waits_for_the_file_and_fails_after_its_wait(tmp_path):
    def later():
        time.sleep(0.3)
        write_result(tmp_path, "run", {"ended": 1.5, "value": encode([Path("/a")])})

    threading.Thread(target=later).start()
    assert decode(read_result(tmp_path, "run", wait_s=30, poll_s=0.05)["value"]) == [Path("/a")]
    assert timings(tmp_path) == "run 2 s"
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically: no half file left
    with pytest.raises(TimeoutError, match="no result of the background run other"):
        read_result(tmp_path, "other", wait_s=0.1, poll_s=0.05)


def test_a_run_that_failed_fails_its_readers_in_every_worker_with_its_traceback(tmp_path):
    # the starter writes the error; a worker that did not start the runs reads it
    write_result(tmp_path, "bench_run", {"ended": 3.0, "error": "Traceback ...\nAssertionError: tune failed"})
    reader = BackgroundRuns(tmp_path, {"bench_run"}, start=False)
    with pytest.raises(RuntimeError, match="(?s)bench_run failed:\nTraceback.*tune failed"):
        reader.result("bench_run")
    write_result(tmp_path, "slurm_run", {"ended": 0.0, "skip": "no SLURM node is ready"})
    with pytest.raises(pytest.skip.Exception, match="no SLURM node is ready"):
        reader.result("slurm_run")
    reader.close()


SCRIPT = """
import os, threading
from tests.background_runs import FOREGROUND_NICE, yield_to_runs
done = threading.Event()
t = threading.Thread(target=done.wait)
t.start()
before = os.getpriority(os.PRIO_PROCESS, 0)
yield_to_runs()
print(os.getpriority(os.PRIO_PROCESS, 0) - before, os.getpriority(os.PRIO_PROCESS, t.native_id) - before,
      FOREGROUND_NICE)
done.set()
"""


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no nice values here")
@pytest.mark.parametrize("worker", ["gw1", None])
def test_a_workers_test_thread_yields_to_the_runs_threads_started_before(worker):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    if worker:
        env["PYTEST_XDIST_WORKER"] = worker
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    own, runs_thread, nice = map(int, r.stdout.split())
    # under xdist the test thread is niced, the thread started before is not; alone, nothing changes
    assert (own, runs_thread) == ((nice, 0) if worker else (0, 0)) and nice > 0
