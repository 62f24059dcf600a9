"""Paired statistics over scenarios: the bootstrap, differences, wins/ties/losses.

"Difference %" is (mean_policy - mean_ref) / mean_ref * 100 over the same
scenarios (paired); its interval is a percentile interval of the paired
bootstrap: scenarios drawn with replacement, the same draws for every policy
and reference, seeded from the config.
"""

import numpy as np


def bootstrap_counts(n, resamples, seed):
    """How often each scenario is drawn in each resample: (resamples, n) integers."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)


def interval(samples, level):
    """Percentile interval of the finite bootstrap samples.

    A resample can be undefined (every drawn scenario has a zero reference
    total, so the relative difference is 0/0): such resamples are left out.
    When more than half are, no interval is given (NaN).
    """
    a = (1.0 - level) / 2.0
    finite = samples[np.isfinite(samples)]
    if finite.size == 0 or finite.size < samples.size / 2:
        return float("nan"), float("nan")
    lo, hi = np.quantile(finite, [a, 1.0 - a])
    return float(lo), float(hi)


def resampled_differences(x, ref, counts):
    """The difference % of mean(x) vs mean(ref) in each bootstrap resample (``counts``), paired."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    sx, sr = counts @ x, counts @ ref
    with np.errstate(divide="ignore", invalid="ignore"):
        return (sx - sr) / sr * 100.0


def paired_difference(x, ref, counts, level):
    """(difference %, CI low %, CI high %) of mean(x) vs mean(ref), paired by scenario."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    if ref.sum() <= 0:
        return float("nan"), float("nan"), float("nan")
    point = (x.sum() - ref.sum()) / ref.sum() * 100.0
    lo, hi = interval(resampled_differences(x, ref, counts), level)
    return float(point), lo, hi


def paired_standard_error(x, ref, counts):
    """The bootstrap standard error of the paired difference % (the resamples of its interval)."""
    samples = resampled_differences(x, ref, counts)
    finite = samples[np.isfinite(samples)]
    return float(finite.std(ddof=1)) if finite.size > 1 else float("nan")


def win_tie_loss(x, ref, rel, abs_s):
    """Scenarios where x is lower than ref (wins), equal within the tolerance (ties), higher."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    tie = np.abs(x - ref) <= abs_s + rel * np.maximum(np.abs(x), np.abs(ref))
    return int(((x < ref) & ~tie).sum()), int(tie.sum()), int(((x > ref) & ~tie).sum())
