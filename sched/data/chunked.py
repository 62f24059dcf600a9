"""Scenarios of jobs of frames (issue 59): the four optional columns and the per-chunk schedule.

File contract (scenario CSV, each column optional, each value possibly empty):

* ``frames``: an integer from 1 to ``sched.limits.MAX_FRAMES``; empty: 1;
* ``chunk_frames``: frames per chunk, an integer from 1 to MAX_FRAMES; empty: indivisible, one chunk;
* ``max_gpus``: the most chunks the job runs at once, an integer from 1 to
  ``sched.limits.MAX_MACHINES``; empty: no limit;
* ``setup_s``: seconds of setup of each chunk (scene load), >= 0 and at most MAX_SECONDS; empty: 0.

A job has ceil(frames / chunk_frames) chunks, the last one possibly shorter; a scenario holds at
most ``sched.limits.MAX_SCENARIO_CHUNKS`` chunks. ``duration_s`` and ``estimate_s`` stay the
job's whole work (the model: :mod:`sched.sim.chunks`).

A scenario holding any of the four columns is *chunked*: its schedule (:func:`schedule_frame`)
has one row per chunk, the scenario's columns then ``chunk`` (0-based, in the job's order),
``machine``, ``start_s``, ``end_s``, and ``tardiness_s`` and ``weighted_tardiness_s`` on the
job's last chunk (the job's, from its last chunk to end), 0 on the others. A scenario without
them keeps today's schedule, byte for byte: one row a task and no ``chunk`` column.
"""

import numpy as np
import pandas as pd

from sched.config import shorten
from sched.data.objective import tardiness
from sched.limits import MAX_FRAMES, MAX_MACHINES, MAX_SCENARIO_CHUNKS, MAX_SECONDS

#: The optional columns of a chunked scenario, in the order the model reads them.
CHUNK_COLUMNS = ("frames", "chunk_frames", "max_gpus", "setup_s")
#: The integer columns and their largest value.
INTEGER_MAX = {"frames": MAX_FRAMES, "chunk_frames": MAX_FRAMES, "max_gpus": MAX_MACHINES}
#: The column a chunked schedule adds before the task schedule's.
CHUNK = "chunk"


