"""The setting a benchmark measured: its GPU farm (count and speeds) and its load.

A verdict (``winner.json``, ``tuned.json``) holds for the farm it was
measured on. :func:`of_config` is the record the benchmark writes beside
its verdict; ``rank()`` reads it back (:func:`read`) and uses a verdict only
for a call whose farm is the same (:func:`same_farm`): a policy trained on
one GPU never runs a four-GPU queue by default. Matching and fallbacks:
``sched.ranking.ranker`` and docs/rank.md ("Which policy auto runs").

Record: ``{"machines": M, "speeds": [v, ...] or null, "load": rho}``;
``speeds`` null means M identical GPUs of speed 1. A setting measured on a
fitted workload (``scenario.workload``: the studio setting) adds
``"workload": {"sha256", "history", "fitted": [FIRST_DAY, LAST_DAY],
"validation": [FIRST_DAY, LAST_DAY] or null, "held_out": [FIRST_DAY, LAST_DAY] or null}``
(the workload file's hash, the history files' names, the three periods: the days fitted,
those the verdict was chosen on and those that confirm it), and its ``load`` is the fitted
history's (measured durations) x ``workload_scale``, per GPU: over the farm's capacity (the sum
of its speeds), as config ``scenario.load`` is.
"""

import math

from sched.errors import SchedError
from sched.limits import MAX_MACHINES

#: Relative tolerance on speeds when comparing two farms (speeds are read from text).
SPEED_RTOL = 1e-9


class SettingError(SchedError):
    """A setting record is malformed."""


def speeds_of_config(cfg):
    """The speeds of the config's GPUs (``scenario.machines``: a count, a spec or a CSV)."""
    from sched.data.machines import speeds

    return speeds(cfg.scenario.machines, "scenario.machines")


def canonical_speeds(speeds):
    """Speeds sorted, as floats; None when every one is 1 (identical GPUs)."""
    if speeds is None:
        return None
    out = sorted(float(v) for v in speeds)
    return None if all(v == 1.0 for v in out) else out


def of_config(cfg):
    """The setting record of a benchmark run with config ``cfg``."""
    sp = speeds_of_config(cfg)
    out = {"machines": len(sp), "speeds": canonical_speeds(sp), "load": float(cfg.scenario.load)}
    path = cfg.scenario.get("workload")
    if path:
        out.update(of_workload(path, float(cfg.scenario.get("workload_scale", 1.0))))
        # per GPU, as scenario.load: the offered work in speed-1 GPUs over the farm's capacity
        # (exactly today's value on one GPU of speed 1)
        out["load"] = out["load"] / float(sum(sp))
    return out


def of_workload(path, scale=1.0):
    """``{"load", "workload"}`` of a setting measured on the workload file ``path``."""
    from pathlib import Path

    from sched import files
    from sched.data.workload.workload import WorkloadFileError, load_workload
    from sched.limits import MAX_CALIBRATION_BYTES

    data = load_workload(path)
    split = data.get("split") or {}
    ld = data.get("load") or {}
    load = next((v for v in (ld.get("implied_load_measured"), ld.get("implied_load")) if _positive(v)), None)
    history = sorted(
        {
            Path(src["path"]).name.split(".")[0]
            for src in data.get("sources") or []
            if isinstance(src, dict) and isinstance(src.get("path"), str)
        }
    )
    span = data.get("span") if isinstance(data.get("span"), dict) else {}
    fitted = split.get("fitted")
    if fitted is None and isinstance(span.get("start"), str) and isinstance(span.get("end"), str):
        fitted = [span["start"][:10], span["end"][:10]]
    record = {
        "sha256": files.sha256_file(path, WorkloadFileError, MAX_CALIBRATION_BYTES),
        "history": [h for h in history if h],
        "fitted": list(fitted) if fitted else None,
        "validation": list(split["validation"]) if split.get("validation") else None,
        "held_out": list(split["held_out"]) if split.get("held_out") else None,
    }
    return {"load": float(load) * scale if load else 1.0, "workload": record}


def _positive(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _check_workload(w, where):
    import re

    from sched.data.workload.workload import is_day

    if not isinstance(w, dict):
        raise SettingError(f"{where}.workload: expected an object, got {w!r:.40}")
    if not (isinstance(w.get("sha256"), str) and re.fullmatch(r"[0-9a-f]{64}", w["sha256"])):
        raise SettingError(f"{where}.workload.sha256: expected 64 hex digits, got {w.get('sha256')!r:.40}")
    hist = w.get("history", [])
    if not (isinstance(hist, list) and all(isinstance(h, str) and len(h) <= 200 for h in hist)):
        raise SettingError(f"{where}.workload.history: expected a list of names, got {hist!r:.40}")
    for key in ("fitted", "validation", "held_out"):
        v = w.get(key)
        if v is None:
            continue
        if not (isinstance(v, list) and len(v) == 2 and all(is_day(x) for x in v) and v[0] <= v[1]):
            raise SettingError(f"{where}.workload.{key}: expected [FIRST_DAY, LAST_DAY], got {v!r:.60}")
    return {
        "sha256": w["sha256"],
        "history": list(hist),
        "fitted": list(w["fitted"]) if w.get("fitted") else None,
        "validation": list(w["validation"]) if w.get("validation") else None,
        "held_out": list(w["held_out"]) if w.get("held_out") else None,
    }


def read(data, where):
    """A setting record from a verdict file, validated; ``where`` names it in errors."""
    if not isinstance(data, dict):
        raise SettingError(f"{where}: expected an object with machines, speeds, load; got {data!r:.40}")
    m = data.get("machines")
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= MAX_MACHINES:
        raise SettingError(
            f"{where}.machines: expected a count of GPUs in [1, {MAX_MACHINES}], got {m!r:.40}"
        )
    load = data.get("load")
    if isinstance(load, bool) or not isinstance(load, (int, float)) or not (math.isfinite(load) and load > 0):
        raise SettingError(f"{where}.load: expected a number > 0, got {load!r:.40}")
    speeds = data.get("speeds")
    if speeds is not None:
        if not isinstance(speeds, list) or len(speeds) != m:
            raise SettingError(f"{where}.speeds: expected null or a list of {m} speeds, got {speeds!r:.40}")
        for v in speeds:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
                raise SettingError(f"{where}.speeds: expected numbers > 0, got {v!r:.40}")
    out = {"machines": m, "speeds": canonical_speeds(speeds), "load": float(load)}
    if data.get("workload") is not None:
        out["workload"] = _check_workload(data["workload"], where)
    return out


def same_farm(a, b):
    """Whether two settings describe the same GPUs (count and speeds; load aside)."""
    if a["machines"] != b["machines"]:
        return False
    sa, sb = a["speeds"], b["speeds"]
    if sa is None or sb is None:
        return sa is sb
    return all(math.isclose(x, y, rel_tol=SPEED_RTOL) for x, y in zip(sa, sb))


def describe(s):
    """A setting in words, for explanations: "4 GPUs (speeds 0.6, 0.6, 1, 1), load 0.95"."""
    gpus = f"{s['machines']} GPU" + ("s" if s["machines"] != 1 else "")
    speeds = "" if s["speeds"] is None else " (speeds " + ", ".join(f"{v:g}" for v in s["speeds"]) + ")"
    load = f", load {s['load']:g}" if s.get("load") is not None else ""
    return gpus + speeds + load
