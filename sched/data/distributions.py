"""Duration distributions of the task kinds: their means and their samplers.

One spec per kind (``share``, ``distribution`` and its parameters, see the
config schema), from ``scenario.kinds`` or from a calibration file. Kept light:
scipy is imported only by :func:`frozen` (the calibration's fits and figure).
"""

import numpy as np

from sched.errors import SchedError


class DistributionError(SchedError):
    """A duration distribution of an unknown family."""


def distribution_mean(spec):
    """E[duration] of one kind's duration distribution (a spec of the config schema)."""
    d = spec["distribution"]
    if d == "lognormal":
        return spec["median_s"] * np.exp(spec["sigma"] ** 2 / 2.0)
    if d == "gamma":
        return spec["shape"] * spec["scale_s"]
    if d == "empirical":
        return float(np.mean(spec["samples_s"]))
    raise DistributionError(f"distribution: unknown family {d!r}")


def sample_durations(spec, rng, size):
    """``size`` durations drawn from one kind's distribution with ``rng``."""
    d = spec["distribution"]
    if d == "lognormal":
        return spec["median_s"] * np.exp(spec["sigma"] * rng.standard_normal(size))
    if d == "gamma":
        return rng.gamma(spec["shape"], spec["scale_s"], size)
    if d == "empirical":
        return rng.choice(np.asarray(spec["samples_s"], dtype=np.float64), size)
    raise DistributionError(f"distribution: unknown family {d!r}")


def frozen(family, params):
    """The scipy distribution of a family with calibration-file parameters."""
    from scipy import stats

    if family == "lognormal":
        return stats.lognorm(params["sigma"], 0, params["median_s"])
    return stats.gamma(params["shape"], 0, params["scale_s"])


def mean_duration(specs):
    """E[duration] over the kind mix."""
    total = sum(s["share"] for s in specs.values())
    return sum(s["share"] / total * distribution_mean(s) for s in specs.values())
