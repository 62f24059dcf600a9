"""GPUs of different speeds: the machines forms, the load, rank(), the features, the learned policy.

The simulators' agreement with speeds is in tests/test_sim_equivalence.py.
"""

import json
import math

import numpy as np
import pytest
import torch

from sched.config import ConfigError, validate_config
from sched.data import machines as MA
from sched.data.scenario import draw, scenario_model
from sched.learn.policy import features as F
from sched.learn.policy import kernel
from sched.limits import MAX_MACHINES
from sched.ranking.ranker import rank
from sched.ranking.tasks import RankInputError
from sched.sim import core

from .conftest import run_cli
from .test_kernel import make_policy, make_queue, reference_rollout

# --------------------------------------------------------------------------- the forms


def test_every_form_gives_the_speeds(tmp_path):
    csv = tmp_path / "farm.csv"
    csv.write_text("name,speed\nrtx-a,1.0\nrtx-b,1.0\nold-1,0.6\nold-2,0.6\n")
    want = [1.0, 1.0, 0.6, 0.6]
    for form in ("2x1.0,2x0.6", " 2 x 1.0 , 2X0.6 ", str(csv), csv, [1.0, 1, 0.6, "0.6"], np.array(want)):
        assert MA.speeds(form).tolist() == want, form
    for form in (3, "3", 3.0, np.int64(3), "3x1"):
        assert MA.speeds(form).tolist() == [1.0] * 3, form
    assert MA.total("2x1.0,2x0.6") == pytest.approx(3.2)
    assert MA.speeds(MA.spec_of(want)).tolist() == want
    assert MA.describe([1.0] * 4) == "4 identical GPUs" and MA.describe(want) == "2x1.0,2x0.6"


@pytest.mark.parametrize(
    "value, words",
    [
        ("2x0", "item 1 '2x0': speed must be"),
        ("2x-1", "speed must be"),
        ("2xnan", "speed must be"),
        ("2xinf", "speed must be"),
        ("1x1.0,2x0", "item 2"),
        ("", "empty"),
        ("2x1.0,,1x1", "empty item 2"),
        ("0x1.0", "count must be >= 1"),
        ("x1.0", "expected NxSPEED"),
        ("2x", "speed is not a number"),
        (0, "whole count >= 1"),
        (-3, "whole count >= 1"),
        (MAX_MACHINES + 1, "MAX_MACHINES"),
        (f"{MAX_MACHINES}x1,1x1", "MAX_MACHINES"),
        ("99999999999999999999x1", "MAX_MACHINES"),
        ([], "empty list"),
        ([1.0, 0.0], "machines[1]: speed must be"),
        ([1.0, float("nan")], "machines[1]"),
        (True, "expected a count"),
        ({"a": 1}, "expected a count"),
        (2.5, "expected a count"),
    ],
)
def test_bad_machines_are_refused_naming_the_field(value, words):
    with pytest.raises(MA.MachinesError, match="^machines") as e:
        MA.speeds(value, "machines")
    assert words in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "text, words",
    [
        ("gpu,speed\na,1\n", "header name,speed"),
        ("name,speed\n", "no GPU rows"),
        ("name,speed\na,1\na,2\n", "row 3: name 'a' repeated"),
        ("name,speed\na,0\n", "row 2: speed: speed must be"),
        ("name,speed\na\n", "row 2: expected a name and a speed"),
    ],
)
def test_bad_machines_csv_is_refused_naming_the_row(tmp_path, text, words):
    p = tmp_path / "m.csv"
    p.write_text(text)
    with pytest.raises(MA.MachinesError, match=f"^--machines {p}") as e:
        MA.speeds(str(p), "--machines")
    assert words in str(e.value)


def test_the_config_takes_a_spec_and_refuses_a_bad_one():
    cfg = validate_config({"scenario": {"machines": "2x1.0,2x0.6"}}, "c.yaml")
    assert cfg["scenario"]["machines"] == "2x1.0,2x0.6"
    with pytest.raises(ConfigError, match=r"^c.yaml: scenario.machines item 2 '2x0': speed must be"):
        validate_config({"scenario": {"machines": "1x1,2x0"}}, "c.yaml")
    bad = {"robustness": {"settings": [{"name": "mixed", "machines": "4xfast"}]}}
    with pytest.raises(ConfigError, match=r"robustness.settings\[0\].machines item 1"):
        validate_config(bad, "c.yaml")


# --------------------------------------------------------------------------- the load


def test_the_load_divides_by_the_sum_of_the_speeds(cfg):
    # rho = lambda E[p] / sum(v): 2x1.0,2x0.5 is the capacity of 3 speed-1 GPUs
    a = draw(scenario_model(cfg), 4, tasks=50, machines="2x1.0,2x0.5")
    b = draw(scenario_model(cfg), 4, tasks=50, machines=3)
    c = draw(scenario_model(cfg), 4, tasks=50, machines=4)
    assert np.array_equal(a["arrival"], b["arrival"])
    assert not np.array_equal(a["arrival"], c["arrival"])


