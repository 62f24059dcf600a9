"""The scenario seeds of each split, as the evaluation uses them.

Test scenarios are the first ``benchmark.scenarios`` seeds of ``seeds.test``,
validation scenarios the first ``benchmark.validation_scenarios`` of
``seeds.validation``; both are checked disjoint from each other and from the
training seeds here, not only in the config. The test seeds are cut into
shards (one workflow job each), and ``--seeds`` takes a range as text.
"""

import re

import numpy as np

from sched.config import ConfigError, seed_range
from sched.evaluate.errors import BenchmarkError

#: Training seeds benchmarked when the config has no ``train.seeds``.
DEFAULT_TRAIN_SEEDS = (1, 2, 3)


def overlap(a, b):
    """Whether two ranges share a seed."""
    return max(a.start, b.start) < min(a.stop, b.stop)


def split_seeds(cfg, split, count):
    """The first ``count`` seeds of ``split``, verified disjoint from the other splits."""
    seeds = seed_range(cfg, split)
    if count > len(seeds):
        raise ConfigError(
            f"config: {count} {split} scenarios asked but seeds.{split} has only {len(seeds)} seeds"
        )
    chosen = seeds[:count]
    for other in cfg["seeds"]:
        if other != split and overlap(chosen, seed_range(cfg, other)):
            raise ConfigError(f"config: {split} seeds {chosen.start}-{chosen.stop - 1} overlap seeds.{other}")
    return chosen


def benchmark_seeds(cfg):
    """The benchmark's test scenarios: the first ``benchmark.scenarios`` seeds of seeds.test."""
    return split_seeds(cfg, "test", cfg["benchmark"]["scenarios"])


def validation_seeds(cfg):
    """Seeds on which ATC's k is tuned: the first ``benchmark.validation_scenarios`` of seeds.validation."""
    return split_seeds(cfg, "validation", cfg["benchmark"]["validation_scenarios"])


def clairvoyant_seeds(cfg):
    """The first ``benchmark.clairvoyant.scenarios`` test seeds."""
    return benchmark_seeds(cfg)[: cfg["benchmark"]["clairvoyant"]["scenarios"]]


def train_seeds(cfg):
    """Training seeds whose PPO policies are benchmarked (config ``train.seeds``)."""
    return list((cfg.get("train") or {}).get("seeds", DEFAULT_TRAIN_SEEDS))


def shard_ranges(cfg):
    """The test seeds cut into ``benchmark.shards`` consecutive ranges of near-equal size."""
    seeds = benchmark_seeds(cfg)
    cuts = np.linspace(0, len(seeds), cfg["benchmark"]["shards"] + 1).round().astype(int)
    return [seeds[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def range_text(seeds):
    """'A-B' (inclusive) for a range of seeds, as ``--seeds`` takes it."""
    return f"{seeds.start}-{seeds.stop - 1}" if len(seeds) > 1 else f"{seeds.start}"


def parse_seed_range(text):
    """``'A-B'`` (inclusive) or ``'N'`` -> range."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(text))
    if not m:
        raise BenchmarkError(f"--seeds: expected A-B or N (non-negative integers), got {text!r}")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    if hi < lo:
        raise BenchmarkError(f"--seeds: {text!r} ends before it starts")
    return range(lo, hi + 1)


def check_within(
    seeds, allowed, what, allowed_name="the test seeds", source="benchmark.scenarios of seeds.test"
):
    """Refuse seeds outside ``allowed`` (a range), naming the first one."""
    if len(seeds) == 0:
        raise BenchmarkError(f"{what}: no seeds")
    if seeds.start < allowed.start or seeds.stop > allowed.stop:
        bad = seeds.start if seeds.start < allowed.start else seeds.stop - 1
        raise BenchmarkError(
            f"{what}: seed {bad} is not one of {allowed_name} {range_text(allowed)} ({source})"
        )
    return seeds
