"""``rank()``'s jobs of frames (issue 59): the task fields of a job a render farm runs in chunks.

A task is a **job of frames** when it carries any of :data:`CHUNK_FIELDS`; then:

* ``frames``: its waiting frames, a whole number from 1 to ``MAX_FRAMES`` (default 1). Alone
  (without the fields below) ``frames`` is what it always was: a feature of the duration model,
  and the task is planned whole, as before, bit for bit.
* ``frame_s``: its estimated seconds a frame (> 0); the job's remaining work is then
  ``frames × frame_s``. Give ``frame_s`` or ``estimate_s`` (``duration_s``, the duration model),
  not both: ``estimate_s`` is then the remaining work of the waiting frames, as a scenario's.
* ``chunk_frames``: frames a GPU is handed at once (default 1: every waiting frame is a chunk,
  the unit a farm hands a host: OpenCue's frame, Deadline's task); ``chunk_frames`` >= ``frames``:
  one chunk, the job indivisible.
* ``max_gpus``: the most chunks of the job at once (a whole number >= 1; absent: no limit).
* ``setup_s``: seconds of setup every chunk takes before its frames (>= 0, default 0).
* ``running``: its chunks running now (a whole number >= 0, default 0). They hold GPUs and count
  against ``max_gpus`` until their end, taken as **half a chunk's estimate from now** (the mean
  time left of a chunk caught at a random moment of its run; a farm reports that chunks run, not
  when they end). They take the call's GPUs free now, in task order, lowest index first; more
  running chunks than GPUs free now is refused.

A chunk of f frames is ``setup_s + work × f / frames`` of work (``sched.sim.chunks.chunk_work``,
the scenario CSV's formula), ÷ the GPU's speed. Tasks of a call without these fields are one
chunk each, with no limit: whole tasks. The plan of a call holding a job of frames is
:mod:`sched.ranking.farm.plan`'s.

Every bad value is a one-line error naming the task and the field (``error``: the reading's
own, so that this module needs nothing of :mod:`sched.ranking.tasks`); at most
``MAX_RANK_CHUNKS`` chunks a call.
"""

import math
from collections import namedtuple

import numpy as np

from sched.config import shorten
from sched.limits import MAX_FRAMES, MAX_MACHINES, MAX_RANK_CHUNKS, MAX_SECONDS
from sched.ranking.times import number
from sched.sim import chunks

#: The fields that make a task a job of frames (``frames`` alone does not: it is a feature of
#: the duration model, as it was before jobs of frames).
CHUNK_FIELDS = ("frame_s", "chunk_frames", "max_gpus", "setup_s", "running")
#: Every field of a job of frames.
FIELDS = ("frames", *CHUNK_FIELDS)

#: A call's jobs of frames, arrays in row order: ``frames``, ``per`` (frames a chunk), ``maxg``
#: (0: no limit), ``setup`` (s), ``running`` (chunks running now); ``run_gpu`` (M,): the row whose
#: running chunk holds each GPU (-1: none), ``run_free`` (M,): when each GPU frees, running chunks
#: included; ``work``: the total planned work (s, on a GPU of speed 1), running chunks included.
Chunks = namedtuple("Chunks", "frames per maxg setup running run_gpu run_free work")


def is_job_of_frames(task):
    """Whether one task carries a field of :data:`CHUNK_FIELDS`."""
    get = task.get
    return any(get(f) is not None for f in CHUNK_FIELDS)


def frame_work(task, tid, pos, error):
    """A job's remaining work from ``frames × frame_s`` (its estimate when it gives no
    ``estimate_s`` nor ``duration_s``)."""
    fs = _seconds(task.get("frame_s"), tid, pos, "frame_s", error, positive=True)
    return _whole(task.get("frames"), tid, pos, "frames", error, 1, MAX_FRAMES, 1) * fs


