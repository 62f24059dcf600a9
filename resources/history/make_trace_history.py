"""Write a SYNTHETIC history shaped like a real production GPU trace (issue 50), for tests and docs.

    python resources/history/make_trace_history.py OUT.csv [--days 35] [--seed 20240603] [--frames]

Not a real trace and not committed: the tests build it in a temporary folder, and docs/workload.md
("A history like a real trace") shows what the workload fit makes of it. It has what the example
history (``make_example_history.py``) lacks and a real queue showed:

* **class-dependent, heavy-tailed durations**: lognormal with sigma ``SIGMA`` (1.8) around a median
  per class (``MEDIAN_S``: low about four times shorter than high), so one lognormal for all
  classes misses both the classes and the tail's weight;
* **overdispersed arrivals**: each day's intensity is the weekly profile times a factor drawn
  lognormal (``DAY_SIGMA``), and each hour's count is Poisson around a gamma-distributed rate
  (``BURST_SHAPE``): bursts. The daily load ranges from about 0.05 to 2.5 on one GPU;
* **deadlines by class**: ``ALLOWANCE`` times the task's estimate plus a slack, none for the
  lowest class.

With ``--frames`` it writes the same records with frames per job by a documented rule instead of
1 (issue 59; the workflow's results/trace/history_frames.csv, a file of its own so that the history
above and its fit keep their bytes): ``min(max(round(exp(log(FRAMES_MEDIAN) + FRAMES_SIGMA Z)), 1),
FRAMES_MAX)``, one standard normal Z a task from a stream of its own (child 5 of the seed; the
other draws are children 0 to 4, unchanged), whatever its class and duration: a shot of two
seconds at 24 fps in the median, as the farm settings type it. A task's time per frame is then
its duration over its frames; `sched calibrate-frames --history` fits both back.

The estimate a scheduler had is the truth times lognormal noise (``ESTIMATE_SIGMA``), written as
an image's ``steps`` at the reference size, which the example calibration's model turns back
into it; ``started_at``/``finished_at`` are what one GPU, highest priority first, would have
logged: the measured durations the fit learns from.
"""

import argparse
import csv
import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20240603
START = datetime(2024, 6, 3, tzinfo=UTC)  # a Monday, 00:00 UTC
DAYS = 35
CLASSES = ("low", "normal", "high", "urgent")  # weights 1, 2, 4, 8 in config.yaml
CLASS_PROBS = np.array([0.55, 0.30, 0.12, 0.03])
MEDIAN_S = np.array([16.0, 120.0, 67.0, 40.0])  # low about four times shorter than high
SIGMA = 1.8  # the durations' log-standard deviation within a class
ALLOWANCE = {"normal": (2.0, 1800.0), "high": (1.5, 900.0), "urgent": (1.2, 300.0)}  # factor, slack s
DAY_SIGMA = 0.8  # the log-standard deviation of a day's intensity around the weekly profile
BURST_SHAPE = 3.0  # the gamma shape of an hour's rate around its day's: smaller, burstier
LOAD = 0.7  # the mean load on one GPU the durations are scaled to
ESTIMATE_SIGMA = 0.3  # the estimates' log-noise around the truth
FRAMES_MEDIAN, FRAMES_SIGMA, FRAMES_MAX = 48.0, 1.0, 2000  # --frames: frames per job (the rule above)
FRAMES_STREAM = 5  # the child of the seed's SeedSequence the frames are drawn from
FIELDS = ["id", "kind", "submitted_at", "priority", "due", "started_at", "finished_at", "gpu"]
FIELDS += ["width", "height", "frames", "steps"]


