"""The config file is validated against the workflow's JSON schema."""

from pathlib import Path

import pytest
import yaml

from sched.config import ConfigError, load_config, validate_config

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_config_is_valid_and_matches_schema_defaults():
    shipped = load_config(ROOT / "config.yaml")
    defaults = validate_config({})
    assert shipped["scenario"]["load"] == 0.85 and shipped["rules"]["atc_k"] == 2.0
    assert shipped["seeds"] == defaults["seeds"]


def test_defaults_are_filled_without_touching_the_schema():
    a = validate_config({"scenario": {"load": 0.7}})
    assert a["scenario"]["load"] == 0.7 and a["scenario"]["tasks"] == 400
    changed = a.replace(scenario={"kinds": {"image": {"median_s": 1.0}}})
    assert changed.scenario.kinds.image.median_s == 1.0 and a.scenario.kinds.image.median_s == 25.0
    assert validate_config({})["scenario"]["kinds"]["image"]["median_s"] == 25.0


def test_the_config_is_frozen_and_its_variants_are_validated():
    from sched.config import ConfigError

    a = validate_config({"scenario": {"load": 0.7}})
    with pytest.raises(ConfigError, match="scenario is frozen"):
        a.scenario.load = 0.9
    with pytest.raises(TypeError):
        a.scenario["load"] = 0.9  # a record has no item assignment either
    assert isinstance(a.train.seeds, tuple) and a.to_dict()["train"]["seeds"] == list(a.train.seeds)
    with pytest.raises(ConfigError, match=r"scenario.load: -1 is less than or equal to the minimum"):
        a.replace(scenario={"load": -1})
    with pytest.raises(AttributeError, match=r"train is frozen, it has no update\(\)"):
        a.train.update(iterations=3)
    with pytest.raises(AttributeError, match="scenario has no setting 'lod'"):
        getattr(a.scenario, "lod")  # noqa: B009


@pytest.mark.parametrize(
    "cfg,match",
    [
        ({"scenario": {"load": -1}}, r"scenario.load: -1 is less than or equal to the minimum of 0"),
        ({"scenario": {"machines": 0}}, r"scenario.machines: 0 is less than the minimum of 1"),
        ({"scenario": {"tasks": "many"}}, r"scenario.tasks: 'many' does not match '\^day\$'"),
        ({"scenario": {"lod": 0.8}}, r"scenario: Additional properties are not allowed \('lod'"),
        (
            {"scenario": {"kinds": {"image": {"share": 1.0, "distribution": "lognormal"}}}},
            r"scenario.kinds.image: 'median_s' is a required property",
        ),
        (
            {
                "scenario": {
                    "kinds": {"image": {"share": 0.5, "distribution": "gamma", "shape": 2, "scale_s": 3}}
                }
            },
            r"scenario.kinds: shares must sum to 1",
        ),
        ({"scenario": {"due": {"slack_s": [10, 5]}}}, r"scenario.due.slack_s: low 10 is above high 5"),
        ({"rules": {"atc_k": 0}}, r"rules.atc_k: 0 is less than or equal to the minimum of 0"),
    ],
)
def test_invalid_configs_name_the_field(cfg, match):
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, "test.yaml")


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenario: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_schema_is_draft_2020_12_with_descriptions():
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["$schema"].endswith("2020-12/schema")
    for name, sub in schema["properties"].items():
        assert "description" in sub, name


def _setting(train):
    return {"robustness": {"settings": [{"name": "m2", "machines": 2, "train": train}]}}


@pytest.mark.parametrize(
    "train,match",
    [
        (
            {"iteratons": 300},
            r"robustness.settings.0.train: Additional properties are not allowed \('iteratons' was unexpected\)",  # noqa: E501
        ),
        (
            {"atc_k": "tunned"},
            r"robustness.settings.0.train.atc_k: 'tunned' is not valid under any of the given schemas",
        ),
        ({"atc_k": 0}, r"robustness.settings.0.train.atc_k: 0 is not valid under any of the given schemas"),
        ({"iterations": 0}, r"robustness.settings.0.train.iterations: 0 is less than the minimum of 1"),
        ({"seeds": [4]}, r"robustness.settings.0.train: Additional properties are not allowed \('seeds' was"),
    ],
)
def test_a_robustness_setting_refuses_unknown_or_invalid_train_keys(train, match):
    with pytest.raises(ConfigError, match=match):
        validate_config(_setting(train), "test.yaml")


