"""The Snakemake workflow on a small config, in temporary folders.

Two full runs start together (they are independent, and the machine waits on
imports more than it computes): one with Snakemake's local executor, as the
README's main command runs it, with `-j1` on one usable CPU (the process's CPU
affinity), and one through snakemake-executor-plugin-cluster-generic with a
local submit script, each job a background process, with `-j4` on every CPU
and a CPU-burning process beside it. Their manifests must be equal line for
line (issue 45: a result depends on the commit, the config and the inputs
only). The other checks are dry runs (`snakemake -n`) on the first one's results.
"""

import copy
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from sched.config import validate_config
from sched.evaluate.policies import default_policies
from sched.evaluate.seeds import range_text, shard_ranges
from sched.verdict.winner import WINNER_KEYS

from .conftest import ROOT

pytestmark = pytest.mark.slow

#: Few scenarios and tasks, three PPO iterations, two training seeds, two shards.
SMALL = {
    "scenario": {"tasks": 40, "calibration": "results/calibration.json"},
    "train": {
        "seeds": [1, 2],
        "iterations": 3,
        "num_envs": 4,
        "num_steps": 8,
        "num_minibatches": 2,
        "update_epochs": 1,
        "tasks": 40,
        "eval_every": 3,
        "validation_scenarios": 2,
        "checkpoint_every": 0,
        "hidden": 16,
        "teacher_scenarios": 2,
        "teacher_samples": 2,
        "teacher_chunk": 2,
        "teacher_horizon": 10,
        "rounds": 1,  # one round of expert iteration: the chain warm_start -> teach_round -> distill_round
        "round_scenarios": 1,
        "round_samples": 2,
        "round_chunk": 2,
        "round_horizon": 5,
    },
    "benchmark": {
        "scenarios": 8,
        "validation_scenarios": 4,
        "selection_scenarios": 6,  # validation seeds 1000004-1000009: after tuning's and checkpointing's
        "selection_offset": 4,
        "shards": 2,
        "atc_k_grid": [1.0, 2.0],
        "bootstrap_resamples": 200,
        "clairvoyant": {"scenarios": 2, "evaluations": 2000, "window": 10},
    },
    # plan's candidacy: two settings on the 6 selection seeds, the one picked on the 8 test seeds
    "plan": {
        "validation_scenarios": 6,
        "samples": 2,
        "horizon": 5,
        "futures": 20,
        "grid": [
            {"name": "atc-2x5", "rollout": "atc-tuned", "samples": 2, "horizon": 5},
            {"name": "own-3x5", "samples": 3},
        ],
    },
}
#: Jobs the cluster runs (every rule but the local ones: step_config and all).
CLUSTER_JOBS = {
    "calibrate": 1,
    "calibrate_frames": 1,
    "teach": 2,
    "warm_start": 2,
    "teach_round": 2,
    "distill_round": 2,
    "train": 2,
    "tune": 1,
    "benchmark": 2,
    "select": 1,
    "gather": 1,
    "plan_candidacy": 2,
    "benchmark_plan": 1,
    "clairvoyant": 1,
    "demo": 1,
    "report": 1,
}


def workspace(path, cfg=SMALL):
    """A project folder: the workflow, the example bench logs and a config."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", path / "Snakefile")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "workflow", path / "workflow", ignore=ignore)
    shutil.copytree(ROOT / "profiles", path / "profiles", ignore=ignore)
    (path / "resources").symlink_to(ROOT / "resources")
    (path / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def environment(*first):
    """Jobs import this checkout's package (and, for the cluster run, the probe)."""
    paths = [str(p) for p in (*first, ROOT)]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def snakemake_cmd(*args):
    return [sys.executable, "-m", "snakemake", "--nocolor", *map(str, args)]


def snakemake(cwd, *args):
    r = subprocess.run(snakemake_cmd(*args), cwd=cwd, env=environment(), capture_output=True, text=True)
    r.output = r.stdout + r.stderr
    return r


def planned_jobs(cwd, *args):
    """{rule: jobs} that `snakemake -n` plans ({} when there is nothing to do)."""
    r = snakemake(cwd, "-n", *args)
    assert r.returncode == 0, r.output[-3000:]
    if "Nothing to be done" in r.output:
        return {}
    m = re.search(r"Job stats:\s*\njob\s+count\s*\n[-\s]+\n(.*?)\ntotal\s+\d+", r.output, re.S)
    assert m, r.output[-3000:]
    return {name: int(n) for name, n in (line.split() for line in m.group(1).strip().splitlines())}


#: What each validation run of plan's candidacy writes (plan.run.json: a run record).
PLAN_RUN_FILES = ("per_scenario.csv", "plan.json", "plan.run.json")


