"""Fit a workload to a queue history: ``sched calibrate-workload``.

The history is streamed (``sched/data/workload/history.py``); everything the fit
needs is accumulated in memory that does not grow with the history: counts
by hour of the week, priority counts by hour of day, sums for the load, and a
seeded reservoir of (estimate, allowance) pairs (``RESERVOIR`` of them) for
the deadline model and the figure.

Fits (docs/workload.md):

* arrivals: the observed rate at each of the 168 hours of the week (tasks
  counted at that hour / hours of the history's span at that hour), smoothed
  by a 3-tap kernel [w, 1 - 2w, w] within each day, whose w is chosen by
  Stein's unbiased risk estimate under Poisson noise: w = 2·Σ var / Σ
  (second difference)², clipped to [0, 1/4] (near 0 with much data).
* priorities: the share of each class, and the share by hour of day, kept
  when a chi-square test of independence rejects a constant mix
  (p < ``MIX_P``); each hour's shares are shrunk toward the overall mix by
  ``MIX_PRIOR`` pseudo-tasks.
* deadlines: the share of tasks without one; among the others, the ratio
  allowance / estimate, in ``ALLOWANCE_BINS`` bins of the estimate (equal
  counts), each bin's distribution kept as ``QUANTILES`` quantiles.
* load: the mean estimate and the mean measured duration (when started_at and
  finished_at are given), the arrival rate, and the load they imply on the
  configured GPUs.
* what a real queue shows beyond these (``sched.data.workload.shape_fit``): the
  measured durations by priority class (a reservoir of ``RESERVOIR`` a class),
  the share without deadline by class, and each whole day's intensity.

The estimate of a task is what the scheduler would have had at submission:
the calibration's duration model from its features (``predict_duration``'s
rule, vectorised), else the kind's measured median.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from sched.data.bench.calibration import load_calibration, model_log_prediction
from sched.data.workload.history import HistoryError, HistoryStats, read_history
from sched.data.workload.shape_fit import ShapeSums
from sched.data.workload.split import bulk_window, duration_text, held_out_split
from sched.data.workload.workload import FORMAT, HOURS_PER_WEEK, check_workload, hour_of_week
from sched.limits import MIN_HISTORY_SPAN_S

RESERVOIR = 50_000
ALLOWANCE_BINS = 50
MIN_PER_BIN = 250
QUANTILES = 101
MIX_P = 0.001
MIX_PRIOR = 20.0


def estimates(calibration, kind, features):
    """The duration model's median estimate (s) of each task (vectorised ``predict_duration``)."""
    out = np.empty(len(kind))
    for k in pd.unique(kind):
        sel = kind == k
        entry = calibration["kinds"][k]
        out[sel] = entry["median_s"]
        model = entry.get("duration_model")
        if model is None:
            continue
        values = {f: v[sel] for f, v in features.items()}
        values["pixels"] = values["width"] * values["height"]
        have = np.all([np.isfinite(values[f]) for f in model["features"]], axis=0)
        if have.any():
            out[np.flatnonzero(sel)[have]] = np.exp(
                model_log_prediction(model, {f: values[f][have] for f in model["features"]})
            )
    return out


def exposure_hours(t0, t1):
    """Hours of [t0, t1] (s since 1970-01-01 UTC) falling at each of the 168 hours of the week.

    Counted in closed form (whole weeks, then the hours left over, then the two
    partial hours at the ends), so a history spanning centuries costs no more
    than one spanning a day.
    """
    out = np.zeros(HOURS_PER_WEEK)
    a, b = t0 / 3600.0, t1 / 3600.0
    first, last = np.ceil(a), np.floor(b)  # the whole hours [first, last)

    def at(hour):
        return int(hour_of_week(hour * 3600.0))

    if last < first:  # within one hour
        out[at(np.floor(a))] += b - a
        return out
    out[at(first - 1)] += first - a
    out[at(last)] += b - last
    whole = int(last - first)
    out += whole // HOURS_PER_WEEK
    rest = whole % HOURS_PER_WEEK
    if rest:
        out[(at(first) + np.arange(rest)) % HOURS_PER_WEEK] += 1.0
    return out


