"""The test session's workflow runs, started in the background at the session's first test.

The Snakemake runs of the small config (tests/test_workflow.py, tests/test_slurm_local.py)
are subprocesses that take minutes each; the rest of the suite is one pytest process on one
core. Started together at the beginning, while that process runs the other tests (the tests
that read the runs are moved to the end of the session by conftest.py), they use the
machine's idle core instead of adding their minutes to the session (issue 45: the test
command within about 13 minutes on 2 cores).

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
"""

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

#: The fixtures of the runs started in the background (conftest.py's collection hook).
FIXTURES = ("bench_run", "tiny_policy", "workflow_runs", "studio_runs", "robust_run", "slurm_run")
#: The same, in the order they end in a session (measured: the benchmark, the training, the two runs,
#: the SLURM run, the robustness run and the studio runs that build on them): their readers run in
#: this order.
ENDS = ("bench_run", "tiny_policy", "workflow_runs", "slurm_run", "robust_run", "studio_runs")


class BackgroundRuns:
    """The runs ``wanted`` (names of :data:`FIXTURES`), started in threads under ``base``."""

    def __init__(self, base, wanted):
        from tests import test_benchmark as bm
        from tests import test_slurm_local as sl
        from tests import test_workflow as wf

        self.wanted = set(wanted)
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="workflow-run")
        self.futures = {}
        self.started = time.monotonic()
        self.ended = {}  # name -> seconds from the start at which it ended (the session's summary)
        if "bench_run" in self.wanted:
            self._submit("bench_run", bm.bench_run, base / "bench")
        if "tiny_policy" in self.wanted:
            self._submit("tiny_policy", tiny_policy, base / "train")
        if "slurm_run" in self.wanted:
            cpus, self.slurm_skip = sl.cluster_state()
            if cpus is not None:
                self._submit("slurm_run", sl.slurm_run, base / "slurm", cpus)
        if self.wanted & {"workflow_runs", "studio_runs", "robust_run"}:
            copies = {name: base / name for name in ("studio_runs", "robust_run") if name in self.wanted}
            base_runs = self._submit("workflow_runs", _base_then_copies, wf, base / "workflow", copies)
            if "studio_runs" in copies:
                self._submit("studio_runs", lambda: wf.studio_runs(base_runs.result(), copies["studio_runs"]))
            if "robust_run" in copies:
                self._submit("robust_run", lambda: wf.robust_run(base_runs.result(), copies["robust_run"]))

    def _submit(self, name, fn, *args):
        """Start ``fn(*args)`` as the run ``name``, noting when it ends."""

        def timed():
            try:
                return fn(*args)
            finally:
                self.ended[name] = time.monotonic() - self.started

        self.futures[name] = self.pool.submit(timed)
        return self.futures[name]

    def timings(self):
        """One line: when each run ended, in seconds from the session's first test."""
        return ", ".join(f"{name} {t:.0f} s" for name, t in sorted(self.ended.items(), key=lambda x: x[1]))

    def result(self, name):
        """The run ``name`` (waits for it); an error of the run is raised here, in the test."""
        return self.futures[name].result()

    def close(self):
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
