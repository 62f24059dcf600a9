"""The test session's workflow runs, started in the background at the session's first test.

The Snakemake runs of the small config (tests/test_workflow.py, tests/test_slurm_local.py)
are subprocesses that take minutes each. Started together at the beginning, while the
session's workers run the other tests (the tests that read the runs are moved to the end of
the session by conftest.py), they use the machine's idle time instead of adding their minutes
to the session (issue 45: the test command within about 13 minutes on 2 cores).

What runs, each only when a selected test asks for it (by fixture name):
  ``bench_run``      the small benchmark of tests/test_benchmark.py through the command line
                     (tune, benchmark, its shards), subprocesses: a minute of the foreground's;
  ``tiny_policy``    conftest's tiny training (the teacher's warm start, then PPO), a subprocess;
  ``workflow_runs``  the two runs of the small config: -j1 on one usable CPU with the local
                     executor, -j4 beside a CPU burner through a cluster executor;
  ``studio_runs``    both projects copied and built on with a robustness setting and the
                     studio added, the same way (after the two runs);
  ``robust_run``     the local project copied and built on with two robustness settings;
  ``slurm_run``      the small config through the SLURM profile (where a cluster answers).

The copies are made as soon as the two runs end, before any test reads (or edits the config
of) the local project.

With pytest-xdist (the test command's ``-n 2``), one process starts the runs: the first worker
(``gw0``), or the session's only process without xdist. Each run's result is handed to every
worker as a JSON file in the session's shared temporary folder (:func:`encode`: paths,
processes, namespaces, dicts, lists and tuples; anything else is refused), written atomically
when the run ends; a reader in any worker waits for it. The readers of one run form one unit
of work (tests/xdist_units.py), so they run in one worker, in their order, as before.
"""

import json
import os
import shutil
import subprocess
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

#: The fixtures of the runs started in the background (conftest.py's collection hook).
FIXTURES = ("bench_run", "tiny_policy", "workflow_runs", "studio_runs", "robust_run", "slurm_run")
#: The same, in the order they end in a session (measured: the benchmark, the training, the two runs,
#: the SLURM run, the robustness run and the studio runs that build on them): their readers run in
#: this order.
ENDS = ("bench_run", "tiny_policy", "workflow_runs", "slurm_run", "robust_run", "studio_runs")
#: The runs whose readers share nothing they write (a policy file they only read): each reader is a
#: unit of work of its own, which either worker may take. The readers of every other run edit or
#: write into that run's folders, so they stay in one unit, in their order.
SOLO = ("tiny_policy",)
#: The niceness of the xdist workers' test threads (:func:`yield_to_runs`).
FOREGROUND_NICE = 5
#: How long a reader waits for a run's result before it fails (the starting worker may have died).
WAIT_S = 3600.0


def starts_runs():
    """Whether this process starts the runs: the first xdist worker, or the only process."""
    return os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0"


def yield_to_runs():
    """Under xdist, this worker's test thread (and what it starts: torch's and numba's threads,
    subprocesses) at :data:`FOREGROUND_NICE`: the background runs, whose chain of workflow runs is
    the session's longest path, keep their pace beside two workers. Linux's nice value is a
    thread's own, so the runs' threads (started before) and their subprocesses stay at 0."""
    if "PYTEST_XDIST_WORKER" in os.environ and hasattr(os, "nice"):
        os.nice(FOREGROUND_NICE)


def shared_folder(tmp_path_factory):
    """The folder every worker of the session sees: the session's temporary folder (xdist gives
    each worker a folder of its own inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def encode(x):
    """``x`` as JSON-ready data that :func:`decode` turns back into an equal value."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, Path):
        return {"path": str(x)}
    if isinstance(x, (list, tuple)):
        return {"list" if isinstance(x, list) else "tuple": [encode(v) for v in x]}
    if isinstance(x, dict):
        if not all(isinstance(k, str) for k in x):
            raise TypeError(f"a dict with keys other than strings: {list(x)!r}")
        return {"dict": {k: encode(v) for k, v in x.items()}}
    if isinstance(x, subprocess.CompletedProcess):
        fields = {"args": x.args, "returncode": x.returncode, "stdout": x.stdout, "stderr": x.stderr}
        if hasattr(x, "output"):  # tests/test_workflow.py's runs: stdout + stderr
            fields["output"] = x.output
        return {"process": encode(fields)}
    if isinstance(x, SimpleNamespace):
        return {"namespace": encode(vars(x))}
    raise TypeError(f"cannot hand a {type(x).__name__} to another worker: {x!r:.200}")


def decode(x):
    """The value :func:`encode` encoded."""
    if not isinstance(x, dict):
        return x
    ((kind, v),) = x.items()
    if kind == "path":
        return Path(v)
    if kind in ("list", "tuple"):
        items = [decode(i) for i in v]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: decode(i) for k, i in v.items()}
    if kind == "process":
        f = decode(v)
        p = subprocess.CompletedProcess(f["args"], f["returncode"], f["stdout"], f["stderr"])
        if "output" in f:
            p.output = f["output"]
        return p
    if kind == "namespace":
        return SimpleNamespace(**decode(v))
    raise ValueError(f"not an encoded value: {kind!r}")


