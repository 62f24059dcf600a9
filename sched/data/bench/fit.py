"""Duration calibration from GPU bench logs: the fits and :func:`calibrate`.

Fits each task kind's duration distribution (log-normal and gamma with
``scipy.stats``, location fixed at 0; or empirical resampling) and a
log-linear duration model

    log(duration_s) = intercept + sum_f coef_f * log(f),   f in pixels, frames, steps

by least squares (with a speed per GPU model when the logs name the GPU:
:mod:`sched.data.bench.gpu_effect`), and builds the calibration file that
``sched.data.scenario`` samples from (layout in ``sched/data/bench/calibration.py``).
The bench logs are read by :mod:`sched.data.bench.bench_logs`; the figure, the
files and the terminal summary are :mod:`sched.data.bench.calibration_output`'s.

A kind whose every record is malformed and a kind with fewer than
``calibration.min_records`` records stop the calibration with a
:class:`CalibrationError` (as do the per-file checks of the reading);
everything is decided before anything is written.
"""

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sched.data.bench.bench_logs import SHOWN, CalibrationError, read_bench
from sched.data.bench.calibration import FEATURES, FORMAT, check_calibration, model_log_prediction
from sched.data.bench.gpu_effect import fit_gpu_speeds, on_reference_gpu
from sched.data.distributions import DistributionError, frozen

FAMILY_PARAMETERS = 2  # lognormal (median, sigma), gamma (shape, scale): k in the AIC
KS_NOTE = (
    "KS p-values use the parameters fitted on the same data, so they are optimistic "
    "(Lilliefors); the statistic is the sup distance between the empirical and fitted CDFs."
)
MODEL_FORMULA = (
    "log(duration_s) = intercept + sum over features f of coefficients['log_' + f] * log(f)"
    " (pixels = width * height)"
)


# --------------------------------------------------------------------------- distribution families


def fit_family(name, x):
    """Maximum-likelihood fit of ``name`` (location 0) to durations ``x``."""
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if name == "lognormal":
            s, _, scale = stats.lognorm.fit(x, floc=0)
            params = {"median_s": float(scale), "sigma": float(s)}
        elif name == "gamma":
            a, _, scale = stats.gamma.fit(x, floc=0)
            params = {"shape": float(a), "scale_s": float(scale)}
        else:
            raise DistributionError(f"distribution: unknown family {name!r}")
    dist = frozen(name, params)
    ll = float(np.sum(dist.logpdf(x)))
    ks = stats.kstest(x, dist.cdf)
    return {
        "parameters": params,
        "median_s": float(dist.median()),
        "mean_s": float(dist.mean()),
        "log_likelihood": ll,
        "aic": 2 * FAMILY_PARAMETERS - 2 * ll,
        "ks_statistic": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
    }


def choose_family(candidates, criterion):
    """The candidate family with the lowest AIC or KS statistic (ties: by name)."""
    key = {"aic": "aic", "ks": "ks_statistic"}[criterion]
    return min(candidates, key=lambda name: (candidates[name][key], name))


# --------------------------------------------------------------------------- duration model


def fit_duration_model(frame, kind):
    """Least-squares log-linear model of one kind's durations: (model or None, notes).

    A feature enters when every record of the kind carries it, it varies, and
    it is not collinear with the features already in.
    """
    n = len(frame)
    X, used, notes, absent = _model_columns(frame)
    if not used:
        if len(absent) == len(FEATURES):
            why = "the records carry no feature (width and height, frames, steps)"
        else:
            why = "no feature is usable: " + "; ".join(notes)
        return None, [why]
    A = np.column_stack(X)
    dof = n - A.shape[1]
    if dof < 1:
        return None, [f"{n} records are too few for {len(used)} features"]
    y = np.log(frame["duration_s"].to_numpy(float))
    beta, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ beta
    ssr = float(resid @ resid)
    sst = float(((y - y.mean()) ** 2).sum())
    model = {
        "features": used,
        "coefficients": {
            "intercept": float(beta[0]),
            **{f"log_{f}": float(b) for f, b in zip(used, beta[1:])},
        },
        "formula": MODEL_FORMULA,
        "residual_sigma": math.sqrt(ssr / dof),
        "r2": 1.0 - ssr / sst if sst > 0 else 1.0,
        "n": n,
        "dof": dof,
    }
    if notes:
        model["notes"] = notes
    return model, notes


