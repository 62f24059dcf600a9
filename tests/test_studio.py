"""The studio setting (issue 24): the held-out split of the history, the generated load and
span, the held-out days replayed as one stream, the held-out gate and the setting record."""

import copy
import math

import numpy as np
import pandas as pd
import pytest

from sched import files, setting
from sched.config import ConfigError, validate_config
from sched.data.model import DAY_MARGIN, ModelError, day_tasks
from sched.data.objective import weighted_tardiness
from sched.data.scenario import draw, scenario_model
from sched.data.workload.history import HistoryError
from sched.data.workload.replay import held_out_stream
from sched.data.workload.split import held_out_split
from sched.data.workload.workload_fit import calibrate_workload
from sched.evaluate.policies import competes, parse_policies, policy_key, rule_spec
from sched.evaluate.runs import run_on_stream, schedule_policy
from sched.verdict.held_out import held_out_gate
from tests.conftest import ROOT
from tests.test_workload_replay import _history as history_csv

DAY = 86400.0
MONDAY = 1717372800.0  # 2024-06-03T00:00:00Z
HISTORY = [ROOT / "resources/history/example_history.csv", ROOT / "resources/history/example_history.jsonl"]


@pytest.fixture(scope="module")
def wcfg(cfg, calibrated):
    c = cfg.replace(scenario={"calibration": str(calibrated.calibration)})
    return c


def _history(path, days, per_day=40, seed=0):
    """The replay tests' history (Monday 2024-06-03 on), every task measured, durations up to an hour."""
    return history_csv(path, days, per_day, seed, durations=(60, 4000), unmeasured=False)[0]


# ------------------------------------------------------------------ the split


def test_split_keeps_validation_days_before_the_held_out_ones():
    cut, split = held_out_split(MONDAY + 100, MONDAY + 27 * DAY + 5000, 7, validation_days=7)
    assert cut == MONDAY + 14 * DAY  # the fit reads neither period
    assert split["fitted"] == ["2024-06-03", "2024-06-16"]
    assert split["validation"] == ["2024-06-17", "2024-06-23"]
    assert split["held_out"] == ["2024-06-24", "2024-06-30"] and split["note"] is None


