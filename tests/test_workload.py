"""The workload from the queue's own history: reading, fitting, generating (docs/workload.md).

The example history's generator (resources/history/make_example_history.py)
is the truth the fit is checked against.
"""

import copy
import gzip
import importlib.util
import json

import numpy as np
import pytest
from scipy import stats

from sched.data.scenario import draw, scenario_model
from sched.data.workload.history import HistoryError
from sched.data.workload.workload import (
    NO_DEADLINE_S,
    WorkloadFileError,
    draw_allowance,
    hour_of_week,
    load_workload,
)
from sched.data.workload.workload_fit import calibrate_workload, exposure_hours, smooth_rates
from tests.conftest import ROOT, run_cli

HISTORY = [ROOT / "resources/history/example_history.csv", ROOT / "resources/history/example_history.jsonl"]
MONDAY = 1717372800.0  # 2024-06-03T00:00:00Z, a Monday


@pytest.fixture(scope="module")
def truth():
    path = ROOT / "resources/history/make_example_history.py"
    spec = importlib.util.spec_from_file_location("make_example_history", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def wcfg(cfg, calibrated):
    c = cfg.replace(scenario={"calibration": str(calibrated.calibration)})
    return c


@pytest.fixture(scope="module")
def fitted(wcfg, calibrated):
    return calibrate_workload(HISTORY, wcfg, calibrated.calibration)


def test_hour_of_week_starts_monday_utc():
    assert hour_of_week(MONDAY) == 0
    assert hour_of_week(MONDAY + 3600 * 24 * 6 + 3600 * 23 + 59) == 167
    assert hour_of_week(MONDAY + 3600 * 168) == 0
    assert hour_of_week(0.0) == 72  # 1970-01-01 was a Thursday


def test_exposure_counts_partial_hours():
    e = exposure_hours(MONDAY + 1800, MONDAY + 3 * 3600)
    assert e[0] == pytest.approx(0.5) and e[1] == pytest.approx(1) and e[2] == pytest.approx(1)
    assert e.sum() == pytest.approx(2.5)


def test_exposure_matches_hour_by_hour_reference():
    # the closed form against a plain count of every hour of the span
    def reference(t0, t1):
        out = np.zeros(168)
        h = np.floor(t0 / 3600)
        while h * 3600 < t1:
            cover = min((h + 1) * 3600, t1) - max(h * 3600, t0)
            out[hour_of_week(h * 3600)] += max(cover, 0) / 3600
            h += 1
        return out

    rng = np.random.default_rng(5)
    for span in (1800.0, 7200.0, 3 * 86400.0, 9 * 7 * 86400.0 + 5000.0):
        for _ in range(4):
            t0 = MONDAY + rng.uniform(-1e6, 1e6)
            np.testing.assert_allclose(exposure_hours(t0, t0 + span), reference(t0, t0 + span), atol=1e-9)
    big = exposure_hours(0.0, 1e12)  # a span of 31,700 years: no memory blow-up
    assert big.sum() == pytest.approx(1e12 / 3600)


def test_profile_recovered_within_10_percent(truth):
    # 600 weeks of the generator's arrivals (about 2.5 million; the quietest hour, a
    # weekend night, then has about 1,700): every one of the 168 fitted hourly rates
    # within 10 % of the generator's hourly mean rate
    rng = np.random.default_rng(7)
    hours = truth.draw_arrivals(rng, 600)
    sec = MONDAY + hours * 3600.0
    counts = np.bincount(hour_of_week(sec), minlength=168)
    rate, w, _ = smooth_rates(counts, exposure_hours(sec.min(), sec.max()))
    true = truth.weekly_rate()
    err = np.abs(rate / true - 1)
    assert err.max() <= 0.10, (err.max(), int(err.argmax()))
    assert 0 <= w <= 0.25


def test_smoothing_chooses_more_with_less_data(truth):
    true = truth.weekly_rate()
    rng = np.random.default_rng(3)
    ws = []
    for weeks in (2, 200):
        counts = rng.poisson(true * weeks)
        _, w, _ = smooth_rates(counts, np.full(168, float(weeks)))
        ws.append(w)
    assert ws[0] > ws[1]


def test_example_history_fit(fitted, truth):
    d = fitted.data
    # the last 7 of the 28 days are held out (workload.test_days), the 7 before them are the
    # validation days (workload.validation_days): the fit reads the 2 weeks before both
    assert d["split"]["fitted"] == ["2024-06-03", "2024-06-16"]
    assert d["split"]["validation"] == ["2024-06-17", "2024-06-23"]
    assert d["split"]["held_out"] == ["2024-06-24", "2024-06-30"]
    assert 8000 < d["tasks"] < 0.6 * sum(s.valid for s in fitted.stats)  # 2 of the 4 weeks
    assert d["span"]["end"] < "2024-06-17"
    assert [s.bad_count for s in fitted.stats] == [3, 0]
    # hourly profile of the 4 shipped weeks (a weekend night hour holds about 11 tasks):
    # within 10 % on average over the 168 hours, the weekly mean within 3 standard errors
    true = truth.weekly_rate()
    assert np.mean(np.abs(np.array(d["arrivals"]["rate_per_hour"]) / true - 1)) <= 0.10
    se = np.sqrt(true.mean() * 168 / (d["span"]["hours"]))  # Poisson, per hour of the span
    assert abs(d["arrivals"]["mean_rate_per_hour"] - true.mean()) < 3 * se
    # priority mix: overall shares within 3 binomial standard errors of the truth
    expected = (true.reshape(7, 24).sum(axis=0)[:, None] * truth.priority_probs(np.arange(24))).sum(axis=0)
    expected /= expected.sum()
    n = d["tasks"]
    for c, p in zip(d["priorities"]["classes"], expected):
        assert abs(c["share"] - p) < 3 * np.sqrt(p * (1 - p) / n), (c, p)
    assert d["priorities"]["varies_by_hour"]
    by_hour = np.array(d["priorities"]["by_hour_of_day"])
    assert by_hour[14, 0] < by_hour[3, 0]  # fewer low-priority tasks at the afternoon peak
    # share without deadline within 3 standard errors of 0.15
    s = d["deadlines"]["share_without"]
    assert abs(s - truth.NO_DEADLINE) < 3 * np.sqrt(0.15 * 0.85 / n)
    assert d["load"]["implied_load"] == pytest.approx(
        d["arrivals"]["mean_rate_per_hour"] * d["load"]["mean_estimate_s"] / 3600, rel=1e-9
    )


def test_allowance_distribution_within_sampling_error(fitted, truth):
    # allowances drawn from the fit for the history's estimates against fresh draws of the
    # generator's rule for the same estimates: a two-sample KS test does not reject
    pairs = fitted.arrays["pairs"]
    d = {"deadlines": {**fitted.data["deadlines"], "share_without": 0.0}}
    fit = draw_allowance(d, np.random.default_rng(1), pairs[:, 0])
    true = truth.draw_allowance(np.random.default_rng(2), pairs[:, 0])
    res = stats.ks_2samp(fit, true)
    assert res.pvalue > 0.001, res


def test_write_and_load_back(tmp_path, calibrated):
    out = tmp_path / "w.json"
    r = run_cli("--config", calibrated.config, "calibrate-workload", *HISTORY, "--out", out)
    assert r.returncode == 0, r.stderr
    assert "3 of 12849 records malformed" in r.stderr and "line 103" in r.stderr
    assert (tmp_path / "w.png").stat().st_size > 10000
    w = load_workload(out)
    assert len(w["arrivals"]["rate_per_hour"]) == 168
    bad = dict(w, format="sched-workload/0")
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(WorkloadFileError, match="format"):
        load_workload(tmp_path / "bad.json")
    bad = copy.deepcopy(w)
    bad["arrivals"]["rate_per_hour"] = bad["arrivals"]["rate_per_hour"][:100]
    (tmp_path / "bad2.json").write_text(json.dumps(bad))
    with pytest.raises(WorkloadFileError, match="rate_per_hour"):
        load_workload(tmp_path / "bad2.json")
    bad = copy.deepcopy(w)
    bad["priorities"]["classes"][0]["weight"] = -1
    (tmp_path / "bad3.json").write_text(json.dumps(bad))
    with pytest.raises(WorkloadFileError, match="weight"):
        load_workload(tmp_path / "bad3.json")


def _history(path, rows, header="id,kind,submitted_at,priority,due"):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_malformed_past_threshold_names_file_and_rows(tmp_path, wcfg, calibrated):
    # one every 70 minutes: the fit needs a week of history (issue 23 point 2)
    rows = [f"t{i},image,{1717372800 + 4200 * i},low," for i in range(150)]
    rows[9] = "t9,image,yesterday,low,"
    rows[20] = "t20,image,1717372800,vip,"
    rows[30] = "t30,image,1717372800,low"  # a field short
    p = _history(tmp_path / "h.csv", rows)
    strict = wcfg.replace(workload={"max_bad_share": 0.01})
    with pytest.raises(HistoryError, match=r"h\.csv: 3 of 150 records are malformed .*line 11: submitted_at"):
        calibrate_workload([p], strict, calibrated.calibration)
    out = tmp_path / "o.json"
    r = run_cli(
        "--config", calibrated.config, "calibrate-workload", p, "--out", out, "--max-bad-share", "0.01"
    )
    assert r.returncode == 2 and "line 22: priority: 'vip'" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "o.png").exists()
    # under the threshold they are skipped and counted; a gzipped file reads the same
    res = calibrate_workload([p], wcfg, calibrated.calibration)
    assert res.stats[0].bad_count == 3 and res.data["tasks"] == 147
    gz = tmp_path / "h.csv.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    res_gz = calibrate_workload([gz], wcfg, calibrated.calibration)
    assert res_gz.data["arrivals"] == res.data["arrivals"]


