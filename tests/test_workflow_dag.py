"""The workflow's plan (dry runs, `snakemake -n -p`, nothing executed): the warm starts
benchmarked as ppo-<S>-warm, and a robustness setting that trains PPO alone."""

import copy
import re

import pytest
import yaml

from sched.config import validate_config

from .conftest import ROOT
from .test_workflow import SMALL, snakemake, workspace

#: One setting benchmarks the main policies, one retrains with a teacher, one without.
SETTINGS = [
    {"name": "load-0.70", "load": 0.7},
    {"name": "machines-2", "machines": 2, "train": {"teacher_scenarios": 1, "iterations": 2}},
    {"name": "ppo-only", "train": {"teacher_scenarios": 0}},
    {
        "name": "heavy-tails",
        "workload": "results/trace/workload.json",
        "workload_model": {"class_durations": True, "heavy_tails": True},
        "workload_scale": 1.5,
    },
]


def plan(tmp_path, cfg):
    """[(rule, {field: text})] of every job `snakemake -n -p` plans from scratch."""
    r = snakemake(workspace(tmp_path / "w", cfg), "-n", "-p")
    assert r.returncode == 0, r.output[-3000:]
    jobs = []
    for rule, body in re.findall(r"^rule (\w+):\n(.*?)(?=^\[|\Z)", r.output, re.M | re.S):
        fields = dict(re.findall(r"^\s*(input|output|wildcards|Shell command): (.*)$", body, re.M))
        jobs.append((rule, fields))
    assert jobs, r.output[-3000:]
    return jobs


def jobs_of(jobs, rule, **wildcards):
    want = [f"{k}={v}" for k, v in wildcards.items()]
    return [f for r, f in jobs if r == rule and all(w in f.get("wildcards", "") for w in want)]


def policies_arg(command):
    return re.search(r"--policies (\S+)", command).group(1).split(",")


def policy_files_arg(command):
    return dict(re.findall(r"--policy-file (\S+?)=(\S+)", command))


@pytest.fixture(scope="module")
def with_teacher(tmp_path_factory):
    cfg = copy.deepcopy(SMALL)
    cfg["robustness"] = {"settings": copy.deepcopy(SETTINGS)}
    return plan(tmp_path_factory.mktemp("dag"), cfg)


def test_training_with_a_teacher_chains_warm_start_rounds_then_ppo(with_teacher):
    """The warm start is distilled from the teacher's shards, round 1 labels the warm start's
    states and distils from it, and PPO starts from round 1 (SMALL: one round)."""
    for s in (1, 2):
        d = f"results/train/seed-{s}"
        (warm,) = jobs_of(with_teacher, "warm_start", seed=s)
        assert warm["output"] == f"{d}/warm_start.pt" and " distill --labels " in warm["Shell command"]
        assert "results/teacher/labels-100000-100000.npz" in warm["input"]
        (teach,) = jobs_of(with_teacher, "teach_round", seed=s, round=1)
        assert f"{d}/warm_start.pt" in teach["input"].split(", ")
        assert teach["output"] == f"results/teacher/seed-{s}/round-1.npz"
        assert "teach --round 1 --policy " in teach["Shell command"]
        (dist,) = jobs_of(with_teacher, "distill_round", seed=s, round=1)
        assert {f"{d}/warm_start.pt", f"results/teacher/seed-{s}/round-1.npz"} <= set(
            dist["input"].split(", ")
        )
        assert dist["output"] == f"{d}/round-1.pt" and f"--start {d}/warm_start.pt" in dist["Shell command"]
        (train,) = jobs_of(with_teacher, "train", seed=s)
        assert f"{d}/round-1.pt" in train["input"].split(", ")
        assert (
            f"--init {d}/round-1.pt" in train["Shell command"] and "--teacher " not in train["Shell command"]
        )
        assert f"{d}/warm_start.pt" not in train["output"]