# --------------------------------------------------------------------------- rank()

TASKS = [
    {"id": "long", "estimate_s": 800.0, "weight": 1.0, "due": 900.0},
    {"id": "short", "estimate_s": 100.0, "weight": 1.0, "due": 400.0},
    {"id": "mid", "estimate_s": 300.0, "weight": 2.0, "due": 350.0},
]


def test_rank_takes_every_machines_form(tmp_path, cfg):
    csv = tmp_path / "farm.csv"
    csv.write_text("name,speed\nfast,2.0\nslow,0.5\n")
    forms = ("1x2.0,1x0.5", str(csv), [{"speed": 2.0}, {"speed": 0.5, "free_at": 0.0}])
    plans = [rank(TASKS, now=0.0, policy="atc", machines=m, explain=True, config=cfg) for m in forms]
    for p in plans[1:]:
        assert p.equals(plans[0])
    p = plans[0]
    # the first decision is the fast GPU's (machine 0), and every end is start + estimate / speed
    assert p["machine"].iloc[0] == 0
    speed = np.array([2.0, 0.5])[p["machine"].to_numpy()]
    est = {t["id"]: t["estimate_s"] for t in TASKS}
    ends = p["start_s"].to_numpy() + np.array([est[i] for i in p["id"]]) / speed
    assert np.allclose(p["end_s"].to_numpy(), ends)
    # free times still work, alone or with speeds
    assert rank(TASKS, now=0.0, policy="atc", machines=[0, 50], config=cfg)
    busy = rank(
        TASKS, now=0.0, policy="atc", machines=[{"free_at": 500.0, "speed": 4.0}], explain=True, config=cfg
    )
    assert busy["start_s"].min() == 500.0


@pytest.mark.parametrize(
    "machines, words",
    [
        ("2x0", "machines item 1 '2x0': speed must be"),
        ([{"speed": 0}], "machines[0].speed: speed must be"),
        ([{"speed": float("nan")}], "machines[0].speed"),
        ([{"free_at": "soon"}], "machines[0].free_at"),
        ([{"fast": True}], "machines[0]: unknown field 'fast'"),
        ("", "machines: empty"),
        ([], "machines: empty list"),
    ],
)
def test_rank_refuses_bad_machines_naming_the_field(cfg, machines, words):
    with pytest.raises(RankInputError) as e:
        rank(TASKS, now=0.0, policy="atc", machines=machines, config=cfg)
    assert words in str(e.value)


def test_sched_rank_machines_option(tmp_path):
    # the CSV and free-time forms go through the same rank() call (tested above)
    tasks = tmp_path / "q.json"
    tasks.write_text(json.dumps(TASKS))
    r = run_cli("rank", tasks, "--policy", "atc", "--machines", "1x2.0,1x0.5", "--explain")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan[0]["machine"] == 0 and {p["machine"] for p in plan} == {0, 1}
    r = run_cli("rank", tasks, "--policy", "atc", "--machines", "2x0.0")
    assert r.returncode == 2 and "machines item 1 '2x0.0': speed must be" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    from sched.commands.rank import parse_machines

    assert parse_machines("0,1800") == [0.0, 1800.0] and parse_machines("2x1.0,2x0.6") == "2x1.0,2x0.6"
    assert parse_machines("3") == 3 and parse_machines(" 1800,") == [1800.0]