def test_jsonl_weights_and_no_deadline(tmp_path, wcfg, calibrated):
    lines = [
        json.dumps(
            {
                "id": f"t{i}",
                "kind": "video",
                "submitted_at": f"2024-06-{3 + i // 12:02d}T{i % 12 * 2:02d}:00:00Z",  # ten days
                "weight": 3,
            }
        )
        for i in range(120)
    ]
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join(lines) + "\n[1]\n")
    res = calibrate_workload([p], wcfg, calibrated.calibration)
    d = res.data
    assert d["deadlines"]["share_without"] == 1.0 and d["deadlines"]["allowance"] is None
    assert [c["weight"] for c in d["priorities"]["classes"]] == [3.0]
    assert res.stats[0].bad == [(121, "not a JSON object (a list)")]


@pytest.fixture(scope="module")
def gen_cfg(wcfg, fitted, tmp_path_factory):
    from sched import files

    path = tmp_path_factory.mktemp("workload") / "workload.json"
    files.write_json(path, fitted.data)
    c = wcfg.replace(scenario={"workload": str(path)})
    return c


def test_generation_reproducible_and_follows_the_workload(gen_cfg, fitted):
    a, b, c = (
        draw(scenario_model(gen_cfg), 5),
        draw(scenario_model(gen_cfg), 5),
        draw(scenario_model(gen_cfg), 6),
    )
    for k in ("arrival", "duration", "estimate", "weight", "due"):
        np.testing.assert_array_equal(a[k], b[k])
    assert not np.array_equal(a["arrival"], c["arrival"])
    assert a["classes"] == [c_["name"] for c_ in fitted.data["priorities"]["classes"]]
    # no deadline: due a week after arrival; the share near the fitted one over many tasks
    big = draw(scenario_model(gen_cfg), 1, tasks=20000)
    none = np.isclose(big["due"] - big["arrival"], NO_DEADLINE_S)
    assert abs(none.mean() - fitted.data["deadlines"]["share_without"]) < 0.02
    # over 20,000 tasks (about 5 weeks) the mean arrival rate is the fitted one
    rate = 20000 / (big["arrival"][-1] / 3600)
    assert rate == pytest.approx(fitted.data["arrivals"]["mean_rate_per_hour"], rel=0.05)