def test_the_benchmark_runs_each_warm_start_next_to_its_policy(with_teacher):
    heuristics = ["fifo", "spt", "edd", "wspt", "atc", "wmdd", "atc-tuned"]
    learned = ["ppo-1", "ppo-1-warm", "ppo-1-r1", "ppo-2", "ppo-2-warm", "ppo-2-r1"]
    files = {
        "ppo-1": "results/train/seed-1/politique.pt",
        "ppo-1-warm": "results/train/seed-1/warm_start.pt",
        "ppo-1-r1": "results/train/seed-1/round-1.pt",
        "ppo-2": "results/train/seed-2/politique.pt",
        "ppo-2-warm": "results/train/seed-2/warm_start.pt",
        "ppo-2-r1": "results/train/seed-2/round-1.pt",
    }
    shards = jobs_of(with_teacher, "benchmark")
    assert len(shards) == 2
    for job in shards + jobs_of(with_teacher, "gather"):
        command = job["Shell command"]
        assert policy_files_arg(command) == files
        assert set(files.values()) <= set(job["input"].split(", "))
    for job in shards:
        assert policies_arg(job["Shell command"]) == heuristics + learned
    # the demonstration runs the final policies only
    (demo,) = jobs_of(with_teacher, "demo")
    assert policies_arg(demo["Shell command"]) == heuristics + ["ppo-1", "ppo-2"]
    assert "warm" not in demo["Shell command"] and "warm_start" not in demo["input"]


def test_a_setting_that_retrains_with_a_teacher_benchmarks_its_warm_starts(with_teacher):
    root = "results/robustness/machines-2"
    assert len(jobs_of(with_teacher, "robust_teach", setting="machines-2")) == 1
    trains = jobs_of(with_teacher, "robust_train_warm", setting="machines-2")
    assert len(trains) == 2 and not jobs_of(with_teacher, "robust_train", setting="machines-2")
    for job in trains:
        seed = re.search(r"seed=(\d+)", job["wildcards"]).group(1)
        assert f"{root}/train/seed-{seed}/warm_start.pt" in job["output"].split(", ")
    (bench,) = jobs_of(with_teacher, "robust_benchmark", setting="machines-2")
    assert policy_files_arg(bench["Shell command"])["ppo-2-warm"] == f"{root}/train/seed-2/warm_start.pt"
    assert policies_arg(bench["Shell command"])[-4:] == ["ppo-1", "ppo-1-warm", "ppo-2", "ppo-2-warm"]
    # a setting that does not retrain benchmarks the main final policies, no warm start
    (low,) = jobs_of(with_teacher, "robust_benchmark", setting="load-0.70")
    assert policy_files_arg(low["Shell command"]) == {
        "ppo-1": "results/train/seed-1/politique.pt",
        "ppo-2": "results/train/seed-2/politique.pt",
    }


def test_the_ppo_only_setting_trains_without_a_teacher(with_teacher):
    root = "results/robustness/ppo-only"
    assert not jobs_of(with_teacher, "robust_teach", setting="ppo-only")
    assert not jobs_of(with_teacher, "robust_train_warm", setting="ppo-only")
    trains = jobs_of(with_teacher, "robust_train", setting="ppo-only")
    assert len(trains) == 2
    for job in trains:
        seed = re.search(r"seed=(\d+)", job["wildcards"]).group(1)
        assert job["output"].split(", ") == [
            f"{root}/train/seed-{seed}/{name}"
            for name in ("politique.pt", "train_log.csv", "train_log.run.csv", "learning_curve.png")
        ]
        command = job["Shell command"]
        assert "--teacher" not in command and "teacher/labels" not in job["input"]
        assert f"--config {root}/config/train.yaml train --seed {seed} " in command
    (bench,) = jobs_of(with_teacher, "robust_benchmark", setting="ppo-only")
    assert policy_files_arg(bench["Shell command"]) == {
        "ppo-1": f"{root}/train/seed-1/politique.pt",
        "ppo-2": f"{root}/train/seed-2/politique.pt",
    }
    # its summary is an input of the report, and of the default target
    (report,) = jobs_of(with_teacher, "report")
    assert f"{root}/resume.csv" in report["input"].split(", ")