def counts(frames, chunk_frames):
    """Chunks of each job (int64 array): ceil(frames / chunk_frames), 1 when indivisible."""
    frames, per = np.asarray(frames, np.int64), np.asarray(chunk_frames, np.int64)
    whole = (per <= 0) | (per >= frames)
    return np.where(whole, 1, -(-frames // np.where(whole, 1, per)))


def job_ends(job, end, n):
    """Each job's completion (its last chunk to end), in row order, from the rows of
    :func:`sched.sim.chunks.simulate`."""
    out = np.full(n, -np.inf)
    np.maximum.at(out, job, end)
    return out


def is_chunked(frame):
    """Whether a task table holds any of :data:`CHUNK_COLUMNS`."""
    return any(c in frame.columns for c in CHUNK_COLUMNS)


def validate(out, source, where, error):
    """Check and convert the chunk columns of ``out`` in place (``where(mask)``: "row R (line L)"
    of the first row of ``mask``; ``error``: the error class): ``frames`` int64 (empty: 1),
    ``chunk_frames`` and ``max_gpus`` nullable Int64 (empty: <NA>), ``setup_s`` float64 (empty: 0)."""
    if not is_chunked(out):
        return
    if CHUNK in out.columns:
        raise error(
            f"{source}: column {CHUNK!r} is one a chunked schedule adds; a chunked scenario may not hold it"
        )
    for col in CHUNK_COLUMNS:
        if col in out.columns:
            out[col] = _column(out[col], col, source, where, error)
    if "frames" in out.columns:
        per = out["chunk_frames"].fillna(0).to_numpy(np.int64) if "chunk_frames" in out else 0
        total = int(counts(out["frames"].to_numpy(np.int64), per).sum())
        if total > MAX_SCENARIO_CHUNKS:
            raise error(
                f"{source}: field frames: {total} chunks in all; a scenario holds at most "
                f"{MAX_SCENARIO_CHUNKS} (sched.limits.MAX_SCENARIO_CHUNKS)"
            )


def _column(raw, col, source, where, error):
    text = raw.astype("string").str.strip()
    empty = (text.isna() | (text == "")).to_numpy(dtype=bool, na_value=True)
    values = pd.to_numeric(text.mask(empty), errors="coerce").astype(np.float64).to_numpy()
    bad = ~empty & ~np.isfinite(values)
    if bad.any():
        shown = raw.iloc[int(np.argmax(bad))]
        lowered = str(shown).strip().lower()
        why = "is not finite" if lowered.lstrip("+-") in ("nan", "inf", "infinity") else "is not a number"
        raise error(f"{source}: {where(bad)} field {col}: {_shown(shown)} {why}")
    given = ~empty
    if col == "setup_s":
        for mask, why in (
            (given & (values < 0), "must be >= 0"),
            (given & (values > MAX_SECONDS), f"is out of range (<= {MAX_SECONDS:g})"),
        ):
            if mask.any():
                raise error(
                    f"{source}: {where(mask)} field {col}: {_shown(raw.iloc[int(np.argmax(mask))])} {why}"
                )
        return pd.Series(np.where(empty, 0.0, values), index=raw.index, dtype=np.float64)
    top = INTEGER_MAX[col]
    for mask, why in (
        (given & (values != np.floor(values)), "must be an integer"),
        (given & (values < 1), "must be an integer >= 1"),
        (given & (values > top), f"is out of range (<= {top})"),
    ):
        if mask.any():
            raise error(
                f"{source}: {where(mask)} field {col}: {_shown(raw.iloc[int(np.argmax(mask))])} {why}"
            )
    if col == "frames":
        return pd.Series(np.where(empty, 1, values).astype(np.int64), index=raw.index)
    return pd.Series(
        pd.array(np.where(empty, 0, values).astype(np.int64), dtype="Int64"), index=raw.index
    ).mask(empty)


def _shown(value):
    """A value for an error message: as the file has it (a table built in Python: its text)."""
    return shorten(value if isinstance(value, str) else str(value))


def chunk_arrays(frame):
    """(frames, chunk_frames, max_gpus, setup_s) arrays of a validated table, in row order, as
    :func:`sched.sim.chunks.simulate` reads them: 1 frame, 0 (indivisible), 0 (no limit) and 0 s
    where a column is absent or a value empty."""
    n = len(frame)

    def ints(col, default):
        return (
            frame[col].fillna(default).to_numpy(np.int64) if col in frame else np.full(n, default, np.int64)
        )

    setup = frame["setup_s"].to_numpy(np.float64) if "setup_s" in frame else np.zeros(n)
    return ints("frames", 1), ints("chunk_frames", 0), ints("max_gpus", 0), setup


def schedule_frame(scenario, job, chunk, start, end, machine):
    """The per-chunk schedule table of a chunked scenario (the module's file contract), from
    :func:`sched.sim.chunks.simulate`'s rows."""
    _, _, _, weight, due = scenario.arrays
    frames, per, _, _ = chunk_arrays(scenario.frame)
    job = np.asarray(job, dtype=np.int64)
    late = tardiness(job_ends(job, np.asarray(end, np.float64), len(scenario)), due)
    last = np.asarray(chunk) == counts(frames, per)[job] - 1
    f = scenario.frame.iloc[job].reset_index(drop=True)
    f[CHUNK] = np.asarray(chunk, dtype=np.int64)
    f["machine"] = np.asarray(machine, dtype=np.int64)
    f["start_s"] = np.asarray(start, dtype=np.float64)
    f["end_s"] = np.asarray(end, dtype=np.float64)
    f["tardiness_s"] = np.where(last, late[job], 0.0)
    f["weighted_tardiness_s"] = np.where(last, (weight * late)[job], 0.0)
    return f


def job_frame(scenario, job, end):
    """One row a job (the scenario's), with its completion (``end_s``: its last chunk to end)
    and tardiness, from :func:`sched.sim.chunks.simulate`'s rows: what
    :func:`sched.data.schedule.summarize` reads for the per-job totals."""
    _, _, _, weight, due = scenario.arrays
    f = scenario.frame.copy()
    f["end_s"] = job_ends(np.asarray(job, np.int64), np.asarray(end, np.float64), len(f))
    f["tardiness_s"] = tardiness(f["end_s"].to_numpy(), due)
    f["weighted_tardiness_s"] = weight * f["tardiness_s"].to_numpy()
    return f
