"""Jobs of frames on a render farm: the chunked model, its formulas and its compiled event loop.

A job of ``frames`` frames is cut into chunks of ``chunk_frames`` frames (0: indivisible, one
chunk), the last one possibly shorter: ceil(frames / chunk_frames) chunks. A chunk of f frames
is ``setup + whole × f / frames`` of work on a GPU of speed 1 (:func:`chunk_work`; ``whole``
the job's duration, or its estimate for what the scheduler sees), divided by the GPU's speed.
A job runs at most ``max_gpus`` chunks at once (0: no limit), and its chunks start in order.

Dispatch (sync 0): whenever a GPU is free and some job has a chunk waiting while it runs fewer
chunks than its limit, the rule picks one such job and its next chunk starts on that GPU at
once. Free GPUs decide lowest index first; ties go to the earlier arrival, then the earlier row
(the queue of jobs with a waiting chunk is kept in arrival order and the first maximum wins, as
in :mod:`sched.sim.core`). The rules read a job's remaining work (:func:`remaining_work`, the
estimates of its waiting chunks) where they read a task's estimate. A job is done when its last
chunk to end ends: tardiness and weight are per job.

When every job is one chunk the model is today's (:mod:`sched.sim.core`) with ``setup + duration``
as the duration, and :func:`simulate_batch` runs today's core, so one-frame results are today's
bit for bit by construction; the chunked loop gives the same schedules there too (tested). The
plain-Python reference of this model is ``sched.sim.reference.simulate_chunked``.
"""

from collections import namedtuple

import numpy as np
from numba.extending import register_jitable

from sched.data.chunked import counts, job_ends  # noqa: F401  (job_ends: of simulate's rows)
from sched.data.machines import MachinesError, speeds
from sched.limits import MAX_FRAMES, MAX_MACHINES, MAX_SCENARIO_CHUNKS
from sched.sim import rules
from sched.sim.errors import SimulationError
from sched.sim.rules import priority, static_part, tie_key
from sched.sim.state import arrival_order, core_jit

# --------------------------------------------------------------------------- the formulas


@register_jitable
def chunk_count(frames, per_chunk):
    """Chunks of a job: ceil(frames / per_chunk); 1 when indivisible (``per_chunk`` 0)."""
    if per_chunk <= 0 or per_chunk >= frames:
        return 1
    return (frames + per_chunk - 1) // per_chunk


@register_jitable
def frames_of(frames, per_chunk, i):
    """Frames in chunk ``i`` (0-based) of a job: ``per_chunk``, the last one what is left."""
    if per_chunk <= 0 or per_chunk >= frames:
        return frames
    return min(per_chunk, frames - i * per_chunk)


@register_jitable
def chunk_work(whole, frames, f, setup):
    """Work of a chunk of ``f`` frames on a GPU of speed 1: ``setup + whole × f / frames``
    (``whole``: the job's duration or estimate). A chunk of every frame is ``setup + whole``
    exactly (the same number, without the rounding of × f / f): a one-chunk job is today's task."""
    if f == frames:
        return setup + whole
    return setup + whole * f / frames


@register_jitable
def remaining_work(whole, frames, per_chunk, chunks, started, setup):
    """Work of a job's waiting chunks (``started`` of its ``chunks`` have started), computed as
    (waiting - 1) × a full chunk's work + the last chunk's: one formula, bit for bit, in the
    compiled loop and the reference. 0 when none waits."""
    waiting = chunks - started
    if waiting <= 0:
        return 0.0
    last = chunk_work(whole, frames, frames_of(frames, per_chunk, chunks - 1), setup)
    if waiting == 1:
        return last
    return (waiting - 1) * chunk_work(whole, frames, per_chunk, setup) + last


# --------------------------------------------------------------------------- the state

