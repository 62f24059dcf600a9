"""A training's settings by stage (sched/learn/settings.py): one frozen class a stage, each field
one key of the config section ``train`` described once (by the schema), and the flat record a
policy file keeps unchanged."""

import ast
import dataclasses

import pytest

from sched.config import load_schema, schema_defaults, validate_config
from sched.learn import settings as S

from .conftest import ROOT

#: The schema's train keys no stage reads: the workflow's (seeds, one a job; the teacher's shards).
WORKFLOW_ONLY = {"seeds", "teacher_shards"}


def _train_schema():
    return load_schema()["properties"]["train"]["properties"]


def _stage_keys():
    return {(name, f): k for name, stage in S.STAGES.items() for f, k in stage.keys().items()}


def test_every_setting_is_one_described_key_of_train_and_every_key_a_setting():
    train = _train_schema()
    keys = set(_stage_keys().values()) | set(S.SHARED)
    described_as = {"seed": "seeds"}  # one of the training seeds
    undescribed = sorted(k for k in keys if not train.get(described_as.get(k, k), {}).get("description"))
    assert not undescribed, f"settings without a schema description: {undescribed}"
    assert set(train) - WORKFLOW_ONLY - set(S.FARM_ONLY) == keys - {"seed"}
    assert set(S.RECORD_ORDER) | set(S.OPTIONAL) == keys
    assert len(S.RECORD_ORDER) + len(S.OPTIONAL) == len(keys)


def test_no_setting_is_described_a_second_time_in_the_code():
    """The schema's description is the one: no docstring or comment beside a settings field."""
    path = ROOT / "sched" / "learn" / "settings.py"
    tree = ast.parse(path.read_text())
    lines = path.read_text().splitlines()
    stages = {c.__name__ for c in S.STAGES.values()} | {"Training"}
    twice = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in stages:
            for a, b in zip(node.body, node.body[1:] + [None]):
                if not isinstance(a, ast.AnnAssign):
                    continue
                doc = isinstance(b, ast.Expr) and isinstance(getattr(b, "value", None), ast.Constant)
                if doc or "#" in lines[a.lineno - 1]:
                    twice.append(f"{node.name}.{a.target.id}")
    assert not twice, twice
    loop = (ROOT / "sched" / "learn" / "ppo" / "loop.py").read_text()
    assert "class Args" not in loop


def test_the_stages_are_frozen_and_built_from_the_config():
    cfg = validate_config({"train": {"teacher_samples": 9, "round_target": "mean", "loads": [0.7, 0.9]}})
    t = S.Training.from_config(cfg, seed=5, iterations=None)
    assert (t.seed, t.teacher.samples, t.rounds.target, t.ppo.loads) == (5, 9, "mean", [0.7, 0.9])
    assert t.ppo.iterations == schema_defaults("train")["iterations"]  # None: no override
    assert S.TeacherSettings.from_config(cfg) == t.teacher
    for stage in (t, t.network, t.ppo, t.teacher, t.rounds, t.distill):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(stage, dataclasses.fields(stage)[0].name, 1)


def test_the_defaults_are_the_schemas_and_the_seed_the_first_training_seed():
    defaults = schema_defaults("train")
    flat = S.Training.of().as_dict()
    assert flat["seed"] == defaults["seeds"][0]
    assert {k: v for k, v in flat.items() if k != "seed"} == {k: defaults[k] for k in flat if k != "seed"}


def test_a_shared_key_reaches_every_stage_that_reads_it_and_replace_is_flat():
    t = S.Training.of(max_grad_norm=0.25)
    assert t.ppo.max_grad_norm == t.distill.max_grad_norm == 0.25
    r = t.replace(max_grad_norm=2.0, teacher_z=3.0)
    assert (r.ppo.max_grad_norm, r.distill.max_grad_norm, r.teacher.z) == (2.0, 2.0, 3.0)
    assert t.ppo.max_grad_norm == 0.25  # a new object
    with pytest.raises(S.TrainSettingsError, match="train.teacher_sample: not a training setting"):
        S.Training.of(teacher_sample=3)


def test_a_round_labels_with_the_teachers_candidates_and_z_and_its_own_samples():
    t = S.Training.of(teacher_candidates=5, teacher_z=1.5, teacher_samples=64, round_samples=8, round_chunk=4)
    assert t.rounds.labelling(t.teacher) == S.Labelling(5, 8, 4, t.rounds.horizon, 1.5)
    assert t.teacher.labelling() == S.Labelling(5, 64, t.teacher.chunk, t.teacher.horizon, 1.5)
    round_ = t.for_stage("round-1")
    assert round_.distill.target == t.rounds.target and t.for_stage("warm") is t


def test_the_record_keeps_the_order_policy_files_were_written_in():
    """A policy file's ``train_args`` (whose bytes its sha256 binds) lists every setting in the
    order of the one class they once were: the schema's, ``seed`` first, ``privileged_critic``
    after ``atc_k``, without the workflow's keys."""
    skip = WORKFLOW_ONLY | set(S.OPTIONAL) | set(S.FARM_ONLY) | {"privileged_critic"}
    order = [k for k in _train_schema() if k not in skip]
    order.insert(order.index("atc_k") + 1, "privileged_critic")
    assert list(S.RECORD_ORDER) == ["seed", *order]
    assert list(S.Training.of(seed=4).as_dict()) == list(S.RECORD_ORDER)


def test_policy_meta_records_every_setting_but_the_threads(cfg):
    from sched.learn.policy import policy_file as PF

    t = S.Training.of(seed=4, hidden=8, top_k=3)
    meta = PF.policy_meta(cfg, t)
    assert list(meta["train_args"]) == [k for k in S.RECORD_ORDER if k != "threads"]
    assert meta["arch"]["hidden"] == 8 and meta["arch"]["top_k"] == 3


def test_the_settings_check_names_the_field():
    with pytest.raises(S.TrainSettingsError, match="train.group_size"):
        S.check(S.Training.of(group_size=3, num_envs=4))
    with pytest.raises(S.TrainSettingsError, match="train.teacher_scenarios"):
        S.check(S.Training.of(teacher_scenarios=2, top_k=0))
    S.check(S.Training.of())