def smooth_rates(counts, exposure):
    """(smoothed rates, w, raw rates): the kernel of the module docstring, w by Stein's unbiased risk.

    The kernel runs within each day, reflected at midnight (hour 0's missing
    neighbour is hour 1): a studio's rate may jump at midnight between a
    Friday and a Saturday, and smoothing across that step would bias both
    sides of it.
    """
    exposure = np.asarray(exposure, dtype=np.float64)
    seen = exposure > 0
    raw = np.where(seen, counts / np.where(seen, exposure, 1.0), 0.0)
    if not seen.all():  # an hour never observed: its neighbours' mean stands in (circularly)
        known = np.flatnonzero(seen)
        raw = np.interp(np.arange(HOURS_PER_WEEK), known, raw[known], period=HOURS_PER_WEEK)
    var = np.where(seen, raw / np.where(seen, exposure, 1.0), 0.0)  # Poisson: var(rate) = rate / exposure
    day = raw.reshape(7, 24)
    padded = np.concatenate([day[:, 1:2], day, day[:, -2:-1]], axis=1)
    second = (padded[:, :-2] + padded[:, 2:] - 2 * day).ravel()
    a = float(np.sum(second**2))
    w = 0.25 if a <= 0 else float(np.clip(2 * var.sum() / a, 0.0, 0.25))
    return raw + w * second, w, raw


