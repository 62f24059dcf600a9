"""The frames fit (issue 59, point 6): frames per job and time per frame, from the bench logs'
``frames`` column or a queue history's (``sched calibrate-frames``; docs/calibration.md,
"Frames per job").

Per kind (and, from a history, per priority class), over the records that carry ``frames``:

* **frames per job**: the lognormal of :mod:`sched.data.jobs` by maximum likelihood on
  log(frames) (``median`` = exp of its mean, ``sigma`` its standard deviation, ddof 0) and
  ``max``, the most frames seen: what config ``scenario.chunks.frames: {fit: FILE}`` takes;
* **time per frame**: duration / frames, lognormal in the same way (``median_s``, ``sigma``);
  from the bench logs on the reference GPU (:mod:`sched.data.bench.gpu_effect`), with the
  duration model's ``log_frames`` coefficient (``frames_elasticity``: time per frame grows as
  frames^(b - 1)); from a history, the measured ``finished_at - started_at`` where both are given.

A ``frames`` value must be a whole number from 1 to ``sched.limits.MAX_FRAMES``. The bench logs
are read by :mod:`sched.data.bench.bench_logs` (its malformed records skipped as ``sched
calibrate`` skips them); a kept record without ``frames`` or with a fractional one is refused,
naming the file, line and field. A history is read by :func:`sched.data.workload.history.read_history`
(which refuses a fractional ``frames`` as a malformed record); its records without ``frames``
are left out and counted. Nothing here writes into ``results/calibration.json`` or
``results/workload.json``: the fit is a file of its own (:data:`FORMAT`).
"""

import math
from pathlib import Path

import numpy as np
import pandas as pd

from sched import files
from sched.errors import SchedError, shorten
from sched.formats import json_input
from sched.limits import MAX_CALIBRATION_BYTES, MAX_FRAMES

FORMAT = "sched-frames-fit/1"
#: The most a fitted sigma may be (config scenario.chunks.frames.sigma's bound).
MAX_SIGMA = 4.0
SOURCES = ("bench", "history")


class FramesFitError(SchedError):
    """Frames cannot be fitted, or a frames fit file is malformed; the message names the file."""


def lognormal(values):
    """{median, sigma} of a lognormal fitted by maximum likelihood to positive ``values``."""
    logs = np.log(np.asarray(values, np.float64))
    return float(np.exp(logs.mean())), float(logs.std())


def group_fit(frames, seconds=None):
    """One kind's (or class's) entry: its jobs, frames per job and time per frame (None without
    durations)."""
    frames = np.asarray(frames, np.int64)
    median, sigma = lognormal(frames)
    entry = {
        "jobs": int(frames.size),
        "frames": {
            "median": median,
            "sigma": sigma,
            "max": int(frames.max()),
            "min": int(frames.min()),
            "mean": float(frames.mean()),
        },
        "time_per_frame": None,
    }
    if seconds is not None:
        have = np.isfinite(seconds) & (seconds > 0)
        if have.any():
            m, s = lognormal(seconds[have] / frames[have])
            entry["time_per_frame"] = {"median_s": m, "sigma": s, "jobs": int(have.sum())}
    return entry


def _check_sigma(entries, where):
    for name, e in entries.items():
        if e["frames"]["sigma"] > MAX_SIGMA:
            raise FramesFitError(
                f"{where}: {name}: frames per job spread over a log-sigma of {e['frames']['sigma']:.2f}, "
                f"beyond the {MAX_SIGMA:g} a chunked setting takes"
            )


# --------------------------------------------------------------------------- bench logs


def _whole_frames(frame, column):
    """The frames of the kept bench records as int64, or FramesFitError naming the first bad one."""
    v = frame["frames"].to_numpy(np.float64)
    for bad, why in (
        (~np.isfinite(v), "missing (the frames fit needs frames in every record)"),
        (np.isfinite(v) & (v != np.floor(v)), "is not a whole number"),
        (np.isfinite(v) & (v > MAX_FRAMES), f"is out of range (<= {MAX_FRAMES})"),
    ):
        if bad.any():
            i = int(np.argmax(bad))
            shown = "" if "missing" in why else f"{v[i]:g} "
            raise FramesFitError(
                f"{frame['source'].iloc[i]}: line {int(frame['line'].iloc[i])}: field {column}: {shown}{why}"
            )
    return v.astype(np.int64)


