"""The small config through the SLURM profile, on a real (one-node) SLURM cluster.

tests/test_workflow.py's SMALL config through `--profile profiles/slurm`
(snakemake-executor-plugin-slurm: one sbatch job per rule instance), in its own temporary
project folder, must write the same results/manifest.sha256, line for line, as that
module's local run of the same config (-j1 on one usable CPU; conftest.py's
``workflow_runs``).

Skipped unless a SLURM cluster answers here: the test installs and starts nothing.
`tools/slurm/start-local-cluster.sh` (root, Debian) starts one on localhost from
Debian's packages (docs/slurm-local.md).

The profile runs as it is, with three settings on the command line that a site without
an accounting database, or with small nodes, needs:
  --slurm-status-command squeue   `sacct` is installed, so the plugin polls it, but it
                                  answers "Slurm accounting storage is disabled" and the
                                  run waits for ever; squeue sees finished jobs for
                                  MinJobAge (600 s in the script's slurm.conf);
  --max-threads N                 N = the node's CPUs, at most 2:
                                  a rule asking more CPUs than the node has
                                  (clairvoyant: 8) is refused by sbatch (it would
                                  pend for ever without EnforcePartLimits=ALL);
  --slurm-init-seconds-before-status-checks 5   the first status check 5 s after a
                                  submission rather than 40 (time only).
"""

import importlib.util
import re
import shutil
import subprocess
from collections import Counter

import pytest

from .conftest import ROOT
from .test_workflow import CLUSTER_JOBS, SMALL, environment, snakemake_cmd, workspace

pytestmark = pytest.mark.slow

START = "tools/slurm/start-local-cluster.sh"
RUN_TIMEOUT = 1800  # seconds, for each run (about 2-4 minutes here)
READY = ("idle", "mixed", "allocated", "completing")
#: Why the SLURM profile cannot run without its executor plugin (the extra `slurm`, not in `dev`).
PLUGIN_MISSING = (
    "snakemake-executor-plugin-slurm is not installed: pip install -c requirements.lock -e '.[slurm]' "
    "(.ci/run installs it where its one-node cluster starts; pyproject.toml says why it is not in dev)"
)


def _sinfo(*args):
    return subprocess.run(["sinfo", "--noheader", *args], capture_output=True, text=True, timeout=30)


def cluster_state():
    """(the CPUs of the largest ready node, None) or (None, why no cluster answers here)."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return None, PLUGIN_MISSING
    missing = [c for c in ("sbatch", "sinfo", "squeue", "scontrol") if shutil.which(c) is None]
    if missing:
        return None, (
            f"no SLURM client here ({', '.join(missing)} not on PATH); "
            f"`{START}` (as root, on Debian) installs and starts a one-node cluster on localhost"
        )
    r = _sinfo("--Node", "--format=%T %c %N")
    if r.returncode != 0:
        return None, (
            f"SLURM is installed but no controller answers (sinfo: {r.stderr.strip()[:200]}); "
            f"start the local cluster with `{START}` (as root)"
        )
    nodes = [line.split() for line in r.stdout.splitlines() if line.strip()]
    ready = [int(cpus) for state, cpus, _ in nodes if state in READY]
    if not ready:
        states = ", ".join(f"{name} {state}" for state, _, name in nodes) or "no nodes"
        return None, f"no SLURM node is ready ({states}); (re)start the local cluster with `{START}` (root)"
    return max(ready), None


def slurm_run(base, cpus):
    """The small config through the SLURM profile in the folder ``base``, on a node of ``cpus``
    CPUs (started in the background at the session's start: tests/background_runs.py)."""
    base.mkdir(parents=True, exist_ok=True)
    slurm_ws = workspace(base / "slurm", SMALL)
    slurm_cmd = snakemake_cmd(
        "--profile",
        "profiles/slurm",
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "5",
        "--max-threads",
        min(cpus, 2),
        "--shadow-prefix",
        base / "scratch",
        "--slurm-keep-successful-logs",
    )
    with open(base / "slurm.log", "w") as log:
        proc = subprocess.Popen(
            slurm_cmd, cwd=slurm_ws, env=environment(), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            rc = proc.wait(timeout=RUN_TIMEOUT)
        finally:
            if proc.poll() is None:  # a timeout: end the run (Snakemake cancels its SLURM jobs)
                proc.terminate()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
    return {"dir": slurm_ws, "rc": rc, "log": (base / "slurm.log").read_text()}


@pytest.fixture(scope="module")
def runs(slurm_run, workflow_runs):
    """The SLURM run (conftest.py's ``slurm_run``: skipped, saying why, where no cluster answers),
    and the local one it is compared with: tests/test_workflow.py's run of the same config with
    -j1 on one usable CPU (conftest.py's ``workflow_runs``)."""
    local = workflow_runs
    return {
        "slurm": slurm_run,
        "local": {"dir": local.local, "rc": local.local_run.returncode, "log": local.local_run.output},
    }


def manifest(run):
    assert run["rc"] == 0, run["log"][-4000:]
    return (run["dir"] / "results/manifest.sha256").read_text().splitlines()


def test_slurm_run_submits_every_cluster_rule_with_sbatch(runs):
    assert runs["slurm"]["rc"] == 0, runs["slurm"]["log"][-4000:]
    # "Job 3 has been submitted with SLURM jobid 17 (log: .../slurm_logs/rule_train/seed_1/17.log)."
    submitted = Counter(
        re.findall(r"submitted with SLURM jobid \d+ \(log: \S*/rule_(\w+)/", runs["slurm"]["log"])
    )
    assert set(submitted) == set(CLUSTER_JOBS), submitted  # the local rules run in Snakemake's process
    assert sum(submitted.values()) >= sum(CLUSTER_JOBS.values())


def test_slurm_and_local_runs_write_the_same_manifest(runs):
    slurm, local = manifest(runs["slurm"]), manifest(runs["local"])
    assert len(local) > 20
    if slurm != local:
        a = dict(reversed(line.split(maxsplit=1)) for line in slurm)
        b = dict(reversed(line.split(maxsplit=1)) for line in local)
        differ = sorted(p for p in a.keys() | b.keys() if a.get(p) != b.get(p))
        pytest.fail(
            f"{len(differ)} of {len(b)} artefacts differ between the SLURM and the local run: {differ}"
        )
    assert slurm == local


def test_the_start_script_is_part_of_the_project():
    script = ROOT / START
    assert script.is_file() and script.stat().st_mode & 0o111
    assert "--stop" in script.read_text()
    assert START in (ROOT / "docs/slurm-local.md").read_text()
