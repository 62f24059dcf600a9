"""A parallelism limit as a decision on the chunked farm (issue 60, goal 2): each job runs at most
``cap`` chunks at once, on top of its own ``max_gpus``.

Why: with no host limit, a rule hands every free GPU to the job it ranks first, and a job's next
chunks rank ever higher as its remaining work shrinks. A long job that finds the farm idle takes
every GPU with chunks of up to hours; the urgent jobs that arrive next wait for a chunk to end,
non-preemptive (on farm-32's validation seeds, the tardiest jobs of tuned ATC waited 500 to
2,500 s behind one job running 32 chunks). A limit keeps GPUs turning over, as Decima's
parallelism limit does (it picks a stage and a limit at each free executor).

The limit here is the simplest family: one integer ``cap`` for every job, tuned on validation
scenarios as ATC's k is (:data:`CAP_GRID`, the values below the farm's GPU count; ``cap`` >= the
GPU count is no limit). It is a hard limit, as the farms' own are (Deadline Cloud's
``maxWorkerCount`` of a job, OpenCue's job ``max_cores``): a GPU stays idle rather than start a
chunk of a job at its limit. It is static, so the adapters can set it once per job and the farm
enforces it between syncs; the simulators read it as ``max_gpus`` (:func:`capped`), so the
compiled loops of :mod:`sched.sim.chunks` and :mod:`sched.sim.sync` and their plain-Python
reference (cross-checked in ``tests/test_farm_limits.py``) run it unchanged.
"""

import numpy as np

from sched.sim.errors import SimulationError

#: The farm verdicts shipping a limit (``farm_verdict.json``'s ``policy``, with its ``cap``) and the
#: rule each runs under it: tuned ATC, and the farm's default dispatcher with the same limit.
CAPPED, FIFO_CAPPED = "atc-tuned-cap", "farm-fifo-cap"
CAPPED_RULES = {CAPPED: "atc", FIFO_CAPPED: "farm-fifo"}

#: The limits tuned over (chunks of one job at once), those below the farm's GPU count only.
CAP_GRID = (1, 2, 4, 8, 16)


def cap_grid(gpus):
    """The values of :data:`CAP_GRID` below ``gpus`` (a limit of every GPU is no limit)."""
    return tuple(c for c in CAP_GRID if c < int(gpus))


def capped(max_gpus, cap):
    """Each job's limit under ``cap`` (int64, 0 = none): min(its own ``max_gpus``, ``cap``),
    ``max_gpus`` 0 read as no limit; ``cap`` 0 leaves ``max_gpus`` as it is."""
    limit = np.asarray(max_gpus, np.int64)
    cap = int(cap)
    if cap < 0:
        raise SimulationError(f"cap: expected 0 (no limit) or a number of chunks >= 1, got {cap}")
    if cap == 0:
        return limit.copy()
    return np.where((limit == 0) | (limit > cap), cap, limit).astype(np.int64)