#: One chunked scenario, jobs in arrival order (ties by row); chunk arrays flat, job by job.
Farm = namedtuple(
    "Farm",
    [
        "arr", "dur", "est", "w", "due", "setup",  # (N,) float64
        "frames", "per", "nch", "maxg",  # (N,) int64: frames, frames per chunk (0: whole), chunks, limit
        "first",  # (N + 1,) int64: the index of each job's chunk 0 in the chunk arrays
        "speed", "mfree0",  # (M,) float64
        "nextc", "run",  # (N,) int64: next chunk to start, chunks running
        "rem", "static",  # (N,) float64: remaining work (estimates), the rule's static part of it
        "queue",  # (N,) int64: jobs with a waiting chunk, in arrival order
        "mfree", "mjob",  # (M,): when each GPU frees, the job on it (-1)
        "start", "end", "mach",  # (C,) the chunks' schedule
    ],
)  # fmt: skip


@core_jit
def _free_gpu(s, t):
    """Lowest-index GPU free at ``t`` (-1: none); releases the chunks ended by ``t``."""
    free = -1
    for m in range(s.mfree.shape[0]):
        if s.mfree[m] <= t:
            j = s.mjob[m]
            if j >= 0:
                s.run[j] -= 1
                s.mjob[m] = -1
            if free < 0:
                free = m
    return free


@core_jit
def admit(s, t, nxt, ql, N):
    """Queue the jobs arrived by ``t`` (``nxt``: the first not yet queued, ``ql``: the queue's
    length); the new (nxt, ql)."""
    while nxt < N and s.arr[nxt] <= t:
        s.queue[ql] = nxt
        ql += 1
        nxt += 1
    return nxt, ql


@core_jit
def next_event(s, t, nxt, N, M):
    """The time of the next arrival or chunk end after ``t`` (inf: none): where the loop jumps."""
    tn = s.arr[nxt] if nxt < N else np.inf
    for mm in range(M):
        if s.mfree[mm] > t and s.mfree[mm] < tn:
            tn = s.mfree[mm]
    return tn


@core_jit
def _pick(s, ql, rule, k, t, m):
    """Queue position of the job whose next chunk ``rule`` starts on GPU ``m`` at ``t``: the
    first maximum of (priority, tie_key) among jobs under their limit; -1 when none is."""
    pbar = 0.0
    if rule == rules.ATC:
        n = 0
        for q in range(ql):
            j = s.queue[q]
            if s.run[j] < s.maxg[j]:
                pbar += s.rem[j]
                n += 1
        if n == 0:
            return -1
        pbar /= n
    at = rules.Decision(t, pbar, s.speed[m])
    best, best_v, best_y = -1, -np.inf, np.inf  # best_y: no tie compared before a first maximum
    for q in range(ql):
        j = s.queue[q]
        if s.run[j] >= s.maxg[j]:
            continue
        if best < 0:
            best = q
        x = priority(rule, k, at, s.arr[j], s.rem[j], s.w[j], s.due[j], s.static[j])
        y = tie_key(rule, s.run[j])
        if x > best_v or (x == best_v and y > best_y):
            best, best_v, best_y = q, x, y
    return best


@core_jit
def _start(s, q, ql, m, t, rule):
    """Start the next chunk of the job at queue position ``q`` on GPU ``m`` at ``t``; returns
    the queue's new length (the job leaves it with its last chunk)."""
    j = s.queue[q]
    c = s.nextc[j]
    f = frames_of(s.frames[j], s.per[j], c)
    end = t + chunk_work(s.dur[j], s.frames[j], f, s.setup[j]) / s.speed[m]
    i = s.first[j] + c
    s.start[i] = t
    s.end[i] = end
    s.mach[i] = m
    s.mfree[m] = end
    s.mjob[m] = j
    s.run[j] += 1
    s.nextc[j] = c + 1
    if c + 1 < s.nch[j]:
        s.rem[j] = remaining_work(s.est[j], s.frames[j], s.per[j], s.nch[j], c + 1, s.setup[j])
        s.static[j] = static_part(rule, s.rem[j], s.w[j])
        return ql
    for p in range(q, ql - 1):  # shift left: the queue stays in arrival order
        s.queue[p] = s.queue[p + 1]
    return ql - 1


