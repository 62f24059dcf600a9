"""Generated jobs of frames (issue 59, point 6): heavy-tailed job sizes as frames x time per frame.

A scenario model with config ``scenario.chunks`` (a robustness setting's ``chunks``; the schema
describes every field) draws, per job, a number of frames and cuts the job into chunks:

* **Frames per job**, per kind: ``round(exp(mu + sigma Z))``, at least 1 and at most ``max``
  (a discretised lognormal of median ``exp(mu)``; typed, or calibrated: ``frames: {fit: FILE}``,
  a frames fit of :mod:`sched.data.frames_fit`), from a random stream of its own (child 6 of
  the seed's :class:`numpy.random.SeedSequence`; the scenario's six draws are children 0 to 5, so
  they are the same with and without chunks: common random numbers).
* **Time per frame**: the job's drawn duration (today's draw, from the calibration or the
  workload) over the mean frames of its kind, E[F]. The job's whole work is frames x time per
  frame = duration x F / E[F]: its mean is today's (the offered load stays the setting's), its
  tail is the product of both. The estimate errs per job as today (the same noise on the whole
  job), and the deadline is set from that estimate.
* **One frame per job** (``max: 1``, or a median of 1 with sigma 0) leaves F / E[F] = 1 and the
  factor is not applied: the draws are today's, bit for bit.
* **Chunks**: ``chunk_frames`` per kind (null: indivisible), ``max_gpus`` (null: no limit) and
  ``setup_s`` per chunk, the columns of :mod:`sched.data.chunked`.

``sync_s`` (the adapters' interval the setting's decision is chosen at) and
``selection_scenarios`` are read by the farm benchmark (:mod:`sched.evaluate.farm.bench`), not here.
"""

import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd

from sched.errors import SchedError
from sched.limits import MAX_FRAMES

#: The child of the seed's SeedSequence the frames are drawn from (the scenario's own: 0 to 5).
FRAMES_STREAM = 6


class JobsError(SchedError):
    """A ``scenario.chunks`` setting is invalid; the message names the field and value."""


def _per_kind(value, kinds, field, default):
    """{kind: value} of a setting given for every kind (a scalar) or per kind (a mapping)."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(kinds))
        if unknown:
            raise JobsError(
                f"scenario.chunks.{field}: unknown kind {unknown[0]!r:.40}; the kinds are {', '.join(kinds)}"
            )
        return {k: value.get(k, default) for k in kinds}
    return {k: value for k in kinds}


def _frames_spec(spec, field):
    median, sigma = float(spec.get("median", 1.0)), float(spec.get("sigma", 0.0))
    top = int(spec.get("max", 1))
    if not (1.0 <= median <= MAX_FRAMES and 0.0 <= sigma <= 4.0 and 1 <= top <= MAX_FRAMES):
        raise JobsError(
            f"scenario.chunks.{field}: median in [1, {MAX_FRAMES}], sigma in [0, 4], max in "
            f"[1, {MAX_FRAMES}]; "
            f"got {median:g}, {sigma:g}, {top}"
        )
    mean = mean_frames(median, sigma, top)
    return MappingProxyType({"median": median, "sigma": sigma, "max": top, "mean": mean})


def chunk_spec(chunks, kinds):
    """The frozen spec of config ``scenario.chunks`` for the model's ``kinds`` (None: no chunks)."""
    if chunks is None:
        return None
    kinds = tuple(kinds)
    frames = chunks.get("frames") or {}
    by_kind = frames.get("kinds") or {}
    _per_kind(by_kind, kinds, "frames.kinds", None)  # names checked
    base = {k: frames[k] for k in ("median", "sigma", "max") if k in frames}
    fitted = _fitted(frames.get("fit"), base, kinds)
    per = {
        k: _frames_spec({**base, **fitted.get(k, {}), **dict(by_kind.get(k) or {})}, f"frames ({k})")
        for k in kinds
    }
    per_chunk = _per_kind(chunks.get("chunk_frames"), kinds, "chunk_frames", None)
    return MappingProxyType(
        {
            "frames": MappingProxyType(per),
            "chunk_frames": MappingProxyType({k: int(v or 0) for k, v in per_chunk.items()}),
            "max_gpus": int(chunks.get("max_gpus") or 0),
            "setup_s": float(chunks.get("setup_s", 0.0)),
            "sync_s": float(chunks.get("sync_s", 0.0)),
        }
    )