def test_a_setting_drawn_from_the_trace_like_history_builds_and_fits_it_first(with_teacher, tmp_path):
    # issue 50: the heavy-tails setting's scenarios come from the trace-like synthetic history's
    # fit, which one job writes (the script, then `sched calibrate-workload`) before its tuning
    (trace,) = jobs_of(with_teacher, "trace_workload")
    assert trace["output"].split(", ") == [
        "results/trace/history.csv",
        "results/trace/workload.json",
        "results/trace/workload.png",
    ]
    command = trace["Shell command"]
    assert command.startswith("(python resources/history/make_trace_history.py results/trace/history.csv")
    assert "calibrate-workload results/trace/history.csv" in command
    for rule in ("robust_tune", "robust_select", "robust_benchmark"):
        (job,) = jobs_of(with_teacher, rule, setting="heavy-tails")
        assert "results/trace/workload.json" in job["input"].split(", "), rule
    assert not jobs_of(with_teacher, "robust_train", setting="heavy-tails")  # the main policies, as they are
    # the setting's config files carry its workload, scale and model
    ws = workspace(tmp_path / "w", {**SMALL, "robustness": {"settings": copy.deepcopy(SETTINGS)}})
    r = snakemake(ws, "-j1", "results/robustness/heavy-tails/config/tune.yaml")
    assert r.returncode == 0, r.output[-3000:]
    sc = yaml.safe_load((ws / "results/robustness/heavy-tails/config/tune.yaml").read_text())["scenario"]
    assert sc["workload"] == "results/trace/workload.json" and sc["workload_scale"] == 1.5
    assert sc["workload_model"] == {"class_durations": True, "heavy_tails": True, "day_intensity": False}


def test_without_a_teacher_there_is_no_teach_job_and_no_warm_start(tmp_path):
    cfg = copy.deepcopy(SMALL)
    cfg["train"]["teacher_scenarios"] = 0
    jobs = plan(tmp_path, cfg)
    assert not jobs_of(jobs, "teach")
    for job in jobs_of(jobs, "train"):
        assert "warm_start.pt" not in job["output"] and "--teacher" not in job["Shell command"]
    for job in jobs_of(jobs, "benchmark") + jobs_of(jobs, "gather"):
        assert set(policy_files_arg(job["Shell command"])) == {"ppo-1", "ppo-2"}


def test_the_projects_config_has_the_ppo_only_setting():
    cfg = validate_config(yaml.safe_load((ROOT / "config.yaml").read_text()), "config.yaml")
    (ppo_only,) = [s for s in cfg["robustness"]["settings"] if s["name"] == "ppo-only"]
    # the main load and machines, its own policies trained by PPO alone
    assert ppo_only["train"]["teacher_scenarios"] == 0 and set(ppo_only) == {"name", "train"}
    assert ppo_only["train"]["group_size"] >= 4  # the grouped, input-dependent baseline (issue 25)
    assert cfg["train"]["teacher_scenarios"] > 0


