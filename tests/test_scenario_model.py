"""The scenario model built once from the config: same draws as before it existed.

The checksums below were computed by the code before ``ScenarioModel`` (commit
"test: freeze today's scenario draws"), with ``draw(cfg, seed, ...)`` reading
the calibration and workload files through module caches. The same config must
give bit-identical scenarios (arrays hashed byte for byte).
"""

import dataclasses
import hashlib
import json

import numpy as np
import pytest

from sched.config import validate_config
from sched.data.model import scenario_model
from sched.data.scenario import draw, generate
from sched.errors import SchedError

CALIBRATION = {
    "format": "sched-calibration/1",
    "kinds": {
        "image": {"spec": {"share": 0.7, "distribution": "lognormal", "median_s": 30.0, "sigma": 0.4}},
        "video": {"spec": {"share": 0.2, "distribution": "gamma", "shape": 2.0, "scale_s": 150.0}},
        "anim": {"spec": {"share": 0.1, "distribution": "empirical", "samples_s": [60.0, 90.0, 400.0]}},
    },
    "estimate_noise_sigma": 0.3,
}
WORKLOAD = {
    "format": "sched-workload/1",
    "arrivals": {"rate_per_hour": [20.0 + (h % 24) for h in range(168)]},
    "priorities": {
        "classes": [
            {"name": "low", "weight": 1, "share": 0.6},
            {"name": "high", "weight": 4, "share": 0.4},
        ],
        "by_hour_of_day": None,
    },
    "deadlines": {
        "share_without": 0.25,
        "allowance": {"estimate_edges_s": [60.0], "ratio_quantiles": [[1.0, 2.0, 4.0], [1.5, 3.0, 6.0]]},
    },
}
SEEDS = (0, 7, 2000001)
#: case: (config, draw's keyword arguments, checksums of SEEDS' draws by the code before the model)
FROZEN = {
    "defaults": ({}, {}, ["3529b51abf0d09db", "6782b2309c2432ef", "54eba1dc4f9605fc"]),
    "defaults-overrides": (
        {},
        dict(tasks=50, load=0.6, machines="2x1.0,2x0.6"),
        ["92b78aacdaa1e035", "50d7504b495da9a1", "730e350dbd8a17c3"],
    ),
    "noise": (
        {"scenario": {"estimate_noise_sigma": 0.5, "machines": 3}},
        {},
        ["54e0b19b0fc9c412", "9981d1494e374d2e", "e1931afbd6ce5b17"],
    ),
    "calibration": (
        {"scenario": {"calibration": "CAL"}},
        dict(tasks=120),
        ["84350ca0db508872", "087f78712147db78", "db7a16f762158d2c"],
    ),
    "workload": (
        {"scenario": {"calibration": "CAL", "workload": "WL", "workload_scale": 1.5}},
        dict(tasks=80),
        ["060632cb45630c97", "6a26d5b01f61149c", "311c2637a5749e5b"],
    ),
}


def digest(d):
    h = hashlib.sha256()
    for k in ("arrival", "duration", "estimate", "weight", "due", "kind", "priority"):
        h.update(np.ascontiguousarray(d[k]).tobytes())
    h.update(json.dumps([list(d["kinds"]), list(d["classes"])]).encode())
    return h.hexdigest()[:16]


@pytest.fixture
def files(tmp_path):
    cal, wl = tmp_path / "cal.json", tmp_path / "wl.json"
    cal.write_text(json.dumps(CALIBRATION))
    wl.write_text(json.dumps(WORKLOAD))
    return {"CAL": str(cal), "WL": str(wl)}


def config_of(case, files):
    given = json.loads(json.dumps(FROZEN[case][0]))
    sc = given.get("scenario", {})
    for key in ("calibration", "workload"):
        if key in sc:
            sc[key] = files[sc[key]]
    return validate_config(given)


@pytest.mark.parametrize("case", sorted(FROZEN))
def test_draws_are_those_of_the_code_before_the_model(case, files):
    model = scenario_model(config_of(case, files))
    _, kw, want = FROZEN[case]
    assert [digest(draw(model, s, **kw)) for s in SEEDS] == want


def test_the_model_is_read_once_and_immutable(files, tmp_path):
    model = scenario_model(config_of("workload", files))
    before = digest(draw(model, 7, tasks=80))
    for path in files.values():  # the files are read when the model is built, never again
        (tmp_path / path).unlink()
    assert digest(draw(model, 7, tasks=80)) == before == FROZEN["workload"][2][1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.sigma = 1.0
    with pytest.raises(ValueError, match="read-only"):
        model.shares[0] = 1.0
    with pytest.raises(TypeError):
        model.specs["image"]["share"] = 1.0
    assert model.kinds == ("anim", "image", "video") and model.sigma == 0.3
    assert model.kind_specs()["anim"]["samples_s"] == [60.0, 90.0, 400.0]


def test_draw_takes_a_model_not_a_config(cfg):
    with pytest.raises(SchedError, match="draw: model: expected a ScenarioModel .* got Config"):
        draw(cfg, 1)
    with pytest.raises(SchedError, match="generate: model: expected a ScenarioModel"):
        generate(cfg, 1)


def test_replace_overrides_as_draws_arguments(cfg):
    model = scenario_model(cfg)
    other = model.replace(tasks=50, load=0.6, machines="2x1.0,2x0.6")
    assert other.capacity == pytest.approx(3.2) and model.tasks == 400
    a, b = draw(other, 7), draw(model, 7, tasks=50, load=0.6, machines="2x1.0,2x0.6")
    assert digest(a) == digest(b) == FROZEN["defaults-overrides"][2][1]
    with pytest.raises(SchedError, match="load: must be a finite number > 0, got inf"):
        model.replace(load=float("inf"))
