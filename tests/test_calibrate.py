"""`sched calibrate`: bench logs -> per-kind duration distributions and a duration model.

Tolerance (stated in docs/calibration.md too): with 2,000 records
per kind, each kind's fitted median is within 5 % of the median of the
distribution the records were drawn from. The standard error of a fitted
median is about sigma / sqrt(n) on the log scale, 1.1 % for a log-normal with
sigma 0.5 and about 1.5 % for the gamma used here, so 5 % is over three
standard errors; the seeds are fixed, so the tests are deterministic.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sched.config import ConfigError, validate_config
from sched.data.bench.calibration import (
    CalibrationFileError,
    load_calibration,
    predict_duration,
)
from sched.data.bench.fit import CalibrationError, calibrate
from sched.data.scenario import generate, scenario_model

from .conftest import ROOT, run_here

MEDIAN_TOLERANCE = 0.05

LOGNORMAL = {"median": 25.0, "sigma": 0.5}  # images
GAMMA = {"shape": 2.5, "scale": 100.0}  # videos
GAMMA_MEDIAN = stats.gamma(GAMMA["shape"], scale=GAMMA["scale"]).median()


def options(**kw):
    """The `calibration` config section with defaults, updated with kw."""
    cfg = validate_config({"calibration": kw})
    return cfg["calibration"]


def two_kind_frame(n_image, n_video, seed=0):
    rng = np.random.default_rng(seed)
    img = LOGNORMAL["median"] * np.exp(LOGNORMAL["sigma"] * rng.standard_normal(n_image))
    vid = rng.gamma(GAMMA["shape"], GAMMA["scale"], n_video)
    f = pd.DataFrame(
        {"kind": ["image"] * n_image + ["video"] * n_video, "duration_s": np.concatenate([img, vid])}
    )
    return f.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def write_jsonl(path, frame):
    with open(path, "w") as fh:
        for rec in frame.to_dict("records"):
            fh.write(json.dumps(rec) + "\n")
    return path


def good_lines(n=100, seed=1):
    """n valid CSV data lines (kind,duration_s), 70 % images."""
    rng = np.random.default_rng(seed)
    kinds = np.where(np.arange(n) % 10 < 7, "image", "video")
    d = np.where(kinds == "image", 25.0, 240.0) * np.exp(0.4 * rng.standard_normal(n))
    return [f"{k},{x:.3f}" for k, x in zip(kinds, d)]


def csv_with(tmp_path, bad_line, at=10, n=100, name="bench.csv"):
    """A CSV of n good records with ``bad_line`` inserted as data record ``at``.

    Returns (path, file line number of the bad record).
    """
    lines = good_lines(n)
    lines.insert(at, bad_line)
    p = tmp_path / name
    p.write_text("kind,duration_s\n" + "\n".join(lines) + "\n")
    return p, at + 2


def jsonl_with(tmp_path, bad_line, at=10, n=100, name="bench.jsonl"):
    lines = [
        json.dumps({"kind": k, "duration_s": float(d)}) for k, d in (x.split(",") for x in good_lines(n))
    ]
    lines.insert(at, bad_line)
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p, at + 1


# --------------------------------------------------------------------------- fits


def test_fitted_medians_within_tolerance_and_right_family(tmp_path):
    p = tmp_path / "bench.csv"
    two_kind_frame(2000, 2000).to_csv(p, index=False)
    data = calibrate([p], options()).data
    img, vid = data["kinds"]["image"], data["kinds"]["video"]
    assert img["distribution"] == "lognormal" and vid["distribution"] == "gamma"
    # chosen by lowest AIC among the candidates, each with its KS statistic
    for e in (img, vid):
        aic = {f: c["aic"] for f, c in e["candidates"].items()}
        assert set(aic) == {"lognormal", "gamma"}
        assert e["distribution"] == min(aic, key=aic.get)
        assert e["goodness_of_fit"]["aic"] == aic[e["distribution"]]
        assert 0 < e["goodness_of_fit"]["ks_statistic"] < 0.05
        assert e["count"] == 2000 and e["share"] == pytest.approx(0.5)
    assert img["spec"]["median_s"] == pytest.approx(LOGNORMAL["median"], rel=MEDIAN_TOLERANCE)
    assert img["spec"]["sigma"] == pytest.approx(LOGNORMAL["sigma"], rel=MEDIAN_TOLERANCE)
    fitted_gamma_median = stats.gamma(vid["spec"]["shape"], scale=vid["spec"]["scale_s"]).median()
    assert fitted_gamma_median == pytest.approx(GAMMA_MEDIAN, rel=MEDIAN_TOLERANCE)
    assert vid["candidates"]["gamma"]["median_s"] == pytest.approx(fitted_gamma_median)
    # the measured summary is the sample's
    assert img["median_s"] == pytest.approx(LOGNORMAL["median"], rel=MEDIAN_TOLERANCE)
    assert vid["median_s"] == pytest.approx(GAMMA_MEDIAN, rel=MEDIAN_TOLERANCE)
    assert vid["mean_s"] == pytest.approx(GAMMA["shape"] * GAMMA["scale"], rel=MEDIAN_TOLERANCE)


def test_spec_feeds_the_scenario_generator(tmp_path, cfg):
    p = tmp_path / "bench.csv"
    two_kind_frame(2000, 500).to_csv(p, index=False)
    out = tmp_path / "cal.json"
    cal = calibrate([p], options())
    out.write_text(json.dumps(cal.data))
    specs = {k: e["spec"] for k, e in load_calibration(out)["kinds"].items()}
    assert specs == {k: e["spec"] for k, e in cal.data["kinds"].items()}
    c = cfg.replace(scenario={"calibration": str(out)})
    assert scenario_model(c).kind_specs() == specs
    f = generate(scenario_model(c), 5, tasks=20000).frame
    assert (f["kind"] == "image").mean() == pytest.approx(0.8, abs=0.02)
    assert f.loc[f.kind == "image", "duration_s"].median() == pytest.approx(
        specs["image"]["median_s"], rel=0.05
    )
    assert f.loc[f.kind == "video", "duration_s"].mean() == pytest.approx(
        specs["video"]["shape"] * specs["video"]["scale_s"], rel=0.05
    )


def test_criterion_and_fixed_family_and_empirical(tmp_path, cfg):
    p = tmp_path / "bench.csv"
    frame = two_kind_frame(300, 300, seed=3)
    frame.to_csv(p, index=False)
    ks = calibrate([p], options(criterion="ks")).data["kinds"]
    for e in ks.values():
        d = {f: c["ks_statistic"] for f, c in e["candidates"].items()}
        assert e["distribution"] == min(d, key=d.get)
    fixed = calibrate([p], options(distribution="gamma", families=["lognormal"])).data["kinds"]
    assert fixed["image"]["distribution"] == "gamma"  # forced even where lognormal fits better
    assert set(fixed["image"]["candidates"]) == {"lognormal", "gamma"}
    emp = calibrate([p], options(distribution="empirical"))
    out = tmp_path / "emp.json"
    out.write_text(json.dumps(emp.data))
    e = emp.data["kinds"]["video"]
    assert e["distribution"] == "empirical" and e["goodness_of_fit"] is None
    measured = np.sort(frame.loc[frame.kind == "video", "duration_s"].to_numpy())
    assert np.array_equal(e["spec"]["samples_s"], measured)
    c = cfg.replace(scenario={"calibration": str(out)})
    g = generate(scenario_model(c), 2, tasks=3000).frame
    assert np.isin(g.loc[g.kind == "video", "duration_s"], measured).all()


# --------------------------------------------------------------------------- duration model

TRUE = {"intercept": -12.0, "log_pixels": 0.85, "log_frames": 0.9, "log_steps": 1.1}
TRUE_SIGMA = 0.2


def featured_frame(n=3000, seed=7):
    rng = np.random.default_rng(seed)
    w = rng.choice([512, 768, 1024, 1280], n)
    h = rng.choice([432, 576, 720, 1024], n)
    frames = rng.integers(8, 160, n)
    steps = rng.integers(10, 60, n)
    log_d = (
        TRUE["intercept"]
        + TRUE["log_pixels"] * np.log(w * h)
        + TRUE["log_frames"] * np.log(frames)
        + TRUE["log_steps"] * np.log(steps)
        + TRUE_SIGMA * rng.standard_normal(n)
    )
    return pd.DataFrame(
        {
            "timestamp": "2024-01-01T00:00:00",
            "workflow": "wan",
            "kind": "video",
            "width": w,
            "height": h,
            "frames": frames,
            "steps": steps,
            "gpu": "gpu0",
            "duration_s": np.exp(log_d),
        }
    )


def test_log_linear_model_recovers_known_coefficients(tmp_path, cfg):
    p = tmp_path / "bench.csv"
    featured_frame().to_csv(p, index=False)
    cal = calibrate([p], options())
    m = cal.data["kinds"]["video"]["duration_model"]
    assert m["features"] == ["pixels", "frames", "steps"]
    for name in ("log_pixels", "log_frames", "log_steps"):
        assert m["coefficients"][name] == pytest.approx(TRUE[name], abs=0.03)
    assert m["residual_sigma"] == pytest.approx(TRUE_SIGMA, rel=0.05)
    assert m["r2"] > 0.9 and m["n"] == 3000
    # the residual sigma is the calibration's (and so the simulator's default) estimate noise
    assert cal.data["estimate_noise_sigma"] == pytest.approx(m["residual_sigma"])
    out = tmp_path / "cal.json"
    out.write_text(json.dumps(cal.data))
    c = cfg.replace(scenario={"calibration": str(out)})
    assert c["scenario"]["estimate_noise_sigma"] is None
    assert scenario_model(c).sigma == pytest.approx(m["residual_sigma"])
    f = generate(scenario_model(c), 1, tasks=20000).frame
    assert np.log(f["estimate_s"] / f["duration_s"]).std() == pytest.approx(m["residual_sigma"], rel=0.05)
    c = c.replace(scenario={"estimate_noise_sigma": 0.0})  # a number in the config overrides it
    assert scenario_model(c).sigma == 0.0
    # predictions for tasks without an estimate
    task = {"width": 1024, "height": 576, "frames": 49, "steps": 25}
    expected = math.exp(
        m["coefficients"]["intercept"]
        + sum(
            m["coefficients"][f"log_{k}"] * math.log(v)
            for k, v in {"pixels": 1024 * 576, "frames": 49, "steps": 25}.items()
        )
    )
    truth = math.exp(
        TRUE["intercept"]
        + TRUE["log_pixels"] * math.log(1024 * 576)
        + TRUE["log_frames"] * math.log(49)
        + TRUE["log_steps"] * math.log(25)
    )
    got = predict_duration(out, "video", task)
    assert got == pytest.approx(expected) and got == pytest.approx(truth, rel=0.05)
    assert predict_duration(
        cal.data, "video", {"pixels": 1024 * 576, "frames": 49, "steps": 25}
    ) == pytest.approx(expected)
    assert predict_duration(out, "video", task, statistic="mean") == pytest.approx(
        expected * math.exp(m["residual_sigma"] ** 2 / 2)
    )
    # missing features: the kind's measured median
    assert predict_duration(out, "video", {"width": 1024}) == cal.data["kinds"]["video"]["median_s"]
    with pytest.raises(ValueError, match="kind 'audio' is not in the calibration"):
        predict_duration(out, "audio", task)
    with pytest.raises(ValueError, match="field frames: must be a finite number > 0"):
        predict_duration(out, "video", {**task, "frames": -3})


def test_constant_and_partial_features_are_left_out_with_a_note(tmp_path):
    f = featured_frame(400)
    f["frames"] = 1  # images: one frame each
    f.loc[5, "steps"] = np.nan  # steps missing in one record
    p = tmp_path / "bench.csv"
    f.to_csv(p, index=False)
    cal = calibrate([p], options())
    m = cal.data["kinds"]["video"]["duration_model"]
    assert m["features"] == ["pixels"]
    text = " ".join(t for _, t in cal.notes)
    assert "frames is 1 in every record" in text and "steps missing in 1 of 400 records" in text


def test_no_features_no_model_and_zero_noise(tmp_path, cfg):
    p = tmp_path / "bench.csv"
    two_kind_frame(100, 100).to_csv(p, index=False)
    cal = calibrate([p], options())
    for e in cal.data["kinds"].values():
        assert e["duration_model"] is None
        assert "the records carry no feature" in e["duration_model_note"]
    assert cal.data["estimate_noise_sigma"] is None
    assert any("no duration model" in t for _, t in cal.notes)
    out = tmp_path / "cal.json"
    out.write_text(json.dumps(cal.data))
    c = cfg.replace(scenario={"calibration": str(out)})
    assert scenario_model(c).sigma == 0.0
    assert (
        predict_duration(out, "image", {"width": 1024, "height": 1024, "steps": 30})
        == cal.data["kinds"]["image"]["median_s"]
    )


# --------------------------------------------------------------------------- formats and columns


def test_jsonl_and_csv_give_the_same_calibration(tmp_path):
    frame = featured_frame(300)
    a, b, c = tmp_path / "b.csv", tmp_path / "b.jsonl", tmp_path / "b.json-lines"
    frame.to_csv(a, index=False)
    write_jsonl(b, frame)
    write_jsonl(c, frame)
    ka = calibrate([a], options()).data["kinds"]
    kb = calibrate([b], options()).data["kinds"]
    assert json.dumps(ka, sort_keys=True) == json.dumps(kb, sort_keys=True)
    both = calibrate([a, c], options()).data
    assert both["records"] == 600 and [s["format"] for s in both["sources"]] == ["csv", "jsonl"]


def test_configurable_column_names(tmp_path):
    frame = featured_frame(300).rename(
        columns={
            "kind": "type",
            "duration_s": "seconds",
            "width": "w",
            "height": "h",
            "frames": "n_frames",
            "steps": "n_steps",
        }
    )
    p = tmp_path / "renamed.csv"
    frame.to_csv(p, index=False)
    with pytest.raises(CalibrationError, match=r"renamed.csv: no column 'kind' .*calibration.columns.kind"):
        calibrate([p], options())
    cols = {
        "kind": "type",
        "duration_s": "seconds",
        "width": "w",
        "height": "h",
        "frames": "n_frames",
        "steps": "n_steps",
    }
    data = calibrate([p], options(columns=cols)).data
    assert data["kinds"]["video"]["count"] == 300
    assert data["kinds"]["video"]["duration_model"]["features"] == ["pixels", "frames", "steps"]
    assert data["columns"] == cols
    with pytest.raises(
        ConfigError, match="calibration.columns.kind: column .type. is also calibration.columns.duration_s"
    ):
        options(columns={"kind": "type", "duration_s": "type"})


def test_unknown_format_missing_and_repeated_files(tmp_path):
    p = tmp_path / "bench.txt"
    p.write_text("kind,duration_s\nimage,3\n")
    with pytest.raises(CalibrationError, match=r"bench.txt: unknown bench log format '.txt'; expected .csv"):
        calibrate([p], options())
    with pytest.raises(CalibrationError, match=r"nope.csv: file not found"):
        calibrate([tmp_path / "nope.csv"], options())
    q, _ = csv_with(tmp_path, "image,20")
    with pytest.raises(CalibrationError, match=r"bench.csv: bench log given twice"):
        calibrate([q, q], options())


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "maker,bad,reason",
    [
        (csv_with, ",12.5", "kind: missing value"),
        (csv_with, "image,", "duration_s: missing value"),
        (csv_with, "image", "1 fields, the header has 2"),
        (csv_with, "image,12,extra", "3 fields, the header has 2"),
        (csv_with, "image,twelve", "duration_s: 'twelve' is not a number"),
        (csv_with, "image,nan", "duration_s: NaN"),
        (csv_with, "image,inf", "duration_s: 'inf' is not finite"),
        (csv_with, "image,0", "duration_s: must be > 0, got '0'"),
        (csv_with, "image,-3.5", "duration_s: must be > 0, got '-3.5'"),
        (jsonl_with, '{"kind": "image", "duration_s": 12', "not valid JSON"),
        (jsonl_with, "[1, 2]", "not a JSON object (a list)"),
        (jsonl_with, "42", "not a JSON object (a int)"),
        (jsonl_with, '{"kind": "image"}', "duration_s: missing field"),
        (jsonl_with, '{"duration_s": 3}', "kind: missing field"),
        (jsonl_with, '{"kind": "image", "duration_s": null}', "duration_s: missing value"),
        (jsonl_with, '{"kind": "image", "duration_s": true}', "duration_s: True is not a number"),
        (jsonl_with, '{"kind": "image", "duration_s": NaN}', "duration_s: NaN"),
        (jsonl_with, '{"kind": 3, "duration_s": 4}', "kind: 3 is not text"),
        (jsonl_with, '{"kind": "image", "duration_s": 4, "width": "wide"}', "width: 'wide' is not a number"),
    ],
)
def test_malformed_records_are_skipped_counted_and_reported(tmp_path, maker, bad, reason):
    p, line = maker(tmp_path, bad)
    cal = calibrate([p], options())
    src = cal.data["sources"][0]
    assert (src["records"], src["valid"], src["malformed"]) == (101, 100, 1)
    assert src["malformed_lines"] == [line]
    assert cal.data["records"] == 100
    warnings = [t for level, t in cal.notes if level == "warning"]
    assert len(warnings) == 1
    assert f"{p}: skipped 1 malformed record(s) of 101: line {line}: {reason}" in warnings[0]


def test_first_line_numbers_listed_when_many_are_bad(tmp_path):
    lines = good_lines(200)
    for i in (3, 8, 20, 21, 50, 51, 90):
        lines[i] = "image,oops"
    p = tmp_path / "bench.csv"
    p.write_text("kind,duration_s\n" + "\n".join(lines) + "\n")
    cal = calibrate([p], options())
    ((_, text),) = [n for n in cal.notes if n[0] == "warning"]
    assert "skipped 7 malformed record(s) of 200: line 5:" in text
    assert "line 52: duration_s: 'oops' is not a number; and 2 more" in text


@pytest.mark.parametrize(
    "content,name",
    [
        ("", "empty.csv"),
        ("kind,duration_s\n", "header-only.csv"),
        ("", "empty.jsonl"),
        ("\n\n  \n", "blank.jsonl"),
    ],
)
def test_empty_file_fails_naming_it(tmp_path, content, name):
    p = tmp_path / name
    p.write_text(content)
    q, _ = csv_with(tmp_path, "image,20", name="good.csv")
    with pytest.raises(CalibrationError, match=rf"{name}: empty file \(no bench record\)"):
        calibrate([q, p], options())


def test_too_many_bad_records_fail_naming_the_file(tmp_path):
    lines = good_lines(100)
    for i in range(0, 60, 10):  # 6 of 100 bad: above 5 %
        lines[i] = "image,-1"
    p = tmp_path / "dirty.csv"
    p.write_text("kind,duration_s\n" + "\n".join(lines) + "\n")
    with pytest.raises(
        CalibrationError,
        match=r"dirty.csv: 6 of 100 records are malformed \(6.0%\), "
        r"more than calibration.max_bad_share \(5.0%\): line 2: "
        r"duration_s: must be > 0",
    ):
        calibrate([p], options())
    assert calibrate([p], options(max_bad_share=0.1)).data["records"] == 94


def test_kind_with_no_valid_record_fails(tmp_path):
    p, _ = csv_with(tmp_path, "audio,oops")
    with pytest.raises(
        CalibrationError,
        match=r"kind 'audio' has no valid record in .*bench.csv "
        r"\(its 1 record\(s\) are malformed\)",
    ):
        calibrate([p], options())
    with pytest.raises(
        CalibrationError, match=r"kind 'music' \(calibration.kinds\) has no valid record in .*bench.csv"
    ):
        calibrate([p], options(kinds=["image", "music"]))
    # leaving the kind out of calibration.kinds calibrates the others
    cal = calibrate([p], options(kinds=["image"]))
    assert list(cal.data["kinds"]) == ["image"] and cal.data["sources"][0]["ignored"] == 30


def test_kind_with_too_few_records_is_refused_with_its_count(tmp_path):
    lines = good_lines(100) + [f"audio,{5 + i}" for i in range(12)]
    p = tmp_path / "bench.csv"
    p.write_text("kind,duration_s\n" + "\n".join(lines) + "\n")
    with pytest.raises(
        CalibrationError,
        match=r"too few records to fit in .*bench.csv: 'audio' has 12 valid "
        r"record\(s\), fewer than calibration.min_records \(30\)",
    ):
        calibrate([p], options())
    assert (
        calibrate([p], options(min_records=10, distribution="empirical")).data["kinds"]["audio"]["count"]
        == 12
    )


def test_one_repeated_duration_cannot_be_fitted(tmp_path):
    p = tmp_path / "bench.csv"
    p.write_text("kind,duration_s\n" + "image,5\n" * 40)
    with pytest.raises(CalibrationError, match=r"kind 'image': all 40 durations .* are 5 s"):
        calibrate([p], options())


# --------------------------------------------------------------------------- calibration file


def test_calibration_file_errors_name_the_file_and_the_remedy(tmp_path, cfg):
    c = cfg.replace(scenario={"calibration": str(tmp_path / "missing.json")})
    with pytest.raises(
        CalibrationFileError,
        match=r"missing.json not found; make it with "
        r"`snakemake -j1 results/calibration.json` or `sched calibrate",
    ):
        generate(scenario_model(c), 1)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CalibrationFileError, match=r"bad.json: not valid JSON"):
        load_calibration(bad)
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(CalibrationFileError, match=r"bad.json: format: expected 'sched-calibration/1'"):
        load_calibration(bad)
    p = tmp_path / "bench.csv"
    two_kind_frame(100, 100).to_csv(p, index=False)
    data = calibrate([p], options()).data
    data["kinds"]["image"]["spec"]["sigma"] = -1
    bad.write_text(json.dumps(data))
    with pytest.raises(CalibrationFileError, match=r"bad.json: kinds.image.spec.sigma: -1 is less than"):
        load_calibration(bad)


# --------------------------------------------------------------------------- command line


def test_cli_end_to_end_on_the_example_logs(calibrated, tmp_path):
    """As a user: calibrate the shipped example logs, then generate scenarios from them."""
    r = calibrated.run
    assert "image:" in r.stdout and "video:" in r.stdout and "estimate noise sigma" in r.stdout
    # the two failed renders of the example CSV are reported, with their lines
    assert "example_bench.csv: skipped 2 malformed record(s) of 600: line 139:" in r.stderr
    assert calibrated.figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cal = load_calibration(calibrated.calibration)
    assert cal["records"] == 718
    img, vid = cal["kinds"]["image"], cal["kinds"]["video"]
    assert 20 < img["median_s"] < 30 and vid["median_s"] > 5 * img["median_s"]
    assert 0.7 < img["share"] < 0.9
    assert img["duration_model"]["features"] == ["pixels", "steps"]  # images: one frame each
    assert vid["duration_model"]["features"] == ["pixels", "frames", "steps"]
    assert 0.2 < cal["estimate_noise_sigma"] < 0.3  # the example logs' noise: 0.25

    out = tmp_path / "s.csv"
    r = run_here(
        "scenario", "--seed", 1, "--tasks", 20000, "--calibration", calibrated.calibration, "--out", out
    )
    assert r.returncode == 0, r.stderr
    f = pd.read_csv(out)
    assert set(f["kind"]) == {"image", "video"}
    assert (f["kind"] == "image").mean() == pytest.approx(img["share"], abs=0.02)
    for kind, e in cal["kinds"].items():
        d = f.loc[f.kind == kind, "duration_s"]
        fitted = (
            stats.lognorm(e["spec"]["sigma"], scale=e["spec"]["median_s"])
            if e["distribution"] == "lognormal"
            else stats.gamma(e["spec"]["shape"], scale=e["spec"]["scale_s"])
        )
        assert d.median() == pytest.approx(fitted.median(), rel=0.05)
        assert stats.kstest(d, fitted.cdf).statistic < 0.03
    noise = np.log(f["estimate_s"] / f["duration_s"]).std()
    assert noise == pytest.approx(cal["estimate_noise_sigma"], rel=0.05)
    # the same scenario from the config that names the calibration
    r2 = run_here("--config", calibrated.config, "scenario", "--seed", 1, "--tasks", 20000)
    assert r2.returncode == 0 and r2.stdout == out.read_text()


def test_cli_failure_writes_nothing_and_keeps_old_files(tmp_path):
    lines = good_lines(100) + ["audio,5"] * 3
    p = tmp_path / "bench.csv"
    p.write_text("kind,duration_s\n" + "\n".join(lines) + "\n")
    out = tmp_path / "cal.json"
    r = run_here("calibrate", p, "--out", out)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "'audio' has 3 valid record(s), fewer than calibration.min_records (30)" in r.stderr
    assert not out.exists() and not out.with_suffix(".png").exists()
    assert list(tmp_path.iterdir()) == [p]  # no temporary file left either
    out.write_text("old")
    r = run_here("calibrate", p, "--out", out, "--max-bad-share", 0.01)
    assert r.returncode == 2 and out.read_text() == "old"


def test_cli_column_options_jsonl_and_figure_path(tmp_path):
    frame = two_kind_frame(60, 40).rename(columns={"kind": "type", "duration_s": "secs"})
    p = write_jsonl(tmp_path / "b.jsonl", frame)
    out, fig = tmp_path / "c" / "cal.json", tmp_path / "figs" / "fit.png"
    r = run_here(
        "calibrate",
        p,
        "--kind-column",
        "type",
        "--duration-column",
        "secs",
        "--out",
        out,
        "--figure",
        fig,
        "--distribution",
        "lognormal",
    )
    assert r.returncode == 0, r.stderr
    assert "no duration model" in r.stderr  # no features: said so
    data = load_calibration(out)
    assert {e["distribution"] for e in data["kinds"].values()} == {"lognormal"}
    assert data["columns"]["kind"] == "type" and fig.read_bytes()[:4] == b"\x89PNG"
    r = run_here("scenario", "--seed", 1, "--tasks", 5, "--calibration", tmp_path / "none.json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "none.json not found; make it with `snakemake -j1 results/calibration.json`" in r.stderr


def test_scenario_with_a_calibration_stays_light(calibrated):
    # (scipy comes with numba anyway; the fitting and output modules and matplotlib must not)
    argv = ["--config", str(calibrated.config), "scenario", "--seed", "1", "--tasks", "3"]
    heavy = (
        "sched.data.bench.fit",
        "sched.data.bench.bench_logs",
        "sched.data.bench.calibration_output",
        "matplotlib",
        "torch",
    )
    code = (
        f"import sys; from sched.cli import main; rc = main({argv!r}); "
        f"heavy = [m for m in {heavy!r} if m in sys.modules]; "
        "sys.exit(f'imported {heavy}' if heavy else rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- issue 13: hostile bench logs


@pytest.mark.parametrize(
    "maker,bad,reason",
    [
        # a mean or a likelihood over such durations is Infinity or NaN in the calibration file
        (csv_with, "image,1e308", "duration_s: '1e308' is out of range (<= 1e+12)"),
        (jsonl_with, '{"kind": "image", "duration_s": 1e300}', "duration_s: 1e+300 is out of range"),
        (jsonl_with, '{"kind": "image", "duration_s": 4, "steps": 1e200}', "steps: 1e+200 is out of range"),
    ],
)
def test_absurdly_large_numbers_make_a_record_malformed(tmp_path, maker, bad, reason):
    p, line = maker(tmp_path, bad)
    cal = calibrate([p], options())
    assert cal.data["sources"][0]["malformed_lines"] == [line]
    warnings = [t for level, t in cal.notes if level == "warning"]
    assert f"line {line}: {reason}" in warnings[0]
    text = json.dumps(cal.data)
    assert "Infinity" not in text and "NaN" not in text


def test_a_bench_header_naming_a_column_twice_is_refused(tmp_path):
    p = tmp_path / "twice.csv"
    p.write_text("kind,duration_s, duration_s\n" + "\n".join(f"{x},1" for x in good_lines()) + "\n")
    with pytest.raises(CalibrationError, match=r"twice.csv: line 1: column 'duration_s' appears twice"):
        calibrate([p], options())


def test_unreadable_bench_logs_are_one_error_naming_them(tmp_path, monkeypatch):
    import os

    folder = tmp_path / "folder.csv"
    folder.mkdir()
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\xff\xfe\x00\x01\x80junk")
    cases = [(folder, "is a folder, not a file"), (junk, "not UTF-8 text")]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.csv")  # no writer: refused at once, not waited on
        cases.append((tmp_path / "fifo.csv", "not a regular file"))
    for path, match in cases:
        with pytest.raises(CalibrationError, match=match) as info:
            calibrate([path], options())
        assert str(info.value).startswith(f"{path}: ")
    good, _ = csv_with(tmp_path, "image,20", name="good.csv")
    real_open = os.open

    def denied(path, *args, **kwargs):  # chmod 000 does not stop root
        if str(path) == str(good):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(CalibrationError, match=r"good.csv: cannot read \(permission denied\)"):
        calibrate([good], options())


def test_the_calibration_cache_sees_a_rewrite_that_restores_the_mtime(calibrated, tmp_path):
    """Issue 32, item 14: rank() and the generator read the calibration through a cache keyed
    on the file's stat; a rewrite in place that restores the mtime changes its ctime."""
    from .test_policy_file import rewrite_in_place

    path = tmp_path / "calibration.json"
    text = calibrated.calibration.read_text()
    path.write_text(text)
    median = load_calibration(path)["kinds"]["image"]["median_s"]
    old = f'"median_s": {json.dumps(median)}'
    assert text.count(old) == 1  # the premise: one field to change, keeping the size
    new = old[:-1] + ("1" if old[-1] != "1" else "2")  # its last digit changed
    rewrite_in_place(path, text.replace(old, new).encode())
    assert load_calibration(path)["kinds"]["image"]["median_s"] != median


def test_calibrate_refuses_a_gpu_speed_outside_the_limits(tmp_path):
    from .conftest import run_here
    from .test_hostile_input import assert_one_line_error

    f = pd.read_csv(ROOT / "resources/bench/example_bench_gpus.csv")
    for model, factor, shown in (("a5000", 1e7, "e-08"), ("l40s", 1e-7, "e+0")):
        g = f.copy()
        g.loc[g.gpu == model, "duration_s"] *= factor
        g.to_csv(tmp_path / "b.csv", index=False)
        r = run_here("calibrate", "b.csv", "--out", "cal.json", cwd=tmp_path)  # in this process
        needles = (f"gpu '{model}'", "fitted speed", shown, "[0.001, 1000]")
        assert_one_line_error(r.returncode, r.stderr, *needles)
        assert not (tmp_path / "cal.json").exists() and not (tmp_path / "cal.png").exists()
