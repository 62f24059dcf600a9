"""Write the EXAMPLE queue history of this folder (synthetic data, not a real queue).

    python resources/history/make_example_history.py      # rewrites the files below

Writes, next to this script:

* ``example_history.csv``   -- the tasks submitted in the first three weeks
  (three of them malformed, as real exports have);
* ``example_history.jsonl`` -- the tasks of a fourth week, in JSON Lines.

Every draw comes from the seed below, so the files are reproducible byte for
byte. The generator's "truth" is importable (``weekly_rate``,
``priority_probs``, ``draw_arrivals``, ``draw_allowance``): the tests check
that ``sched calibrate-workload`` recovers it.

* Arrivals: a non-homogeneous Poisson process. On a weekday the rate is
  ``NIGHT + PEAK * exp(-((h - 14) / 3.5)**2 / 2)`` tasks an hour at hour ``h``
  (a smooth daily cycle peaking at 14:00), times ``WEEKEND`` on Saturday and
  Sunday. Times are UTC.
* Tasks: kind, resolution, frames and steps drawn as in the example bench logs
  (``resources/bench/make_example_logs.py``, same lists and the same
  log-linear duration model with residual sigma 0.25); the estimate a studio
  would have had is the model's median from the features.
* Priorities: four classes whose mix shifts with the hour of day: more urgent
  and high-priority tasks in the afternoon peak, mostly low ones at night.
* Deadlines: ``due = submitted + U(1, 3) * estimate + U(0, 3600)`` seconds
  (the config's default rule), except for a share ``NO_DEADLINE`` of tasks
  that have none (``due`` left empty).
* Execution: one GPU (``GPUS``), non-preemptive; when it frees, the waiting
  task with the highest priority starts, the earliest submitted first among
  equals. ``started_at``/``finished_at`` are what that queue would have logged.
"""

import argparse
import csv
import heapq
import importlib.util
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

SEED = 20240603
HERE = Path(__file__).resolve().parent
START = datetime(2024, 6, 3, tzinfo=UTC)  # a Monday, 00:00 UTC
WEEKS_CSV, WEEKS_JSONL = 3, 1
NIGHT, PEAK, PEAK_HOUR, PEAK_WIDTH_H = 8.0, 62.0, 14.0, 3.5  # tasks an hour
WEEKEND = 0.35
NO_DEADLINE = 0.15
FLOW_FACTOR, SLACK_S = (1.0, 3.0), (0.0, 3600.0)
GPUS = ["rtx4090-a"]
CLASSES = ("low", "normal", "high", "urgent")  # weights 1, 2, 4, 8 in config.yaml
BASE_PROBS = np.array([0.60, 0.25, 0.10, 0.05])
PEAK_SHIFT = np.array([-0.25, 0.05, 0.12, 0.08])  # added at the peak, scaled by the daily bump
FIELDS = [
    "id",
    "kind",
    "submitted_at",
    "priority",
    "due",
    "started_at",
    "finished_at",
    "gpu",
    "width",
    "height",
    "frames",
    "steps",
]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "make_example_logs", HERE.parent / "bench" / "make_example_logs.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bump(hour_of_day):
    return np.exp(-0.5 * ((np.asarray(hour_of_day, dtype=float) - PEAK_HOUR) / PEAK_WIDTH_H) ** 2)


