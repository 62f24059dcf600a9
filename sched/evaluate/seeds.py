"""The scenario seeds of each split, as the evaluation uses them.

Test scenarios are the first ``benchmark.scenarios`` seeds of ``seeds.test``,
validation scenarios the first ``benchmark.validation_scenarios`` of
``seeds.validation``; both are checked disjoint from each other and from the
training seeds here, not only in the config. The test seeds are cut into
shards (one workflow job each), and ``--seeds`` takes a range as text.

The validation seeds serve three purposes, on disjoint ranges from the start
of ``seeds.validation``:

* checkpoint selection during training: the first ``train.validation_scenarios``
  (sched/learn/validation.py; a robustness setting may set its own count);
* ATC's k tuning: the first ``benchmark.validation_scenarios``;
* the choice of the winner (winner.json): ``benchmark.selection_scenarios``
  seeds from ``benchmark.selection_offset`` on, which must lie after both
  (:func:`check_selection`).

plan's candidacy runs on the first ``plan.validation_scenarios`` selection seeds, those that
chose its base (:func:`plan_validation_seeds`); the setting it picks then runs on every test
seed.
"""

import re

import numpy as np

from sched.config import ConfigError, seed_range
from sched.evaluate.errors import BenchmarkError


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
    for other in cfg.seeds:
        if other != split and overlap(chosen, seed_range(cfg, other)):
            raise ConfigError(f"config: {split} seeds {chosen.start}-{chosen.stop - 1} overlap seeds.{other}")
    return chosen


def benchmark_seeds(cfg):
    """The benchmark's test scenarios: the first ``benchmark.scenarios`` seeds of seeds.test."""
    return split_seeds(cfg, "test", cfg.benchmark.scenarios)


def validation_seeds(cfg):
    """Seeds on which ATC's k is tuned: the first ``benchmark.validation_scenarios`` of seeds.validation."""
    return split_seeds(cfg, "validation", cfg.benchmark.validation_scenarios)


def selection_seeds(cfg):
    """The validation seeds the winner is chosen on: ``benchmark.selection_scenarios`` seeds of
    seeds.validation from ``benchmark.selection_offset`` on, after the tuning seeds (checked
    here; the checkpoint seeds are checked by :func:`check_selection` with the config)."""
    b = cfg.benchmark
    offset, count = b["selection_offset"], b["selection_scenarios"]
    _check_selection_after(
        offset, "benchmark.validation_scenarios", b["validation_scenarios"], "tune ATC's k"
    )
    val = seed_range(cfg, "validation")
    if offset + count > len(val):
        raise ConfigError(
            f"config: benchmark.selection_scenarios: {count} seeds from benchmark.selection_offset "
            f"{offset} end past the {len(val)} seeds of seeds.validation"
        )
    return val[offset : offset + count]


def _check_selection_after(offset, field, used, purpose):
    if offset < used:
        raise ConfigError(
            f"config: benchmark.selection_offset: {offset} is below {field} ({used}): the winner "
            f"would be chosen on validation seeds that {purpose}; set benchmark.selection_offset "
            f"to at least {used}"
        )


def check_selection(cfg):
    """The selection seeds lie after the validation seeds of tuning and of checkpoint selection
    (train.validation_scenarios, and each robustness setting's own). Raises ConfigError naming
    the field. A section the config leaves out counts with the schema's defaults."""
    offset = cfg.benchmark.selection_offset
    used = cfg.train.validation_scenarios
    if used is not None:
        _check_selection_after(offset, "train.validation_scenarios", used, "chose the training checkpoints")
    for i, st in enumerate(cfg.robustness.settings):
        used = (st.get("train") or {}).get("validation_scenarios")
        if used is not None:
            _check_selection_after(
                offset,
                f"robustness.settings[{i}].train.validation_scenarios",
                used,
                "chose that setting's training checkpoints",
            )
    return selection_seeds(cfg)