def expected_outputs():
    cfg = validate_config(copy.deepcopy(SMALL))
    shards = [range_text(r) for r in shard_ranges(cfg)]
    policies = default_policies(cfg)
    out = [
        "results/calibration.json",
        "results/calibration.png",
        "results/teacher/labels-100000-100000.npz",
        "results/teacher/labels-100001-100001.npz",
        "results/benchmark/tuned.json",
        "results/benchmark/per_scenario.csv",
        "results/benchmark/resume.csv",
        "results/benchmark/winner.json",
        "results/benchmark/selection/per_scenario.csv",
        "results/benchmark/plan/per_scenario.csv",
        *(
            f"results/benchmark/plan/validation/{s}/{f}"
            for s in ("atc-2x5", "own-3x5")
            for f in PLAN_RUN_FILES
        ),
        "results/benchmark/clairvoyant.csv",
        "results/rapport.md",
        "results/manifest.sha256",
        "results/demo/demo.csv",
        "results/figures/demo_gantt.png",
        "results/figures/benchmark_mean_ci.png",
        "results/figures/benchmark_paired_vs_atc.png",
        "results/figures/benchmark_ecdf.png",
        "results/figures/learning_curves.png",
        "results/figures/learning_by_chain.png",
    ]
    for s in cfg["train"]["seeds"]:
        out += [
            f"results/train/seed-{s}/{f}"
            for f in ("politique.pt", "train_log.csv", "learning_curve.png", "warm_start.pt")
        ]
    out += [f"results/benchmark/shards/{s}/per_scenario.csv" for s in shards]
    out += [f"results/demo/schedule-{p}.csv" for p in policies]
    return out


# A stand-in for a cluster: the submit script starts each job script as its own
# background process and prints its process id as the job id. The probe, a
# sitecustomize module on the jobs' PYTHONPATH, records for every
# `python -m sched` process its working folder and every file it can see there.
SUBMIT = """\
#!/usr/bin/env bash
set -eu
n="$(date +%s%N)-$$"
cp "$1" "$PROBE_DIR/job-$n.sh"
PROBE_JOB="$n" nohup bash "$1" > "$PROBE_DIR/job-$n.out" 2>&1 < /dev/null &
echo "$!"
"""
PROBE = """\
import json, os, sys
argv = list(getattr(sys, "orig_argv", []))
if os.environ.get("PROBE_DIR") and "-m" in argv and argv[argv.index("-m") + 1:][:1] == ["sched"]:
    here = os.getcwd()
    seen = [os.path.relpath(os.path.join(d, n), here) for d, _, names in os.walk(here) for n in names]
    with open(os.path.join(os.environ["PROBE_DIR"], f"sched-{os.getpid()}.json"), "w") as fh:
        json.dump({"pid": os.getpid(), "cwd": here, "argv": argv,
                   "job": os.environ.get("PROBE_JOB"), "files": sorted(seen)}, fh)
"""


def cluster_run(cwd, submit, scratch, log, env):
    """`snakemake -j4` through the cluster executor (each job a background process), started."""
    cmd = snakemake_cmd(
        "-j4",
        "--executor",
        "cluster-generic",
        "--cluster-generic-submit-cmd",
        submit,
        "--shadow-prefix",
        scratch,
        "--seconds-between-status-checks",
        "1",
    )
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)


def on_one_cpu(cwd):
    """`snakemake -j1` with one usable CPU (the process's affinity, which every job inherits)."""
    one_cpu = min(os.sched_getaffinity(0))
    r = subprocess.run(
        ["taskset", "-c", str(one_cpu), *snakemake_cmd("-j1")],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
    )
    r.output = r.stdout + r.stderr
    return r


@contextmanager
def cpu_burner():
    """A CPU-burning process beside what runs inside: load must change no result. At the lowest
    priority: it takes a CPU whenever one is idle (the scheduler moves the jobs' threads around
    it), without slowing the rest of the test session, which runs beside it."""
    # (nice and taskset rather than a preexec_fn: these runs start from the session's threads)
    burner = subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        burner.kill()
        burner.wait()


def make_runs(base):
    """The two runs of the small config in the folder ``base`` (the session fixture
    ``workflow_runs`` of conftest.py, which tests/test_slurm_local.py compares its SLURM run
    with too; started in the background, tests/background_runs.py)."""
    base.mkdir(parents=True, exist_ok=True)
    # the cluster run, in the background
    cl = workspace(base / "cluster")
    probe = base / "probe"
    (probe / "out").mkdir(parents=True)
    (probe / "sitecustomize.py").write_text(PROBE)
    submit = probe / "submit.sh"
    submit.write_text(SUBMIT)
    submit.chmod(0o755)
    env = {**environment(probe), "PROBE_DIR": str(probe / "out")}
    cl_log = open(base / "cluster.log", "w")
    cl_proc = cluster_run(cl, submit, base / "scratch", cl_log, env)
    try:
        with cpu_burner():
            # the README's main command, on the small config, with -j1 on one usable CPU
            local = workspace(base / "local")
            lr = on_one_cpu(local)
    finally:
        cl_rc = cl_proc.wait(timeout=900)
        cl_log.close()
    return SimpleNamespace(
        local=local,
        local_run=lr,
        cluster=cl,
        cluster_rc=cl_rc,
        cluster_log=(base / "cluster.log").read_text(),
        probes=probe / "out",
        scratch=base / "scratch",
    )


@pytest.fixture(scope="module")
def runs(workflow_runs):
    return workflow_runs


@pytest.fixture(scope="module")
def built(runs):
    assert runs.local_run.returncode == 0, runs.local_run.output[-4000:]
    return runs.local


# ------------------------------------------------------------------ full run