def fit_bench(paths, options):
    """The frames fit of bench logs ``paths`` under the config's ``calibration`` section."""
    from sched.data.bench.bench_logs import read_bench
    from sched.data.bench.fit import _model_columns, fit_duration_model
    from sched.data.bench.gpu_effect import fit_gpu_speeds, on_reference_gpu

    if not paths:
        raise FramesFitError("no bench log given (pass files or set calibration.bench)")
    logs = [read_bench(p, options) for p in paths]
    frame = pd.DataFrame.from_records([r for log in logs for r in log.records])
    names = ", ".join(str(log.path) for log in logs)
    if not len(frame):
        raise FramesFitError(f"no valid bench record in {names}")
    frames = _whole_frames(frame, options["columns"]["frames"])
    kinds = sorted(set(frame["kind"]))
    few = {k: n for k, n in frame["kind"].value_counts().items() if n < options["min_records"]}
    if few:
        k = sorted(few)[0]
        raise FramesFitError(
            f"{names}: kind {k!r} has {few[k]} valid record(s), fewer than calibration.min_records "
            f"({options['min_records']})"
        )
    frame = on_reference_gpu(frame, fit_gpu_speeds(frame, set(kinds), _model_columns))
    seconds = frame["duration_s"].to_numpy(np.float64)
    entries, elasticity = {}, {}
    for k in kinds:
        m = (frame["kind"] == k).to_numpy()
        entries[k] = group_fit(frames[m], seconds[m])
        model, _ = fit_duration_model(frame[m], k)
        elasticity[k] = (model or {}).get("coefficients", {}).get("log_frames")
    _check_sigma(entries, names)
    return {
        "format": FORMAT,
        "source": "bench",
        "sources": [
            {"path": str(log.path), "sha256": log.sha256, "records": len(log.records)} for log in logs
        ],
        "records": int(len(frame)),
        "kinds": entries,
        "classes": None,
        "frames_elasticity": elasticity,
        "time_per_frame_note": "duration_s / frames on the reference GPU (gpu_speeds of the calibration)",
    }


# --------------------------------------------------------------------------- queue history


def fit_history(paths, priorities, max_bad_share, allow_empty=False):
    """The frames fit of queue histories ``paths`` (``priorities``: config scenario.priorities),
    by kind and by priority class (a weight no class has: ``weight W``). A history with no
    ``frames`` is refused, or with ``allow_empty`` (the workflow's) gives a fit of no kind."""
    from sched.data.workload.history import HistoryStats, history_format, read_history

    if not paths:
        raise FramesFitError("no history given")
    by_weight = {float(c["weight"]): name for name, c in priorities.items()}
    parts, sources, seen, without = [], [], {}, 0
    for p in paths:
        stats = HistoryStats(Path(p), history_format(p))
        for chunk in read_history(p, priorities, max_bad_share, stats=stats, seen=seen):
            f = chunk.features["frames"]
            have = np.isfinite(f)
            without += int((~have).sum())
            parts.append(
                pd.DataFrame(
                    {
                        "kind": chunk.kind[have],
                        "weight": chunk.weight[have],
                        "frames": f[have].astype(np.int64),
                        "seconds": (chunk.finished - chunk.started)[have],
                    }
                )
            )
        sources.append({"path": str(p), "sha256": stats.sha256, "records": stats.valid})
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    names = ", ".join(map(str, paths))
    if not len(frame) and not allow_empty:
        raise FramesFitError(f"{names}: no record gives frames (the optional column frames)")
    if not len(frame):
        frame = pd.DataFrame({"kind": [], "weight": [], "frames": [], "seconds": []})
    seconds = frame["seconds"].to_numpy(np.float64)
    frames = frame["frames"].to_numpy(np.int64)
    kinds = {k: group_fit(frames[m], seconds[m]) for k, m in _groups(frame["kind"])}
    label = frame["weight"].map(lambda w: by_weight.get(float(w), f"weight {w:g}"))
    classes = {c: group_fit(frames[m], seconds[m]) for c, m in _groups(label)}
    _check_sigma({**kinds, **classes}, names)
    return {
        "format": FORMAT,
        "source": "history",
        "sources": sources,
        "records": int(len(frame)),
        "records_without_frames": without,
        "kinds": kinds,
        "classes": classes,
        "frames_elasticity": None,
        "time_per_frame_note": "(finished_at - started_at) / frames, where both times are given",
    }


