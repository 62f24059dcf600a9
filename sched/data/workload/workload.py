"""Read a workload file (the output of ``sched calibrate-workload``) and draw from it.

Kept light (json, numpy): the scenario generator imports it. The fitting
lives in ``sched/data/workload/workload_fit.py``.

File layout (JSON, ``format`` = ``FORMAT``; field by field in
docs/file-contract.md and docs/workload.md)::

    {"format": "sched-workload/1",
     "arrivals": {"rate_per_hour": [168 rates, Monday 00:00-01:00 first, UTC], ...},
     "priorities": {"classes": [{"name", "weight", "share"}, ...],
                    "by_hour_of_day": [24 x classes shares] | null, ...},
     "deadlines": {"share_without": FLOAT,
                   "allowance": {"estimate_edges_s": [inner edges],
                                 "ratio_quantiles": [bins x QUANTILES ratios]}, ...},
     "load": {...}, "sources": [...], ...}

A generated task's allowance (due - arrival) is its estimate times a ratio
drawn from the fitted distribution of allowance / estimate among the history's
tasks of similar estimate (the bin of its estimate; inverse CDF through the
bin's quantiles). A task without deadline gets ``NO_DEADLINE_S``.
"""

import math
import os
from pathlib import Path

import numpy as np

from sched.errors import SchedError
from sched.files import read_text
from sched.formats import json_input
from sched.limits import MAX_CALIBRATION_BYTES, MAX_WEIGHT

FORMAT = "sched-workload/1"
HOURS_PER_WEEK = 168
#: Allowance of a task without deadline: a week, far beyond any wait in a
#: scenario, so it is never late, yet a finite number the policies' features
#: can take (``due_s`` must be finite in a scenario).
NO_DEADLINE_S = 7 * 86400.0
#: Seconds from the Unix epoch (a Thursday) back to the Monday 00:00 UTC before it.
EPOCH_WEEK_OFFSET_S = 3 * 86400.0
#: Candidate arrivals drawn at once by the thinning (bounds its memory).
BATCH = 1_000_000


class WorkloadFileError(SchedError):
    """A workload file is missing or invalid; the message names the file and field."""


def _how_to_make(path):
    return f"make it with `sched calibrate-workload HISTORY... --out {path}`"


def hour_of_week(seconds):
    """Hour of the week (0 = Monday 00:00-01:00 UTC) of times in seconds since 1970-01-01 UTC."""
    return (np.floor((np.asarray(seconds, dtype=np.float64) + EPOCH_WEEK_OFFSET_S) / 3600.0) % 168).astype(
        np.int64
    )