def test_workload_scale_speeds_arrivals(gen_cfg):
    c = gen_cfg.replace(scenario={"workload_scale": 2.0})
    one, two = draw(scenario_model(gen_cfg), 1, tasks=20000), draw(scenario_model(c), 1, tasks=20000)
    # the same two whole weeks from the same start of the week: twice the arrivals
    weeks2 = 2 * 168 * 3600.0
    assert (two["arrival"] < weeks2).sum() == pytest.approx(2 * (one["arrival"] < weeks2).sum(), rel=0.05)
    np.testing.assert_array_equal(one["duration"], two["duration"])  # common random numbers


def test_no_workload_keeps_todays_draws(cfg):
    # scenario.workload null: the constant-rate branch, draws as before (seed's exponential stream)
    d = draw(scenario_model(cfg), 11, tasks=50)
    r_arrival = np.random.default_rng(np.random.SeedSequence(11).spawn(6)[0])
    from sched.data.distributions import mean_duration

    specs = cfg["scenario"]["kinds"]
    rate = cfg["scenario"]["load"] / mean_duration(specs)
    np.testing.assert_allclose(d["arrival"], np.cumsum(r_arrival.exponential(1 / rate, 50)))


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda w: w["arrivals"].__setitem__("rate_per_hour", [float("nan")] * 168), "rate_per_hour"),
        (lambda w: w["arrivals"].__setitem__("rate_per_hour", [0.0] * 168), "every rate is 0"),
        (lambda w: w["priorities"]["classes"][0].__setitem__("weight", True), "weight"),
        (lambda w: w["priorities"].__setitem__("by_hour_of_day", [[1.0]] * 24), "by_hour_of_day"),
        (lambda w: w["deadlines"]["allowance"]["ratio_quantiles"][0].reverse(), "ratio_quantiles"),
        (lambda w: w["deadlines"].__setitem__("share_without", 1.5), "share_without"),
        (lambda w: w.__setitem__("arrivals", []), "arrivals"),
    ],
)
def test_bad_workload_files_refused(tmp_path, fitted, change, field):
    w = copy.deepcopy(fitted.data)
    change(w)
    path = tmp_path / "w.json"
    path.write_text(json.dumps(w))
    with pytest.raises(WorkloadFileError, match=field) as exc:
        load_workload(path)
    assert "\n" not in str(exc.value)