def test_builds_every_output_and_one_log_per_job(built):
    missing = [p for p in expected_outputs() if not (built / p).is_file()]
    assert not missing
    assert all((built / p).stat().st_size > 0 for p in expected_outputs())
    winner = json.loads((built / "results/benchmark/winner.json").read_text())
    assert tuple(winner) == (*WINNER_KEYS[:-1], "plan", WINNER_KEYS[-1], "selection")
    assert winner["selection"]["on"] == "validation" and winner["selection"]["seeds"] == [1000004, 6]
    # plan's candidacy: both settings on the selection seeds, the pick run on every test seed
    cand = winner["plan"]["candidacy"]
    assert [r["setting"] for r in cand["settings"]] == ["atc-2x5", "own-3x5"]
    assert all(r["seeds"] == [1000004, 6] for r in cand["settings"]) and cand["picked"] in (
        "atc-2x5",
        "own-3x5",
    )
    assert winner["plan"]["setting"] == cand["picked"] and winner["plan"]["test"]["scenarios"] == 8
    per = pd.read_csv(built / "results/benchmark/per_scenario.csv")
    assert sorted(per.loc[per["policy"] == "plan", "scenario_seed"]) == list(range(2000000, 2000008))
    logs = sorted(
        p.relative_to(built / "results/logs").as_posix() for p in (built / "results/logs").rglob("*.log")
    )
    jobs = [
        "calibrate.log",
        "clairvoyant.log",
        "demo.log",
        "gather.log",
        "manifest.log",
        "report.log",
        "select.log",
        "tune.log",
        "plan/atc-2x5.log",
        "plan/own-3x5.log",
        "benchmark/plan.log",
        "teach/100000-100000.log",
        "teach/100001-100001.log",
        "train/seed-1.log",
        "train/seed-2.log",
    ]
    jobs += [f"benchmark/{s}.log" for s in ("2000000-2000003", "2000004-2000007")]
    assert set(jobs) <= set(logs)
    assert "wrote results/rapport.md" in (built / "results/logs/report.log").read_text()
    # each job's measured wall time and memory (Snakemake's benchmark directive)
    usage = (built / "results/logs/train/seed-1.usage.tsv").read_text().splitlines()
    assert usage[0].split("\t")[:3] == ["s", "h:m:s", "max_rss"] and len(usage) == 2


def test_the_two_runs_give_the_same_manifest_line_for_line(runs, built):
    """-j1 on one CPU (the local executor) and -j4 on every CPU beside a CPU burner (a cluster
    executor, one process per job): the same bytes for every result artefact."""
    assert runs.cluster_rc == 0, runs.cluster_log[-4000:]
    local = (built / "results/manifest.sha256").read_text().splitlines()
    cluster = (runs.cluster / "results/manifest.sha256").read_text().splitlines()
    assert len(local) > 40
    assert local == cluster
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "sched",
            "manifest",
            "compare",
            built / "results/manifest.sha256",
            runs.cluster / "results/manifest.sha256",
        ],
        capture_output=True,
        text=True,
        env=environment(),
    )
    assert r.returncode == 0 and r.stdout.startswith(f"identical: {len(local)} result artefacts"), r.stdout
    # the run records say how each ran: one CPU against every CPU
    one = json.loads((built / "results/logs/run.json").read_text())
    assert one["usable_cpus"] == 1 and one["determinism"]["pinned"] is True
    assert one["versions"]["torch"].startswith("2.13.0")


def test_the_manifest_lists_every_result_and_no_run_record(built):
    from sched import layout
    from sched.evidence.manifest import REPORT_CONFIG, REPORT_OUTPUTS

    listed = {}
    for line in (built / "results/manifest.sha256").read_text().splitlines():
        digest, path = line.split("  ", 1)
        listed[path] = digest
    every = {p.relative_to(built).as_posix() for p in (built / "results").rglob("*") if p.is_file()}
    records = {p for p in every if layout.is_run_record(p)}
    # the report's outputs and its config (read by the report alone), and the manifest itself
    report = {f"results/{p}" for p in (*REPORT_OUTPUTS, REPORT_CONFIG)} | {"results/manifest.sha256"}
    assert f"results/{REPORT_CONFIG}" in every and f"results/{REPORT_CONFIG}" not in listed
    assert "results/logs/run.json" in records and "results/train/seed-1/train_log.run.csv" in records
    assert "results/benchmark/plan/validation/atc-2x5/plan.run.json" in records  # plan's decision time
    assert set(listed) == every - records - report
    # sha256sum's format: each line checks its file (`sha256sum -c results/manifest.sha256`)
    r = subprocess.run(
        ["sha256sum", "--quiet", "-c", "results/manifest.sha256"], cwd=built, capture_output=True
    )
    assert r.returncode == 0, r.stdout[-2000:]
    # in DAG order: the calibration before the training, the training before the benchmark
    order = list(listed)
    assert order.index("results/calibration.json") < order.index("results/train/seed-1/warm_start.pt")
    assert order.index("results/train/seed-1/politique.pt") < order.index("results/benchmark/winner.json")
    # the report prints its digest
    digest = subprocess.run(
        ["sha256sum", "results/manifest.sha256"], cwd=built, capture_output=True, text=True
    )
    assert digest.stdout.split()[0] in (built / "results/rapport.md").read_text()


