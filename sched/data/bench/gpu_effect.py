"""The GPU effect of the duration model: a speed factor per GPU model, from the bench logs.

When the bench records carry a ``gpu`` column (the GPU model that ran the
render), the calibration fits, on every record at once,

    log(duration_s) = kind's intercept + sum_f kind's coef_f * log(f) - log(speed_gpu)

by least squares: each kind keeps its own intercept and feature slopes (the
features its own duration model uses), and a GPU's speed is shared by every
kind. One GPU model is the reference, speed 1: the model with the most
records (ties: the first name in sorted order). A model's speed is
``exp(-beta)`` of its indicator's coefficient ``beta``, and its 95 % interval
``exp(-(beta -/+ t * se))`` with ``t`` Student's 0.975 quantile on the
residual degrees of freedom and ``se`` from ``sigma^2 (A'A)^-1`` (the
ordinary least-squares interval, assuming independent log-normal noise of
one spread).

The kinds' distributions and duration models are then fitted to the
durations on the reference GPU (a measured duration times its GPU's fitted
speed), the simulator's speed 1. Without a ``gpu`` column nothing changes
(``gpu_speeds`` is null in the file); a log naming a GPU in some records but
not in others is refused, naming the first such record.
"""

import math

import numpy as np

from sched.data.bench.bench_logs import CalibrationError
from sched.errors import shorten
from sched.limits import MAX_SPEED, MIN_SPEED

GPU_COLUMN = "gpu"
#: GPU models one calibration may tell apart (each is a column of the joint fit).
MAX_GPU_MODELS = 100
FORMULA = (
    "log(duration_s) = the kind's intercept + sum over its features f of coef_f * log(f) "
    "- log(speed of the GPU); the reference GPU has speed 1"
)


def gpu_names(frame):
    """Each record's GPU model (stripped text), or None when no record names one."""
    if GPU_COLUMN not in frame.columns:
        return None
    g = frame[GPU_COLUMN]
    text = g.map(lambda v: v.strip() if isinstance(v, str) else ("" if v is None or v != v else str(v)))
    missing = (text == "").to_numpy()
    if missing.all():
        return None
    if missing.any():
        r = frame[missing].iloc[0]
        raise CalibrationError(
            f"{r['source']}: line {r['line']}: {GPU_COLUMN}: missing value, while other records name "
            f"their GPU; name it in every record or in none"
        )
    return text.to_numpy(dtype=object)


def fit_gpu_speeds(frame, kinds, design):
    """The ``gpu_speeds`` entry of the calibration file (None without a ``gpu`` column).

    ``design(sub)`` gives a kind's design columns as ``fit._model_columns`` does
    (intercept first, then its log features).
    """
    names = gpu_names(frame)
    if names is None:
        return None
    models, counts = np.unique(names, return_counts=True)
    if len(models) > MAX_GPU_MODELS:
        raise CalibrationError(f"{GPU_COLUMN}: {len(models)} GPU models, more than {MAX_GPU_MODELS}")
    order = sorted(range(len(models)), key=lambda i: (-counts[i], models[i]))
    reference = str(models[order[0]])
    entry = {"reference": reference, "formula": FORMULA, "models": {}}
    if len(models) == 1:
        entry["models"][reference] = {"speed": 1.0, "ci95": [1.0, 1.0], "records": int(counts[0])}
        entry["note"] = "one GPU model in the logs: no GPU effect to fit"
        return entry
    kind = frame["kind"].to_numpy()
    cols = []
    for k in sorted(kinds):
        mask = kind == k
        for c in design(frame[mask])[0]:
            full = np.zeros(len(frame))
            full[mask] = c
            cols.append(full)
    others = [str(m) for m in models if m != reference]
    first_gpu = len(cols)
    cols += [(names == m).astype(float) for m in others]
    A = np.column_stack(cols)
    dof = A.shape[0] - A.shape[1]
    if dof < 1 or np.linalg.matrix_rank(A) < A.shape[1]:
        raise CalibrationError(
            f"{GPU_COLUMN}: the GPU models cannot be told apart from the kinds and features "
            f"({A.shape[0]} records, {A.shape[1]} coefficients); log each model on several kinds and sizes"
        )
    y = np.log(frame["duration_s"].to_numpy(float))
    beta, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ beta
    s2 = float(resid @ resid) / dof
    se = np.sqrt(np.maximum(np.diag(np.linalg.inv(A.T @ A)) * s2, 0.0))
    t = _t_quantile(dof)
    entry["models"][reference] = {"speed": 1.0, "ci95": [1.0, 1.0], "records": int(counts[order[0]])}
    for i, m in enumerate(others):
        b, s = float(beta[first_gpu + i]), float(se[first_gpu + i])
        _check_speed(m, -b)
        entry["models"][m] = {
            "speed": math.exp(-b),
            "ci95": [math.exp(-(b + t * s)), math.exp(-(b - t * s))],
            "records": int((names == m).sum()),
        }
    entry["residual_sigma"] = math.sqrt(s2)
    entry["dof"] = int(dof)
    entry["note"] = (
        "the kinds' distributions and duration models are fitted to the durations on the "
        "reference GPU (measured duration x its GPU's speed)"
    )
    return entry


def _check_speed(model, log_speed):
    """Refuse a fitted speed outside [MIN_SPEED, MAX_SPEED], the range every other input of
    speeds enforces (a GPU model logged on too few or too odd records)."""
    if not (math.log(MIN_SPEED) <= log_speed <= math.log(MAX_SPEED)):
        value = math.exp(min(log_speed, 700.0))
        raise CalibrationError(
            f"{GPU_COLUMN} {shorten(model)}: fitted speed {value:.3g}, outside [{MIN_SPEED:g}, "
            f"{MAX_SPEED:g}] (sched.limits.MIN_SPEED, MAX_SPEED); check its records (units, "
            f"mislabelled GPU), or leave the model out"
        )


def on_reference_gpu(frame, gpu):
    """``frame`` with every duration brought to the reference GPU (duration x its GPU's speed)."""
    if gpu is None or len(gpu["models"]) == 1:
        return frame
    speed = {m: e["speed"] for m, e in gpu["models"].items()}
    out = frame.copy()
    out["duration_s"] = frame["duration_s"].to_numpy(float) * np.array([speed[n] for n in gpu_names(frame)])
    return out


def summary(gpu):
    """Lines for the terminal and the report: each model's speed and its interval."""
    if gpu is None:
        return []
    if len(gpu["models"]) == 1:
        return [f"GPU: every record on {gpu['reference']} (no GPU effect)"]
    lines = [f"GPU speeds (reference {gpu['reference']} = 1; 95 % interval; records):"]
    for m, e in sorted(gpu["models"].items(), key=lambda kv: -kv[1]["speed"]):
        lo, hi = e["ci95"]
        lines.append(f"  {m:>16}: {e['speed']:.3f} [{lo:.3f}, {hi:.3f}]  n = {e['records']}")
    return lines


def _t_quantile(dof):
    from scipy import stats

    return float(stats.t.ppf(0.975, dof))