def read(tasks, ids, est, mfree, speed, now, error):
    """The call's :class:`Chunks`, or None when no task is a job of frames (then nothing here
    changes the call). ``est``: the tasks' remaining work as read; ``mfree``, ``speed``: the
    call's GPUs (free times from ``now`` on); ``error(tid, pos, field, why)``: the reading's
    error."""
    if not any(is_job_of_frames(t) for t in tasks):
        return None
    n = len(tasks)
    frames, per = np.ones(n, np.int64), np.ones(n, np.int64)
    maxg, running, setup = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n)
    total = n  # a chunk a task, until read
    for pos, task in enumerate(tasks):
        tid, get = ids[pos], task.get
        if not is_job_of_frames(task):  # a whole task (its frames, if any, a feature): one chunk
            continue
        if get("frame_s") is not None and (get("estimate_s") is not None or get("duration_s") is not None):
            given = "estimate_s" if get("estimate_s") is not None else "duration_s"
            raise error(tid, pos, "frame_s", f"give frame_s or {given}, not both (both set the job's work)")
        frames[pos] = f = _whole(get("frames"), tid, pos, "frames", error, 1, MAX_FRAMES, 1)
        per[pos] = _whole(get("chunk_frames"), tid, pos, "chunk_frames", error, 1, MAX_FRAMES, 1)
        maxg[pos] = _whole(get("max_gpus"), tid, pos, "max_gpus", error, 1, MAX_MACHINES, 0)
        running[pos] = _whole(get("running"), tid, pos, "running", error, 0, MAX_MACHINES, 0)
        setup[pos] = _seconds(get("setup_s"), tid, pos, "setup_s", error)
        total += chunks.chunk_count(f, per[pos]) - 1
        if total > MAX_RANK_CHUNKS:
            raise error(
                tid, pos, "frames", f"the call's jobs hold more than {MAX_RANK_CHUNKS} chunks "
                "(sched.limits.MAX_RANK_CHUNKS) by this one"
            )  # fmt: skip
    run_gpu, run_free, held = _place(running, frames, per, setup, est, mfree, speed, now, ids, error)
    work = math.fsum(est) + float(setup @ chunks.counts(frames, per)) + held
    return Chunks(frames, per, maxg, setup, running, run_gpu, run_free, work)


def running_left(est, frames, per, setup):
    """The work a running chunk is taken to have left: half a full chunk's estimate."""
    return 0.5 * chunks.chunk_work(est, frames, min(per, frames), setup)


def _place(running, frames, per, setup, est, mfree, speed, now, ids, error):
    """The running chunks on the GPUs free now (task order, lowest index first): (the row holding
    each GPU, when each GPU frees, the work they hold in all)."""
    run_gpu = np.full(len(mfree), -1, np.int64)
    run_free = np.array(mfree, np.float64)
    free_now = [m for m in range(len(mfree)) if mfree[m] <= now]
    k, held = 0, 0.0
    for pos in np.flatnonzero(running).tolist():
        left = running_left(est[pos], int(frames[pos]), int(per[pos]), float(setup[pos]))
        for _ in range(int(running[pos])):
            if k == len(free_now):
                raise error(
                    ids[pos], pos, "running", f"the call's running chunks pass the {len(free_now)} "
                    f"GPUs free now (machines) at this task: give machines the farm's GPU count"
                )  # fmt: skip
            m = free_now[k]
            run_gpu[m], run_free[m] = pos, now + left / speed[m]
            held += left
            k += 1
    return run_gpu, run_free, held


def _whole(v, tid, pos, field, error, least, most, default):
    """A whole-number field within [least, most] (``default`` when absent)."""
    if v is None:
        return default
    f = number(v)
    if f is None:
        raise error(tid, pos, field, f"not a number: {shorten(v)}")
    if not (math.isfinite(f) and f == int(f) and least <= f <= most):
        raise error(tid, pos, field, f"expected a whole number from {least} to {most}, got {shorten(v)}")
    return int(f)


def _seconds(v, tid, pos, field, error, positive=False):
    """Seconds (``setup_s`` >= 0, default 0; ``frame_s`` > 0) of at most MAX_SECONDS."""
    if v is None:
        return 0.0
    f = number(v)
    if f is None:
        raise error(tid, pos, field, f"not a number: {shorten(v)}")
    if not (math.isfinite(f) and (f > 0 if positive else f >= 0) and f <= MAX_SECONDS):
        sign = "> 0" if positive else ">= 0"
        raise error(
            tid, pos, field, f"expected a finite number {sign} and at most {MAX_SECONDS:g} s "
            f"(sched.limits.MAX_SECONDS), got {shorten(v)}"
        )  # fmt: skip
    return f
