"""Random small chunked scenarios on a coarse grid, shared by the chunked loop's and the sync loop's
cross-checks against the reference (ties and coincident events are common)."""

import numpy as np

SPEED_GRIDS = ([1.0], [0.5, 1.0, 2.0], [0.6, 1.0, 1.5])


def random_farm(rng, max_jobs=30, max_frames=50, max_gpus=8, one_chunk=False, arrivals=(0, 20), spread=0.8):
    """A small scenario and its farm: (arrays, chunk columns, speeds, busy GPUs or None); arrivals
    drawn from the integers of ``arrivals`` with probability ``spread``, else all at 0."""
    n = int(rng.integers(1, max_jobs + 1))
    arrival = rng.integers(*arrivals, n).astype(float) if rng.random() < spread else np.zeros(n)
    duration = rng.integers(1, 40, n).astype(float)
    estimate = duration if rng.random() < 0.5 else rng.integers(1, 40, n).astype(float)
    weight = rng.choice([1.0, 2.0, 4.0], n)
    due = arrival + rng.integers(-5, 60, n)
    frames = rng.integers(1, max_frames + 1, n)
    if one_chunk:
        per = np.where(rng.random(n) < 0.5, 0, frames + rng.integers(0, 3, n))
    else:
        per = np.where(rng.random(n) < 0.2, 0, rng.integers(1, 12, n))
    limit = np.where(rng.random(n) < 0.4, 0, rng.integers(1, 5, n))
    setup = np.where(rng.random(n) < 0.5, 0.0, rng.choice([0.5, 1.0, 3.0], n))
    m = int(rng.integers(1, max_gpus + 1))
    speed = list(rng.choice(SPEED_GRIDS[int(rng.integers(len(SPEED_GRIDS)))], m))
    free = list(rng.integers(-2, 10, m).astype(float)) if rng.random() < 0.2 else None
    return (arrival, duration, estimate, weight, due), (frames, per, limit, setup), speed, free
