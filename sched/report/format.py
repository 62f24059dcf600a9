"""Number and text formats of the report (``n/a`` for a missing or undefined number)."""

import os
from pathlib import Path

import numpy as np


def k(x, digits=3):
    """A number in thousands of weighted seconds, with thousands separators."""
    return "n/a" if x is None or not np.isfinite(x) else f"{x:,.{digits}f}"


def pct(x, digits=1):
    """A signed percentage."""
    return "n/a" if x is None or not np.isfinite(x) else f"{x:+.{digits}f} %"


def ci(lo, hi, digits=1):
    """A signed interval, ``[lo, hi]``."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "n/a"
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


def ci_k(lo, hi):
    """An interval of means in thousands of weighted seconds (empty when undefined)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f"[{k(lo)}, {k(hi)}]"


def rel(x, digits=1):
    """'3.2 % lower' / '3.2 % higher' for a signed difference."""
    if x is None or not np.isfinite(x):
        return "n/a"
    if x == 0:
        return "equal"
    return f"{abs(x):.{digits}f} % {'lower' if x < 0 else 'higher'}"


def label(row):
    """A summary row's policy, with ATC's k when it has one."""
    if isinstance(row.atc_k, float) and np.isfinite(row.atc_k):
        return f"{row.policy} (k = {row.atc_k:g})"
    return row.policy


def level_text(level):
    """A confidence level as a percentage ('95 %')."""
    return f"{level * 100:g} %"


def duration(seconds):
    """Seconds below two minutes, else minutes."""
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def distribution(spec):
    """A task kind's duration distribution in words."""
    d = spec.get("distribution")
    try:
        if d == "lognormal":
            return f"log-normal, median {spec['median_s']:.4g} s, sigma {spec['sigma']:.3g}"
        if d == "gamma":
            return f"gamma, shape {spec['shape']:.4g}, scale {spec['scale_s']:.4g} s"
        if d == "empirical":
            return f"empirical, {len(spec['samples_s'])} samples"
    except (KeyError, TypeError):
        pass
    return str(d)


def link(path, start):
    """``path`` relative to the folder ``start``, with forward slashes (a Markdown link)."""
    return os.path.relpath(Path(path), Path(start)).replace(os.sep, "/")