def _model_columns(frame):
    """The design matrix columns (intercept, then log features), the features used,
    notes on the features left out, and the features no record carries."""
    n = len(frame)
    values = {
        "pixels": frame["width"].to_numpy(float) * frame["height"].to_numpy(float),
        "frames": frame["frames"].to_numpy(float),
        "steps": frame["steps"].to_numpy(float),
    }
    X, used, notes, absent = [np.ones(n)], [], [], []
    for f in FEATURES:
        v = values[f]
        have = np.isfinite(v)
        what = "width and height" if f == "pixels" else f
        if not have.any():
            absent.append(what)
            continue
        if not have.all():
            notes.append(f"{what} missing in {int((~have).sum())} of {n} records: left out of the model")
            continue
        lv = np.log(v)
        if np.ptp(lv) == 0:
            notes.append(f"{f} is {v[0]:g} in every record: left out (the intercept holds it)")
            continue
        trial = np.column_stack(X + [lv])
        if np.linalg.matrix_rank(trial) < trial.shape[1]:
            notes.append(f"{f} is collinear with {', '.join(used)}: left out")
            continue
        X.append(lv)
        used.append(f)
    return X, used, notes, absent


def _row_features(row):
    return {"pixels": row.width * row.height, "frames": row.frames, "steps": row.steps}


# --------------------------------------------------------------------------- calibration


@dataclass
class Calibration:
    """What ``calibrate`` decided: the file content, notes, and data for the figure."""

    data: dict
    notes: list  # (level, text): level "warning" or "note"
    durations: dict  # kind -> measured durations (np.ndarray)
    predictions: dict  # kind -> model median predictions, or None


def calibrate(paths, options):
    """Calibrate from bench files ``paths`` under the ``calibration`` config section."""
    _check_paths(paths)
    logs = [read_bench(p, options) for p in paths]
    notes = _reading_notes(logs)
    names = ", ".join(str(log.path) for log in logs)
    frame = pd.DataFrame.from_records([r for log in logs for r in log.records])
    valid = _check_kinds(logs, frame, options, names)
    # a `gpu` column: a speed per GPU model, and the kinds fitted on the reference GPU
    gpu = fit_gpu_speeds(frame, valid, _model_columns)
    frame = on_reference_gpu(frame, gpu)
    families = list(options["families"])
    if options["distribution"] in ("lognormal", "gamma") and options["distribution"] not in families:
        families.append(options["distribution"])
    kinds, durations, predictions = {}, {}, {}
    for kind in sorted(valid):
        sub = frame[frame["kind"] == kind]
        kinds[kind] = _distribution_entry(kind, sub, len(frame), families, options, names)
        predictions[kind] = _add_duration_model(kinds[kind], kind, sub, notes)
        durations[kind] = sub["duration_s"].to_numpy(float)
    sigma, noise_note = _estimate_noise(kinds, notes)
    data = {
        "format": FORMAT,
        "sources": [_source(log) for log in logs],
        "records": len(frame),
        "columns": dict(options["columns"]),
        "selection": {
            "distribution": options["distribution"],
            "criterion": options["criterion"],
            "families": families,
            "min_records": options["min_records"],
            "max_bad_share": options["max_bad_share"],
        },
        "goodness_of_fit_note": KS_NOTE,
        "kinds": kinds,
        "estimate_noise_sigma": sigma,
        "estimate_noise_note": noise_note,
        "gpu_speeds": gpu,
    }
    fix = "the bench logs give a model no estimate can use: check their durations and features"
    check_calibration(data, f"the calibration fitted from {names}", fix)
    return Calibration(data, notes, durations, predictions)


def _check_paths(paths):
    if not paths:
        raise CalibrationError("no bench log given (pass files or set calibration.bench)")
    seen = set()
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            raise CalibrationError(f"{p}: bench log given twice")
        seen.add(key)


def _reading_notes(logs):
    """(level, text) notes on what the reading skipped or ignored, file by file."""
    notes = []
    for log in logs:
        if log.bad:
            notes.append(
                (
                    "warning",
                    f"{log.path}: skipped {len(log.bad)} malformed record(s) of "
                    f"{log.total}: {log.bad_summary()}",
                )
            )
        if log.ignored:
            notes.append(
                ("note", f"{log.path}: ignored {log.ignored} record(s) of kinds not in calibration.kinds")
            )
    return notes