def weekly_rate():
    """The true arrival rate, tasks an hour, at each of the 168 hours of the week (Monday 00:00 first),
    averaged over the hour (the rate varies within an hour; its hourly mean is what a fit can see)."""
    minutes = np.arange(168 * 60) / 60.0
    rate = NIGHT + PEAK * _bump(minutes % 24)
    rate = np.where(minutes // 24 >= 5, rate * WEEKEND, rate)
    return rate.reshape(168, 60).mean(axis=1)


def _rate_at(hours_since_monday):
    h = np.asarray(hours_since_monday) % 168
    rate = NIGHT + PEAK * _bump(h % 24)
    return np.where(h // 24 >= 5, rate * WEEKEND, rate)


def priority_probs(hour_of_day):
    """The true priority mix at an hour of day: array (..., 4) over CLASSES."""
    b = _bump(hour_of_day)[..., None]
    return BASE_PROBS + b * PEAK_SHIFT


def draw_arrivals(rng, weeks):
    """Submission times in hours from Monday 00:00, by thinning a Poisson process at the peak rate."""
    top = NIGHT + PEAK
    horizon = weeks * 168.0
    n = rng.poisson(top * horizon)
    t = np.sort(rng.uniform(0.0, horizon, n))
    return t[rng.random(n) * top < _rate_at(t)]


def draw_allowance(rng, estimate):
    """Deadline allowance (due - submitted) in seconds for tasks with these estimates."""
    return rng.uniform(*FLOW_FACTOR, len(estimate)) * estimate + rng.uniform(*SLACK_S, len(estimate))


def _features(rng, bench, n):
    """kind, width, height, frames, steps, median estimate and measured duration of n tasks."""
    rows = []
    for _ in range(n):
        kind = "image" if rng.random() < bench.IMAGE_SHARE else "video"
        if kind == "image":
            w, h = bench.IMAGE_SIZES[rng.integers(len(bench.IMAGE_SIZES))]
            frames, steps = 1, bench.IMAGE_STEPS[rng.integers(len(bench.IMAGE_STEPS))]
        else:
            w, h = bench.VIDEO_SIZES[rng.integers(len(bench.VIDEO_SIZES))]
            frames = bench.VIDEO_FRAMES[rng.integers(len(bench.VIDEO_FRAMES))]
            steps = bench.VIDEO_STEPS[rng.integers(len(bench.VIDEO_STEPS))]
        m = bench.TRUTH[kind]
        log_median = (
            np.log(m["base_s"])
            + m["a"] * np.log(w * h / m["ref_pixels"])
            + m["b"] * np.log(frames / m["ref_frames"])
            + m["c"] * np.log(steps / m["ref_steps"])
        )
        duration = float(np.exp(log_median + bench.NOISE_SIGMA * rng.standard_normal()))
        rows.append((kind, int(w), int(h), int(frames), int(steps), float(np.exp(log_median)), duration))
    return rows


def _run_queue(submitted, weight, duration):
    """Start and end times (s) on len(GPUS) GPUs, highest weight first, then earliest submitted."""
    n = len(submitted)
    start, end = np.empty(n), np.empty(n)
    free = [(0.0, g) for g in range(len(GPUS))]
    gpu = np.empty(n, dtype=int)
    waiting, i = [], 0
    while i < n or waiting:
        t, g = heapq.heappop(free)
        if not waiting and i < n:
            t = max(t, submitted[i])
        while i < n and submitted[i] <= t:
            heapq.heappush(waiting, (-weight[i], submitted[i], i))
            i += 1
        _, _, j = heapq.heappop(waiting)
        start[j], end[j], gpu[j] = t, t + duration[j], g
        heapq.heappush(free, (end[j], g))
    return start, end, gpu


def make(weeks=WEEKS_CSV + WEEKS_JSONL, seed=SEED):
    """The example history's records (dicts, in submission order)."""
    r_arr, r_task, r_prio, r_due = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))
    bench = _bench()
    hours = draw_arrivals(r_arr, weeks)
    sub = np.round(hours * 3600.0)  # whole seconds, as the timestamps are written
    n = len(sub)
    tasks = _features(r_task, bench, n)
    probs = priority_probs(hours % 24)
    cls = (r_prio.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    weight = 2.0**cls
    estimate = np.array([t[5] for t in tasks])
    duration = np.round(np.array([t[6] for t in tasks]), 2)
    has_due = r_due.random(n) >= NO_DEADLINE
    allowance = np.round(draw_allowance(r_due, estimate))
    start, end, gpu = _run_queue(sub, weight, duration)

    def stamp(seconds):
        return (START + timedelta(seconds=float(seconds))).isoformat(timespec="seconds")

    records = []
    for j in range(n):
        kind, w, h, frames, steps, _, _ = tasks[j]
        records.append(
            {
                "id": f"job-{j:06d}",
                "kind": kind,
                "submitted_at": stamp(sub[j]),
                "priority": CLASSES[cls[j]],
                "due": stamp(sub[j] + allowance[j]) if has_due[j] else "",
                "started_at": stamp(round(start[j], 2)),
                "finished_at": stamp(round(end[j], 2)),
                "gpu": GPUS[gpu[j]],
                "width": w,
                "height": h,
                "frames": frames,
                "steps": steps,
            }
        )
    return records


class OneLineParser(argparse.ArgumentParser):
    """A bad argument: one line on standard error (no usage text), exit status 2."""

    def error(self, message):
        print(f"{self.prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
        raise SystemExit(2)


def main(argv=None):
    OneLineParser(description=__doc__.splitlines()[0]).parse_args(argv)  # it takes no argument
    records = make()
    cut = START + timedelta(weeks=WEEKS_CSV)
    first = [r for r in records if datetime.fromisoformat(r["submitted_at"]) < cut]
    rest = records[len(first) :]
    # three malformed rows, as real exports have: no submission time, an unknown class, a bad due
    first[101]["submitted_at"] = ""
    first[2024]["priority"] = "asap"
    first[5003]["due"] = "tomorrow"
    with open(HERE / "example_history.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(first)
    with open(HERE / "example_history.jsonl", "w", encoding="utf-8") as fh:
        for r in rest:
            r = {k: v for k, v in r.items() if v != ""}  # a task without deadline has no "due" key
            fh.write(json.dumps(r) + "\n")
    rate = weekly_rate()
    print(
        f"{len(first)} tasks in example_history.csv, {len(rest)} in example_history.jsonl; "
        f"true mean rate {rate.mean():.2f} tasks/h (weekday peak {rate.max():.1f}, night {rate.min():.1f})"
    )


if __name__ == "__main__":
    sys.exit(main())
