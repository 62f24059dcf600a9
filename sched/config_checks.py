"""The checks of a config that its schema cannot express (``sched.config`` runs them after the
schema): no NaN or infinite number anywhere, shares and probabilities that sum to one, due-date
ranges in order, machines that parse, disjoint seed ranges, load settings that a workload file
would ignore, distinct bench-log columns, benchmark counts within their seed ranges, and
settings in range whose product is not (``sched.limits.check_products``).
"""

import math

from sched.errors import SchedError, shorten


class ConfigError(SchedError):
    """A configuration value is invalid; the message names the field and value."""


def field_of(path):
    return ".".join(str(p) for p in path) or "(top level)"


def check_finite(data, source="config", path=()):
    """Refuse NaN and infinite numbers anywhere in ``data``, naming the field.

    JSON Schema's ``minimum``/``maximum`` let NaN through (every comparison
    with NaN is false), and a NaN setting silently changes what runs.
    """
    if isinstance(data, dict):
        for key, value in data.items():
            check_finite(value, source, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            check_finite(value, source, (*path, i))
    elif isinstance(data, float) and not math.isfinite(data):
        raise ConfigError(f"{source}: {field_of(path)}: must be a finite number, got {data}")


def check_semantics(cfg, source="config", sections=None):
    """Checks the schema cannot express. Raises ConfigError.

    ``sections``: the top-level sections the file set (None: all). The
    benchmark's counts are checked against the seed ranges only when the file
    sets a ``benchmark`` section: the workflow gives each job a config with
    only the sections that job depends on (training has none of the
    benchmark's), and the defaults of a section left out must not be held
    against the others. The benchmark commands check their counts again when
    they draw their seeds.
    """
    check_finite(cfg, source)
    sc = cfg["scenario"]
    if sc.get("calibration") is None:
        shares = {k: v["share"] for k, v in sc["kinds"].items()}
        if abs(sum(shares.values()) - 1.0) > 1e-6:
            raise ConfigError(
                f"{source}: scenario.kinds: shares must sum to 1, got {sum(shares.values()):g} ({shares})"
            )
    probs = {k: v["prob"] for k, v in sc["priorities"].items()}
    if abs(sum(probs.values()) - 1.0) > 1e-6:
        raise ConfigError(
            f"{source}: scenario.priorities: probabilities must sum to 1, got {sum(probs.values()):g}"
        )
    for name in ("flow_factor", "slack_s"):
        lo, hi = sc["due"][name]
        if lo > hi:
            raise ConfigError(f"{source}: scenario.due.{name}: low {lo} is above high {hi}")
    check_machines(cfg, source)
    check_seed_ranges(cfg["seeds"], source)
    check_workload_loads(cfg, source)
    cols = cfg["calibration"]["columns"]
    names = list(cols.values())
    for field, name in cols.items():
        if names.count(name) > 1:
            others = [f for f, n in cols.items() if n == name and f != field]
            raise ConfigError(
                f"{source}: calibration.columns.{field}: column {name!r} is also "
                f"calibration.columns.{others[0]}; each field needs its own column"
            )
    if sections is None or "benchmark" in sections:
        check_benchmark_counts(cfg, source)
    from sched.limits import check_products

    check_products(cfg, source, ConfigError)  # settings in range whose product is not


def check_workload_loads(cfg, source="config"):
    """With scenario.workload, arrivals follow the workload file: a load setting would be ignored."""
    if cfg["scenario"].get("workload") is None:
        return
    fix = "arrivals follow scenario.workload; scale them with scenario.workload_scale"
    if (cfg.get("train") or {}).get("loads") is not None:
        raise ConfigError(f"{source}: train.loads: not used with scenario.workload ({fix}); set it to null")
    for i, setting in enumerate((cfg.get("robustness") or {}).get("settings") or []):
        if "load" in setting:
            raise ConfigError(
                f"{source}: robustness.settings[{i}] ({shorten(setting.get('name'))}): load has no effect "
                f"with scenario.workload ({fix}); remove the setting or its load"
            )


def check_machines(cfg, source="config"):
    """scenario.machines and each robustness setting's machines: a count, a spec or a machines CSV."""
    from sched.formats.machines_input import MachinesError, speeds

    fields = [("scenario.machines", cfg["scenario"]["machines"])]
    for i, st in enumerate(cfg.get("robustness", {}).get("settings", [])):
        if "machines" in st:
            fields.append((f"robustness.settings[{i}].machines", st["machines"]))
    for field, value in fields:
        try:
            speeds(value, field)
        except MachinesError as exc:
            raise ConfigError(f"{source}: {exc}") from None


def check_benchmark_counts(cfg, source="config"):
    """The benchmark's scenario counts must fit in their seed ranges."""
    b = cfg.get("benchmark")
    if not b:
        return
    for field, split in (("scenarios", "test"), ("validation_scenarios", "validation")):
        have = cfg["seeds"][split]["count"]
        if b[field] > have:
            raise ConfigError(
                f"{source}: benchmark.{field}: {b[field]} is more than the {have} seeds of seeds.{split}"
            )
    limits = (("shards", b["shards"]), ("clairvoyant.scenarios", b["clairvoyant"]["scenarios"]))
    for field, value in limits:
        if value > b["scenarios"]:
            raise ConfigError(
                f"{source}: benchmark.{field}: {value} is more than benchmark.scenarios ({b['scenarios']})"
            )


def check_seed_ranges(seeds, source="config"):
    """Refuse overlapping training / validation / test seed ranges."""
    items = sorted(seeds.items(), key=lambda kv: kv[1]["start"])
    for (na, a), (nb, b) in zip(items, items[1:]):
        if a["start"] + a["count"] > b["start"]:
            raise ConfigError(
                f"{source}: seeds.{na} [{a['start']}, {a['start'] + a['count']}) overlaps "
                f"seeds.{nb} [{b['start']}, {b['start'] + b['count']})"
            )
