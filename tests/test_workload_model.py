"""Issue 50: a workload model like a real queue. The synthetic trace-like history
(resources/history/make_trace_history.py) has class-dependent heavy tails, overdispersed
arrivals and days of very different load; the fit recovers them, the generator draws them
when config scenario.workload_model switches them on, and with every switch off it draws
what it drew before."""

import copy
import importlib.util
import json
import re

import numpy as np
import pandas as pd
import pytest

from sched.data.model import ModelError, scenario_model
from sched.data.scenario import draw
from sched.data.workload import fidelity, shape_fit
from sched.data.workload.workload import WorkloadFileError, check_workload, draw_arrivals, draw_durations
from sched.data.workload.workload_fit import calibrate_workload
from tests.conftest import ROOT

DAY = 86400.0


def _trace_module():
    spec = importlib.util.spec_from_file_location(
        "make_trace_history", ROOT / "resources/history/make_trace_history.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TRACE = _trace_module()


@pytest.fixture(scope="module")
def trace(tmp_path_factory, cfg, calibrated):
    """The trace-like history (21 days: 7 fitted, 7 validation, 7 held out), its fit and config."""
    d = tmp_path_factory.mktemp("trace")
    path = d / "trace.csv"
    TRACE.write(path, days=28)
    c = cfg.replace(scenario={"calibration": str(calibrated.calibration)})
    fit = calibrate_workload([path], c, calibrated.calibration)
    (d / "w.json").write_text(json.dumps(fit.data))
    return path, fit.data, c.replace(scenario={"workload": str(d / "w.json"), "tasks": 2000}), d


def test_the_trace_history_has_what_a_real_queue_showed(trace):
    path, _fit, _c, _d = trace
    h = pd.read_csv(path)
    took = (pd.to_datetime(h.finished_at) - pd.to_datetime(h.started_at)).dt.total_seconds()
    med = took.groupby(h.priority).median()
    # class-dependent: low about four times shorter than high, normal the longest
    assert 2.5 < med["high"] / med["low"] < 8 and med["normal"] > med["high"]
    # heavy tails: the p99 of a class is tens of times its median
    assert (took.groupby(h.priority).quantile(0.99) / med).min() > 20
    sub = pd.to_datetime(h.submitted_at)
    hours = sub.dt.floor("h").value_counts()
    full = hours.reindex(pd.date_range(sub.min().floor("D"), periods=28 * 24, freq="h"), fill_value=0)
    assert full.var() > 3 * full.mean()  # overdispersed (Poisson: equal)
    load = took.groupby(sub.dt.floor("D")).sum() / DAY
    assert load.min() < 0.2 and load.max() > 1.2  # quiet and overloaded days
    assert h.due[h.priority == "low"].isna().all() and h.due[h.priority == "high"].notna().all()


def test_the_fit_recovers_the_classes_durations_and_their_tails(trace):
    _path, fit, _c, _d = trace
    d = fit["durations"]
    by = {e["name"]: e for e in d["by_class"]}
    # the generator's truth: lognormal sigma 1.8 around each class's median (low clipped at 1 s)
    for name in ("normal", "high"):
        median = TRACE.MEDIAN_S[TRACE.CLASSES.index(name)]
        assert by[name]["lognormal"]["sigma"] == pytest.approx(TRACE.SIGMA, abs=0.2)
        assert np.exp(by[name]["lognormal"]["mu"]) == pytest.approx(median, rel=0.3)
    # the pooled durations are a mixture of classes: the KS test rejects one lognormal for them
    assert d["all"]["ks_pvalue"] < shape_fit.KS_P and d["all"]["shape"] == "empirical"
    assert len(d["all"]["quantiles_s"]) == shape_fit.QUANTILES
    shares = dict(
        zip([c["name"] for c in fit["priorities"]["classes"]], fit["deadlines"]["share_without_by_class"])
    )
    assert shares["low"] == 1.0 and shares["high"] == 0.0
    f = np.array(fit["arrivals"]["day_factors"])
    assert len(f) >= 5 and f.std() > 0.3  # days far from the weekly profile


def test_draw_durations_follow_the_class_and_the_quantiles(trace):
    _path, fit, _c, _d = trace
    rng = np.random.default_rng(0)
    low, high = (c["weight"] for c in fit["priorities"]["classes"] if c["name"] in ("low", "high"))
    w = np.repeat([low, high], 20000)
    by_class = draw_durations(fit, rng, w, by_class=True, heavy_tails=False)
    assert np.median(by_class[w == high]) > 2.5 * np.median(by_class[w == low])
    pooled = draw_durations(fit, np.random.default_rng(0), w, by_class=False, heavy_tails=False)
    assert np.median(pooled[w == high]) == pytest.approx(np.median(pooled[w == low]), rel=0.1)
    # heavy tails: the pooled fit is empirical, and the draws follow its quantiles
    emp = draw_durations(fit, np.random.default_rng(1), w, by_class=False, heavy_tails=True)
    q = np.array(fit["durations"]["all"]["quantiles_s"])
    for p in (0.1, 0.5, 0.9, 0.99):
        assert np.quantile(emp, p) == pytest.approx(q[round(p * (len(q) - 1))], rel=0.15)


def test_day_intensity_makes_the_days_overdispersed(trace):
    _path, fit, _c, _d = trace

    def day_counts(by_day, seed):
        arr, _how, _start = draw_arrivals(fit, np.random.default_rng(seed), 6000, 1.0, 0.0, by_day)
        return np.bincount((arr // DAY).astype(int))[:-1]  # whole days only

    def spread(by_day):  # each day of the week across scenarios starting Monday 00:00: its CV
        counts = np.array([day_counts(by_day, s)[:7] for s in range(12)], dtype=float)
        return float((counts.std(axis=0) / counts.mean(axis=0)).mean())

    # the weekly profile alone: a day's count varies as Poisson's (a few per cent); with the
    # day factors, as the fitted days do
    flat, cox = spread(False), spread(True)
    assert flat < 0.2 and cox > 2 * flat and cox > 0.3


def test_every_switch_off_draws_what_the_profile_drew_before(trace):
    # the fitted sections of issue 50 change nothing until a switch is on: the same scenario
    # as from a workload file without them
    _path, fit, c, d = trace
    bare = copy.deepcopy(fit)
    del bare["durations"], bare["arrivals"]["day_factors"], bare["deadlines"]["share_without_by_class"]
    (d / "bare.json").write_text(json.dumps(bare))
    a = draw(scenario_model(c), 7)
    b = draw(scenario_model(c.replace(scenario={"workload": str(d / "bare.json")})), 7)
    for key in ("arrival", "duration", "estimate", "weight", "due"):
        np.testing.assert_array_equal(a[key], b[key])
    on = draw(scenario_model(c.replace(scenario={"workload_model": {"class_durations": True}})), 7)
    np.testing.assert_array_equal(a["arrival"], on["arrival"])  # the arrivals' stream is untouched
    assert not np.array_equal(a["duration"], on["duration"])
    # the load follows the history's own durations: no scale on them
    m = scenario_model(c.replace(scenario={"workload_model": {"class_durations": True, "heavy_tails": True}}))
    assert m.duration_scale == 1.0 and m.history_durations()


def test_a_switch_on_without_its_fitted_section_is_refused_naming_it(trace):
    _path, fit, c, d = trace
    bare = copy.deepcopy(fit)
    del bare["arrivals"]["day_factors"]
    (d / "no-days.json").write_text(json.dumps(bare))
    c2 = c.replace(scenario={"workload": str(d / "no-days.json"), "workload_model": {"day_intensity": True}})
    want = (
        r"scenario.workload_model.day_intensity: true, but the workload file .* has no arrivals.day_factors"
    )
    with pytest.raises(ModelError, match=want):
        scenario_model(c2)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda w: w["arrivals"].update(day_factors=[0.0, 0.0]), "arrivals.day_factors"),
        (lambda w: w["arrivals"].update(day_factors=[1.0, float("nan")]), "arrivals.day_factors"),
        (lambda w: w["deadlines"].update(share_without_by_class=[0.5]), "deadlines.share_without_by_class"),
        (lambda w: w["durations"]["all"].update(shape="pareto"), "durations.all.shape"),
        (
            lambda w: w["durations"]["by_class"][0].update(quantiles_s=[5.0, 1.0]),
            "durations.by_class[0].quantiles_s",
        ),
        (
            lambda w: w["durations"]["by_class"][1]["lognormal"].update(sigma=0.0),
            "durations.by_class[1].lognormal",
        ),
        (lambda w: w["durations"]["by_class"][0].update(weight=True), "durations.by_class[0].weight"),
    ],
)
def test_a_malformed_model_section_is_refused_naming_the_field(trace, edit, field):
    bad = copy.deepcopy(trace[1])
    edit(bad)
    with pytest.raises(WorkloadFileError, match=re.escape(f"{field}: ")):
        check_workload(bad, "w.json")