def test_the_winner_is_chosen_on_the_selection_seeds_then_confirmed_on_test(with_teacher):
    heuristics = ["fifo", "spt", "edd", "wspt", "atc", "wmdd", "atc-tuned"]
    table = "results/benchmark/selection/per_scenario.csv"
    (select,) = jobs_of(with_teacher, "select")
    command = select["Shell command"]
    assert select["output"] == table
    assert " benchmark --split selection " in command
    # SMALL: validation seeds 1000004-1000009, after tuning's 4 and the checkpoints' 2
    assert "--seeds 1000004-1000009 " in command
    # the policies that may win: no warm start
    assert policies_arg(command) == heuristics + ["ppo-1", "ppo-2"]
    assert set(policy_files_arg(command)) == {"ppo-1", "ppo-2"}
    (gather,) = jobs_of(with_teacher, "gather")
    assert table in gather["input"].split(", ")
    assert f"--selection {table} " in gather["Shell command"]
    # plan's candidacy: each setting on the first plan.validation_scenarios selection seeds (6 in
    # SMALL, those that chose the winner), on the winner the selection table chooses
    candidacy = jobs_of(with_teacher, "plan_candidacy")
    assert len(candidacy) == 2
    for job in candidacy:
        assert (
            "--split selection" in job["Shell command"] and "--seeds 1000004-1000009 " in job["Shell command"]
        )
        assert f"--plan-on {table} " in job["Shell command"]
    # the setting it picks, on every test seed; gather gates the winner with the candidacy
    (plan_job,) = jobs_of(with_teacher, "benchmark_plan")
    assert (
        "--seeds 2000000-2000007 " in plan_job["Shell command"]
        and "--plan-candidacy " in plan_job["Shell command"]
    )
    assert "--plan-selection " in gather["Shell command"] and "--planners " in gather["Shell command"]


def test_selection_seeds_overlapping_the_checkpoints_stop_the_workflow(tmp_path):
    cfg = copy.deepcopy(SMALL)
    cfg["train"]["validation_scenarios"] = 5
    r = snakemake(workspace(tmp_path / "w", cfg), "-n")
    assert r.returncode != 0
    assert "benchmark.selection_offset: 4 is below train.validation_scenarios (5)" in r.output


def test_plans_candidacy_runs_under_the_settings_only_where_plan_elsewhere_says(with_teacher, tmp_path):
    """config plan.elsewhere (issue 46): by default the longer run's, so the default run plans no
    candidacy under the settings; with profile default, each setting gets one job per named grid
    setting on its own selection seeds and winner, the pick on its test seeds, and its benchmark
    gates its verdict with them."""
    assert not jobs_of(with_teacher, "robust_plan_candidacy") and not jobs_of(
        with_teacher, "robust_benchmark_plan"
    )
    (bench,) = jobs_of(with_teacher, "robust_benchmark", setting="load-0.70")
    assert "--plan-selection" not in bench["Shell command"]
    cfg = copy.deepcopy(SMALL)
    cfg["robustness"] = {"settings": copy.deepcopy(SETTINGS[:1])}
    cfg["plan"]["elsewhere"] = {"profile": "default", "grid": ["atc-2x5"]}
    jobs = plan(tmp_path, cfg)
    (cand,) = jobs_of(jobs, "robust_plan_candidacy", setting="load-0.70")
    root = "results/robustness/load-0.70"
    command = cand["Shell command"]
    assert cand["output"].startswith(f"{root}/plan/validation/atc-2x5/per_scenario.csv")
    assert f"--plan-on {root}/selection/per_scenario.csv " in command and "--plan-setting atc-2x5 " in command
    assert "--seeds 1000004-1000009 " in command and f"--config {root}/config/plan.yaml " in command
    (pick,) = jobs_of(jobs, "robust_benchmark_plan", setting="load-0.70")
    assert "--seeds 2000000-2000007 " in pick["Shell command"]
    assert f"--plan-candidacy {root}/plan/validation/atc-2x5 " in pick["Shell command"]
    (bench,) = jobs_of(jobs, "robust_benchmark", setting="load-0.70")
    assert (
        f"--plan-selection {root}/plan/validation/atc-2x5 --planners {root}/plan/per_scenario.csv"
        in (bench["Shell command"])
    )
    assert f"--config {root}/config/verdict.yaml " in bench["Shell command"]
    # a name that is not a setting of plan.grid stops the workflow, naming it
    cfg["plan"]["elsewhere"]["grid"] = ["atc-9x9"]
    r = snakemake(workspace(tmp_path / "bad", cfg), "-n")
    assert r.returncode != 0 and "plan.elsewhere.grid: 'atc-9x9' is not a setting of plan.grid" in r.output
