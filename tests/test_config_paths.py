"""Relative paths in a config file are read from its folder, whatever the working directory
(issue 22, point 4); ``rank(config=...)``, ``--config`` and ``SCHED_CONFIG`` name the config."""

import json
import logging
import os
import subprocess
import sys

import pytest
import yaml

from sched import rank
from sched.config import ConfigError, load_config, resolve_paths, validate_config

from .conftest import ROOT
from .test_rank import NOW, static_queue, winner, write_json


@pytest.fixture
def project(tmp_path):
    """A project folder with a config.yaml naming its files by relative paths, a winner.json
    (tuned ATC, k 0.5) and a tuned.json; and another folder to run from."""
    d = tmp_path / "project"
    (d / "results" / "benchmark").mkdir(parents=True)
    cfg = {
        "scenario": {"machines": "farm/gpus.csv", "calibration": "results/calibration.json"},
        "rank": {"winner": "results/benchmark/winner.json", "tuned": "results/benchmark/tuned.json"},
        "workload": {"history": ["history/h.csv"]},
        "calibration": {"bench": ["bench/a.csv", "/abs/b.csv"]},
        "plan": {"base": "policies/p.pt"},
    }
    (d / "farm").mkdir()
    (d / "farm" / "gpus.csv").write_text("name,speed\ng0,1.0\n")
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    write_json(d / "results" / "benchmark" / "winner.json", winner("atc-tuned", rule="atc", atc_k=0.5))
    write_json(d / "results" / "benchmark" / "tuned.json", {"atc_k": 0.5})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return d, elsewhere


def test_relative_paths_are_read_from_the_config_folder(project, monkeypatch):
    d, elsewhere = project
    monkeypatch.chdir(elsewhere)
    cfg = load_config(d / "config.yaml")
    assert cfg["root"] == str(d)
    assert cfg["rank"]["winner"] == str(d / "results/benchmark/winner.json")
    assert cfg["rank"]["settings"] == str(d / "results/robustness")  # a default, resolved too
    assert cfg["scenario"]["calibration"] == str(d / "results/calibration.json")
    assert cfg["scenario"]["machines"] == str(d / "farm/gpus.csv")
    assert cfg.workload.history == (str(d / "history/h.csv"),)
    assert cfg.calibration.bench == (str(d / "bench/a.csv"), "/abs/b.csv")
    assert cfg["plan"]["base"] == str(d / "policies/p.pt") and cfg["plan"]["rollout"] == "base"
    assert resolve_paths(cfg.to_dict(), elsewhere) == cfg  # resolving again changes nothing


def test_from_the_config_folder_paths_stay_as_written(project, monkeypatch):
    d, _ = project
    monkeypatch.chdir(d)
    cfg = load_config("config.yaml")
    assert cfg["root"] == "." and cfg["rank"]["winner"] == "results/benchmark/winner.json"
    assert cfg["scenario"]["machines"] == "farm/gpus.csv"


def test_root_names_the_folder_paths_are_read_from(project, monkeypatch):
    d, elsewhere = project
    sub = d / "results" / "config"
    sub.mkdir(parents=True)
    (sub / "step.yaml").write_text(yaml.safe_dump({"root": "../..", "scenario": {"calibration": "c.json"}}))
    monkeypatch.chdir(elsewhere)
    assert load_config(sub / "step.yaml")["scenario"]["calibration"] == str(d / "c.json")
    monkeypatch.chdir(d)  # the workflow's case: the root is the working directory
    assert load_config("results/config/step.yaml")["scenario"]["calibration"] == "c.json"


def test_a_mapping_keeps_paths_relative_to_the_working_directory(project, monkeypatch):
    d, elsewhere = project
    monkeypatch.chdir(elsewhere)
    tasks = static_queue(seed=3, n=30)
    out = rank(tasks, now=NOW, config={"rank": {"winner": "results/benchmark/winner.json"}}, explain=True)
    assert set(out["policy"]) == {"atc"}  # elsewhere/results/... does not exist
    monkeypatch.chdir(d)
    out = rank(tasks, now=NOW, config={"rank": {"winner": "results/benchmark/winner.json"}}, explain=True)
    assert set(out["policy"]) == {"atc-tuned"}


def test_sched_config_names_the_config(project, monkeypatch):
    d, elsewhere = project
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("SCHED_CONFIG", str(d / "config.yaml"))
    assert load_config()["root"] == str(d)
    tasks = static_queue(seed=3, n=30)
    assert set(rank(tasks, now=NOW, explain=True)["policy"]) == {"atc-tuned"}
    monkeypatch.setenv("SCHED_CONFIG", str(elsewhere / "missing.yaml"))
    with pytest.raises(ConfigError, match="SCHED_CONFIG: config file .*missing.yaml not found"):
        load_config()
    assert load_config(d / "config.yaml")["root"] == str(d)  # an explicit path comes first


def test_rank_from_another_folder_gives_the_same_order_and_policy(project, monkeypatch):
    d, elsewhere = project
    tasks = static_queue(seed=5, n=40)
    monkeypatch.chdir(d)
    here = rank(tasks, now=NOW, config="config.yaml", explain=True)
    monkeypatch.chdir(elsewhere)
    there = rank(tasks, now=NOW, config=str(d / "config.yaml"), explain=True)
    assert set(here["policy"]) == {"atc-tuned"}
    assert list(there["id"]) == list(here["id"]) and list(there["policy"]) == list(here["policy"])
    ids = rank(tasks, now=NOW, config=d / "config.yaml")
    assert ids == list(here["id"]) and ids != rank(tasks, now=NOW, policy="atc", config={})


def test_a_missing_verdict_is_named_and_logged(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("rank: {winner: gone/winner.json, tuned: gone/tuned.json}\n")
    tasks = static_queue(seed=3, n=20)
    with caplog.at_level(logging.WARNING, logger="sched"):
        out = rank(tasks, now=NOW, explain=True)
    assert set(out["policy"]) == {"atc"}
    why = out["why"].iloc[0]
    assert f"config rank.winner {tmp_path / 'gone/winner.json'} not found" in why
    assert f"config rank.tuned {tmp_path / 'gone/tuned.json'} not found" in why
    logged = [r for r in caplog.records if r.name.startswith("sched") and r.levelno == logging.WARNING]
    assert logged and "gone/winner.json not found" in logged[0].getMessage()


def test_cli_from_another_folder_gives_the_same_order(project, tmp_path):
    d, elsewhere = project
    queue = tmp_path / "queue.json"
    queue.write_text(json.dumps(static_queue(seed=5, n=25)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def run(cwd, *config):
        cmd = [sys.executable, "-m", "sched", *config, "rank", str(queue), "--now", str(NOW), "--explain"]
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        return [(row["id"], row["policy"]) for row in json.loads(r.stdout)]

    here = run(d)
    assert {p for _, p in here} == {"atc-tuned"}
    assert run(elsewhere, "--config", str(d / "config.yaml")) == here


def test_mapping_root_is_validated():
    with pytest.raises(ConfigError, match="root"):
        validate_config({"root": ""})