def _check_kinds(logs, frame, options, names):
    """The kinds to calibrate; CalibrationError for a kind without (enough) valid records."""
    valid = set(frame["kind"]) if len(frame) else set()
    for kind in sorted({k for log in logs for k in log.bad_kinds} - valid):
        if options.get("kinds") is not None and kind not in options["kinds"]:
            continue
        n = sum(log.bad_kinds.get(kind, 0) for log in logs)
        raise CalibrationError(
            f"kind {kind!r} has no valid record in {names} (its {n} record(s) are malformed)"
        )
    for kind in options.get("kinds") or []:
        if kind not in valid:
            raise CalibrationError(f"kind {kind!r} (calibration.kinds) has no valid record in {names}")
    if not valid:
        raise CalibrationError(f"no valid bench record in {names}")
    counts = frame["kind"].value_counts()
    few = {k: int(c) for k, c in counts.items() if c < options["min_records"]}
    if few:
        listed = ", ".join(f"{k!r} has {c}" for k, c in sorted(few.items()))
        raise CalibrationError(
            f"too few records to fit in {names}: {listed} valid record(s), fewer than "
            f"calibration.min_records ({options['min_records']}); add measurements, lower "
            f"calibration.min_records or leave the kind out with calibration.kinds"
        )
    return valid


def _distribution_entry(kind, sub, total, families, options, names):
    """A kind's entry of the calibration file: measured summary, candidate fits, the choice."""
    choice, criterion = options["distribution"], options["criterion"]
    x = np.sort(sub["duration_s"].to_numpy(float))
    if np.ptp(x) == 0:
        raise CalibrationError(
            f"kind {kind!r}: all {len(x)} durations in {names} are "
            f"{x[0]:g} s; a distribution cannot be fitted to one value"
        )
    candidates = {f: fit_family(f, x) for f in families}
    best = choose_family(candidates, criterion)
    share = len(x) / total
    entry = {
        "count": int(len(x)),
        "share": share,
        "median_s": float(np.median(x)),
        "mean_s": float(np.mean(x)),
        "p90_s": float(np.quantile(x, 0.9)),
        "min_s": float(x[0]),
        "max_s": float(x[-1]),
    }
    if choice == "empirical":
        entry["distribution"] = "empirical"
        entry["parameters"] = {"samples_s": x.tolist()}
        entry["goodness_of_fit"] = None
        entry["selection"] = (
            f"empirical resampling of the {len(x)} measured durations "
            f"(calibration.distribution); best parametric family by "
            f"{criterion}: {best}"
        )
    else:
        chosen = best if choice == "auto" else choice
        c = candidates[chosen]
        entry["distribution"] = chosen
        entry["parameters"] = dict(c["parameters"])
        entry["goodness_of_fit"] = {
            "ks_statistic": c["ks_statistic"],
            "ks_pvalue": c["ks_pvalue"],
            "aic": c["aic"],
        }
        entry["selection"] = (
            f"lowest {'AIC' if criterion == 'aic' else 'KS statistic'} among {', '.join(families)}"
            if choice == "auto"
            else "fixed by calibration.distribution"
        )
    entry["candidates"] = candidates
    entry["spec"] = {"share": share, "distribution": entry["distribution"], **entry["parameters"]}
    return entry


def _add_duration_model(entry, kind, sub, notes):
    """Fit the kind's duration model into ``entry``, note what was left out, and return
    the model's median predictions for the kind's records (None without a model)."""
    model, model_notes = fit_duration_model(sub, kind)
    entry["duration_model"] = model
    if model is None:
        entry["duration_model_note"] = (
            f"no duration model: {model_notes[0]}; estimates for this kind fall back to its distribution"
        )
        notes.append(("note", f"kind {kind!r}: {entry['duration_model_note']}"))
        return None
    for text in model_notes:
        notes.append(("note", f"kind {kind!r}: duration model: {text}"))
    return np.array([math.exp(model_log_prediction(model, _row_features(r))) for r in sub.itertuples()])


def _estimate_noise(kinds, notes):
    """The pooled residual sigma of the duration models (None without one) and its note."""
    models = {k: e["duration_model"] for k, e in kinds.items() if e["duration_model"]}
    if not models:
        noise_note = (
            "no duration model (no feature in the bench logs): the simulator's "
            "estimate noise defaults to 0; set scenario.estimate_noise_sigma"
        )
        notes.append(("note", noise_note))
        return None, noise_note
    dof = sum(m["dof"] for m in models.values())
    sigma = math.sqrt(sum(m["residual_sigma"] ** 2 * m["dof"] for m in models.values()) / dof)
    noise_note = (
        f"pooled residual sigma of the duration models of {', '.join(sorted(models))} "
        f"(log scale); the simulator's default estimate noise"
    )
    if len(models) < len(kinds):
        noise_note += f"; {', '.join(sorted(set(kinds) - set(models)))} without a model"
    return sigma, noise_note


def _source(log):
    """The calibration file's record of one bench log."""
    return {
        "path": str(log.path),
        "format": log.format,
        "sha256": log.sha256,
        "records": log.total,
        "valid": len(log.records),
        "malformed": len(log.bad),
        "ignored": log.ignored,
        "malformed_lines": [line for line, _ in log.bad[:SHOWN]],
    }
