"""What a real queue shows that the weekly profile and the bench durations miss (issue 50).

Fitted by ``sched calibrate-workload`` beside the profile, drawn from by the generator when
config ``scenario.workload_model`` switches them on (``sched.data.workload.workload``'s
``draw_durations``, ``draw_arrivals``; docs/workload.md, "A workload model like a real queue"):

* **durations by class** (:func:`fit_durations`): the measured durations (``finished_at`` −
  ``started_at``) of each priority class, and of all classes pooled. Each is fitted a lognormal
  and tested against it (Kolmogorov–Smirnov on the log durations); its ``QUANTILES`` quantiles
  are kept too, so a tail the lognormal misses (p < ``KS_P``: shape ``empirical``) is drawn from
  the measured distribution itself (inverse CDF, log-linear between quantiles);
* **day intensities** (:func:`day_factors`): each whole fitted day's task count over what the
  weekly profile expects that day. The generator draws a factor per day from them (a Cox
  process): bursts and quiet days, the overdispersion of a real queue's arrivals.
"""

from dataclasses import dataclass, field

import numpy as np

#: Quantiles kept of each class's measured durations (0 %, 0.5 %, ..., 100 %).
QUANTILES = 201
#: A lognormal rejected by the KS test at this level draws from the quantiles instead.
KS_P = 0.01
#: A class with fewer measured durations draws from the pooled fit.
MIN_MEASURED = 30
#: The seconds of a day (day intensities are counted by UTC day).
DAY_S = 86400.0


def fit_shape(durations):
    """The lognormal fit, its KS test, the mean and the quantiles of positive ``durations``."""
    from scipy.stats import kstest

    d = np.sort(np.asarray(durations, dtype=np.float64))
    x = np.log(d)
    mu, sigma = float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0
    stat, p = (kstest(x, "norm", args=(mu, sigma)) if sigma > 0 else (1.0, 0.0))[:2]
    return {
        "measured": int(len(d)),
        "mean_s": float(d.mean()),
        "lognormal": {"mu": mu, "sigma": max(sigma, 1e-9)},
        "ks_statistic": float(stat),
        "ks_pvalue": float(p),
        "shape": "lognormal" if p >= KS_P else "empirical",
        "quantiles_s": np.quantile(d, np.linspace(0.0, 1.0, QUANTILES)).tolist(),
    }


def fit_durations(by_weight, names):
    """The ``durations`` record of a workload file: ``by_weight`` {class weight: measured
    durations} (a sample; positive), ``names`` {weight: class name}. None without
    ``MIN_MEASURED`` measured durations in all."""
    pooled = np.concatenate([np.asarray(v, dtype=np.float64) for v in by_weight.values()] or [np.empty(0)])
    pooled = pooled[pooled > 0]
    if len(pooled) < MIN_MEASURED:
        return None
    classes = []
    for w in sorted(by_weight):
        v = np.asarray(by_weight[w], dtype=np.float64)
        v = v[v > 0]
        if len(v) >= MIN_MEASURED:
            classes.append({"name": names.get(w, f"weight-{w:g}"), "weight": float(w), **fit_shape(v)})
    return {
        "model": (
            "measured durations by priority class: a lognormal, or the quantiles where the KS test "
            f"rejects it (p < {KS_P}); classes with fewer than {MIN_MEASURED} draw from `all`"
        ),
        "all": fit_shape(pooled),
        "by_class": classes,
    }


def day_factors(day_counts, rate_per_hour, t0, t1):
    """Each whole UTC day of [t0, t1]: its task count over the count the weekly profile
    ``rate_per_hour`` (168, Monday 00:00 UTC first) expects that day. ``day_counts``:
    {day index (floor(t / DAY_S)): tasks}. The first and last days (partial) are left out."""
    from sched.data.workload.workload import EPOCH_WEEK_OFFSET_S, HOURS_PER_WEEK

    rate = np.asarray(rate_per_hour, dtype=np.float64)
    first, last = int(np.floor(t0 / DAY_S)) + 1, int(np.floor(t1 / DAY_S)) - 1
    out = []
    for day in range(first, last + 1):
        start_h = int(np.floor((day * DAY_S + EPOCH_WEEK_OFFSET_S) / 3600.0))
        expected = rate[(start_h + np.arange(24)) % HOURS_PER_WEEK].sum()
        if expected > 0:
            out.append(float(day_counts.get(day, 0) / expected))
    return out


@dataclass
class ShapeSums:
    """What the fit of issue 50's model keeps of a streamed history, in bounded memory: a seeded
    reservoir of ``reservoir`` measured durations a class weight, tasks and tasks with a deadline
    a class weight, and tasks a UTC day (one entry a day)."""

    seed: int = 0
    reservoir: int = 50_000
    durations: dict = field(default_factory=dict)  # weight -> (keys, durations)
    class_due: dict = field(default_factory=dict)  # weight -> (tasks, with a deadline)
    day_counts: dict = field(default_factory=dict)  # UTC day -> tasks

    def __post_init__(self):
        # a stream of its own: the workload fit's allowance reservoir keeps its draws
        self.rng = np.random.default_rng([self.seed, 1])

    def add(self, submitted, weight, took, measured, due):
        """One chunk's records: submission times, class weights, measured durations (valid where
        ``measured``) and whether each has a deadline (``due``)."""
        days, counts = np.unique(np.floor(submitted / DAY_S).astype(np.int64), return_counts=True)
        for d, c in zip(days.tolist(), counts.tolist()):
            self.day_counts[d] = self.day_counts.get(d, 0) + c
        took, took_weight = took[measured], weight[measured]
        for w in np.unique(weight):
            in_class = weight == w
            n, with_due = self.class_due.get(float(w), (0, 0))
            self.class_due[float(w)] = (n + int(in_class.sum()), with_due + int((in_class & due).sum()))
            v = took[took_weight == w]
            keys, vals = self.durations.get(float(w), (np.empty(0), np.empty(0)))
            keys = np.concatenate([keys, self.rng.random(len(v))])
            vals = np.concatenate([vals, v])
            if len(keys) > self.reservoir:
                keep = np.argpartition(keys, self.reservoir)[: self.reservoir]
                keys, vals = keys[keep], vals[keep]
            self.durations[float(w)] = (keys, vals)

    def fit(self, data, names, t0, t1):
        """Add the model's sections to the workload dict ``data`` (its fitted profile and classes)."""
        data["durations"] = fit_durations({w: v for w, (_, v) in self.durations.items()}, names)
        data["arrivals"]["day_factors"] = day_factors(
            self.day_counts, data["arrivals"]["rate_per_hour"], t0, t1
        )
        data["deadlines"]["share_without_by_class"] = [
            1.0 - self.class_due[c["weight"]][1] / self.class_due[c["weight"]][0]
            for c in data["priorities"]["classes"]
        ]