@core_jit
def reset(s, rule):
    """The farm ``s`` at its start: no chunk started, every GPU free from ``s.mfree0``, each job's
    remaining work whole and ``rule``'s static part on it (the start of every run on ``s``)."""
    for j in range(s.arr.shape[0]):
        s.nextc[j] = 0
        s.run[j] = 0
        s.rem[j] = remaining_work(s.est[j], s.frames[j], s.per[j], s.nch[j], 0, s.setup[j])
        s.static[j] = static_part(rule, s.rem[j], s.w[j])
    for m in range(s.mfree.shape[0]):
        s.mfree[m] = s.mfree0[m]
        s.mjob[m] = -1


@core_jit
def hold(s, run_gpu):
    """After :func:`reset`: the chunks running now (``run_gpu[m]``: the job whose chunk holds GPU m
    until ``s.mfree0[m]``; -1: none) hold their GPUs and count against their job's limit (a plan
    made from a farm at work, ``sched.ranking.farm``)."""
    for m in range(s.mfree.shape[0]):
        s.mjob[m] = run_gpu[m]
        if run_gpu[m] >= 0:
            s.run[run_gpu[m]] += 1


@core_jit
def run_farm(s, rule, k):
    """Schedule every chunk of ``s`` with ``rule`` (ATC's look-ahead ``k``); returns the
    decisions taken. Fills ``start``, ``end`` and ``mach``."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    reset(s, rule)
    t, nxt, ql, decisions = -np.inf, 0, 0, 0
    while True:
        nxt, ql = admit(s, t, nxt, ql, N)
        m = _free_gpu(s, t)
        if m >= 0 and ql > 0:
            q = _pick(s, ql, rule, k, t, m)
            if q >= 0:
                ql = _start(s, q, ql, m, t, rule)
                decisions += 1
                continue
        # nothing starts now: jump to the next arrival or the next chunk to end
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return decisions
        t = tn


# --------------------------------------------------------------------------- from Python


def check_chunks(n, frames, chunk_frames, max_gpus, setup, what="scenario"):
    """The four chunk columns as arrays (int64 frames, frames per chunk with 0 for indivisible,
    int64 limit with 0 for none, float64 setup), each of ``n`` values; a SimulationError for a
    value outside the model (frames 1 to MAX_FRAMES, chunk sizes and limits >= 1, setup >= 0),
    or for more than MAX_SCENARIO_CHUNKS chunks."""
    cols = []
    for name, col, dtype in (
        ("frames", frames, np.int64),
        ("chunk_frames", chunk_frames, np.int64),
        ("max_gpus", max_gpus, np.int64),
        ("setup_s", setup, np.float64),
    ):
        a = np.zeros(n, dtype) if col is None else np.asarray(col)
        if name == "frames" and col is None:
            a = np.ones(n, np.int64)
        if a.shape != (n,):
            raise SimulationError(f"{what}: {name}: expected {n} values, got shape {a.shape}")
        if dtype is np.int64:
            if not np.issubdtype(a.dtype, np.integer):
                raise SimulationError(f"{what}: {name}: expected integers, got {a.dtype}")
            low, high = (1, MAX_FRAMES) if name == "frames" else (0, MAX_FRAMES)
            if name == "max_gpus":
                high = MAX_MACHINES
            bad = (a < low) | (a > high)
            if bad.any():
                raise SimulationError(f"{what}: {name}: {a[bad][0]} is outside {low} .. {high}")
        else:
            a = a.astype(np.float64)
            if not (np.isfinite(a) & (a >= 0)).all():
                raise SimulationError(f"{what}: setup_s: must be finite and >= 0")
        cols.append(np.ascontiguousarray(a, dtype=dtype))
    nch = counts(cols[0], cols[1])
    if nch.sum() > MAX_SCENARIO_CHUNKS:
        raise SimulationError(
            f"{what}: {int(nch.sum())} chunks; a scenario holds at most {MAX_SCENARIO_CHUNKS} "
            "(sched.limits.MAX_SCENARIO_CHUNKS)"
        )
    return tuple(cols)


def load(arrays, chunk_cols, machines, machine_free=None):
    """A :class:`Farm` of one scenario (``arrays``: arrival, duration, estimate, weight, due in
    row order; ``chunk_cols``: :func:`check_chunks`'s four), and its row order."""
    speed = np.asarray(speeds(machines), dtype=np.float64)
    M = speed.shape[0]
    if machine_free is None:
        mfree0 = np.full(M, -np.inf)
    else:
        mfree0 = np.asarray(machine_free, dtype=np.float64)
        if mfree0.shape != (M,):
            raise MachinesError(f"machine_free: expected {M} values, got {mfree0.shape}")
    arr = np.asarray(arrays[0], dtype=np.float64)
    order = arrival_order(arr)
    N = len(order)
    cols = [np.ascontiguousarray(np.asarray(a, dtype=np.float64)[order]) for a in arrays]
    frames, per, maxg, setup = (c[order] for c in chunk_cols)
    nch = counts(frames, per)
    first = np.zeros(N + 1, np.int64)
    np.cumsum(nch, out=first[1:])
    C = int(first[-1])
    farm = Farm(
        *cols, setup, frames, per, nch, np.where(maxg > 0, np.minimum(maxg, M), M), first,
        speed, mfree0, np.zeros(N, np.int64), np.zeros(N, np.int64), np.zeros(N), np.zeros(N),
        np.zeros(N, np.int64), np.zeros(M), np.zeros(M, np.int64),
        np.full(C, np.nan), np.full(C, np.nan), np.full(C, -1, np.int64),
    )  # fmt: skip
    return farm, order


def unload(farm, order):
    """(job, chunk, start, end, machine) arrays, one row per chunk: jobs in row order, each
    job's chunks in order (``job``: the scenario row)."""
    inv = np.empty_like(order)
    inv[order] = np.arange(len(order))
    nch = farm.nch[inv]  # chunks of each row
    job = np.repeat(np.arange(len(order)), nch)
    offsets = np.zeros(len(order) + 1, np.int64)
    np.cumsum(nch, out=offsets[1:])
    chunk = np.arange(len(job)) - offsets[job]
    idx = farm.first[inv[job]] + chunk
    return job, chunk, farm.start[idx], farm.end[idx], farm.mach[idx]


def single_chunks(chunk_cols):
    """Whether every job is one chunk (today's model, with ``setup + duration`` as duration)."""
    return bool((counts(chunk_cols[0], chunk_cols[1]) == 1).all())


def simulate(arrival, duration, estimate, weight, due, rule, machines=1, k=rules.ATC_K_DEFAULT,
             machine_free=None, frames=None, chunk_frames=None, max_gpus=None, setup=None,
             compiled=None):  # fmt: skip
    """Schedule one chunked scenario; returns (job, chunk, start, end, machine) arrays, one row a
    chunk (:func:`unload`). ``frames`` .. ``setup``: per row, None for the defaults (1 frame,
    indivisible, no limit, no setup). ``compiled``: True forces the chunked loop, False today's
    core (every job must then be one chunk); None takes today's core exactly when every job is
    one chunk (the same schedules, bit for bit, faster)."""
    arrays = (arrival, duration, estimate, weight, due)
    n = len(np.asarray(arrival))
    cols = check_chunks(n, frames, chunk_frames, max_gpus, setup)
    rid = rules.rule_id(rule) if isinstance(rule, str) else int(rule)
    if compiled is None:
        compiled = not single_chunks(cols)
    if not compiled:
        if not single_chunks(cols):
            raise SimulationError("today's core runs one chunk per job; this scenario has more")
        from sched.sim.core import simulate as whole

        su = cols[3]  # a chunk of every frame: setup + whole (chunk_work), setup 0: the very duration
        dur, est = (su + np.asarray(a, np.float64) for a in (duration, estimate))
        start, end, mach = whole(arrival, dur, est, weight, due, rid, machines, k, machine_free)
        return np.arange(n), np.zeros(n, np.int64), start, end, mach
    farm, order = load(arrays, cols, machines, machine_free)
    run_farm(farm, rid, float(k))
    return unload(farm, order)