def test_a_robustness_setting_takes_the_train_keys_and_no_defaults():
    train = {"atc_k": "tuned", "teacher_scenarios": 0, "iterations": 300, "loads": [0.7, 0.9]}
    cfg = validate_config(_setting(dict(train)))
    # only what the setting sets: the rest is the main train section's
    assert cfg["robustness"]["settings"][0]["train"] == train
    assert validate_config(_setting({"atc_k": 1.5}))["robustness"]["settings"][0]["train"] == {"atc_k": 1.5}
    # the same keys as the train section, each with the train section's schema (atc_k aside)
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    main = schema["properties"]["train"]["properties"]
    setting = schema["properties"]["robustness"]["properties"]["settings"]["items"]["properties"]["train"]
    assert setting["additionalProperties"] is False
    # seeds and threads stay the main ones (the same training seeds; the rule's threads); the farm
    # trainer's own keys are not a one-queue setting's
    from sched.learn.settings import FARM_ONLY

    assert list(setting["properties"]) == [k for k in main if k not in ("seeds", "threads", *FARM_ONLY)]
    for key, sub in setting["properties"].items():
        if key != "atc_k":
            assert sub == {"$ref": f"#/properties/train/properties/{key}"}, key


# --------------------------------------------------------------------------- issue 13: documented bounds


def _schema():
    return yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())


def test_schema_maxima_are_the_documented_limits():
    from sched import limits

    s = _schema()
    sc, props = s["properties"]["scenario"]["properties"], s["properties"]
    setting = props["robustness"]["properties"]["settings"]["items"]["properties"]
    bounded = [
        (sc["tasks"], limits.MAX_SCENARIO_TASKS, "MAX_SCENARIO_TASKS"),
        (props["train"]["properties"]["tasks"], limits.MAX_SCENARIO_TASKS, "MAX_SCENARIO_TASKS"),
        (sc["machines"], limits.MAX_MACHINES, "MAX_MACHINES"),
        (setting["machines"], limits.MAX_MACHINES, "MAX_MACHINES"),
        (props["train"]["properties"]["hidden"], limits.MAX_POLICY_HIDDEN, "MAX_POLICY_HIDDEN"),
    ]
    for sub, limit, name in bounded:
        assert sub["maximum"] == limit
        assert f"sched.limits.{name}" in sub["description"]
    weight = sc["priorities"]["additionalProperties"]["properties"]["weight"]
    assert weight["maximum"] == limits.MAX_WEIGHT
    assert s["$defs"]["range"]["items"]["maximum"] == limits.MAX_SECONDS
    kind = s["$defs"]["kind"]["properties"]
    assert kind["median_s"]["maximum"] == kind["samples_s"]["items"]["maximum"] == limits.MAX_SECONDS


@pytest.mark.parametrize(
    "cfg,match",
    [
        (
            {"scenario": {"tasks": 10**12}},
            r"scenario.tasks: 1000000000000 is greater than the maximum of 1000000",
        ),
        (
            {"scenario": {"machines": 10**9}},
            r"scenario.machines: 1000000000 is greater than the maximum of 10000",
        ),
        ({"train": {"tasks": 10**7}}, r"train.tasks: 10000000 is greater than the maximum of 1000000"),
        (
            {"robustness": {"settings": [{"name": "big", "machines": 10**9}]}},
            r"robustness.settings.0.machines: 1000000000 is greater than the maximum of 10000",
        ),
        (
            {"scenario": {"priorities": {"p": {"weight": 1e300, "prob": 1}}}},
            r"scenario.priorities.p.weight: 1e\+300 is greater than the maximum",
        ),
        ({"scenario": {"due": {"slack_s": [0, 1e300]}}}, r"scenario.due.slack_s.1: 1e\+300 is greater"),
        (
            {
                "scenario": {
                    "kinds": {"a": {"share": 1, "distribution": "lognormal", "median_s": 1e300, "sigma": 1}}
                }
            },
            r"scenario.kinds.a.median_s: 1e\+300 is greater than the maximum",
        ),
    ],
)
def test_sizes_and_magnitudes_past_the_limits_are_refused(cfg, match):
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, "test.yaml")