@dataclass
class WorkloadAccumulator:
    """Sums over the streamed history (bounded memory); :meth:`fit` turns them into the workload."""

    calibration: dict
    seed: int = 0
    counts: np.ndarray = field(default_factory=lambda: np.zeros(HOURS_PER_WEEK))
    class_hour: dict = field(default_factory=dict)  # weight -> counts by hour of day
    kinds: dict = field(default_factory=dict)
    t0: float = np.inf
    t1: float = -np.inf
    n: int = 0
    with_due: int = 0
    est_sum: float = 0.0
    measured_n: int = 0
    measured_sum: float = 0.0
    measured_est_sum: float = 0.0
    keys: np.ndarray = field(default_factory=lambda: np.empty(0))
    pairs: np.ndarray = field(default_factory=lambda: np.empty((0, 2)))
    times: list = field(default_factory=list)  # the submission times, for the bulk of the span
    # the UTC days (floor(t / 86400)) holding a task with a measured duration: the held-out
    # replay judges only those (sched.data.workload.split.held_out_split); one entry a day, bounded
    measured_days: set = field(default_factory=set)
    # issue 50 (sched.data.workload.shape_fit): durations and deadlines by class, tasks by day
    shapes: ShapeSums = None

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)
        self.shapes = ShapeSums(self.seed, RESERVOIR)

    before: float = np.inf  # records submitted at or after it are held out (not fitted, not malformed)

    def add(self, chunk):
        if np.isfinite(self.before):
            chunk = chunk.rows(chunk.submitted < self.before)
            if not len(chunk):
                return
        n = len(chunk)
        sub = chunk.submitted
        self.n += n
        self.times.append(sub.copy())
        self.t0, self.t1 = min(self.t0, sub.min()), max(self.t1, sub.max())
        self.counts += np.bincount(hour_of_week(sub), minlength=HOURS_PER_WEEK)
        hod = hour_of_week(sub) % 24
        for w in np.unique(chunk.weight):
            c = self.class_hour.setdefault(float(w), np.zeros(24))
            c += np.bincount(hod[chunk.weight == w], minlength=24)
        for k, c in pd.Series(chunk.kind).value_counts().items():
            self.kinds[str(k)] = self.kinds.get(str(k), 0) + int(c)
        est = estimates(self.calibration, chunk.kind, chunk.features)
        self.est_sum += float(est.sum())
        measured = np.isfinite(chunk.started) & np.isfinite(chunk.finished)
        self.measured_days.update(np.unique(np.floor(sub[measured] / 86400.0)).astype(np.int64).tolist())
        self.measured_n += int(measured.sum())
        self.measured_sum += float((chunk.finished - chunk.started)[measured].sum())
        self.measured_est_sum += float(est[measured].sum())
        due = np.isfinite(chunk.due)
        self.with_due += int(due.sum())
        self.shapes.add(sub, chunk.weight, chunk.finished - chunk.started, measured, due)
        # reservoir by random keys: the RESERVOIR smallest keys are a uniform sample of every pair seen
        keys = self.rng.random(int(due.sum()))
        pairs = np.column_stack([est[due], (chunk.due - sub)[due]])
        self.keys = np.concatenate([self.keys, keys])
        self.pairs = np.concatenate([self.pairs, pairs])
        if len(self.keys) > RESERVOIR:
            keep = np.argpartition(self.keys, RESERVOIR)[:RESERVOIR]
            self.keys, self.pairs = self.keys[keep], self.pairs[keep]

    def fit(self, machines, priorities):
        """The workload dict (see sched/data/workload/workload.py) and the arrays the figure needs.

        ``machines``: the configured GPUs in any form of ``scenario.machines``; the load's
        denominator is the sum of their speeds, as the generator's.
        """
        from sched.data.machines import describe, speeds

        sp = speeds(machines, "scenario.machines")
        capacity = float(sp.sum())

        exposure = exposure_hours(self.t0, self.t1)
        rate, w, raw = smooth_rates(self.counts, exposure)
        hours = (self.t1 - self.t0) / 3600.0
        mean_rate = self.n / hours
        mean_est = self.est_sum / self.n
        allowance = self._allowance()
        order = np.argsort(self.pairs[:, 0], kind="stable")
        data = {
            "format": FORMAT,
            "span": {
                "start": _iso(self.t0),
                "end": _iso(self.t1),
                "hours": hours,
                "weeks": hours / HOURS_PER_WEEK,
            },
            "tasks": self.n,
            "kinds": {k: c / self.n for k, c in sorted(self.kinds.items())},
            "arrivals": {
                "rate_per_hour": rate.tolist(),
                "observed_rate_per_hour": raw.tolist(),
                "observed_counts": self.counts.astype(int).tolist(),
                "exposure_hours": exposure.tolist(),
                "smoothing_weight": w,
                "hours_with_tasks": int(np.count_nonzero(self.counts)),
                "hours_with_tasks_share": float(np.count_nonzero(self.counts) / HOURS_PER_WEEK),
                "mean_rate_per_hour": mean_rate,
                "hours": "168 hours of the week, Monday 00:00-01:00 UTC first",
            },
            "priorities": self._priorities(priorities),
            "deadlines": {
                "share_without": 1.0 - self.with_due / self.n,
                "with_deadline": self.with_due,
                "allowance": allowance,
                "allowance_sample": len(self.pairs),
                "median_allowance_s": float(np.median(self.pairs[:, 1])) if len(self.pairs) else None,
            },
            "load": {
                "machines": describe(sp),
                "capacity": capacity,
                "mean_estimate_s": mean_est,
                "mean_measured_duration_s": self.measured_sum / self.measured_n if self.measured_n else None,
                "measured_tasks": self.measured_n,
                "implied_load": mean_rate * mean_est / 3600.0 / capacity,
                "implied_load_measured": (
                    mean_rate * (self.measured_sum / self.measured_n) / 3600.0 / capacity
                    if self.measured_n
                    else None
                ),
                "peak_hour_load": float(rate.max() * mean_est / 3600.0 / capacity),
            },
        }
        self.shapes.fit(data, {float(v["weight"]): k for k, v in priorities.items()}, self.t0, self.t1)
        return data, {"pairs": self.pairs[order], "raw": raw}

    def _priorities(self, priorities):
        """The priority mix: class shares, and shares by hour of day when the mix changes."""
        from scipy.stats import chi2_contingency

        names = {float(v["weight"]): k for k, v in priorities.items()}
        weights = sorted(self.class_hour)
        table = np.array([self.class_hour[w] for w in weights]).T  # 24 x classes
        total = table.sum(axis=0)
        shares = total / total.sum()
        p_mix = 1.0
        rows, cols = table.sum(axis=1) > 0, total > 0
        if rows.sum() > 1 and cols.sum() > 1:
            p_mix = float(chi2_contingency(table[rows][:, cols])[1])
        by_hour = None
        if p_mix < MIX_P:
            by_hour = (table + MIX_PRIOR * shares) / (table.sum(axis=1, keepdims=True) + MIX_PRIOR)
        return {
            "classes": [
                {"name": names.get(w, f"weight-{w:g}"), "weight": w, "share": float(s), "count": int(c)}
                for w, s, c in zip(weights, shares, total)
            ],
            "by_hour_of_day": by_hour.tolist() if by_hour is not None else None,
            "mix_by_hour_pvalue": p_mix,
            "varies_by_hour": by_hour is not None,
        }

    def _allowance(self):
        if not len(self.pairs):
            return None
        est, allowance = self.pairs[:, 0], self.pairs[:, 1]
        bins = int(np.clip(len(est) // MIN_PER_BIN, 1, ALLOWANCE_BINS))
        edges = np.quantile(est, np.linspace(0, 1, bins + 1)[1:-1]) if bins > 1 else np.empty(0)
        edges = list(np.unique(edges))
        while True:  # estimates with few distinct values leave bins empty: merge them into a neighbour
            counts = np.bincount(np.searchsorted(edges, est, side="right"), minlength=len(edges) + 1)
            empty = np.flatnonzero(counts == 0)
            if not len(empty):
                break
            del edges[max(int(empty[0]) - 1, 0)]
        edges = np.array(edges, dtype=np.float64)
        b = np.searchsorted(edges, est, side="right")
        ratio = allowance / est
        grid = np.linspace(0, 1, QUANTILES)
        q = [np.quantile(ratio[b == i], grid).tolist() for i in range(len(edges) + 1)]
        return {
            "model": "ratio allowance / estimate, quantiles by bin of the estimate",
            "estimate_edges_s": edges.tolist(),
            "ratio_quantiles": q,
        }


def _iso(t):
    return datetime.fromtimestamp(float(t), UTC).isoformat(timespec="seconds")


@dataclass
class WorkloadResult:
    data: dict
    arrays: dict
    stats: list


def calibrate_workload(paths, cfg, calibration_path, seed=0, chunk_size=None):
    """Stream the history files and fit the workload; returns a :class:`WorkloadResult`.

    Records far outside the bulk of the span (:func:`bulk_window`) are malformed: when there
    are any, the files are read a second time without them (their lines then reported and
    counted toward ``workload.max_bad_share``). A span shorter than a week
    (``MIN_HISTORY_SPAN_S``) is refused.
    """
    from sched.data.workload.history import CHUNK, history_format

    if not paths:
        raise HistoryError("no history file given (config workload.history is empty)")
    calibration = load_calibration(calibration_path)
    opts = cfg.workload

    def read(window, before=np.inf):
        acc = WorkloadAccumulator(calibration, seed, before=before)
        stats, seen = [], {}  # ids across the files: the same task in two exports counts once
        for p in paths:
            st = HistoryStats(Path(p), history_format(p))
            for chunk in read_history(
                p,
                cfg.scenario.priorities,
                opts["max_bad_share"],
                kinds=set(calibration["kinds"]),
                stats=st,
                chunk_size=chunk_size or CHUNK,
                window=window,
                seen=seen,
            ):
                acc.add(chunk)
            stats.append(st)
        return acc, stats

    acc, stats = read(None)
    window = bulk_window(np.concatenate(acc.times)) if acc.times else None
    acc.times = []
    if window is not None:
        acc, stats = read(window)
        acc.times = []
    names = ", ".join(map(str, paths))
    if acc.n < opts["min_tasks"]:
        raise HistoryError(
            f"{names}: {acc.n} valid tasks, fewer than workload.min_tasks ({opts['min_tasks']})"
        )
    span = acc.t1 - acc.t0
    if span < MIN_HISTORY_SPAN_S:
        raise HistoryError(
            f"{names}: the history spans {duration_text(span)} ({_iso(acc.t0)} to {_iso(acc.t1)}), less than "
            "a week (sched.limits.MIN_HISTORY_SPAN_S): every hour of the week must be observed to fit "
            "its rate"
        )
    cut, split = held_out_split(
        acc.t0, acc.t1, int(opts.get("test_days", 7)), acc.measured_days, int(opts.get("validation_days", 0))
    )
    if np.isfinite(cut):  # the fit reads the days before the validation and held-out ones only
        acc, stats = read(window, cut)
        acc.times = []
        if acc.n < opts["min_tasks"]:
            raise HistoryError(
                f"{names}: {acc.n} valid tasks before the days held out of the fit "
                f"({(split['validation'] or split['held_out'])[0]} on), fewer than workload.min_tasks "
                f"({opts['min_tasks']}); hold fewer days out (workload.test_days, workload.validation_days)"
            )
    data, arrays = acc.fit(cfg.scenario.machines, cfg.scenario.priorities)
    data["sources"] = [
        {
            "path": str(s.path),
            "format": s.format,
            "sha256": s.sha256,
            "records": s.total,
            "malformed": s.bad_count,
        }
        for s in stats
    ]
    data["calibration"] = str(calibration_path)
    data["split"] = split
    check_workload(data, "fitted workload")
    return WorkloadResult(data, arrays, stats)