def test_second_run_has_nothing_to_do(built):
    assert planned_jobs(built) == {}


def test_each_job_reads_only_the_settings_of_its_step(built):
    def sections(step):
        return yaml.safe_load((built / f"results/config/{step}.yaml").read_text())

    # root: the project root, from results/config/ (relative paths are read from the file's folder)
    assert set(sections("calibrate")) == {"root", "calibration"} and sections("calibrate")["root"] == "../.."
    train = sections("train")
    assert set(train) == {"root", "scenario", "rules", "seeds", "train"}
    assert "seeds" not in train["train"] and train["train"]["iterations"] == 3
    assert "report" not in sections("verdict") and "train" not in sections("benchmark")
    # the main gather gates the winner with plan's candidacy: its rule and settings
    assert sections("verdict")["plan"]["choice_se"] == 0.5 and "plan" in sections("plan")
    assert "plan" not in sections("select") and "plan" not in sections("benchmark")
    assert set(sections("demo")["report"]) == {"figure_dpi", "gantt_hours"}
    report_train = sections("report")["train"]  # the seeds, and the teacher's settings (its policy)
    assert report_train["seeds"] == [1, 2] and report_train["teacher_samples"] == 2
    assert "iterations" not in report_train and "distill_epochs" not in report_train


def edited(workdir, change):
    """Context: config.yaml with ``change(cfg)`` applied, restored afterwards."""

    class Edit:
        def __enter__(self):
            self.path = workdir / "config.yaml"
            self.text = self.path.read_text()
            cfg = yaml.safe_load(self.text)
            change(cfg)
            self.path.write_text(yaml.safe_dump(cfg, sort_keys=False))

        def __exit__(self, *exc):
            self.path.write_text(self.text)

    return Edit()


def reorder(mapping):
    """The same settings, every mapping's keys in reverse order."""
    items = list(mapping.items())
    mapping.clear()
    for key, value in reversed(items):
        mapping[key] = value
        if isinstance(value, dict):
            reorder(value)


EVERYTHING = {
    "calibrate": 1,
    "calibrate_frames": 1,
    "teach": 2,
    "warm_start": 2,
    "teach_round": 2,
    "distill_round": 2,
    "train": 2,
    "tune": 1,
    "benchmark": 2,
    "select": 1,
    "gather": 1,
    "plan_candidacy": 2,
    "benchmark_plan": 1,
    "clairvoyant": 1,
    "demo": 1,
    "manifest": 1,
    "report": 1,
    "all": 1,
}


def unread_or_reordered(cfg):
    cfg.setdefault("rank", {}).update(winner="elsewhere/winner.json")  # read by rank() only
    reorder(cfg)


@pytest.mark.parametrize(
    "change, jobs",
    [
        # a training setting: training and what reads the policies, not calibration
        (
            lambda c: c["train"].update(iterations=4),
            {
                "step_config": 1,
                "train": 2,
                "benchmark": 2,
                "select": 1,
                "gather": 1,
                "plan_candidacy": 2,
                "benchmark_plan": 1,
                "demo": 1,
                "manifest": 1,
                "report": 1,
                "all": 1,
            },
        ),
        # one more training seed: that seed is trained, the others are not
        (
            lambda c: c["train"].update(seeds=[1, 2, 3]),
            {
                "step_config": 1,
                "warm_start": 1,
                "teach_round": 1,
                "distill_round": 1,
                "train": 1,
                "benchmark": 2,
                "select": 1,
                "gather": 1,
                "plan_candidacy": 2,
                "benchmark_plan": 1,
                "demo": 1,
                "manifest": 1,
                "report": 1,
                "all": 1,
            },
        ),
        # a report setting: the report only
        (
            lambda c: c.setdefault("report", {}).update(title="Another title"),
            {"step_config": 1, "report": 1, "all": 1},
        ),
        # the figures' resolution: the report and the demo's Gantt chart
        (
            lambda c: c.setdefault("report", {}).update(figure_dpi=80),
            {"step_config": 2, "demo": 1, "manifest": 1, "report": 1, "all": 1},
        ),
        # the bootstrap and the clairvoyant budget: the summary, that reference and the
        # report; no policy runs again
        (
            lambda c: c["benchmark"].update(
                bootstrap_resamples=300, clairvoyant={**c["benchmark"]["clairvoyant"], "evaluations": 3000}
            ),
            {
                "step_config": 4,
                "gather": 1,
                "clairvoyant": 1,
                "plan_candidacy": 2,  # its step config holds the bootstrap (benchmark_plan's pick)
                "benchmark_plan": 1,
                "manifest": 1,
                "report": 1,
                "all": 1,
            },
        ),
        # a calibration setting: everything
        (lambda c: c.setdefault("calibration", {}).update(min_records=29), {"step_config": 1, **EVERYTHING}),
        # a section no step reads, and the same settings in another order: nothing
        (unread_or_reordered, {}),
    ],
    ids=[
        "train",
        "train-seed",
        "report-title",
        "report-dpi",
        "statistics",
        "calibration",
        "unread-reordered",
    ],
)
def test_a_changed_setting_reruns_exactly_the_steps_that_read_it(built, change, jobs):
    with edited(built, change):
        assert planned_jobs(built) == jobs


