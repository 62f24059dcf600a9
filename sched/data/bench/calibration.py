"""Read a calibration file (the output of ``sched calibrate``) and use it.

Kept light (json, numpy, jsonschema): the scenario generator and ``rank()``
import it, so it must not pull in scipy or matplotlib. The fitting itself lives
in ``sched/data/bench/fit.py``.

File layout (JSON, ``format`` = ``FORMAT``)::

    {"format": "sched-calibration/1",
     "kinds": {KIND: {"count", "share", "median_s", "mean_s", "distribution",
                      "parameters", "goodness_of_fit", "candidates",
                      "spec": {share, distribution, <parameters>},
                      "duration_model": {features, coefficients, residual_sigma, r2, ...} | null,
                      ...}},
     "estimate_noise_sigma": FLOAT | null,
     "gpu_speeds": {"reference": GPU, "models": {GPU: {"speed", "ci95": [lo, hi], "records"}},
                    "formula", "residual_sigma", "dof", "note"} | null,
     ...}

``spec`` is exactly a ``scenario.kinds`` entry of the config (validated
against the same schema definition), so the generator samples from it with
``sched.data.scenario.sample_durations``.
"""

import copy
import math
import os
from pathlib import Path

import numpy as np

from sched import layout
from sched.cache import Cache
from sched.data.distributions import distribution_mean
from sched.errors import SchedError, shorten
from sched.files import read_text
from sched.formats import json_input
from sched.limits import MAX_CALIBRATION_BYTES, MAX_MODEL_EXPONENT, MAX_SECONDS

FORMAT = "sched-calibration/1"
#: Features of the log-linear duration model, in this order.
FEATURES = ("pixels", "frames", "steps")


def _how_to_make(path):
    return f"make it with `snakemake -j1 {layout.CALIBRATION}` or `sched calibrate [BENCH ...] --out {path}`"


_cache = Cache(1)  # one file in use at a time is the common case


class CalibrationFileError(SchedError):
    """A calibration file is missing or invalid; the message names the file and field."""


class PredictionError(SchedError):
    """A duration prediction asked for an unknown kind or statistic, or a task feature is not a number > 0."""


def load_calibration(path):
    """Read and check a calibration file; returns its content (a fresh dict)."""
    return copy.deepcopy(_cached(path))


def _cached(path):
    # the generator asks for the same file for every scenario it draws: parse
    # and check it once per version of the file; callers must not mutate it
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CalibrationFileError(f"calibration file {path} not found; {_how_to_make(path)}") from None
    # ctime too: a rewrite in place that restores the mtime (cp -p, os.utime) still changes it
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    return _cache.get(key, lambda: _read(path))


def _read(path):
    """A calibration file's content, parsed and checked."""
    path = Path(path)
    text = read_text(path, CalibrationFileError, limit=MAX_CALIBRATION_BYTES)  # no folder, pipe
    data = json_input.parse(text, f"calibration file {path}", CalibrationFileError, nan=True)
    check_calibration(data, str(path))
    return data


def check_calibration(data, source="calibration", fix=None):
    """Raise CalibrationFileError unless ``data`` is a usable calibration. ``source``: the file
    (the message says "calibration file SOURCE"); with ``fix`` (what to do about it), ``source``
    is said as it is (a fit being written)."""

    def fail(field, why):
        where = f"calibration file {source}" if fix is None else source
        raise CalibrationFileError(f"{where}: {field}: {why}; {fix or _how_to_make(source)}")

    if not isinstance(data, dict):
        fail("(top level)", f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        fail("format", f"expected {FORMAT!r}, got {data.get('format')!r}")
    kinds = data.get("kinds")
    if not isinstance(kinds, dict) or not kinds:
        fail("kinds", "expected a non-empty object of kinds")
    validator = _spec_validator()
    for kind, entry in kinds.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("spec"), dict):
            fail(f"kinds.{kind}.spec", "missing")
        errors = sorted(validator.iter_errors(entry["spec"]), key=lambda e: list(e.absolute_path))
        if errors:
            e = errors[0]
            where = ".".join(str(p) for p in e.absolute_path)
            fail(f"kinds.{kind}.spec" + (f".{where}" if where else ""), e.message)
        model = entry.get("duration_model")
        if model is not None:
            _check_model(model, f"kinds.{kind}.duration_model", fail)
    if sum(e["spec"]["share"] for e in kinds.values()) <= 0:
        fail("kinds", "the shares sum to 0")
    sigma = data.get("estimate_noise_sigma")
    if sigma is not None and not (_is_number(sigma) and sigma >= 0):
        fail("estimate_noise_sigma", f"expected null or a number >= 0, got {sigma!r}")
    gpu = data.get("gpu_speeds")  # absent in files made before GPU speeds: as null
    if gpu is not None:
        _check_gpu_speeds(gpu, fail)


def _check_gpu_speeds(gpu, fail):
    models = gpu.get("models") if isinstance(gpu, dict) else None
    if not isinstance(models, dict) or not models or not isinstance(gpu.get("reference"), str):
        fail("gpu_speeds", "expected null or an object with reference and models")
    for name, e in models.items():
        ci = e.get("ci95") if isinstance(e, dict) else None
        ok = isinstance(ci, list) and len(ci) == 2 and all(_is_number(c) and c > 0 for c in ci)
        if not (ok and _is_number(e.get("speed")) and e["speed"] > 0):
            fail(f"gpu_speeds.models.{name}", "expected a speed > 0 and its ci95 [low, high]")