@pytest.mark.parametrize("days, why", [(20, "leave fewer than 7"), (28, "hold no task with a measured")])
def test_too_little_history_for_validation_days_says_so_in_one_line(days, why):
    t0, t1 = MONDAY + 100, MONDAY + (days - 1) * DAY + 5000
    first = int(t0 // DAY)
    measured = set(range(first, first + days)) - set(range(first + days - 14, first + days - 7))
    cut, split = held_out_split(t0, t1, 7, measured, validation_days=7)
    # the held-out days stay; the fit reads every day before them, as without validation days
    assert cut == MONDAY + (days - 7) * DAY and split["validation"] is None
    assert split["held_out"] is not None and why in split["note"] and "\n" not in split["note"]
    assert "generated validation scenarios alone" in split["note"]


def test_split_holds_out_the_last_days():
    cut, split = held_out_split(MONDAY + 100, MONDAY + 27 * DAY + 5000, 7)
    assert cut == MONDAY + 21 * DAY
    assert split["fitted"] == ["2024-06-03", "2024-06-23"] and split["held_out"] == [
        "2024-06-24",
        "2024-06-30",
    ]
    assert split["history_days"] == 28 and split["note"] is None


def test_short_history_is_fitted_whole_and_says_so_in_one_line():
    cut, split = held_out_split(MONDAY, MONDAY + 9 * DAY + 10, 7)
    assert math.isinf(cut) and split["held_out"] is None
    assert "10 days" in split["note"] and "fewer than 14" in split["note"] and "\n" not in split["note"]


@pytest.mark.parametrize(
    "days, test_days, match",
    [(20, 20, "nothing would be left"), (20, 25, "spans 20 days"), (15, 10, "less than a week")],
)
def test_bad_test_days_refused_naming_the_field(days, test_days, match):
    with pytest.raises(HistoryError, match=match) as exc:
        held_out_split(MONDAY, MONDAY + (days - 1) * DAY + 10, test_days)
    assert str(exc.value).startswith("workload.test_days:") and "\n" not in str(exc.value)


def test_test_days_must_be_positive(cfg):
    with pytest.raises(ConfigError, match="workload.test_days"):
        validate_config({"workload": {"test_days": 0}}, "test")


def test_fit_reads_only_the_days_before_the_held_out_ones(tmp_path, wcfg, calibrated):
    # 15 days, 7 held out: the same fit as the first 8 days alone (too short to hold any out)
    full = _history(tmp_path / "full.csv", 15, seed=3)
    frame = pd.read_csv(full)
    frame[frame["submitted_at"] < MONDAY + 8 * DAY].to_csv(tmp_path / "first8.csv", index=False)
    a = calibrate_workload([full], wcfg, calibrated.calibration)
    b = calibrate_workload([tmp_path / "first8.csv"], wcfg, calibrated.calibration)
    assert a.data["split"]["held_out"] == ["2024-06-11", "2024-06-17"]
    assert b.data["split"]["held_out"] is None and "fewer than 14" in b.data["split"]["note"]
    assert a.data["tasks"] == b.data["tasks"] == 8 * 40
    for section in ("arrivals", "priorities", "deadlines"):
        assert a.data[section] == b.data[section]
    assert a.stats[0].bad_count == 0  # held-out records are not malformed


# ------------------------------------------------------------------ generated scenarios


@pytest.fixture(scope="module")
def studio_cfg(wcfg, calibrated, tmp_path_factory):
    fitted = calibrate_workload(HISTORY, wcfg, calibrated.calibration)
    path = tmp_path_factory.mktemp("studio") / "workload.json"
    files.write_json(path, fitted.data)
    c = wcfg.replace(scenario={"workload": str(path)})
    c = c.replace(scenario={"tasks": "day"})
    return validate_config(c, "test"), fitted.data


def test_generated_load_matches_the_history(studio_cfg):
    cfg, w = studio_cfg
    model = scenario_model(cfg)
    d = draw(model, 1, tasks=20000)
    ld = w["load"]
    # durations scaled to the history's mean measured duration (not the bench calibration's)
    assert d["duration"].mean() == pytest.approx(ld["mean_measured_duration_s"], rel=0.04)
    assert model.mean_duration == pytest.approx(ld["mean_measured_duration_s"], rel=1e-9)
    unscaled = scenario_model(cfg.replace(scenario={"workload": None, "tasks": 400}))
    assert abs(unscaled.mean_duration / ld["mean_measured_duration_s"] - 1) > 0.05  # the calibration differs
    # generated load (work per hour over the capacity) against the history's, over about 5 weeks
    hours = d["arrival"][-1] / 3600.0
    assert d["duration"].sum() / 3600.0 / hours / model.capacity == pytest.approx(
        ld["implied_load_measured"], rel=0.06
    )


def test_day_scenarios_span_a_whole_day(studio_cfg):
    cfg, w = studio_cfg
    model = scenario_model(cfg)
    rate = np.array(w["arrivals"]["rate_per_hour"])
    busiest = max(np.roll(rate, -h)[:24].sum() for h in range(168))
    assert model.tasks == math.ceil(DAY_MARGIN * busiest) > 400
    spans = [draw(model, s)["arrival"][-1] for s in range(40)]
    assert min(spans) >= DAY
    with pytest.raises(ModelError, match="scenario.tasks"):
        day_tasks(None)


# ------------------------------------------------------------------ the held-out stream


def test_stream_keeps_the_backlog_over_midnight_and_counts_each_task_on_its_day(tmp_path, wcfg, calibrated):
    path = _history(tmp_path / "h.csv", 15, per_day=60, seed=5)
    stream = held_out_stream([path], wcfg, calibrated.calibration, ["2024-06-11", "2024-06-17"])
    sub = pd.read_csv(path)["submitted_at"].to_numpy()
    assert stream.days[0] == "2024-06-11" and len(stream.days) == 7
    counts = np.bincount(stream.day[stream.day >= 0], minlength=7)
    assert counts.tolist() == [60] * 7
    assert (stream.day == -1).sum() == ((sub >= MONDAY + 7 * DAY) & (sub < MONDAY + 8 * DAY)).sum()
    arr = stream.scenario.arrays
    assert arr[0][0] >= 0 and arr[0][-1] < 8 * DAY  # times from the warm-up day's midnight
    specs = {"fifo": rule_spec("fifo"), "atc": rule_spec("atc", 2.0)}
    frame = run_on_stream(wcfg, stream.scenario, stream.day, 7, specs)
    ((start, end, _),) = schedule_policy(specs["fifo"], [stream.scenario], [arr], 1, wcfg)
    # one schedule of the whole stream: a backlog at midnight is still queued after it
    assert np.any((stream.day[:-1] < stream.day[1:]) & (end[:-1] > arr[0][1:]))
    fifo = frame[frame.policy == "fifo"].sort_values("scenario_seed")
    for d in range(7):
        m = stream.day == d
        assert fifo.total_weighted_tardiness_s.iloc[d] == pytest.approx(
            weighted_tardiness(end[m], arr[4][m], arr[3][m]), rel=1e-12
        )
    assert fifo.tasks.tolist() == [60] * 7


# ------------------------------------------------------------------ the gate


def _held(days, ppo_factor, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.uniform(100, 200, days) * 1000
    rows = []
    for name, f in (("fifo", 3.0), ("atc", 1.1), ("wmdd", 1.0), ("ppo-1", ppo_factor)):
        for d in range(days):
            rows.append(
                {
                    "scenario_seed": d,
                    "policy": name,
                    "total_weighted_tardiness_s": base[d] * f,
                    "mean_tardiness_s": 1.0,
                    "p90_tardiness_s": 1.0,
                    "max_tardiness_s": 1.0,
                    "tardy_fraction": 0.5,
                    "mean_flow_time_s": 1.0,
                    "tasks": 100,
                }
            )
    return pd.DataFrame(rows)


BENCH = {"bootstrap_resamples": 2000, "bootstrap_seed": 1, "ci_level": 0.95}
SPECS = {
    "wmdd": rule_spec("wmdd"),
    "atc": rule_spec("atc", 2.0),
    "fifo": rule_spec("fifo"),
    "ppo-1": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "p.pt"},
}


def _winner():
    return {
        "policy": "ppo-1",
        "rule": None,
        "atc_k": None,
        "policy_file": "p.pt",
        "policy_sha256": None,
        "significant": True,
        "runner_up": "wmdd",
        "mean_difference_pct": -5.0,
        "ci95_pct": [-7, -3],
        "reason": "chosen.",
    }


def test_gate_replaces_a_winner_significantly_worse_on_the_held_out_days():
    w = held_out_gate(_winner(), _held(7, 1.2), SPECS, BENCH)
    assert w["policy"] == "wmdd" and w["rule"] == "wmdd" and w["policy_file"] is None
    assert w["held_out"]["deployed"] is False and w["held_out"]["best_rule"] == "wmdd"
    assert w["held_out"]["mean_difference_pct"] == pytest.approx(20.0)
    assert "significantly worse" in w["reason"] and w["runner_up"] == "ppo-1"


def test_gate_keeps_a_winner_not_significantly_worse():
    held = _held(7, 1.0)
    held.loc[(held.policy == "ppo-1") & (held.scenario_seed == 0), "total_weighted_tardiness_s"] *= 1.5
    held.loc[(held.policy == "ppo-1") & (held.scenario_seed == 1), "total_weighted_tardiness_s"] *= 0.6
    w = held_out_gate(_winner(), held, SPECS, BENCH)
    assert w["policy"] == "ppo-1" and w["held_out"]["deployed"] is True
    lo, hi = w["held_out"]["ci95_pct"]
    assert lo <= 0 <= hi


# ------------------------------------------------------------------ names and the setting record


def test_main_policies_are_benchmarked_never_winners(cfg):
    names = parse_policies("atc,main-ppo-2,ppo-2,fifo", cfg)
    assert names == ["fifo", "atc", "ppo-2", "main-ppo-2"]
    assert not competes("main-ppo-2") and competes("ppo-2") and not competes("ppo-2-warm")
    assert policy_key("main-ppo-1") < policy_key("plan")


def test_setting_record_names_the_workload_and_round_trips(studio_cfg):
    cfg, w = studio_cfg
    rec = setting.of_config(cfg)
    # three periods: fitted, validation (workload.validation_days = 7) and held out
    assert rec["workload"]["fitted"] == ["2024-06-03", "2024-06-16"]
    assert rec["workload"]["validation"] == ["2024-06-17", "2024-06-23"]
    assert rec["workload"]["held_out"] == ["2024-06-24", "2024-06-30"]
    assert rec["workload"]["history"] == ["example_history"]
    assert rec["load"] == pytest.approx(w["load"]["implied_load_measured"])
    assert setting.read(rec, "winner.json setting") == rec
    bad = copy.deepcopy(rec)
    bad["workload"]["sha256"] = "x" * 64
    with pytest.raises(setting.SettingError, match="workload.sha256"):
        setting.read(bad, "winner.json setting")


def test_stream_starts_at_its_time_of_week(tmp_path, wcfg, calibrated):
    # the stream starts at the warm-up day's midnight: a Monday (2024-06-10) here
    path = _history(tmp_path / "h.csv", 15, per_day=20, seed=6)
    stream = held_out_stream([path], wcfg, calibrated.calibration, ["2024-06-11", "2024-06-17"])
    assert stream.scenario.week_start_s == 0.0
    stream = held_out_stream([path], wcfg, calibrated.calibration, ["2024-06-12", "2024-06-14"])
    assert stream.scenario.week_start_s == DAY  # Tuesday 00:00


# ------------------------------------------------------------------ the workflow


def test_the_workflow_builds_the_studio_only_when_the_fit_holds_days_out(tmp_path):
    from tests.test_workflow import SMALL, planned_jobs, snakemake, workspace

    cfg = copy.deepcopy(SMALL)
    cfg["workload"] = {"history": ["history.csv"], "min_tasks": 50}
    ws = workspace(tmp_path / "w", cfg)
    # 15 days hold 7 out but leave too few to keep validation days; 10 days hold none out (the
    # same project: the second history refits the workload, the calibration is kept)
    for days, built in ((15, True), (10, False)):
        _history(ws / "history.csv", days, per_day=20)
        r = snakemake(ws, "-j1", "results/workload.json")
        assert r.returncode == 0, r.output[-3000:]
        log = (ws / "results/logs/calibrate-workload.log").read_text()
        notes = [line for line in log.splitlines() if "note:" in line]
        # a short history: the step says so in one line, and no studio job is planned
        assert len(notes) == 1
        said = "no validation days (workload.validation_days = 7)" if built else "studio setting is skipped"
        assert said in notes[0]
        plan = planned_jobs(ws)
        assert ("studio_benchmark" in plan) == built and ("studio_replay" in plan) == built
        assert plan.get("report") == 1


@pytest.mark.parametrize("days", [["2024-13-01", "2024-13-07"], ["2024-06-30", "2024-06-24"], "2024-06-24"])
def test_a_setting_with_impossible_held_out_days_is_refused(studio_cfg, days):
    rec = setting.of_config(studio_cfg[0])
    rec["workload"]["held_out"] = days
    with pytest.raises(setting.SettingError, match="workload.held_out"):
        setting.read(rec, "winner.json setting")


# -------------------------------------------- issue 32: empty days, duplicate ids, another history


def _closed_on_sundays(tmp_path, days=27, per_day=40, seed=7):
    """A studio closed on Sundays: the replay tests' history from Monday 2024-06-03 to Saturday
    2024-06-29, no task submitted on a Sunday."""
    full = _history(tmp_path / "full.csv", days, per_day=per_day, seed=seed)
    frame = pd.read_csv(full)
    sunday = ((frame["submitted_at"] - MONDAY) // DAY) % 7 == 6
    path = tmp_path / "closed-on-sundays.csv"
    frame[~sunday].to_csv(path, index=False)
    return path


def test_an_empty_held_out_day_is_named_by_the_fit_and_skipped_by_the_replay(tmp_path, wcfg, calibrated, cli):
    path = _closed_on_sundays(tmp_path)
    workload = tmp_path / "workload.json"
    r = cli("calibrate-workload", path, "--out", workload)
    assert r.returncode == 0, r.stderr
    assert "note: held-out day(s) 2024-06-23 hold no task with a measured duration" in r.stderr
    fit = calibrate_workload([path], wcfg, calibrated.calibration).data
    split = fit["split"]
    # the last 7 calendar days, Sunday 2024-06-23 among them: the fit says so
    assert split["held_out"] == ["2024-06-23", "2024-06-29"]
    assert split["note"] == (
        "held-out day(s) 2024-06-23 hold no task with a measured duration: sched replay --held-out "
        "skips them, 6 of the 7 held-out days (2024-06-23 to 2024-06-29) judged"
    )
    stream = held_out_stream([path], wcfg, calibrated.calibration, split["held_out"])
    assert stream.skipped == ["2024-06-23"]
    assert stream.days == ["2024-06-24", "2024-06-25", "2024-06-26", "2024-06-27", "2024-06-28", "2024-06-29"]
    assert np.bincount(stream.day[stream.day >= 0]).tolist() == [40] * 6
    # the warm-up is the Saturday before (the day before the first held-out day is the fit's)
    assert (stream.day == -1).sum() == 40
    frame = run_on_stream(wcfg, stream.scenario, stream.day, len(stream.days), {"fifo": rule_spec("fifo")})
    assert frame.scenario_seed.tolist() == list(range(6)) and frame.tasks.tolist() == [40] * 6
    # `sched replay --held-out`: the day skipped, said in one line, six rows a policy
    out = tmp_path / "replay"
    r = cli("replay", "--held-out", workload, path, "--policies", "fifo,atc", "--out", out)
    assert r.returncode == 0, r.stderr
    assert (
        "sched replay: note: held-out day(s) 2024-06-23 hold no task with a measured duration: skipped, "
        "6 of the 7 held-out days judged (the stream runs on through them)"
    ) in r.stderr
    assert pd.read_csv(out / "windows.csv")["window"].tolist() == stream.days
    assert len(pd.read_csv(out / "per_scenario.csv")) == 2 * 6


def test_held_out_days_without_any_measured_task_hold_nothing_out(tmp_path, wcfg, calibrated):
    t0, t1 = MONDAY + 100, MONDAY + 27 * DAY + 5000
    first = int(t0 // DAY)
    measured = set(range(first, first + 21))  # the last 7 days: submitted, never measured
    cut, split = held_out_split(t0, t1, 7, measured)
    assert math.isinf(cut) and split["held_out"] is None and split["fitted"] == ["2024-06-03", "2024-06-30"]
    assert split["note"].startswith(
        "the 7 held-out days (2024-06-24 to 2024-06-30) hold no task with a measured duration"
    )
    assert "the studio setting is skipped" in split["note"] and "\n" not in split["note"]
    # and a stream of such days is refused in one line naming them
    split["fitted"] = ["2024-06-24", "2024-06-30"]  # days after the history's 10
    with pytest.raises(HistoryError, match="held-out days 2024-06-24 to 2024-06-30: no task with a measured"):
        held_out_stream([_history(tmp_path / "h.csv", 10)], wcfg, calibrated.calibration, split["fitted"])


def test_an_id_repeated_with_white_space_around_is_one_held_out_task(tmp_path, wcfg, calibrated):
    # issue 58, class 14: ids are normalised alike everywhere (sched.formats.csv_input.normal_id),
    # so the history reader names the padded repeat as the same task twice (a malformed record
    # counted toward workload.max_bad_share, naming the first) and the stream holds the task once
    path = _history(tmp_path / "h.csv", 15, per_day=20, seed=8)
    frame = pd.read_csv(path)
    first = int(np.flatnonzero(frame["submitted_at"] >= MONDAY + 11 * DAY)[0])  # 2024-06-14
    dup = frame.loc[first, "id"]
    frame.loc[first + 25, "id"] = f"  {dup} "  # the next day, white space around
    frame.to_csv(path, index=False)
    stream = held_out_stream([path], wcfg, calibrated.calibration, ["2024-06-11", "2024-06-17"])
    ids = [str(i).strip() for i in stream.scenario.frame["id"]]
    assert ids.count(dup) == 1 and len(ids) == len(set(ids))
    bad = [why for s in stream.stats for _, why in s.bad]
    assert any(f"id: {dup!r} repeats" in why and "(the same task twice)" in why for why in bad), bad


def test_replay_held_out_refuses_a_workload_fitted_on_another_history(tmp_path, wcfg, calibrated, cli):
    fitted_on = _history(tmp_path / "fitted.csv", 15, per_day=20, seed=9)
    other = _history(tmp_path / "other.csv", 15, per_day=20, seed=10)
    workload = tmp_path / "workload.json"
    files.write_json(workload, calibrate_workload([fitted_on], wcfg, calibrated.calibration).data)
    r = cli("replay", "--held-out", workload, other, "--policies", "fifo,atc", "--out", tmp_path / "out")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    sha = {p: files.sha256_file(p, HistoryError) for p in (fitted_on, other)}
    assert f"workload file {workload} was fitted on fitted.csv (sha256 {sha[fitted_on][:12]}…)" in r.stderr
    assert f"not on the history given, other.csv (sha256 {sha[other][:12]}…)" in r.stderr
    assert not (tmp_path / "out").exists()
    # the history it was fitted on: replayed
    r = cli("replay", "--held-out", workload, fitted_on, "--policies", "fifo,atc", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert pd.read_csv(tmp_path / "out" / "windows.csv")["window"].tolist()[0] == "2024-06-11"


@pytest.mark.parametrize(
    "validation, match",
    [
        (["2024-06-24", "2024-06-26"], "before the held-out ones"),  # inside the held-out days
        (["2024-06-10", "2024-06-12"], "after the fitted ones"),  # inside the fitted days
        (["2024-06-17"], r"\[FIRST_DAY, LAST_DAY\]"),
    ],
)
def test_a_workload_file_with_impossible_validation_days_is_refused(studio_cfg, validation, match):
    from sched.data.workload.workload import WorkloadFileError, check_workload

    w = copy.deepcopy(studio_cfg[1])
    check_workload(w)  # the fit's own three periods pass
    w["split"]["validation"] = validation
    with pytest.raises(WorkloadFileError, match=f"split.validation: .*{match}"):
        check_workload(w)