def test_sched_simulate_with_speeds(tmp_path):
    out = tmp_path / "s.csv"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("scenario: {tasks: 40}\n")
    r = run_cli(
        "--config",
        cfg,
        "simulate",
        "--policy",
        "atc",
        "--seed",
        "1",
        "--machines",
        "1x1.0,1x0.5",
        "--out",
        out,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["machines"] == "1x1.0,1x0.5"
    import pandas as pd

    s = pd.read_csv(out)
    v = np.array([1.0, 0.5])[s["machine"].to_numpy()]
    assert np.allclose(s["end_s"], s["start_s"] + s["duration_s"] / v, rtol=1e-12)
    r = run_cli("--config", cfg, "simulate", "--policy", "atc", "--seed", "1", "--machines", "2x-1")
    assert r.returncode == 2 and "--machines item 1 '2x-1': speed must be" in r.stderr


# --------------------------------------------------------------------------- the features


def _encode(sc, speeds):
    state, _ = core.pack([sc], speeds)
    core.advance_batch(state, True)
    assert state.pending[0] >= 0
    enc = F.Encoder("tasks", 2.0, 600.0, 0.85)
    return state, enc(state)


def test_features_read_the_estimates_on_the_deciding_gpu():
    rng = np.random.default_rng(2)
    arr, dur, est, w, due = make_queue(rng, 30, "now")
    v = 0.4
    # on one GPU of speed v, the per-task features are those of the estimates p / v at speed 1
    _, slow = _encode((arr, dur, est, w, due), [v])
    _, scaled = _encode((arr, dur / v, est / v, w, due), [1.0])
    assert np.allclose(slow.x, scaled.x, rtol=1e-5, atol=1e-6)
    assert slow.globals_[0, F.GLOBAL_FEATURES.index("speed_rel")] == 1.0


def test_speed_rel_tells_the_deciding_gpu():
    rng = np.random.default_rng(3)
    sc = make_queue(rng, 20, "now")
    # four free GPUs of speeds 0.5, 2, 1, 0.5 (mean 1): GPU 0 decides first, at half the mean
    state, obs = _encode(sc, [0.5, 2.0, 1.0, 0.5])
    assert state.pending[0] == 0
    assert obs.globals_[0, F.GLOBAL_FEATURES.index("speed_rel")] == pytest.approx(0.5)
    # GPU 1 (speed 2) busy at first: the decision at its free time is its own, at twice the mean
    state, _ = core.pack([sc], [0.5, 2.0, 1.0, 0.5], machine_free=[1e9, 0.0, 1e9, 1e9])
    core.advance_batch(state, True)
    obs = F.Encoder("tasks", 2.0, 600.0, 0.85)(state)
    assert state.pending[0] == 1
    assert obs.globals_[0, F.GLOBAL_FEATURES.index("speed_rel")] == pytest.approx(2.0)
    _, same = _encode(sc, 4)
    assert same.globals_[0, F.GLOBAL_FEATURES.index("speed_rel")] == 1.0


def test_a_learned_policy_on_mixed_gpus_is_the_reference_schedule():
    """On GPUs of different speeds the compiled decision reads p / v on the deciding GPU, as
    the plain reference does; the batch (benchmark) and one queue (rank) agree."""
    policy = make_policy(16, seed=4)
    rng = np.random.default_rng(9)
    sc = make_queue(rng, 40, "now")
    speeds = [1.0, 0.6, 1.7]
    one = kernel.run_one(policy, sc, speeds)
    batched = kernel.run(policy, [sc], speeds)[0]
    assert all(np.array_equal(a, b) for a, b in zip(one, batched))
    assert np.array_equal(one[0], reference_rollout(policy, sc, speeds))
    assert set(one[2].tolist()) == {0, 1, 2}


def test_policy_files_of_an_earlier_version_are_refused_naming_it(tmp_path):
    from sched.learn.policy import policy_file as PF

    policy = make_policy(16, seed=5)
    path = tmp_path / "old.pt"
    blob = {"format": PF.FORMAT, "version": 1, "meta": policy.meta, "state_dict": policy.net.state_dict()}
    torch.save(blob, path)
    with pytest.raises(PF.PolicyFileError, match="field version: policy file version 1, expected 3.*retrain"):
        PF.load(path)
    meta_bad = dict(policy.meta, global_features=["log_qlen"])
    torch.save(dict(blob, version=PF.VERSION, meta=meta_bad), path)
    with pytest.raises(PF.PolicyFileError, match="trained on other global_features"):
        PF.load(path)


def test_the_clairvoyant_search_refuses_mixed_speeds():
    from sched.sim import clairvoyant

    sc = ([0.0, 1.0], [2.0, 2.0], [2.0, 2.0], [1.0, 1.0], [3.0, 3.0])
    assert math.isfinite(clairvoyant.sequence_cost([0, 1], sc[0], sc[1], sc[3], sc[4], "2x1.0"))
    with pytest.raises(MA.MachinesError, match="identical GPUs only"):
        clairvoyant.sequence_cost([0, 1], sc[0], sc[1], sc[3], sc[4], "1x1.0,1x0.5")


@pytest.mark.parametrize("machines", ["²", "²x1.0", "1x1.0,²x0.5", "١٢"])
def test_a_unicode_digit_in_machines_is_refused_naming_the_field(machines):
    from sched import rank
    from sched.ranking.tasks import RankInputError

    from .test_rank import NOW, static_queue

    with pytest.raises(RankInputError, match="^machines"):
        rank(static_queue(seed=1, n=5), now=NOW, machines=machines)


def test_sched_rank_names_the_option_of_a_unicode_digit_in_machines(tmp_path):
    from .test_hostile_input import assert_one_line_error
    from .test_rank import NOW
    from .test_verdict_files import probe, rank_project

    rank_project(tmp_path)
    code, _, err = probe("rank", "q.json", "--now", NOW, "--machines", "²x1.0", cwd=tmp_path)
    assert_one_line_error(code, err, "--machines", "'²x1.0'")
