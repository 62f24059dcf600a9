"""The gated rollout teacher: labels that do not depend on how the work is split, bounded against
its base's choice, and its settings refused in one line."""

import numpy as np
import pytest
import yaml

from .conftest import run_here


def _labels(cfg, seeds, follow=True):
    from sched.learn.search.planner import rule_base
    from sched.learn.search.teacher import make_labels
    from sched.learn.settings import Labelling

    st = Labelling(candidates=3, samples=6, chunk=2, horizon=10, z=1.0)
    return make_labels(cfg, seeds, st, rule_base("atc", cfg["rules"]["atc_k"]), 4, follow, futures=50)[0]


def test_labels_of_a_scenario_do_not_depend_on_the_other_seeds_of_the_job(tiny_cfg):
    start = tiny_cfg["seeds"]["train"]["start"]
    both = _labels(tiny_cfg, [start + 1, start + 2])
    second = _labels(tiny_cfg, [start + 2])
    rows = both["scenario_seed"] == start + 2
    assert rows.any() and (~rows).any()
    for key in ("label", "x", "ctx", "count"):
        np.testing.assert_array_equal(both[key][rows], second[key])


def test_teacher_labels_compare_candidates_with_atc_choice(tiny_cfg):
    start = tiny_cfg["seeds"]["train"]["start"]
    lab = _labels(tiny_cfg, [start])
    # candidate 0 is ATC's choice (the policy's candidate of ATC rank 0), its label is 0 by
    # definition; candidates past the count are padding (0, zero rows); the 4th candidate
    # (the teacher compares 3) gets the worst evaluated bound
    assert np.all(lab["label"][:, 0] == 0.0)
    four = lab["count"] == 4
    assert four.any()
    np.testing.assert_array_equal(lab["label"][four, 3], np.maximum(lab["label"][four, :3].max(1), 0.0))
    assert lab["x"].shape == (len(lab["count"]), 4, 12) and lab["ctx"].shape == (len(lab["count"]), 35)
    assert np.all(lab["x"][:, 0, 11] == 0.0)  # the atc_rank feature of candidate 0
    assert np.all((lab["count"] >= 2) & (lab["count"] <= 4))  # forced decisions are not labelled
    pad = np.arange(4)[None, :] >= lab["count"][:, None]
    assert np.all(lab["label"][pad] == 0.0) and np.all(lab["x"][pad] == 0.0)
    assert np.any(lab["label"] != 0.0)


def test_futures_must_not_overlap_the_labelled_scenarios(tiny_cfg):
    c = tiny_cfg.replace(seeds={"train": {"count": 60}})
    start = c["seeds"]["train"]["start"]
    with pytest.raises(ValueError, match=r"seeds.train.count: 60 .*\(seed 100010 "):
        _labels_with_futures(c, [start + 10])


def _labels_with_futures(cfg, seeds):
    from sched.learn.search.planner import rule_base
    from sched.learn.search.teacher import make_labels
    from sched.learn.settings import Labelling

    st = Labelling(candidates=3, samples=2, chunk=2, horizon=10, z=1.0)
    return make_labels(cfg, seeds, st, rule_base("atc", cfg["rules"]["atc_k"]), 4, futures=50)


def _config_with(tmp_path, calibrated, **train):
    c = yaml.safe_load(calibrated.config.read_text())
    c["train"].update(train)
    p = tmp_path / "config.yaml"
    p.write_text(yaml.safe_dump(c, sort_keys=False))
    return p


def test_teach_refuses_seeds_outside_its_scenarios(tmp_path, calibrated):
    cfg = _config_with(tmp_path, calibrated, teacher_scenarios=5)
    r = run_here("--config", cfg, "teach", "--seeds", "100003-100009", "--out", tmp_path / "l.npz")
    assert r.returncode == 2
    assert "--seeds: seed 100009 is not one of the teacher's scenarios 100000-100004" in r.stderr
    r = run_here("--config", cfg, "teach", "--seeds", "10-x", "--out", tmp_path / "l.npz")
    assert r.returncode == 2 and "--seeds" in r.stderr and "10-x" in r.stderr
    assert not (tmp_path / "l.npz").exists()


def test_teach_with_no_teacher_scenarios_says_so(tmp_path, calibrated):
    cfg = _config_with(tmp_path, calibrated, teacher_scenarios=0)
    r = run_here("--config", cfg, "teach", "--seeds", "100000-100001", "--out", tmp_path / "l.npz")
    assert r.returncode == 2
    assert "train.teacher_scenarios is 0" in r.stderr
    assert "Traceback" not in r.stderr