def check_seed_uses(cfg):
    """Every check of this module on a whole config (the workflow's, before any job runs): the
    splits' counts, the selection seeds, plan's candidacy seeds. Raises ConfigError."""
    benchmark_seeds(cfg)
    validation_seeds(cfg)
    check_selection(cfg)
    plan_validation_seeds(cfg)


def plan_validation_seeds(cfg):
    """The seeds of plan's candidacy: the first ``plan.validation_scenarios`` selection seeds (those
    that chose its base, the winner: paired with the selection table), within the selection's."""
    seeds = check_selection(cfg)
    count = cfg.plan["validation_scenarios"]
    if count > len(seeds):
        raise ConfigError(
            f"config: plan.validation_scenarios: {count} is more than benchmark.selection_scenarios "
            f"({len(seeds)}): plan's candidacy runs on the selection seeds that chose its base; lower "
            f"plan.validation_scenarios or raise benchmark.selection_scenarios"
        )
    return seeds[:count]


def clairvoyant_seeds(cfg):
    """The first ``benchmark.clairvoyant.scenarios`` test seeds."""
    return benchmark_seeds(cfg)[: cfg.benchmark.clairvoyant.scenarios]


class UnconfirmedTestSeeds(ConfigError):
    """A setting-choosing run asked for test seeds without confirming it."""


def free_validation_offset(cfg):
    """Where the validation seeds no workflow step uses begin, as an offset in seeds.validation: after
    the winner's selection (benchmark.selection_offset + selection_scenarios), which lies after ATC's
    k tuning (benchmark.validation_scenarios) and every checkpoint selection (train.validation_scenarios
    and each robustness setting's own; :func:`check_selection` checks it)."""
    check_selection(cfg)
    b = cfg.benchmark
    used = [b["selection_offset"] + b["selection_scenarios"], b["validation_scenarios"]]
    used.append(cfg.train.validation_scenarios or 0)
    for st in cfg.robustness.settings:
        used.append((st.get("train") or {}).get("validation_scenarios") or 0)
    return max(used)


def chooser_seeds(cfg, split, count, skip=0, confirm=False, who="seeds"):
    """The seeds a setting-choosing script (``benchmarks/plan_quality.py``, ``farm_tardiness.py``)
    runs on: ``count`` validation seeds from :func:`free_validation_offset` + ``skip``, or, ``split``
    "test" with ``confirm``, test seeds from ``skip`` (a test seed used to choose something can no
    longer confirm it: :class:`UnconfirmedTestSeeds` without ``confirm``)."""
    if split == "test" and not confirm:
        raise UnconfirmedTestSeeds(
            f"{who}: --split test needs --confirm: a test seed used to choose a setting can no longer "
            f"confirm it; choose on the default --split validation"
        )
    seeds = seed_range(cfg, split)
    start = (free_validation_offset(cfg) if split == "validation" else 0) + skip
    if count < 1 or skip < 0:
        raise ConfigError(f"{who}: --scenarios must be at least 1 and --skip at least 0")
    if start + count > len(seeds):
        raise ConfigError(
            f"{who}: {count} {split} seeds from offset {start} end past the {len(seeds)} seeds "
            f"of seeds.{split}"
        )
    return seeds[start : start + count]


def train_seeds(cfg):
    """Training seeds whose PPO policies are benchmarked (config ``train.seeds``)."""
    return list(cfg.train.seeds)


def shard_ranges(cfg):
    """The test seeds cut into ``benchmark.shards`` consecutive ranges of near-equal size."""
    seeds = benchmark_seeds(cfg)
    cuts = np.linspace(0, len(seeds), cfg.benchmark.shards + 1).round().astype(int)
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


def fidelity_seeds(cfg, count):
    """The seeds of the fidelity check's generated streams (``sched fidelity``): the last ``count``
    of seeds.validation, far from the tuning, checkpoint and selection seeds at its start."""
    r = cfg.seeds["validation"]
    if not 1 <= count <= r["count"]:
        raise ConfigError(
            f"fidelity streams: expected 1 to {r['count']} (seeds.validation.count), got {count}"
        )
    end = r["start"] + r["count"]
    return range(end - count, end)