def test_a_target_builds_only_what_it_needs(tmp_path):
    ws = workspace(tmp_path / "w")
    assert planned_jobs(ws, "results/benchmark/tuned.json") == {"step_config": 2, "calibrate": 1, "tune": 1}
    plan = planned_jobs(ws, "results/rapport.md")
    assert "all" not in plan and plan["report"] == 1 and plan["train"] == 2


@pytest.mark.parametrize(
    "change, message",
    [
        # the schema's message
        (
            {"scenario": {"load": -1}},
            r"-1 is less than or equal to the minimum of 0.*On instance\['scenario'\]\['load'\]",
        ),
        # the package's semantic checks
        (
            {"seeds": {"validation": {"start": 500000, "count": 1000}}},
            r"invalid config: config: seeds.train \[100000, 1000000\) overlaps seeds.validation",
        ),
    ],
    ids=["schema", "semantics"],
)
def test_an_invalid_config_stops_before_any_job(tmp_path, change, message):
    cfg = copy.deepcopy(SMALL)
    for section, values in change.items():
        cfg.setdefault(section, {}).update(values)
    ws = workspace(tmp_path / "w", cfg)
    r = snakemake(ws, "-j1")
    assert r.returncode != 0
    assert re.search(message, r.output, re.S), r.output[-3000:]
    assert not (ws / "results").exists()


def test_html_report_has_the_figures_and_captions(built):
    r = snakemake(built, "--report", "results/report.html")
    assert r.returncode == 0, r.output[-3000:]
    html = (built / "results/report.html").read_text(errors="replace")
    for name in (
        "calibration.png",
        "learning_curve.png",
        "benchmark_mean_ci.png",
        "demo_gantt.png",
        "rapport.md",
        "resume.csv",
    ):
        assert name in html
    assert "Calibration of the task durations" in html  # a caption
    assert "one PPO dispatching policy per training seed" in html  # the description


def rule_docstrings():
    """{rule: docstring} from `snakemake --list-rules` (a docstring may span lines)."""
    listed = snakemake(ROOT, "--list-rules")
    assert listed.returncode == 0, listed.output[-3000:]
    blocks = re.findall(r"^(\w+) \((.*?)\)$(?=\n\w|\n*\Z)", listed.stdout, re.M | re.S)
    return {name: " ".join(doc.split()) for name, doc in blocks}


def test_each_rule_docstring_names_the_code_it_runs():
    # one hop from a rule to its code: the command module, and the library function it calls
    docs = rule_docstrings()
    assert len(docs) >= 16 and "robust_train" in docs, docs
    for rule, doc in docs.items():
        if rule == "all":
            continue
        if rule in ("step_config", "robust_config"):
            assert "Plan.step_config_text (sched/pipeline/plan.py)" in doc, doc
            continue
        if rule in ("farm_config", "farm_train_config"):
            assert f"Plan.{rule}_text (sched/pipeline/plan.py)" in doc, doc
            continue
        m = re.search(r"Runs `sched ([\w-]+)` \(sched/commands/(\w+)\.py -> (.+?)\)\.?$", doc)
        assert m, (rule, doc)
        command, module, functions = m.groups()
        command = command.replace("-", "_")  # calibrate-workload: module calibrate_workload
        # robust_train_warm: robust_train for the settings whose training has a teacher;
        # benchmark_plan: the benchmark of policy plan on a subset; select: the benchmark of the
        # policies that may win on the selection seeds
        # studio_*: the studio setting's replay of its held-out days and its benchmark
        name = (
            rule.removeprefix("robust_").removeprefix("studio_").removesuffix("_warm").removesuffix("_plan")
        )
        # warm_start, distill_round: `sched distill`; teach_round: `sched teach --round`
        aliases = {
            "select": "benchmark",
            "warm_start": "distill",
            "distill_round": "distill",
            "teach_round": "teach",
            "plan_candidacy": "benchmark",
            "validation_replay": "replay",  # studio_validation_replay: `sched replay --validation`
            "trace_workload": "calibrate_workload",  # the trace-like history written, then fitted
            "farm_benchmark": "farm_bench",  # a chunked farm setting's benchmark: `sched farm-bench`
            "farm_benchmark_learned": "farm_bench",  # ... of a setting that trains a farm policy
            "farm_train_taught": "farm_train",  # ... of a setting whose PPO starts from farm_teach
            "workload_frames": "calibrate_frames",  # the history's frames fit: `--history`
            "trace_frames": "calibrate_frames",  # the trace-like history with frames written, then fitted
        }
        assert aliases.get(name, name) == command == module, (rule, doc)
        source = (ROOT / "sched/commands" / f"{module}.py").read_text()
        for path in functions.split(", "):
            where, _, name = path.rpartition(".")
            assert hasattr(importlib.import_module(where), name), (rule, path)
            assert name in source, (rule, path)  # the command calls it


