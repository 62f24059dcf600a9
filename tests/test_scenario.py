"""Scenario generation and the scenario file contract."""

import copy

import numpy as np
import pandas as pd
import pytest

from sched.config import ConfigError, validate_config
from sched.data.distributions import mean_duration
from sched.data.scenario import (
    ScenarioError,
    generate,
    kind_specs,
    read_scenario,
    validate_frame,
    write_scenario,
)

GOOD = "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,10,1,20\n2,video,5,30,2,40\n"


def test_same_seed_same_scenario_and_different_seed_differs(cfg):
    a, b, c = generate(cfg, 11), generate(cfg, 11), generate(cfg, 12)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not np.array_equal(a.frame["arrival_s"], c.frame["arrival_s"])


def test_load_sets_the_arrival_rate(cfg):
    # over many tasks, total work / horizon approaches the configured load
    for load in (0.5, 0.85):
        sc = generate(cfg, 3, tasks=40000, load=load)
        arr, dur = sc.frame["arrival_s"].to_numpy(), sc.frame["duration_s"].to_numpy()
        assert dur.sum() / arr[-1] == pytest.approx(load, rel=0.05)
        assert np.all(np.diff(arr) > 0)


def test_kinds_priorities_and_durations_follow_config(cfg):
    sc = generate(cfg, 4, tasks=20000)
    f = sc.frame
    assert (f["kind"] == "image").mean() == pytest.approx(0.8, abs=0.02)
    assert f.loc[f["kind"] == "image", "duration_s"].median() == pytest.approx(25.0, rel=0.05)
    assert (f["weight"] == 8).mean() == pytest.approx(0.05, abs=0.01)
    assert f["priority"].isin(cfg["scenario"]["priorities"]).all()
    assert np.allclose(f["estimate_s"], f["duration_s"])  # no noise by default
    slack = f["due_s"] - f["arrival_s"] - f["estimate_s"]
    assert slack.min() >= 0 and slack.max() <= 2 * f["estimate_s"].max() + 3600


def test_estimate_noise(cfg):
    c = copy.deepcopy(cfg)
    c["scenario"]["estimate_noise_sigma"] = 0.3
    f = generate(c, 4, tasks=20000).frame
    ratio = np.log(f["estimate_s"] / f["duration_s"])
    assert ratio.std() == pytest.approx(0.3, rel=0.05)
    # common random numbers: the true durations do not move with the noise
    assert np.allclose(f["duration_s"], generate(cfg, 4, tasks=20000).frame["duration_s"])


def test_load_change_keeps_the_other_draws(cfg):
    a, b = generate(cfg, 9, load=0.7).frame, generate(cfg, 9, load=0.95).frame
    assert np.array_equal(a["duration_s"], b["duration_s"])
    assert np.array_equal(a["weight"], b["weight"])


def test_mean_duration_formula(cfg):
    specs = kind_specs(cfg)
    sample = generate(cfg, 1, tasks=50000).frame["duration_s"].mean()
    assert mean_duration(specs) == pytest.approx(sample, rel=0.03)


def test_bad_seed(cfg):
    for bad in (-1, 1.5, "3"):
        with pytest.raises(ValueError, match="seed"):
            generate(cfg, bad)


def test_overlapping_seed_ranges_refused():
    cfg = {"seeds": {"train": {"start": 0, "count": 100}, "test": {"start": 50, "count": 10}}}
    with pytest.raises(ConfigError, match="seeds.train .* overlaps seeds.test"):
        validate_config(cfg)


def test_round_trip(tmp_path, cfg):
    sc = generate(cfg, 5, tasks=50)
    write_scenario(tmp_path / "s.csv", sc)
    back = read_scenario(tmp_path / "s.csv")
    for a, b in zip(sc.arrays, back.arrays):
        assert np.array_equal(a, b)
    assert list(back.frame["priority"]) == list(sc.frame["priority"])  # extra column kept


def test_static_and_unsorted_and_late_arrivals_are_valid(tmp_path):
    p = tmp_path / "static.csv"
    p.write_text("id,kind,arrival_s,duration_s,weight,due_s\nb,image,0,10,1,5\na,video,0,3,2,0\n")
    assert len(read_scenario(p)) == 2
    p.write_text("id,kind,arrival_s,duration_s,weight,due_s\nx,image,50,10,1,20\ny,image,0,3,2,9\n")
    assert read_scenario(p).frame["id"].tolist() == ["x", "y"]


def test_optional_estimate_column(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("id,kind,arrival_s,duration_s,weight,due_s,estimate_s\n1,image,0,10,1,20,12\n")
    arrays = read_scenario(p).arrays
    assert arrays[1][0] == 10 and arrays[2][0] == 12


BAD = [
    ("id,kind,arrival_s,duration_s,due_s\n1,image,0,10,20\n", "missing column.*weight"),
    ("id,kind,arrival_s,duration_s,weight,due_s\n", "no rows"),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,ten,1,20\n",
        r"row 1 \(line 2\) field duration_s: 'ten' is not a number",
    ),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,10,1,20\n2,image,0,10,1,nan\n",
        r"row 2 \(line 3\) field due_s: 'nan' is not finite",
    ),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,inf,10,1,20\n",
        "field arrival_s: 'inf' is not finite",
    ),
    ("id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,0,1,20\n", "field duration_s: must be > 0"),
    (
        "id,kind,arrival_s,duration_s,weight,due_s,estimate_s\n1,image,0,3,1,20,-1\n",
        "field estimate_s: must be > 0",
    ),
    ("id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,3,0,20\n", "field weight: must be > 0"),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,3,1,20\n1,image,1,3,1,20\n",
        r"row 2 \(line 3\) field id: duplicate id '1' \(first at row 1\)",
    ),
    ("id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,3,,20\n", "field weight: missing value"),
    ("id,kind,arrival_s,duration_s,weight,due_s\n,image,0,3,1,20\n", "field id: missing value"),
]


@pytest.mark.parametrize("text,match", BAD)
def test_bad_scenario_files_are_refused(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ScenarioError, match=match) as info:
        read_scenario(p)
    assert str(p) in str(info.value)


def test_empty_file_refused(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("")
    with pytest.raises(ScenarioError, match="empty file"):
        read_scenario(p)


def test_validate_frame_names_the_source():
    frame = pd.DataFrame(
        {"id": [1], "kind": ["image"], "arrival_s": [0], "duration_s": [-2], "weight": [1], "due_s": [3]}
    )
    with pytest.raises(ScenarioError, match="my-table: row 1"):
        validate_frame(frame, "my-table")