def test_bad_history_files_refused(tmp_path, wcfg, calibrated):
    def fit(p):
        return calibrate_workload([p], wcfg, calibrated.calibration)

    with pytest.raises(HistoryError, match="unknown history format"):
        fit(tmp_path / "h.txt")
    with pytest.raises(HistoryError, match="is a folder"):
        (tmp_path / "d.csv").mkdir()
        fit(tmp_path / "d.csv")
    with pytest.raises(HistoryError, match="no column 'submitted_at'"):
        fit(_history(tmp_path / "h.csv", ["a,image,low,"], header="id,kind,priority,due"))
    with pytest.raises(HistoryError, match="empty file"):
        (tmp_path / "e.jsonl").write_text("\n")
        fit(tmp_path / "e.jsonl")
    # a JSON list where a time or text is expected: malformed, named, no traceback
    rows = [
        json.dumps({"id": f"t{i}", "kind": "image", "submitted_at": 1717372800 + 60 * i, "priority": "low"})
        for i in range(100)
    ]
    rows[5] = json.dumps({"id": "t5", "kind": ["image"], "submitted_at": 1717372800, "priority": "low"})
    rows[6] = json.dumps({"id": "t6", "kind": "image", "submitted_at": {"t": 1}, "priority": "low"})
    p = tmp_path / "j.jsonl"
    p.write_text("\n".join(rows) + "\n")
    strict = wcfg.replace(workload={"max_bad_share": 0.0})
    with pytest.raises(HistoryError, match=r"line 6: kind: not text; line 7: submitted_at: a JSON list"):
        calibrate_workload([p], strict, calibrated.calibration)


def test_load_settings_refused_with_a_workload(cfg):
    from sched.config import ConfigError, validate_config

    base = {"scenario": {"workload": "results/workload.json"}}
    validate_config(copy.deepcopy(base))  # alone: fine (the file is read when scenarios are drawn)
    with pytest.raises(ConfigError, match=r"train\.loads: not used with scenario\.workload"):
        validate_config({**copy.deepcopy(base), "train": {"loads": [0.7, 0.9]}})
    with pytest.raises(ConfigError, match=r"robustness\.settings\[0\] \('load-0\.70'\): load has no effect"):
        validate_config(
            {**copy.deepcopy(base), "robustness": {"settings": [{"name": "load-0.70", "load": 0.7}]}}
        )