def _groups(labels):
    values = labels.to_numpy(dtype=object)
    return [(str(v), values == v) for v in sorted(set(values), key=str)]


# --------------------------------------------------------------------------- the file


def load_fit(path):
    """A frames fit file, checked field by field (FramesFitError naming the file and field)."""
    source = f"frames fit {path}"
    text = files.read_text(Path(path), FramesFitError, limit=MAX_CALIBRATION_BYTES)
    data = json_input.parse(text, source, FramesFitError)
    return check_fit(data, source)


def check_fit(data, source):
    """``data`` if it is a frames fit (:data:`FORMAT`), else FramesFitError naming the field."""

    def fail(field, why):
        raise FramesFitError(f"{source}: field {field}: {why}")

    if not isinstance(data, dict):
        fail("(top)", f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        fail("format", f"expected {FORMAT!r}, got {shorten(data.get('format'))}")
    if data.get("source") not in SOURCES:
        fail("source", f"expected one of {', '.join(SOURCES)}, got {shorten(data.get('source'))}")
    for section in ("kinds", "classes"):
        entries = data.get(section)
        if entries is None and section == "classes":
            continue
        if not isinstance(entries, dict):
            fail(section, "expected an object of entries")
        for name, e in entries.items():
            _check_entry(e, f"{section}.{name}", fail)
    return data


def _number(x, lo, hi):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and lo <= x <= hi


def _check_entry(e, where, fail):
    f = e.get("frames") if isinstance(e, dict) else None
    if not isinstance(f, dict):
        fail(f"{where}.frames", "expected an object with median, sigma and max")
    for key, lo, hi in (("median", 1.0, MAX_FRAMES), ("sigma", 0.0, MAX_SIGMA)):
        if not _number(f.get(key), lo, hi):
            got = shorten(f.get(key))
            fail(f"{where}.frames.{key}", f"expected a number in [{lo:g}, {hi:g}], got {got}")
    top = f.get("max")
    if not (isinstance(top, int) and not isinstance(top, bool) and 1 <= top <= MAX_FRAMES):
        fail(f"{where}.frames.max", f"expected a whole number in [1, {MAX_FRAMES}], got {shorten(top)}")
    if f["median"] > top:
        fail(f"{where}.frames.median", f"{f['median']:g} is above max {top}")
    t = e.get("time_per_frame")
    if t is not None and not (isinstance(t, dict) and _number(t.get("median_s"), 1e-9, math.inf)):
        fail(f"{where}.time_per_frame.median_s", "expected a number > 0 (or time_per_frame null)")


def frames_of(path, kinds):
    """{kind: {median, sigma, max}} for the scenario model's ``kinds`` from the frames fit at
    ``path`` (config ``scenario.chunks.frames.fit``); a kind the fit lacks is refused."""
    data = load_fit(path)
    missing = [k for k in kinds if k not in data["kinds"]]
    if missing:
        raise FramesFitError(
            f"frames fit {path}: field kinds: no entry for kind {missing[0]!r} of the scenario "
            f"(the fit has {', '.join(sorted(data['kinds']))})"
        )
    return {k: {x: data["kinds"][k]["frames"][x] for x in ("median", "sigma", "max")} for k in kinds}
