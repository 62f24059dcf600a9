"""Hardening round 6 (issue 58), classes 7 (YAML), 8 (library side), 12, 15 and items of 16.

Each test feeds the class's input to every reader or command it concerns: duplicate and
deeply nested YAML keys, a policy seed of 5,000 digits, times past 2262 explained, a
calibration whose model overflows, products of in-range settings, bad script arguments, and
a replay refused before any window is run.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sched import limits
from sched.config import ConfigError, load_config, validate_config
from sched.errors import SchedError

from .conftest import run_here

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run(args, cwd, timeout=120):
    """(exit status, stdout, stderr) of ``python ARGS`` in ``cwd``: `-m sched ...` in this process
    (conftest.run_here: what a command refuses, without a subprocess's imports), a script in a
    subprocess (its own entry point)."""
    if list(map(str, args[:2])) == ["-m", "sched"]:
        out = run_here(*args[2:], cwd=cwd)
    else:
        out = subprocess.run(
            [PY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=ENV
        )
    return out.returncode, out.stdout, out.stderr


def one_line(code, err, *needles):
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- 7: duplicate YAML keys


DUPLICATES = {
    "section": ("scenario:\n  tasks: 5\nrules: {}\nscenario:\n  tasks: 6\n", "'scenario'", (1, 4)),
    "nested": ("scenario:\n  tasks: 5\n  load: 0.5\n  tasks: 6\n", "'tasks'", (2, 4)),
    "flow": ("plan: {samples: 4, samples: 8}\n", "'samples'", (1, 1)),
    "deeper": ("scenario:\n  kinds:\n    image: {share: 1, share: 0.5}\n", "'share'", (3, 3)),
    "in a list": ("robustness:\n  settings:\n    - {name: a, name: b}\n", "'name'", (3, 3)),
}


@pytest.mark.parametrize("name", DUPLICATES)
def test_a_key_given_twice_is_refused_naming_it_and_both_lines(tmp_path, name):
    text, key, (first, second) = DUPLICATES[name]
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    msg = str(exc.value)
    assert str(path) in msg and key in msg and f"lines {first} and {second}" in msg, msg


def test_a_merge_key_may_still_be_overridden(tmp_path):
    from sched.formats.yaml_input import parse

    data = parse("base: &b {tasks: 5, load: 0.5}\nscenario:\n  <<: *b\n  tasks: 6\n", "x", ConfigError)
    assert data["scenario"] == {"tasks": 6, "load": 0.5}


def test_the_cli_refuses_a_duplicate_in_one_line(tmp_path):
    (tmp_path / "c.yaml").write_text("scenario: {tasks: 5}\nscenario: {tasks: 6}\n")
    code, _, err = run(["-m", "sched", "--config", "c.yaml", "scenario", "--seed", "1"], tmp_path)
    one_line(code, err, "c.yaml", "'scenario'", "lines 1 and 2")


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_deep_nesting_names_the_file(tmp_path, opener):
    closer = "]" if opener == "[" else "}"
    (tmp_path / "deep.yaml").write_text(opener * 5000 + "1" + closer * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"deep\.yaml.*nested more than") as exc:
        load_config(tmp_path / "deep.yaml")
    assert str(limits.MAX_YAML_DEPTH) in str(exc.value)
    code, _, err = run(["-m", "sched", "--config", "deep.yaml", "scenario", "--seed", "1"], tmp_path)
    one_line(code, err, "deep.yaml")


def test_the_shipped_yaml_files_load():
    from sched.config import load_schema

    assert load_config(ROOT / "config.yaml")["plan"]["futures"] >= 1
    assert "properties" in load_schema()


# --------------------------------------------------------------------------- 8: crash paths


QUEUE = [{"id": "a", "estimate_s": 10, "due": 100, "weight": 1}]
LONG_SEED = "ppo-" + "9" * 5000


@pytest.mark.parametrize("policy", [LONG_SEED, "ppo-" + "1" * (limits.MAX_SEED_DIGITS + 1)])
def test_rank_refuses_a_policy_seed_of_too_many_digits(policy):
    from sched.ranking.ranker import rank
    from sched.ranking.tasks import RankInputError

    with pytest.raises(RankInputError) as exc:
        rank(QUEUE, policy=policy, config={})
    msg = str(exc.value)
    assert msg.startswith("policy:") and "MAX_SEED_DIGITS" in msg and len(msg) < 300, msg


@pytest.mark.parametrize("command", ["rank", "simulate", "benchmark"])
def test_the_commands_refuse_a_long_policy_seed_in_one_line(tmp_path, command):
    (tmp_path / "q.json").write_text(json.dumps(QUEUE))
    args = {
        "rank": ["rank", "--policy", LONG_SEED, "q.json"],
        "simulate": ["simulate", "--policy", LONG_SEED, "--seed", "1"],
        "benchmark": ["benchmark", "--policies", f"fifo,atc,{LONG_SEED}"],
    }[command]
    code, _, err = run(["-m", "sched", *args], tmp_path)
    line = one_line(code, err, "polic")
    assert len(line) < 400


def test_train_seeds_are_bounded_as_policy_names_are():
    with pytest.raises(ConfigError, match="train.seeds"):
        validate_config({"train": {"seeds": [10**limits.MAX_SEED_DIGITS]}})


AFTER_2262 = "2300-01-01T00:00:00.5+00:00"
TIMES = {
    "now ISO with fraction": dict(tasks=[{**QUEUE[0], "due": "2000-01-01T00:00:00+00:00"}], now=AFTER_2262),
    "now ISO whole": dict(
        tasks=[{**QUEUE[0], "due": "2000-01-01T00:00:00+00:00"}], now="2300-01-01T00:00:00Z"
    ),
    "now naive with fraction": dict(
        tasks=[{**QUEUE[0], "due": "2000-01-01T00:00:00"}], now="2300-01-01T00:00:00.5"
    ),
    "due and arrival": dict(
        tasks=[{**QUEUE[0], "due": AFTER_2262, "arrival": AFTER_2262}], now="2299-12-31T23:59:59.25+01:00"
    ),
    "numeric arrival beside dates": dict(
        tasks=[{**QUEUE[0], "due": AFTER_2262, "arrival": 1e10 + 0.5}], now="2000-01-01T00:00:00+00:00"
    ),
    "estimate carrying the plan past 2262": dict(
        tasks=[{**QUEUE[0], "estimate_s": 1e10 + 0.5, "due": "2000-01-01T00:00:00Z"}],
        now="2000-01-01T00:00:00Z",
    ),
    "before 1677": dict(tasks=[{**QUEUE[0], "due": "1600-01-01T00:00:00Z"}], now="1600-01-01T00:00:00.5Z"),
    "numeric now past 2262": dict(tasks=[{**QUEUE[0], "due": 1e10 + 0.5}], now=1e10 + 0.25),
}


@pytest.mark.parametrize("name", TIMES)
def test_any_time_rank_accepts_can_be_explained(name):
    from sched.ranking.explain import explain_records
    from sched.ranking.ranker import decide

    d = decide(explain=True, config={}, **TIMES[name])
    rec = explain_records(d.frame)[0]
    assert rec["end_s"] > rec["start_s"]
    if "start_at" in rec:
        from datetime import datetime

        start, end = datetime.fromisoformat(rec["start_at"]), datetime.fromisoformat(rec["end_at"])
        assert (end - start).total_seconds() == pytest.approx(rec["end_s"] - rec["start_s"], abs=1e-5)


@pytest.mark.parametrize(
    "call, field",
    [
        (
            dict(
                tasks=[{**QUEUE[0], "due": "2000-01-01T00:00:00Z", "arrival": 9e11}],
                now="2000-01-01T00:00:00Z",
            ),
            "tasks",
        ),
        (
            dict(
                tasks=[{**QUEUE[0], "estimate_s": 1e11, "due": "9000-01-01T00:00:00Z"}],
                now="9000-01-01T00:00:00Z",
            ),
            "tasks",
        ),
        (dict(tasks=[{**QUEUE[0], "due": "2000-01-01T00:00:00Z"}], now=-1e12), "now"),
    ],
)
def test_times_no_datetime_can_show_are_refused_naming_the_field(call, field):
    from sched.ranking.ranker import rank
    from sched.ranking.tasks import RankInputError

    with pytest.raises(RankInputError) as exc:
        rank(explain=True, config={}, **call)
    assert str(exc.value).startswith(f"{field}:") and "DATETIME_" in str(exc.value)


def test_sched_rank_explains_a_time_after_2262(tmp_path):
    (tmp_path / "q.json").write_text(json.dumps([{**QUEUE[0], "due": AFTER_2262}]))
    code, out, err = run(["-m", "sched", "rank", "--explain", "--now", AFTER_2262, "q.json"], tmp_path)
    assert code == 0, err
    assert "2300-01-01T00:00:00.500000+00:00" in out


def _calibration():
    model = {
        "features": ["pixels", "steps"],
        "coefficients": {"intercept": -13.0, "log_pixels": 0.9, "log_steps": 1.0},
        "residual_sigma": 0.25,
    }
    spec = {"share": 1.0, "distribution": "lognormal", "median_s": 25.0, "sigma": 0.5}
    return {
        "format": "sched-calibration/1",
        "kinds": {"image": {"spec": spec, "median_s": 25.0, "duration_model": model}},
    }


BAD_MODELS = {
    "intercept 800": ("coefficients", "intercept", 800.0),
    "intercept at the edge": ("coefficients", "intercept", 28.0),
    "exponent 50": ("coefficients", "log_pixels", 50.0),
    "exponent -50": ("coefficients", "log_steps", -50.0),
    "sigma 40": (None, "residual_sigma", 40.0),
}


@pytest.mark.parametrize("name", BAD_MODELS)
def test_the_calibration_reader_refuses_a_model_that_overflows(tmp_path, name):
    from sched.data.bench.calibration import CalibrationFileError, load_calibration

    where, key, value = BAD_MODELS[name]
    cal = _calibration()
    model = cal["kinds"]["image"]["duration_model"]
    (model[where] if where else model)[key] = value
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    with pytest.raises(CalibrationFileError) as exc:
        load_calibration(path)
    msg = str(exc.value)
    assert str(path) in msg and key in msg and "\n" not in msg, msg
    # the command line and rank() (the service's path) refuse it the same way
    (tmp_path / "c.yaml").write_text("scenario: {calibration: cal.json}\n")
    code, _, err = run(["-m", "sched", "--config", "c.yaml", "scenario", "--seed", "1"], tmp_path)
    one_line(code, err, "cal.json", key)
    from sched.ranking.ranker import rank

    with pytest.raises(SchedError):
        rank(
            [
                {
                    "id": "a",
                    "kind": "image",
                    "width": 1024,
                    "height": 1024,
                    "steps": 30,
                    "due": 100,
                    "weight": 1,
                }
            ],
            config={"scenario": {"calibration": str(path)}},
        )


def test_a_prediction_beyond_max_seconds_is_refused_not_overflowed():
    from sched.data.bench.calibration import PredictionError, predict_duration

    cal = _calibration()
    assert predict_duration(cal, "image", {"pixels": 1e6, "steps": 30}) < limits.MAX_SECONDS
    for statistic in ("median", "mean"):
        with pytest.raises(PredictionError, match="MAX_SECONDS"):
            predict_duration(cal, "image", {"pixels": 1e300, "steps": 1e300}, statistic)


def test_sched_calibrate_refuses_to_write_a_fit_that_overflows(tmp_path):
    import pandas as pd

    d = pd.read_csv(ROOT / "resources/bench/example_bench.csv")
    d = d[d.kind == "image"].copy()
    px = d.width * d.height
    d["duration_s"] = 10 * (px / px.min()) ** 12 * (d.steps / 20)  # duration ~ pixels^12
    d.to_csv(tmp_path / "steep.csv", index=False)
    code, _, err = run(["-m", "sched", "calibrate", "steep.csv", "--out", "cal.json"], tmp_path, timeout=300)
    one_line(code, err, "steep.csv", "log_pixels", "MAX_MODEL_EXPONENT")
    assert not (tmp_path / "cal.json").exists()


# --------------------------------------------------------------------------- 12: products of settings


PRODUCTS = {
    "plan pool": ({"plan": {"futures": 100000, "horizon": 10000}}, ["plan.futures", "plan.horizon"]),
    "plan grid pool": (
        {"plan": {"futures": 100000, "grid": [{"name": "g", "horizon": 5000}]}},
        ["plan.futures", "plan.grid[0].horizon"],
    ),
    "plan decision": (
        {"plan": {"candidates": 16, "samples": 4096, "horizon": 1000}},
        ["plan.candidates", "plan.samples", "plan.horizon"],
    ),
    "teacher pool": ({"train": {"teacher_horizon": 10000}}, ["train.teacher_horizon"]),
    "round pool": ({"train": {"round_horizon": 10000}}, ["train.round_horizon"]),
    "training lockstep": ({"train": {"num_envs": 100000}}, ["train.num_envs", "scenario.tasks"]),
    "training tasks": ({"train": {"tasks": 1000000}}, ["train.num_envs", "train.tasks"]),
    "rollout buffer": (
        {"train": {"num_envs": 10000, "num_steps": 10000}},
        ["train.num_envs", "train.num_steps", "train.top_k"],
    ),
    "robustness training": (
        {"robustness": {"settings": [{"name": "x", "tasks": 1000000, "train": {"iterations": 1}}]}},
        ["robustness.settings[0].train.num_envs", "robustness.settings[0].tasks"],
    ),
    "studio training": (
        {"studio": {"tasks": 1000000, "train": {"iterations": 1}}},
        ["studio.train.num_envs", "studio.tasks"],
    ),
    "clairvoyant": (
        {"benchmark": {"clairvoyant": {"evaluations": 10**9}}},
        ["benchmark.clairvoyant.evaluations", "scenario.tasks"],
    ),
}


@pytest.mark.parametrize("name", PRODUCTS)
def test_products_of_in_range_settings_are_refused_naming_the_keys(name):
    changes, keys = PRODUCTS[name]
    with pytest.raises(ConfigError) as exc:
        validate_config(json.loads(json.dumps(changes)), "c.yaml")
    msg = str(exc.value)
    assert msg.startswith("c.yaml:") and "sched.limits.MAX_" in msg, msg
    for key in keys:
        assert key in msg, msg


def test_the_shipped_config_and_its_full_profile_pass():
    cfg = load_config(ROOT / "config.yaml")
    from sched.learn.search.planner import grid_names

    assert len(grid_names(cfg, "full")) >= len(grid_names(cfg, "default"))
    validate_config(cfg.to_dict(), "again")  # its robustness and studio settings, every plan.grid setting


def test_a_plan_setting_beyond_the_product_is_refused_before_any_pool():
    from sched.learn.search.planner import PlanError, check_settings

    settings = dict(load_config(ROOT / "config.yaml").plan.to_dict(), futures=100000, horizon=10000)
    with pytest.raises(PlanError, match=r"futures.*horizon.*MAX_FUTURE_VALUES"):
        check_settings(settings, "winner.json: field plan.settings")


def test_the_teacher_futures_restated_in_limits_agree():
    pytest.importorskip("torch")
    from sched.learn.search.teacher import FUTURES

    assert FUTURES == limits.TEACHER_FUTURES


def test_sched_serve_and_rank_refuse_a_product_config(tmp_path):
    (tmp_path / "c.yaml").write_text("plan: {futures: 100000, horizon: 10000}\n")
    (tmp_path / "q.json").write_text(json.dumps(QUEUE))
    code, _, err = run(["-m", "sched", "--config", "c.yaml", "rank", "--policy", "plan", "q.json"], tmp_path)
    one_line(code, err, "plan.futures", "plan.horizon")


# --------------------------------------------------------------------------- 15: shipped scripts


SCRIPT_PROBES = [
    ("resources/history/make_trace_history.py", ["out.csv", "--days", "0"]),
    ("resources/history/make_trace_history.py", ["out.csv", "--days", "x"]),
    ("resources/history/make_trace_history.py", ["out.csv", "--seed", "-1"]),
    ("resources/history/make_trace_history.py", ["no/such/folder/out.csv"]),
    ("resources/history/make_trace_history.py", []),
    ("resources/history/make_example_history.py", ["--bogus"]),
    ("resources/bench/make_example_logs.py", ["--bogus"]),
    ("benchmarks/compare_sb3.py", ["--threads", "0"]),
    ("benchmarks/deadline_sync.py", ["--jobs", "0"]),
    ("benchmarks/farm_tardiness.py", ["--scenarios", "0"]),
    ("benchmarks/heavy_tail_diagnosis.py", ["--config", "c.yaml", "--tuned", "t.json", "--scenarios", "-1"]),
    ("benchmarks/pins_cost.py", ["--iterations", "0"]),
    ("benchmarks/plan_diagnosis.py", ["a=b.csv", "--worst", "x"]),
    ("benchmarks/plan_latency.py", ["--queues", "0"]),
    ("benchmarks/plan_quality.py", ["--base", "atc", "--samples", "0"]),
    ("benchmarks/ppo_from_start.py", ["--iterations", "-3"]),
    ("benchmarks/rule_mix.py", ["--seeds", "-1"]),
    ("benchmarks/serve_deadline.py", ["--deadline-ms", "nan"]),
    ("benchmarks/serve_load.py", ["--clients", "0"]),
]


@pytest.mark.parametrize(
    "script, args", SCRIPT_PROBES, ids=lambda v: v if isinstance(v, str) else " ".join(v)
)
def test_each_shipped_script_refuses_a_bad_argument_in_one_line(tmp_path, script, args):
    code, _, err = run([ROOT / script, *args], tmp_path)
    one_line(code, err)
    assert not (tmp_path / "out.csv").exists()


def test_make_trace_history_still_writes(tmp_path):
    code, out, err = run([ROOT / "resources/history/make_trace_history.py", "h.csv", "--days", "1"], tmp_path)
    assert code == 0, err
    assert (tmp_path / "h.csv").read_text().count("\n") > 1


def test_a_script_reads_its_yaml_through_the_one_parser(tmp_path):
    (tmp_path / "c.yaml").write_text("plan: {futures: 10}\nplan: {futures: 20}\n")
    code, _, err = run(
        [ROOT / "benchmarks/plan_latency.py", "--config", "c.yaml", "--plan", "samples=4"], tmp_path
    )
    one_line(code, err, "c.yaml", "'plan'")


# --------------------------------------------------------------------------- 16: late validation


def test_replay_refuses_its_policies_before_cutting_any_window(tmp_path):
    # no history, no calibration's kinds to match: a refusal after reading them would name those
    (tmp_path / "cal.json").write_text(json.dumps(_calibration()))
    code, _, err = run(
        ["-m", "sched", "replay", "no-such-history.csv", "--policies", "fifo", "--calibration", "cal.json"],
        tmp_path,
    )
    one_line(code, err, "--policies", "atc")
    code, _, err = run(
        ["-m", "sched", "replay", "no-such-history.csv", "--window-hours", "0", "--calibration", "cal.json"],
        tmp_path,
    )
    one_line(code, err, "--window-hours")


def test_simulate_refuses_its_policy_before_any_scenario(tmp_path):
    code, _, err = run(["-m", "sched", "simulate", "--policy", "nope", "--scenario", "missing.csv"], tmp_path)
    one_line(code, err, "--policy")