def test_lint_leaves_only_the_warning_the_docs_explain():
    r = snakemake(ROOT, "--lint")
    # Snakemake exits with 1 when it printed lints (and on an error: hence the checks below)
    assert r.returncode == 1, r.output[-3000:]
    assert "Traceback" not in r.output and "Error" not in r.output, r.output[-3000:]
    lints = set(re.findall(r"^    \* (.+?):?$", r.output, re.M))
    assert lints == {"Specify a conda environment or container for each rule."}, r.output
    # that one warning for every rule that runs a job (all of them but `all`), no other
    assert not re.search(r"^Lints for snakefile", r.output, re.M), r.output
    linted = re.findall(r"^Lints for rule (\w+) ", r.output, re.M)
    listed = snakemake(ROOT, "--list-rules")
    assert listed.returncode == 0, listed.output[-3000:]
    rules = set(re.findall(r"^(\w+)(?: \(|$)", listed.stdout, re.M)) - {"all"}
    assert len(rules) >= 15 and sorted(linted) == sorted(rules), r.output
    assert "Specify a conda environment" in " ".join((ROOT / "docs" / "workflow.md").read_text().split())


def test_slurm_profile_gives_each_rule_its_threads_and_resources(tmp_path):
    from .test_slurm_local import PLUGIN_MISSING

    pytest.importorskip("snakemake_executor_plugin_slurm", reason=PLUGIN_MISSING)
    ws = workspace(tmp_path / "w")
    r = snakemake(ws, "--profile", "profiles/slurm", "-n", "--cores", "16")
    assert r.returncode == 0, r.output[-3000:]
    train = r.output[r.output.index("rule train:") :]
    train = train[: train.index("Shell command")]
    assert "mem_mb=4000" in train and "runtime=120" in train
    assert re.search(r"train --seed \d+ .*--threads 1 ", r.output)  # config train.threads
    assert re.search(r"clairvoyant .*--threads 8 ", r.output)


def test_cores_above_the_cpus_reserve_more_but_give_each_job_its_own_threads(tmp_path):
    """With -j N above the machine's CPUs (the README's -j4 on 2 cores) a one-thread job reserves
    N // CPUs cores, so that no more jobs run than CPUs, and is still given --threads 1: given
    its reservation, two such jobs ran four threads on two CPUs. The plan benchmark, one CPU (two
    such jobs side by side pack the run's tail better than one on two threads), gets --threads 1 too."""
    from sched.threads import usable_cpus

    ws = workspace(tmp_path / "w")
    r = snakemake(ws, "-n", "-p", "--cores", 2 * usable_cpus())
    assert r.returncode == 0, r.output[-3000:]
    tune = r.output[r.output.index("rule tune:") :]
    tune = tune[: tune.index("Shell command")]
    assert f"threads: {2 * 1}" in tune  # the reservation
    assert re.search(r"tune --out \S+ --threads 1 ", r.output)
    assert re.search(r"benchmark --policies \S*plan\S* .*--threads 1 ", r.output)


# ------------------------------------------------------------------ cluster run


def test_cluster_run_builds_everything_one_process_per_job(runs):
    assert runs.cluster_rc == 0, runs.cluster_log[-4000:]
    assert all((runs.cluster / p).is_file() for p in expected_outputs())
    assert planned_jobs(runs.cluster) == {}
    scripts = sorted(runs.probes.glob("job-*.sh"))
    props = [json.loads(re.search(r"^# properties = (.*)$", s.read_text(), re.M).group(1)) for s in scripts]
    submitted = {}
    for p in props:
        submitted[p["rule"]] = submitted.get(p["rule"], 0) + 1
    assert submitted == CLUSTER_JOBS  # the local rules (step_config, all) are not submitted


def test_each_cluster_job_sees_only_its_declared_files(runs):
    assert runs.cluster_rc == 0, runs.cluster_log[-4000:]
    jobs = {
        s.name[4:-3]: json.loads(re.search(r"^# properties = (.*)$", s.read_text(), re.M).group(1))
        for s in runs.probes.glob("job-*.sh")
    }
    probes = [json.loads(p.read_text()) for p in runs.probes.glob("sched-*.json")]
    # the local rules' commands run in Snakemake's own folder: the manifest's alone (it reads results/)
    local = [p for p in probes if p["job"] is None]
    assert [p["argv"][p["argv"].index("sched") + 1 : p["argv"].index("sched") + 3] for p in local] == [
        ["manifest", "write"]
    ]
    probes = [p for p in probes if p["job"] is not None]
    assert sorted(p["job"] for p in probes) == sorted(jobs)  # one sched process per job
    assert len({p["pid"] for p in probes}) == len(probes)
    for p in probes:
        job = jobs[p["job"]]
        # the command runs in its own shadow folder, not in the project folder...
        assert Path(p["cwd"]).resolve().is_relative_to(runs.scratch.resolve()), p["cwd"]
        # ...where the only files are its declared inputs (and its log, opened by the shell)
        assert set(p["files"]) == set(job["input"]) | set(job["log"]), job["rule"]


#: Two robustness settings: one benchmarks the main policies, one retrains.
ROBUST_SETTINGS = {
    "settings": [
        {"name": "load-0.70", "load": 0.7},
        {
            "name": "machines-2",
            "machines": 2,
            "tasks": 80,  # scaled with the GPUs: the main setting's hours
            "train": {"atc_k": "tuned", "teacher_scenarios": 1, "iterations": 2},
        },
    ]
}


