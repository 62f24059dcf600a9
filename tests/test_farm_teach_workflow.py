"""The gated teacher's chain on the chunked farm in the workflow (issue 60, point 2): a farm setting
with `train: {teacher: true}` gets `sched farm-teach` before `sched farm-train --init`, in the longer
run only; the others keep their jobs; the report names each learned policy's chain."""

import copy
import re
import types

import yaml

from sched import layout
from sched.config import load_yaml, validate_config
from sched.pipeline import wildcards as wc
from sched.pipeline.plan import Plan

from .conftest import ROOT


def plans(data):
    return {p: Plan(c.to_dict(), c) for p in ("default", "full")
            for c in [validate_config({**data, "profile": p}, "config.yaml")]}  # fmt: skip


def with_teacher(data, name, **train):
    data = copy.deepcopy(data)
    for s in data["farm"]["settings"]:
        if s["name"] == name:
            s["train"] = {**s["train"], **train}
    return data


def test_only_a_teacher_setting_of_the_longer_run_gets_the_teach_job_and_init():
    data = load_yaml(ROOT / "config.yaml")
    default, full = plans(data).values()
    taught = full.farm_taught()
    assert taught and set(taught) < set(full.farm_learned()) and default.farm_taught() == []
    assert set(full.farm_untaught()) == set(full.farm_learned()) - set(taught)
    assert all(full.farm[n]["train"].get("teacher") is True for n in taught)
    for name in full.farm:
        w = types.SimpleNamespace(farm=name)
        teach = full.farm_teach_files(name)
        assert (teach != []) == (name in taught) and default.farm_teach_files(name) == []
        init = wc.ByWildcards(full).farm_init(w)
        assert init == ([f"{layout.farm_root(name)}/{layout.FARM_TEACH}/{layout.FARM_POLICY}"]
                        if name in taught else [])  # fmt: skip
        arg = wc.init_arg(w, types.SimpleNamespace(init=init))
        assert arg.startswith("--init ") == (name in taught) and (arg == "") == (name not in taught)
    assert not any(f"/{layout.FARM_TEACH}/" in f for f in default.farm_outputs())
    assert sum(f"/{layout.FARM_TEACH}/" in f for f in full.farm_outputs()) == 2 * len(taught)


def test_a_setting_turns_the_teacher_on_without_touching_the_others_or_the_benchmark():
    data = load_yaml(ROOT / "config.yaml")
    before = plans(data)["full"]
    name = next(n for n in before.farm_learned() if n not in before.farm_taught())
    after = plans(with_teacher(data, name, teacher=True, teacher_scenarios=7))["full"]
    assert name in after.farm_taught() and after.farm_config_text(name) == before.farm_config_text(name)
    for other in before.farm_learned():
        if other != name:
            assert after.farm_train_config_text(other) == before.farm_train_config_text(other)
    off = plans(with_teacher(data, name, teacher=False))["full"]
    assert name not in off.farm_taught() and off.farm_teach_files(name) == []


def test_the_step_config_carries_the_settings_raw_teacher_values_not_the_defaults():
    data = load_yaml(ROOT / "config.yaml")
    full = plans(data)["full"]
    for name in full.farm_taught():
        own = full.farm[name]["train"]
        text = full.farm_train_config_text(name)
        train = yaml.safe_load(text)["train"]
        assert "teacher" not in train and train["teacher_scenarios"] == own["teacher_scenarios"]
        # the command reads that file: its teacher_scenarios, not the schema's (or main's) default
        cfg = validate_config(yaml.safe_load(text), "farm_train.yaml")
        assert cfg.train.teacher_scenarios == own["teacher_scenarios"]
        assert own["teacher_scenarios"] != validate_config({}, "empty").train.teacher_scenarios
    name = full.farm_learned()[0]
    for n in (3, 11):
        text = plans(with_teacher(data, name, teacher=True, teacher_scenarios=n))[
            "full"
        ].farm_train_config_text(name)
        assert yaml.safe_load(text)["train"]["teacher_scenarios"] == n


def test_the_workflow_runs_farm_teach_and_init_only_for_taught_settings():
    smk = (ROOT / "workflow" / "rules" / "farm.smk").read_text()
    rules = dict(re.findall(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", smk, re.S | re.M))
    assert "farm-teach" in rules["farm_teach"] and "farm_taught()" in rules["farm_teach"]
    assert "--init" not in rules["farm_train"] and "farm_untaught()" in rules["farm_train"]
    assert "{params.init}" in rules["farm_train_taught"] and "farm_taught()" in rules["farm_train_taught"]


def test_the_report_names_the_chain_and_the_warm_starts_numbers():
    from sched.evaluate.farm import learned_report

    alone = {"teacher": None}
    assert "PPO alone" in learned_report.chain(alone)
    t = {"scenarios": 80, "labelled": 1234, "deviations": 56, "val_weighted_tardiness_s": 101_000.0,
         "val_atc_tuned_weighted_tardiness_s": 100_000.0}  # fmt: skip
    text = learned_report.chain({"teacher": t})
    assert "teacher" in text and "80 training seeds" in text and "1,234" in text and "+1.00 %" in text