def load_workload(path):
    """Read and check a workload file; returns its content (a fresh dict).

    Read each time it is called: the scenario model (``sched.data.model``)
    reads it once per config, and generation reads nothing.
    """
    if not os.path.exists(path):
        raise WorkloadFileError(f"workload file {path} not found; {_how_to_make(path)}")
    text = read_text(Path(path), WorkloadFileError, limit=MAX_CALIBRATION_BYTES)
    data = json_input.parse(text, f"workload file {path}", WorkloadFileError, nan=True)
    check_workload(data, str(path))
    return data


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _numbers(value, shape, fail, field, low=0.0):
    """``value`` as a float array of ``shape`` (None: any length), every entry finite and >= low."""
    if not isinstance(value, list):
        fail(field, f"expected a list, got {type(value).__name__}")
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        fail(field, "expected numbers")
    if any(isinstance(x, bool) for x in np.ravel(np.array(value, dtype=object))):
        fail(field, "expected numbers, got true/false")
    if shape is not None and arr.shape != shape:
        fail(field, f"expected shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)) or (arr.size and arr.min() < low):
        fail(field, f"expected finite numbers >= {low:g}")
    return arr


def check_workload(data, source="workload"):
    """Raise WorkloadFileError unless ``data`` is a usable workload."""

    def fail(field, why):
        raise WorkloadFileError(f"workload file {source}: {field}: {why}; {_how_to_make(source)}")

    if not isinstance(data, dict):
        fail("(top level)", f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        fail("format", f"expected {FORMAT!r}, got {str(data.get('format'))[:40]!r}")
    for section in ("arrivals", "priorities", "deadlines"):
        if not isinstance(data.get(section), dict):
            fail(section, "missing (expected an object)")
    rate = _numbers(data["arrivals"].get("rate_per_hour"), (HOURS_PER_WEEK,), fail, "arrivals.rate_per_hour")
    if rate.max() <= 0:
        fail("arrivals.rate_per_hour", "every rate is 0")
    classes = data["priorities"].get("classes")
    if not isinstance(classes, list) or not classes:
        fail("priorities.classes", "expected a non-empty list")
    for i, c in enumerate(classes):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            fail(f"priorities.classes[{i}].name", "expected text")
        w, s = c.get("weight"), c.get("share")
        if not (_is_number(w) and 0 < w <= MAX_WEIGHT):
            fail(f"priorities.classes[{i}].weight", f"expected a number in (0, {MAX_WEIGHT:g}], got {w!r}")
        if not (_is_number(s) and 0 <= s <= 1):
            fail(f"priorities.classes[{i}].share", f"expected a number in [0, 1], got {s!r}")
    if sum(c["share"] for c in classes) <= 0:
        fail("priorities.classes", "the shares sum to 0")
    by_hour = data["priorities"].get("by_hour_of_day")
    if by_hour is not None:
        arr = _numbers(by_hour, (24, len(classes)), fail, "priorities.by_hour_of_day")
        if np.any(arr.sum(axis=1) <= 0):
            fail("priorities.by_hour_of_day", "an hour's shares sum to 0")
    load = data.get("load")
    if load is not None:
        if not isinstance(load, dict):
            fail("load", f"expected an object, got {type(load).__name__}")
        for key in ("mean_measured_duration_s", "mean_estimate_s"):
            v = load.get(key)
            if v is not None and not (_is_number(v) and 0 < v <= 1e9):
                fail(f"load.{key}", f"expected a number in (0, 1e9] or null, got {str(v)[:40]}")
    split = data.get("split")
    if split is not None:
        check_split(split, fail)
    _check_shapes(data, fail)
    d = data["deadlines"]
    s = d.get("share_without")
    if not (_is_number(s) and 0 <= s <= 1):
        fail("deadlines.share_without", f"expected a number in [0, 1], got {s!r}")
    a = d.get("allowance")
    if s < 1:
        if not isinstance(a, dict):
            fail("deadlines.allowance", "missing (expected an object)")
        edges = _numbers(a.get("estimate_edges_s"), None, fail, "deadlines.allowance.estimate_edges_s")
        if edges.ndim != 1 or np.any(np.diff(edges) < 0):
            fail("deadlines.allowance.estimate_edges_s", "expected an increasing list")
        q = a.get("ratio_quantiles")
        if not isinstance(q, list) or not q or not isinstance(q[0], list):
            fail("deadlines.allowance.ratio_quantiles", "expected a list of lists")
        arr = _numbers(q, (len(edges) + 1, len(q[0])), fail, "deadlines.allowance.ratio_quantiles")
        if arr.shape[1] < 2 or np.any(np.diff(arr, axis=1) < 0):
            fail("deadlines.allowance.ratio_quantiles", "expected increasing quantiles, at least 2 a bin")


def _check_shapes(data, fail):
    """The optional sections of issue 50's model (``sched.data.workload.shape_fit``)."""
    factors = data["arrivals"].get("day_factors")
    if factors is not None:
        arr = _numbers(factors, None, fail, "arrivals.day_factors")
        if arr.ndim != 1 or not len(arr) or arr.max() <= 0:
            fail("arrivals.day_factors", "expected a list of numbers >= 0, not all 0")
    by_class = data["deadlines"].get("share_without_by_class")
    if by_class is not None:
        arr = _numbers(
            by_class, (len(data["priorities"]["classes"]),), fail, "deadlines.share_without_by_class"
        )
        if np.any(arr > 1):
            fail("deadlines.share_without_by_class", "expected shares in [0, 1]")
    d = data.get("durations")
    if d is None:
        return
    if not isinstance(d, dict) or not isinstance(d.get("by_class"), list):
        fail("durations", "expected an object with `all` and a `by_class` list, or null")
    for i, e in enumerate([d.get("all"), *d["by_class"]]):
        where = "durations.all" if i == 0 else f"durations.by_class[{i - 1}]"
        if not isinstance(e, dict):
            fail(where, "expected an object")
        if i and not (_is_number(e.get("weight")) and 0 < e["weight"] <= MAX_WEIGHT):
            fail(f"{where}.weight", f"expected a number in (0, {MAX_WEIGHT:g}], got {e.get('weight')!r}")
        if e.get("shape") not in ("lognormal", "empirical"):
            fail(f"{where}.shape", f"expected lognormal or empirical, got {str(e.get('shape'))[:40]!r}")
        ln = e.get("lognormal")
        if not (isinstance(ln, dict) and _is_number(ln.get("mu")) and _is_number(ln.get("sigma"))):
            fail(f"{where}.lognormal", "expected {mu, sigma}, numbers")
        if not (abs(ln["mu"]) <= 50 and 0 < ln["sigma"] <= 10):
            fail(
                f"{where}.lognormal",
                f"expected |mu| <= 50 and sigma in (0, 10], got {ln['mu']!r}, {ln['sigma']!r}",
            )
        q = _numbers(e.get("quantiles_s"), None, fail, f"{where}.quantiles_s")
        if q.ndim != 1 or len(q) < 2 or q[0] <= 0 or q[-1] > 1e9 or np.any(np.diff(q) < 0):
            fail(f"{where}.quantiles_s", "expected at least 2 increasing durations in (0, 1e9]")
        m = e.get("mean_s")
        if not (_is_number(m) and 0 < m <= 1e9):
            fail(f"{where}.mean_s", f"expected a number in (0, 1e9], got {str(m)[:40]}")


def is_day(text):
    """An ISO date (YYYY-MM-DD) that exists."""
    import datetime as dt
    import re

    if not (isinstance(text, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", text)):
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def check_split(split, fail):
    """The ``split`` record (the fitted and held-out days,
    :func:`~sched.data.workload.workload_fit.held_out_split`)."""
    if not isinstance(split, dict):
        fail("split", f"expected an object, got {type(split).__name__}")
    for key in ("fitted", "validation", "held_out"):
        v = split.get(key)
        if key != "fitted" and v is None:
            continue
        if not (isinstance(v, list) and len(v) == 2 and all(is_day(x) for x in v) and v[0] <= v[1]):
            fail(f"split.{key}", f"expected [FIRST_DAY, LAST_DAY] as ISO dates, got {str(v)[:60]}")
    if split.get("validation") is not None:
        if split.get("held_out") is None:
            fail("split.validation", "validation days need held-out days after them")
        if not split["fitted"][1] < split["validation"][0] <= split["validation"][1] < split["held_out"][0]:
            fail("split.validation", "expected days after the fitted ones and before the held-out ones")
    if split.get("held_out") is not None and not split["fitted"][1] < split["held_out"][0]:
        fail("split.held_out", "expected days after the fitted ones")


#: The periods of a workload file's ``split`` that a stream can replay (``sched replay``).
PERIODS = ("validation", "held_out")


def period_days(workload, period):
    """[FIRST_DAY, LAST_DAY] (ISO dates) of the workload's ``period`` (:data:`PERIODS`), or None."""
    if period not in PERIODS:
        from sched.errors import InternalError

        raise InternalError(f"period: expected one of {PERIODS}, got {period!r}")
    split = workload.get("split") or {}
    return list(split[period]) if split.get(period) else None


def held_out_days(workload):
    """[FIRST_DAY, LAST_DAY] (ISO dates) of the days the fit held out, or None."""
    return period_days(workload, "held_out")


# --------------------------------------------------------------------------- drawing


def draw_arrivals(workload, rng, n, scale=1.0, start_hour=None, by_day=False):
    """(arrival times in s from the scenario start, hour of week of each, start hour of week).

    A non-homogeneous Poisson process with the workload's 168 hourly rates
    times ``scale``, from a start drawn uniformly over the week (or ``start_hour``, an hour
    of the week), by thinning: candidates at the peak rate, each kept with probability
    rate / peak. The start is drawn either way, so a fixed one leaves the rest unchanged.
    With ``by_day`` (config scenario.workload_model.day_intensity), a Cox process: each day
    of the scenario (from the start's UTC midnight) multiplies the rates by a factor drawn
    from the fitted days' (``arrivals.day_factors``, with replacement).
    """
    rate = np.asarray(workload["arrivals"]["rate_per_hour"], dtype=np.float64) * float(scale)
    start = rng.uniform(0.0, HOURS_PER_WEEK * 3600.0)
    if start_hour is not None:
        start = float(start_hour) * 3600.0 % (HOURS_PER_WEEK * 3600.0)
    factors, f_rng, fitted = np.ones(1), None, None
    if by_day:
        fitted = np.asarray(workload["arrivals"]["day_factors"], dtype=np.float64)
        f_rng = np.random.default_rng(rng.integers(2**63))
        factors = np.empty(0)
    fmax = fitted.max() if by_day else 1.0
    top = rate.max() * fmax / 3600.0  # per second
    first_day = np.floor(start / 86400.0)
    out = np.empty(0)
    t = 0.0
    while len(out) < n:
        # enough candidates for the tasks left, in batches of at most BATCH (memory stays bounded)
        m = min(BATCH, max(64, int(1.3 * (n - len(out)) * top * 3600.0 / rate.mean())))
        cand = t + np.cumsum(rng.exponential(1.0 / top, m))
        t = cand[-1]
        how = (np.floor((start + cand) / 3600.0) % HOURS_PER_WEEK).astype(np.int64)
        r = rate[how]
        if by_day:
            day = (np.floor((start + cand) / 86400.0) - first_day).astype(np.int64)
            while len(factors) <= day[-1]:  # the days' factors, drawn in order as the days come
                factors = np.concatenate([factors, f_rng.choice(fitted, 32)])
            r = r * factors[day]
        keep = rng.random(m) * top * 3600.0 < r
        out = np.concatenate([out, cand[keep]])
    arrival = out[:n]
    how = (np.floor((start + arrival) / 3600.0) % HOURS_PER_WEEK).astype(np.int64)
    return arrival, how, start / 3600.0


def _shape_entry(durations, weight, by_class):
    """The fitted shape a task of class ``weight`` draws from: its class's, else the pooled one."""
    if by_class:
        for e in durations["by_class"]:
            if e["weight"] == weight:
                return e
    return durations["all"]


def draw_durations(workload, rng, weights, by_class, heavy_tails):
    """Durations (s) of tasks of class weights ``weights`` from the history's measured ones
    (``durations``, ``sched.data.workload.shape_fit``): each class's own fit (``by_class``) or
    the pooled one; its lognormal, or with ``heavy_tails`` its quantiles where the KS test
    rejected the lognormal (inverse CDF, log-linear between quantiles). A normal and a uniform
    a task, drawn whatever the outcome (common random numbers)."""
    d = workload["durations"]
    weights = np.asarray(weights, dtype=np.float64)
    z, u = rng.standard_normal(len(weights)), rng.random(len(weights))
    out = np.empty(len(weights))
    for w in np.unique(weights):
        e, m = _shape_entry(d, float(w), by_class), weights == w
        if heavy_tails and e["shape"] == "empirical":
            q = np.log(np.asarray(e["quantiles_s"], dtype=np.float64))
            out[m] = np.exp(np.interp(u[m], np.linspace(0.0, 1.0, len(q)), q))
        else:
            out[m] = np.exp(e["lognormal"]["mu"] + e["lognormal"]["sigma"] * z[m])
    return out


def shape_mean(workload, by_class, heavy_tails):
    """E[duration] (s) that :func:`draw_durations` draws under the fitted class mix."""
    d = workload["durations"]
    total = 0.0
    for c in workload["priorities"]["classes"]:
        e = _shape_entry(d, float(c["weight"]), by_class)
        ln = e["lognormal"]
        mean = (
            e["mean_s"]
            if heavy_tails and e["shape"] == "empirical"
            else np.exp(ln["mu"] + ln["sigma"] ** 2 / 2)
        )
        total += c["share"] * float(mean)
    return total / sum(c["share"] for c in workload["priorities"]["classes"])


def class_table(workload):
    """(class names, weights, probabilities: 24 x classes) of the fitted priority mix."""
    classes = workload["priorities"]["classes"]
    names = [c["name"] for c in classes]
    weights = np.array([c["weight"] for c in classes], dtype=np.float64)
    by_hour = workload["priorities"].get("by_hour_of_day")
    if by_hour is None:
        probs = np.tile(np.array([c["share"] for c in classes], dtype=np.float64), (24, 1))
    else:
        probs = np.array(by_hour, dtype=np.float64)
    return names, weights, probs / probs.sum(axis=1, keepdims=True)


def draw_priorities(workload, rng, hour_of_day):
    """Class index of each task, from the mix of its hour of day (inverse CDF of one uniform each)."""
    _, _, probs = class_table(workload)
    cdf = np.cumsum(probs, axis=1)
    u = rng.random(len(hour_of_day))
    idx = (u[:, None] > cdf[np.asarray(hour_of_day, dtype=np.int64)]).sum(axis=1)
    return np.minimum(idx, probs.shape[1] - 1)


def draw_allowance(workload, rng, estimate, class_idx=None):
    """Deadline allowance (due - arrival, s) of tasks with these estimates; NO_DEADLINE_S for the
    share without deadline (each class's, ``deadlines.share_without_by_class``, with ``class_idx``
    the tasks' class indices). Two uniforms a task, drawn whatever the outcome (common random
    numbers)."""
    d = workload["deadlines"]
    estimate = np.asarray(estimate, dtype=np.float64)
    n = len(estimate)
    u_none, u_ratio = rng.random(n), rng.random(n)
    out = np.full(n, NO_DEADLINE_S)
    if d.get("allowance") is not None:
        a = d["allowance"]
        q = np.array(a["ratio_quantiles"], dtype=np.float64)
        b = np.searchsorted(np.asarray(a["estimate_edges_s"], dtype=np.float64), estimate, side="right")
        pos = u_ratio * (q.shape[1] - 1)
        lo = np.minimum(pos.astype(np.int64), q.shape[1] - 2)
        frac = pos - lo
        ratio = q[b, lo] * (1 - frac) + q[b, lo + 1] * frac
        share = d["share_without"]
        if class_idx is not None:
            share = np.asarray(d["share_without_by_class"], dtype=np.float64)[np.asarray(class_idx)]
        with_due = u_none >= share
        out[with_due] = ratio[with_due] * estimate[with_due]
    return out