def _check_model(model, field, fail):
    if not isinstance(model, dict):
        fail(field, "expected an object or null")
    feats = model.get("features")
    if not isinstance(feats, list) or not feats or any(f not in FEATURES for f in feats):
        fail(f"{field}.features", f"expected a non-empty list drawn from {list(FEATURES)}, got {feats!r}")
    coef = model.get("coefficients")
    need = ["intercept"] + [f"log_{f}" for f in feats]
    if not isinstance(coef, dict) or any(not _is_number(coef.get(k)) for k in need):
        fail(f"{field}.coefficients", f"expected numbers for {need}, got {shorten(coef)}")
    s = model.get("residual_sigma")
    if not (_is_number(s) and s >= 0):
        fail(f"{field}.residual_sigma", f"expected a number >= 0, got {shorten(s)}")
    # bounds, so that exp() of a prediction cannot overflow: the mean's factor exp(s^2 / 2) and
    # the prediction for features of 1 (the intercept) within MAX_SECONDS, the exponents bounded
    if s * s / 2.0 > LOG_MAX_SECONDS:
        why = f"{s:g} makes the mean duration exp({s * s / 2:.4g}) times the median, {_beyond}"
        fail(f"{field}.residual_sigma", why)
    if coef["intercept"] + s * s / 2.0 > LOG_MAX_SECONDS:
        fail(
            f"{field}.coefficients.intercept",
            f"{coef['intercept']:g} predicts exp({coef['intercept']:.4g}) s for features of 1, {_beyond}",
        )
    for name in need[1:]:
        if abs(coef[name]) > MAX_MODEL_EXPONENT:
            fail(
                f"{field}.coefficients.{name}",
                f"{coef[name]:g} is beyond +-{MAX_MODEL_EXPONENT:g} (sched.limits.MAX_MODEL_EXPONENT)",
            )


#: log(MAX_SECONDS): the largest log duration a model may predict.
LOG_MAX_SECONDS = math.log(MAX_SECONDS)
_beyond = f"beyond {MAX_SECONDS:g} s (sched.limits.MAX_SECONDS)"


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _spec_validator():
    # the same definition the config schema uses for scenario.kinds entries
    from jsonschema import Draft202012Validator

    from sched.config import load_schema

    schema = load_schema()
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/kind"})


def _calibration(calibration):
    if isinstance(calibration, dict):
        check_calibration(calibration)
        return calibration
    return _cached(calibration)


def feature_values(features, source="task"):
    """{feature: value} for the model features a task carries.

    ``features`` may hold ``pixels`` or ``width`` and ``height``, ``frames`` and
    ``steps``. Absent or None values are left out; any other value must be a
    finite number > 0.
    """

    def number(name):
        v = features.get(name)
        if v is None:
            return None
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise PredictionError(f"{source}: field {name}: {v!r} is not a number") from None
        if isinstance(v, bool) or not math.isfinite(x) or x <= 0:
            raise PredictionError(f"{source}: field {name}: must be a finite number > 0, got {v!r}")
        return x

    out = {}
    pixels = number("pixels")
    if pixels is None:
        w, h = number("width"), number("height")
        if w is not None and h is not None:
            pixels = w * h
    if pixels is not None:
        out["pixels"] = pixels
    for name in ("frames", "steps"):
        v = number(name)
        if v is not None:
            out[name] = v
    return out


def model_log_prediction(model, values):
    """log(duration) the duration model predicts from {feature: value} (numbers or numpy arrays)."""
    coef = model["coefficients"]
    return coef["intercept"] + sum(coef[f"log_{f}"] * np.log(values[f]) for f in model["features"])


def predict_duration(calibration, kind, features=None, statistic="median"):
    """Estimated duration in seconds of a ``kind`` task with ``features``.

    ``calibration`` is a calibration dict or file path. When the kind has a
    duration model and ``features`` carry all its features, the model's
    prediction (log-linear in pixels, frames, steps); otherwise the kind's
    measured median (``statistic="median"``) or its distribution's mean
    (``"mean"``). The model's median is exp(predicted log duration), its mean
    that times exp(residual_sigma**2 / 2). The simulator's estimate noise is
    median-unbiased like the default.
    """
    if statistic not in ("median", "mean"):
        raise PredictionError(f"statistic: expected 'median' or 'mean', got {statistic!r}")
    cal = _calibration(calibration)
    entry = cal["kinds"].get(kind)
    if entry is None:
        raise PredictionError(
            f"kind {kind!r} is not in the calibration (kinds: {', '.join(sorted(cal['kinds']))})"
        )
    model = entry.get("duration_model")
    values = feature_values(features or {}, f"task of kind {kind!r}")
    if model is not None and all(f in values for f in model["features"]):
        x = model_log_prediction(model, values)
        if statistic == "mean":
            x += model["residual_sigma"] ** 2 / 2.0
        if not x <= LOG_MAX_SECONDS:  # exp() would overflow, or give more than any time holds
            shown = ", ".join(f"{f} {values[f]:g}" for f in model["features"])
            raise PredictionError(
                f"kind {kind!r}: the duration model predicts exp({x:.4g}) s for {shown}, {_beyond}"
            )
        d = math.exp(model_log_prediction(model, values))
        if statistic == "mean":
            d *= math.exp(model["residual_sigma"] ** 2 / 2.0)
        return d
    if statistic == "mean":
        return float(distribution_mean(entry["spec"]))
    return float(entry["median_s"])