def write_result(folder, name, record):
    """``record`` as ``folder/name.json``, atomically (a reader never sees half a file)."""
    tmp = folder / f".{name}.json.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, folder / f"{name}.json")


def read_result(folder, name, wait_s=WAIT_S, poll_s=0.2):
    """The record of the run ``name``, once its file exists (at most ``wait_s`` seconds)."""
    path = folder / f"{name}.json"
    deadline = time.monotonic() + wait_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no result of the background run {name} after {wait_s:.0f} s ({path})")
        time.sleep(poll_s)
    return json.loads(path.read_text())


def timings(folder):
    """One line: when each run ended, in seconds from the session's first test ('' if none did)."""
    ended = [(p.stem, json.loads(p.read_text())["ended"]) for p in sorted(Path(folder).glob("*.json"))]
    return ", ".join(f"{name} {t:.0f} s" for name, t in sorted(ended, key=lambda x: x[1]))


class BackgroundRuns:
    """The runs ``wanted`` (names of :data:`FIXTURES`) under ``base``: started in threads when
    ``start`` (:func:`starts_runs`), their results read from ``base`` in every process."""

    def __init__(self, base, wanted, start=True):
        self.base = base
        self.wanted = set(wanted)
        self.pool = None
        if not start:
            return
        from tests import test_benchmark as bm
        from tests import test_slurm_local as sl
        from tests import test_workflow as wf

        self.pool = ThreadPoolExecutor(max_workers=len(FIXTURES), thread_name_prefix="workflow-run")
        self.started = time.monotonic()
        if "bench_run" in self.wanted:
            self._submit("bench_run", bm.bench_run, base / "bench")
        if "tiny_policy" in self.wanted:
            self._submit("tiny_policy", tiny_policy, base / "train")
        if "slurm_run" in self.wanted:
            cpus, skip = sl.cluster_state()
            if cpus is None:
                write_result(base, "slurm_run", {"ended": 0.0, "skip": skip})
            else:
                self._submit("slurm_run", sl.slurm_run, base / "slurm", cpus)
        if self.wanted & {"workflow_runs", "studio_runs", "robust_run"}:
            copies = {name: base / name for name in ("studio_runs", "robust_run") if name in self.wanted}
            base_runs = self._submit("workflow_runs", _base_then_copies, wf, base / "workflow", copies)
            if "studio_runs" in copies:
                self._submit("studio_runs", lambda: wf.studio_runs(base_runs.result(), copies["studio_runs"]))
            if "robust_run" in copies:
                self._submit("robust_run", lambda: wf.robust_run(base_runs.result(), copies["robust_run"]))

    def _submit(self, name, fn, *args):
        """Start ``fn(*args)`` as the run ``name``; its result or error goes to ``name.json``."""

        def timed():
            record = {}
            try:
                value = fn(*args)
                record = {"value": encode(value)}
                return value
            except BaseException:
                record = {"error": traceback.format_exc()}
                raise
            finally:
                record["ended"] = time.monotonic() - self.started
                write_result(self.base, name, record)

        return self.pool.submit(timed)

    def result(self, name):
        """The run ``name`` (waits for it). An error of the run is raised here, in the test; a run
        that did not start says why as a skip."""
        record = read_result(self.base, name)
        if "skip" in record:
            pytest.skip(record["skip"])
        if "error" in record:
            raise RuntimeError(f"the background run {name} failed:\n{record['error']}")
        return decode(record["value"])

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


#: conftest's tiny training in a fresh interpreter: the defaults with 60 tasks a scenario, seed 3.
TRAIN_SCRIPT = """
import json, sys
from sched.config import validate_config
from sched.learn.chain import train
from sched.learn.settings import Training
cfg = validate_config({}, "defaults").replace(scenario={"tasks": 60})
summary = train(cfg, Training.of(seed=3, **json.loads(sys.argv[2])), sys.argv[1], progress=False)
print(json.dumps(summary, default=str))
"""


def tiny_policy(base):
    """(the policy file, the training summary) of conftest.TINY_TRAIN, trained in a subprocess."""
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT, TINY_TRAIN

    base.mkdir(parents=True, exist_ok=True)
    out = base / "politique.pt"
    args = [sys.executable, "-c", TRAIN_SCRIPT, str(out), json.dumps(TINY_TRAIN)]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return out, json.loads(r.stdout.strip().splitlines()[-1])


def _base_then_copies(wf, base, copies):
    """The two runs, then the copies of their projects that the later runs build on."""
    runs = wf.make_runs(base)
    ignore = shutil.ignore_patterns("shadow", "incomplete")
    if runs.local_run.returncode == 0:
        for name, dest in copies.items():
            dest.mkdir(parents=True)
            shutil.copytree(runs.local, dest / "local", symlinks=True, ignore=ignore)
            if name == "studio_runs" and runs.cluster_rc == 0:
                shutil.copytree(runs.cluster, dest / "cluster", symlinks=True, ignore=ignore)
    return SimpleNamespace(**vars(runs), copies=copies)
