"""``fidelity.json`` read back (``sched benchmark --fidelity``, the report's studio section):
bounded and non-blocking through ``sched.files.read_bytes``, parsed by ``sched.formats.json_input``
(a key given twice refused), and every field a reader uses checked once, here: its type, its
range, and that ``lean_on_days`` is what the tau and the threshold say. A malformed record is a
:class:`FidelityError` naming the file and the field."""

import math

from sched import files
from sched.errors import SchedError
from sched.formats import json_input
from sched.limits import MAX_VERDICT_BYTES

#: The record's format (``sched fidelity`` writes it, :mod:`sched.data.workload.fidelity`).
FORMAT = "sched-fidelity/1"


class FidelityError(SchedError):
    """A fidelity record is missing or malformed; the message names the file and field."""


def read_fidelity(path):
    """A ``fidelity.json``, checked (no code runs): the record, or FidelityError naming the field."""

    def error(message):
        return FidelityError(f"fidelity file {message}")

    # bounded, a FIFO or device refused without blocking, a key given twice refused
    data = json_input.parse(files.read_bytes(path, error, MAX_VERDICT_BYTES), path, error, nan=True)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise FidelityError(f"fidelity file {path}: field format: expected {FORMAT!r}, got {str(got)[:40]!r}")
    if not isinstance(data.get("lean_on_days"), bool):
        raise FidelityError(f"fidelity file {path}: field lean_on_days: expected true/false")
    tau = data.get("tau")
    if not isinstance(tau, dict) or not all(
        isinstance(tau.get(k), (int, float)) and not isinstance(tau.get(k), bool)
        for k in ("streams", "scenarios")
    ):
        raise FidelityError(f"fidelity file {path}: field tau: expected {{streams, scenarios}} numbers")
    _check_used(data, path)
    if "misses" in data:
        _check_misses(data["misses"], path)
    return data


def _check_used(data, path):
    """FidelityError naming the field unless every field its readers use (the report's studio
    section, ``sched benchmark --fidelity``) has its type and range, and ``lean_on_days`` is what
    the tau and the threshold say (:func:`check`: tau of the scenarios below the threshold)."""
    where = f"fidelity file {path}: field"

    def need(ok, field, want):
        if not ok:
            raise FidelityError(f"{where} {field}: expected {want}, got {str(data.get(field))[:40]!r}")

    def count(v):
        return type(v) is int and v >= 0

    th = data.get("threshold")
    need(_number(th) and math.isfinite(th), "threshold", "Kendall's tau threshold, a finite number")
    for key in ("streams", "scenarios"):
        need(count(data.get(key)), key, "a count of samples")
    need(_number(data.get("days")) and data["days"] >= 0, "days", "a count of days")
    need(isinstance(data.get("reference"), str), "reference", "the reference rule's name")
    wu = data.get("scenario_warm_up_days")
    need(wu is None or (_number(wu) and wu >= 0), "scenario_warm_up_days", "a number of days >= 0")
    tau = data["tau"]
    if data["lean_on_days"] != bool(tau["scenarios"] < th):
        raise FidelityError(
            f"{where}s lean_on_days, tau, threshold disagree: lean_on_days is "
            f"{str(data['lean_on_days']).lower()}, but tau.scenarios is {tau['scenarios']}, "
            f"the threshold {th}"
        )
    m = data.get("model")
    if m is None:
        return
    variants = m.get("variants") if isinstance(m, dict) else None
    ok = (
        isinstance(m, dict)
        and isinstance(m.get("on"), list)
        and all(isinstance(x, str) for x in m["on"])
        and isinstance(variants, list)
        and all(
            isinstance(v, dict)
            and isinstance(v.get("variant"), str)
            and isinstance(v.get("tau"), dict)
            and all(_number(v["tau"].get(k)) for k in ("streams", "scenarios"))
            for v in variants
        )
    )
    if not ok:
        raise FidelityError(f"{where} model: expected {{on: [names], variants: [{{variant, tau}}]}}")


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_misses(m, path):
    """FidelityError naming the field unless ``m`` is a ``misses`` record (:func:`misses`)."""
    where = f"fidelity file {path}: field misses"
    if not isinstance(m, dict) or not isinstance(m.get("against"), str):
        raise FidelityError(f"{where}: expected {{against, levels, discordant}}")
    levels = m.get("levels")
    if not isinstance(levels, dict) or not all(isinstance(k, str) and _number(v) for k, v in levels.items()):
        raise FidelityError(f"{where}.levels: expected {{name: number}}")
    pairs = m.get("discordant")
    if not isinstance(pairs, list):
        raise FidelityError(f"{where}.discordant: expected a list")
    for i, d in enumerate(pairs):
        ok = isinstance(d, dict) and all(
            isinstance(d.get(k), list) and len(d[k]) == 2 for k in ("rules", "real", "generated")
        )
        if (
            not ok
            or not all(isinstance(r, str) for r in d["rules"])
            or not all(_number(x) for k in ("real", "generated") for x in d[k])
        ):
            raise FidelityError(
                f"{where}.discordant[{i}]: expected {{rules: [a, b], real: [x, y], generated: [x, y]}}"
            )