class OneLineParser(argparse.ArgumentParser):
    """A bad argument: one line on standard error (no usage text), exit status 2."""

    def error(self, message):
        print(f"{self.prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
        raise SystemExit(2)


def _example():
    spec = importlib.util.spec_from_file_location("make_example_history", HERE / "make_example_history.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def hourly_rates(rng, days, ex):
    """The rate of each hour (tasks an hour, before scaling): the weekly profile x a day's factor x
    an hour's gamma burst; and the day factors."""
    profile = ex.weekly_rate()
    factors = np.exp(DAY_SIGMA * rng.standard_normal(days) - DAY_SIGMA**2 / 2)
    hours = np.arange(days * 24)
    bursts = rng.gamma(BURST_SHAPE, 1.0 / BURST_SHAPE, hours.size)
    return profile[hours % 168] * np.repeat(factors, 24) * bursts, factors


def make(days=DAYS, seed=SEED):
    """The records (dicts, in submission order) and the day factors."""
    ex = _example()
    r_arr, r_task, r_cls, r_dur, r_due = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )
    mean_s = float((CLASS_PROBS * MEDIAN_S).sum() * np.exp(SIGMA**2 / 2))
    rates, factors = hourly_rates(r_arr, days, ex)
    rates *= LOAD * 3600.0 / mean_s / rates.mean()  # one GPU at LOAD on average
    counts = r_arr.poisson(rates)
    hour = np.repeat(np.arange(rates.size), counts)
    sub = np.round((hour + r_arr.random(hour.size)) * 3600.0)
    order = np.argsort(sub, kind="stable")
    sub = sub[order]
    n = sub.size
    cls = r_cls.choice(len(CLASSES), size=n, p=CLASS_PROBS)
    duration = np.round(np.maximum(MEDIAN_S[cls] * np.exp(SIGMA * r_dur.standard_normal(n)), 1.0), 2)
    # the estimate a scheduler had: the truth times lognormal noise, written as the features the
    # example calibration's model turns into it (an image at its reference size: the steps)
    estimate = duration * np.exp(ESTIMATE_SIGMA * r_task.standard_normal(n))
    truth = ex._bench().TRUTH["image"]
    steps = np.round(truth["ref_steps"] * estimate / truth["base_s"], 2)
    allowance = np.full(n, np.nan)
    for c, (factor, slack) in ALLOWANCE.items():
        m = cls == CLASSES.index(c)
        allowance[m] = np.round(factor * estimate[m] + r_due.uniform(0.0, slack, m.sum()))
    start, end, _ = ex._run_queue(sub, 2.0**cls, duration)

    def stamp(seconds):
        return (START + timedelta(seconds=float(seconds))).isoformat(timespec="seconds")

    records = []
    for j in range(n):
        due = stamp(sub[j] + allowance[j]) if np.isfinite(allowance[j]) else ""
        records.append(
            {
                "id": f"trace-{j:06d}",
                "kind": "image",
                "submitted_at": stamp(sub[j]),
                "priority": CLASSES[cls[j]],
                "due": due,
                "started_at": stamp(round(start[j], 2)),
                "finished_at": stamp(round(end[j], 2)),
                "gpu": "gpu-0",
                "width": 1024,
                "height": 1024,
                "frames": 1,
                "steps": float(steps[j]),
            }
        )
    return records, factors


def add_frames(records, seed=SEED):
    """``records`` with frames per job by the rule of the module docstring (in place; returns them)."""
    ss = np.random.SeedSequence(seed).spawn(FRAMES_STREAM + 1)[FRAMES_STREAM]
    z = np.random.default_rng(ss).standard_normal(len(records))
    frames = np.clip(np.round(np.exp(np.log(FRAMES_MEDIAN) + FRAMES_SIGMA * z)), 1, FRAMES_MAX)
    for r, f in zip(records, frames.astype(np.int64).tolist()):
        r["frames"] = f
    return records


def write(path, days=DAYS, seed=SEED, frames=False):
    """Write the history's CSV to ``path`` (``frames``: with frames by the rule); returns its records."""
    records, _ = make(days, seed)
    if frames:
        add_frames(records, seed)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(records)
    return records


#: The longest history it writes (about ten years: some 800,000 tasks).
MAX_DAYS = 3650


def _int_in(lo, hi):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r:.40}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer in [{lo}, {hi}], got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def main(argv=None):
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the CSV to write")
    p.add_argument(
        "--days", type=_int_in(1, MAX_DAYS), default=DAYS, help=f"days of history, 1 to {MAX_DAYS}"
    )
    p.add_argument("--seed", type=_int_in(0, 2**63 - 1), default=SEED, help="the seed, >= 0")
    p.add_argument("--frames", action="store_true", help="frames per job by the documented rule, not 1")
    a = p.parse_args(argv)
    if a.out.is_dir() or not a.out.parent.is_dir():  # before any work
        p.error(f"argument out: {str(a.out)[:80]!r} is a folder, or its folder does not exist")
    try:
        records = write(a.out, a.days, a.seed, a.frames)
    except OSError as exc:
        print(f"{p.prog}: error: {a.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{len(records)} tasks over {a.days} days in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