def test_fidelity_reports_tau_for_each_switch(trace, tmp_path):
    import yaml

    from tests.conftest import run_cli

    path, _fit, c, d = trace
    cfg = {
        "scenario": {"calibration": c.scenario.calibration},
        "workload": {"history": [str(path)]},
        "studio": {"fidelity_streams": 2, "fidelity_scenarios": 4},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    r = run_cli(
        "--config", tmp_path / "c.yaml", "fidelity", "--workload", d / "w.json", "--out", tmp_path / "f"
    )
    assert r.returncode == 0, r.stderr
    rec = json.loads((tmp_path / "f" / "fidelity.json").read_text())
    m = rec["model"]
    assert m["on"] == ["profile only"] and not any(m["switches"].values())
    assert [v["variant"] for v in m["variants"]] == ["class_durations", "heavy_tails", "day_intensity", "all"]
    assert all(-1 <= v["tau"]["scenarios"] <= 1 for v in m["variants"])
    assert "Generator switched on (config scenario.workload_model): profile only" in r.stdout
    # what the generated scenarios miss, recomputed from the record's own table, and said
    table = pd.read_csv(tmp_path / "f" / "fidelity.csv", keep_default_na=False)
    table[["real", "streams", "scenarios"]] = table[["real", "streams", "scenarios"]].astype(float)
    assert rec["misses"] == json.loads(json.dumps(fidelity.misses(table)))
    if rec["misses"]["levels"] or rec["misses"]["discordant"]:
        assert "What the generated scenarios miss of the real days: " in r.stdout
