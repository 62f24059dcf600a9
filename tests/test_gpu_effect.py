"""The GPU effect of the calibration: a speed per GPU model, recovered from the example logs."""

import json

import pandas as pd
import pytest

from sched.data.bench.fit import CalibrationError, calibrate

from .conftest import ROOT
from .test_calibrate import options

GPUS_LOG = ROOT / "resources/bench/example_bench_gpus.csv"


def _truth():
    # the generating script's GPU models and speeds (the truth the fit must recover)
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_logs", ROOT / "resources/bench/make_example_logs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.GPU_MODELS


def test_the_fit_recovers_the_known_speeds_within_their_intervals():
    gpu = calibrate([GPUS_LOG], options()).data["gpu_speeds"]
    truth = _truth()
    assert gpu["reference"] == "rtx4090" and truth["rtx4090"] == 1.0
    assert set(gpu["models"]) == set(truth)
    for model, speed in truth.items():
        e = gpu["models"][model]
        lo, hi = e["ci95"]
        assert lo <= speed <= hi, (model, speed, e)
        assert lo <= e["speed"] <= hi
        if model != "rtx4090":
            assert hi - lo < 0.2 * speed  # informative, not a blanket interval
    assert json.loads(json.dumps(gpu)) == gpu  # plain JSON


def test_kinds_are_fitted_on_the_reference_gpu(tmp_path):
    # the same renders, each duration brought to the rtx4090 by hand: the kinds' fits are
    # close to those of the mixed log (which brings them there with the fitted speeds)
    truth = _truth()
    f = pd.read_csv(GPUS_LOG)
    f["duration_s"] = f["duration_s"] * f["gpu"].map(truth)
    f = f.drop(columns="gpu")
    p = tmp_path / "ref.csv"
    f.to_csv(p, index=False)
    by_hand = calibrate([p], options()).data
    mixed = calibrate([GPUS_LOG], options()).data
    assert by_hand["gpu_speeds"] is None
    for kind in by_hand["kinds"]:
        a, b = by_hand["kinds"][kind]["median_s"], mixed["kinds"][kind]["median_s"]
        assert b == pytest.approx(a, rel=0.05)
    # and far from the raw mixed durations' when the speeds are ignored
    raw = pd.read_csv(GPUS_LOG).drop(columns="gpu")
    raw.to_csv(p, index=False)
    ignored = calibrate([p], options()).data["kinds"]["video"]["spec"]
    assert ignored != mixed["kinds"]["video"]["spec"]


def test_logs_without_a_gpu_column_are_calibrated_as_before(tmp_path):
    f = pd.read_csv(ROOT / "resources/bench/example_bench.csv").drop(columns="gpu")
    p = tmp_path / "nogpu.csv"
    f.to_csv(p, index=False)
    data = calibrate([p], options()).data
    assert data["gpu_speeds"] is None
    one = f.assign(gpu="rtx4090")
    one.to_csv(p, index=False)
    same = calibrate([p], options()).data
    assert list(same["gpu_speeds"]["models"]) == ["rtx4090"]
    assert same["kinds"] == data["kinds"]  # one model: nothing to bring to a reference


def test_a_gpu_missing_in_some_records_is_refused(tmp_path):
    f = pd.read_csv(GPUS_LOG)
    f.loc[5, "gpu"] = None
    p = tmp_path / "holes.csv"
    f.to_csv(p, index=False)
    with pytest.raises(CalibrationError, match=r"holes.csv: line 7: gpu: missing value"):
        calibrate([p], options())