def robust_run(runs, dest):
    """The local project's copy ``dest/local`` (tests/background_runs.py) with ROBUST_SETTINGS
    added, its planned jobs, then built with -j4: (folder, config, planned jobs, the run)."""
    assert runs.local_run.returncode == 0, runs.local_run.output[-4000:]
    ws = dest / "local"
    cfg = yaml.safe_load((ws / "config.yaml").read_text())
    cfg["robustness"] = copy.deepcopy(ROBUST_SETTINGS)
    (ws / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    plan = planned_jobs(ws)
    return SimpleNamespace(ws=ws, cfg=cfg, plan=plan, run=snakemake(ws, "-j4"))


@pytest.fixture(scope="module")
def robust(robust_run):
    return robust_run


def test_robustness_settings_are_benchmarked_and_reported(robust):
    # a copy of the built project (outputs, Snakemake's records), with the settings added:
    # only their jobs and the report run
    ws, cfg, plan, r = robust.ws, robust.cfg, robust.plan, robust.run
    assert plan == {
        "robust_config": 8,  # tune, select, gather per setting; teach, train for machines-2
        "step_config": 1,
        "robust_tune": 2,
        "robust_teach": 1,
        "robust_train_warm": 2,
        "robust_select": 2,  # each setting's winner is chosen on its own selection seeds
        "robust_benchmark": 2,
        "manifest": 1,
        "report": 1,
        "all": 1,
    }
    assert r.returncode == 0, r.output[-4000:]
    # every job but robust_config measured its usage beside its log
    logs = [p for p in (ws / "results/logs/robustness").glob("*/*.log") if not p.name.startswith("config-")]
    assert len(logs) == 9  # tune, select and benchmark per setting, one teach, train per seed
    for log in logs:
        usage = log.with_suffix(".usage.tsv").read_text().splitlines()
        assert usage[0].split("\t")[:3] == ["s", "h:m:s", "max_rss"] and len(usage) == 2, log
    for name in ("load-0.70", "machines-2"):
        d = ws / "results/robustness" / name
        resume = pd.read_csv(d / "resume.csv")
        assert set(resume["policy"]) >= {"atc", "atc-tuned", "wmdd", "ppo-1", "ppo-2"}
        # the warm starts where the setting's training had a teacher
        warm = {"ppo-1-warm", "ppo-2-warm"} if name == "machines-2" else set()
        assert set(resume["policy"]) & {"ppo-1-warm", "ppo-2-warm"} == warm
        assert (d / "winner.json").exists() and (d / "tuned.json").exists()
        # chosen on the setting's own selection (validation) scenarios, confirmed on test
        sel = json.loads((d / "winner.json").read_text())["selection"]
        assert sel["on"] == "validation" and (d / "selection/per_scenario.csv").exists()
    # each verdict records the setting it holds for (rank(policy="auto") matches calls to it)
    assert json.loads((ws / "results/robustness/machines-2/winner.json").read_text())["setting"] == {
        "machines": 2,
        "speeds": None,
        "load": 0.85,
    }
    assert set(pd.read_csv(ws / "results/robustness/machines-2/per_scenario.csv")["tasks"]) == {80}
    # the setting's scenarios: at load 0.7 tasks wait less than at the main load
    per_main = pd.read_csv(ws / "results/benchmark/per_scenario.csv")
    per_low = pd.read_csv(ws / "results/robustness/load-0.70/per_scenario.csv")
    assert per_low["mean_flow_time_s"].mean() < per_main["mean_flow_time_s"].mean()
    # the retrained policies started from the setting's own tuned k
    import torch

    tuned = json.loads((ws / "results/robustness/machines-2/tuned.json").read_text())
    meta = torch.load(ws / "results/robustness/machines-2/train/seed-1/politique.pt", weights_only=True)[
        "meta"
    ]
    assert meta["atc_k"] == tuned["atc_k"]
    rapport = (ws / "results/rapport.md").read_text()
    assert "## Other settings" in rapport
    for name in ("load-0.70", "machines-2"):
        row = next(line for line in rapport.splitlines() if line.startswith(f"| {name}:"))
        resume = pd.read_csv(ws / "results/robustness" / name / "resume.csv").set_index("policy")
        assert f"ppo-1 {resume.loc['ppo-1', 'diff_vs_best_heuristic_pct']:+.1f} %" in row
    # changing one setting reruns that setting and the report, nothing else
    cfg["robustness"]["settings"][0]["load"] = 0.75
    (ws / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert planned_jobs(ws) == {
        "robust_config": 3,  # its tune, select and gather configs
        "step_config": 1,
        "robust_tune": 1,
        "robust_select": 1,
        "robust_benchmark": 1,
        "manifest": 1,
        "report": 1,
        "all": 1,
    }


#: The tiny config's other settings: one robustness setting and the studio (the example history's
#: fit, its validation and held-out days), each as small as it goes.
SETTINGS_AND_STUDIO = {
    "robustness": {"settings": [{"name": "load-0.70", "load": 0.7}]},
    "workload": {"history": ["resources/history/example_history.csv"]},
    "studio": {
        "selection_scenarios": 4,
        "fidelity_streams": 2,
        "fidelity_scenarios": 4,
        "train": {
            "atc_k": "tuned",
            "teacher_scenarios": 0,
            "prior_rule": "wmdd",
            "iterations": 2,
            "validation_scenarios": 2,
        },
    },
}


#: plan's candidacy under the robustness settings and the studio (config plan.elsewhere), in every run
PLAN_ELSEWHERE = {"profile": "default", "grid": ["atc-2x5"]}


def studio_runs(runs, dest):
    """The two runs' projects copied to ``dest`` (tests/background_runs.py), with a robustness
    setting and the studio added: the local one built on with -j1 on one CPU, the cluster one
    with its executor, -j4 and a CPU burner beside it."""
    assert runs.local_run.returncode == 0, runs.local_run.output[-4000:]
    assert runs.cluster_rc == 0, runs.cluster_log[-4000:]
    local, cluster = dest / "local", dest / "cluster"
    for ws in (local, cluster):
        cfg = yaml.safe_load((ws / "config.yaml").read_text())
        cfg.update(copy.deepcopy(SETTINGS_AND_STUDIO))
        cfg["plan"] = {**cfg["plan"], "elsewhere": dict(PLAN_ELSEWHERE)}
        (ws / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    submit = runs.probes.parent / "submit.sh"
    env = {**environment(), "PROBE_DIR": str(dest)}
    log = open(dest / "cluster.log", "w")
    cl = cluster_run(cluster, submit, dest / "scratch", log, env)
    try:
        with cpu_burner():
            lr = on_one_cpu(local)
    finally:
        rc = cl.wait(timeout=900)
        log.close()
    log = dest / "cluster.log"
    return SimpleNamespace(local=local, cluster=cluster, local_run=lr, cluster_rc=rc, log=log)


@pytest.fixture(scope="module")
def studio(studio_runs):
    return studio_runs


def test_a_robustness_setting_and_the_studio_give_the_same_manifest_on_both_runs(studio):
    """The two runs' projects, with a robustness setting and the studio added: the local one built
    on with -j1 on one CPU, the cluster one with its executor, -j4 and a CPU burner beside it;
    every result artefact of both, the setting's and the studio's included, is the same."""
    local, cluster, lr, rc = studio.local, studio.cluster, studio.local_run, studio.cluster_rc
    assert lr.returncode == 0, lr.output[-4000:]
    assert rc == 0, studio.log.read_text()[-4000:]
    a = (local / "results/manifest.sha256").read_text().splitlines()
    b = (cluster / "results/manifest.sha256").read_text().splitlines()
    paths = [line.split("  ", 1)[1] for line in a]
    # the setting's and the studio's results are listed: trained, chosen, replayed on real days
    for want in (
        "results/robustness/load-0.70/winner.json",
        "results/workload.json",
        "results/robustness/studio/train/seed-1/politique.pt",
        "results/robustness/studio/replay/per_scenario.csv",
        "results/robustness/studio/winner.json",
        # plan's candidacy under each (config plan.elsewhere), and plan on the picked setting
        "results/robustness/load-0.70/plan/validation/atc-2x5/per_scenario.csv",
        "results/robustness/load-0.70/plan/per_scenario.csv",
        "results/robustness/studio/plan/validation/atc-2x5/plan.json",
        "results/robustness/studio/plan/per_scenario.csv",
    ):
        assert want in paths, want
    assert a == b


def test_plans_candidacy_runs_under_each_setting_and_the_studios_days(studio):
    """plan.elsewhere (issue 46): under the robustness setting and the studio, plan runs on the
    setting's own winner on its validation seeds, on its test seeds, and (the studio) on the
    validation and held-out days; each winner.json records the candidacy as the main one does."""
    ws = studio.local
    assert studio.local_run.returncode == 0, studio.local_run.output[-4000:]
    for name, seeds in (("load-0.70", 6), ("studio", 4)):  # the studio has 4 selection seeds, fewer than 6
        root = ws / "results/robustness" / name
        winner = json.loads((root / "winner.json").read_text())
        rec = winner["plan"]
        base = rec["base"]
        assert rec["candidacy"]["picked"] == "atc-2x5" and rec["setting"] == "atc-2x5"
        assert rec["validation"]["seeds"][1] == seeds and rec["test"]["scenarios"] == 8
        assert winner["policy"] == ("plan" if rec["chosen"] else base)
        per = pd.read_csv(root / "per_scenario.csv")
        assert (per["policy"] == "plan").sum() == 8  # joined from the planners' table
        run = json.loads((root / "plan/validation/atc-2x5/plan.json").read_text())
        sel = pd.read_csv(root / "selection/per_scenario.csv")
        assert run["base"] == base and base in set(sel["policy"])
    studio_winner = json.loads((ws / "results/robustness/studio/winner.json").read_text())
    days = studio_winner["plan"]["validation_days"]
    assert days["days"] == studio_winner["selection"]["days"]["days"] and len(days["ci95_pct"]) == 2
    assert "validation days" in studio_winner["reason"]
    for period in ("replay-validation", "replay"):  # plan replayed on both periods, a row a day
        per = pd.read_csv(ws / "results/robustness/studio" / period / "per_scenario.csv")
        assert (per["policy"] == "plan").sum() == per["scenario_seed"].nunique() > 0
    load = json.loads((ws / "results/robustness/load-0.70/winner.json").read_text())
    assert load["plan"]["validation_days"] is None  # no days there