def _fitted(path, typed, kinds):
    """{kind: {median, sigma, max}} of the frames fit ``path`` (config ``frames.fit``; {} without
    one): calibrated frames (:func:`sched.data.frames_fit.frames_of`), never beside typed ones."""
    if not path:
        return {}
    if typed:
        raise JobsError(
            f"scenario.chunks.frames: fit {str(path)[:40]!r} and {', '.join(sorted(typed))} are both given; "
            "give the frames fit or the typed median, sigma and max"
        )
    from sched.data.frames_fit import frames_of

    return frames_of(path, kinds)


def mean_frames(median, sigma, top):
    """E[F] of F = min(max(round(exp(mu + sigma Z)), 1), top), mu = log(median), exactly (the
    probability of each value from the normal CDF)."""
    if sigma == 0 or top == 1:
        return float(min(max(round(median), 1), top))
    mu = math.log(median)

    def cdf(x):  # P(exp(mu + sigma Z) < x)
        return 0.5 * (1.0 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2.0)))) if x > 0 else 0.0

    # round(y) = f for y in [f - 0.5, f + 0.5): P(F = f) from the CDF at the half-integers
    edges = [cdf(f + 0.5) for f in range(1, top)]
    probs = np.diff(np.concatenate([[0.0], edges, [1.0]]))
    return float(np.dot(np.arange(1, top + 1), probs))


def draw_frames(spec, seed, kind_idx, kinds):
    """Frames of each job (int64), from the frames stream of ``seed``: one standard normal a job,
    whatever its kind (so changing one kind's frames leaves the others')."""
    ss = np.random.SeedSequence(int(seed)).spawn(FRAMES_STREAM + 1)[FRAMES_STREAM]
    z = np.random.default_rng(ss).standard_normal(len(kind_idx))
    out = np.ones(len(kind_idx), np.int64)
    for i, k in enumerate(kinds):
        f = spec["frames"][k]
        m = kind_idx == i
        if f["max"] > 1 and (f["sigma"] > 0 or f["median"] >= 1.5):
            y = np.exp(math.log(f["median"]) + f["sigma"] * z[m])
            out[m] = np.clip(np.round(y), 1, f["max"]).astype(np.int64)
    return out


def size_factor(spec, frames, kind_idx, kinds):
    """Each job's frames over its kind's mean frames, F / E[F]: the factor on its drawn duration
    (None when every kind is one frame a job: nothing to apply)."""
    means = np.array([spec["frames"][k]["mean"] for k in kinds])
    if np.all(means == 1.0) and np.all(frames == 1):
        return None
    return frames / means[kind_idx]


def apply(spec, seed, duration, kind_idx, kinds):
    """(whole work of each job, frames): ``duration`` x F / E[F] (the draws themselves when every
    job is one frame)."""
    frames = draw_frames(spec, seed, kind_idx, kinds)
    factor = size_factor(spec, frames, kind_idx, kinds)
    return (duration if factor is None else duration * factor), frames


def columns(spec, frames, kind_idx, kinds):
    """The chunk columns of a generated scenario (:data:`sched.data.chunked.CHUNK_COLUMNS`), as
    :func:`sched.data.chunked.validate` leaves them: frames int64, chunk_frames and max_gpus
    nullable Int64 (<NA>: indivisible, no limit), setup_s float64."""
    n = len(frames)
    per = np.array([spec["chunk_frames"][k] for k in kinds], np.int64)[np.asarray(kind_idx, np.int64)]
    limit = np.full(n, spec["max_gpus"], np.int64)
    return {
        "frames": np.asarray(frames, np.int64),
        "chunk_frames": _nullable(per),
        "max_gpus": _nullable(limit),
        "setup_s": np.full(n, spec["setup_s"]),
    }


def _nullable(values):
    """A nullable Int64 array, <NA> where ``values`` is 0 (indivisible, no limit)."""
    out = pd.array(values, dtype="Int64")
    out[values <= 0] = pd.NA
    return out
