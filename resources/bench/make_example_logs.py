"""Write the EXAMPLE bench logs of this folder (synthetic data, not measurements).

    python resources/bench/make_example_logs.py            # rewrites the files below

Writes, next to this script:

* ``example_bench.csv``   -- 600 renders over two weeks (two of them failed
  renders with no usable duration, as real logs have);
* ``example_bench.jsonl`` -- 120 further renders of a third week, in JSON Lines;
* ``example_bench_gpus.csv`` -- 400 renders on a farm of three GPU models of
  known speeds (``GPU_MODELS``; a render of duration p on the reference
  rtx4090 takes p / speed on a model of that speed), drawn from its own seed
  so that the two files above stay as they were.

Every draw comes from the seed below, so the files are reproducible byte for
byte. The durations follow a log-linear model with known coefficients (the
"truth", printed by this script in the form `sched calibrate` reports and
listed in README.md), so a calibration of these files can be checked against it:

    log(duration_s) = log(base_s) + a * log(pixels / ref_pixels)
                      + b * log(frames / ref_frames) + c * log(steps / ref_steps)
                      + NOISE_SIGMA * Z,   Z ~ N(0, 1)

The settings are shaped on the original project card (median image render
25 s on the studio's GPU bench; videos much longer, median about 4 minutes;
about 80 % images).
"""

import argparse
import csv
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

SEED = 20240601
HERE = Path(__file__).resolve().parent
NOISE_SIGMA = 0.25  # residual spread of log(duration) around the model
IMAGE_SHARE = 0.8

# kind -> model: base duration at the reference point and elasticities
TRUTH = {
    "image": {
        "base_s": 19.5,
        "ref_pixels": 1024 * 1024,
        "ref_frames": 1,
        "ref_steps": 30,
        "a": 0.9,
        "b": 0.0,
        "c": 1.0,
    },
    "video": {
        "base_s": 265.0,
        "ref_pixels": 1024 * 576,
        "ref_frames": 49,
        "ref_steps": 25,
        "a": 0.8,
        "b": 0.95,
        "c": 1.0,
    },
}
IMAGE_SIZES = [
    (768, 768),
    (1024, 1024),
    (1024, 1024),
    (1024, 1536),
    (1536, 1024),
    (1280, 1280),
    (896, 1152),
    (2048, 2048),
]
IMAGE_STEPS = [20, 25, 30, 30, 30, 40, 50]
IMAGE_WORKFLOWS = ["sdxl-txt2img", "flux-txt2img", "sdxl-img2img", "upscale-2x"]
VIDEO_SIZES = [(512, 512), (768, 432), (1024, 576), (1024, 576), (1280, 720)]
VIDEO_FRAMES = [17, 25, 49, 49, 81, 121]
VIDEO_STEPS = [20, 25, 25, 30]
VIDEO_WORKFLOWS = ["wan-t2v", "wan-i2v", "ltx-t2v"]
GPUS = ["rtx4090-a", "rtx4090-b"]
# The mixed farm's GPU models and their speeds relative to the rtx4090 (speed 1):
# what `sched calibrate example_bench_gpus.csv` should recover (gpu_speeds).
GPU_MODELS = {"rtx4090": 1.0, "l40s": 1.25, "a5000": 0.6}
GPU_SHARES = [0.5, 0.25, 0.25]
GPU_SEED = 20240602


def draw(rng, n, start, models=None):
    """n render records, in time order from ``start``.

    ``models``: None, each render on one of the two rtx4090 cards (``GPUS``);
    or True, on a GPU model drawn from ``GPU_MODELS`` (``GPU_SHARES``), its
    duration divided by the model's speed.
    """
    rows = []
    t = start
    for _ in range(n):
        t += timedelta(seconds=float(rng.exponential(1800.0)))
        kind = "image" if rng.random() < IMAGE_SHARE else "video"
        m = TRUTH[kind]
        if kind == "image":
            w, h = IMAGE_SIZES[rng.integers(len(IMAGE_SIZES))]
            frames = 1
            steps = IMAGE_STEPS[rng.integers(len(IMAGE_STEPS))]
            workflow = IMAGE_WORKFLOWS[rng.integers(len(IMAGE_WORKFLOWS))]
        else:
            w, h = VIDEO_SIZES[rng.integers(len(VIDEO_SIZES))]
            frames = VIDEO_FRAMES[rng.integers(len(VIDEO_FRAMES))]
            steps = VIDEO_STEPS[rng.integers(len(VIDEO_STEPS))]
            workflow = VIDEO_WORKFLOWS[rng.integers(len(VIDEO_WORKFLOWS))]
        log_d = (
            np.log(m["base_s"])
            + m["a"] * np.log(w * h / m["ref_pixels"])
            + m["b"] * np.log(frames / m["ref_frames"])
            + m["c"] * np.log(steps / m["ref_steps"])
            + NOISE_SIGMA * rng.standard_normal()
        )
        rows.append(
            {
                "timestamp": t.isoformat(timespec="seconds"),
                "workflow": workflow,
                "kind": kind,
                "width": int(w),
                "height": int(h),
                "frames": int(frames),
                "steps": int(steps),
                "gpu": GPUS[rng.integers(len(GPUS))] if models is None else _model(rng),
                "duration_s": None,
            }
        )
        speed = GPU_MODELS[rows[-1]["gpu"]] if models else 1.0
        rows[-1]["duration_s"] = round(float(np.exp(log_d) / speed), 2)
    return rows


def _model(rng):
    return list(GPU_MODELS)[rng.choice(len(GPU_MODELS), p=GPU_SHARES)]


class OneLineParser(argparse.ArgumentParser):
    """A bad argument: one line on standard error (no usage text), exit status 2."""

    def error(self, message):
        print(f"{self.prog}: error: {' '.join(str(message).split())}", file=sys.stderr)
        raise SystemExit(2)


def main(argv=None):
    OneLineParser(description=__doc__.splitlines()[0]).parse_args(argv)  # it takes no argument
    rng = np.random.default_rng(SEED)
    fields = ["timestamp", "workflow", "kind", "width", "height", "frames", "steps", "gpu", "duration_s"]
    csv_rows = draw(rng, 600, datetime(2024, 6, 3, 8, 0, tzinfo=UTC))
    # two failed renders, logged without a usable duration (the calibration skips them)
    csv_rows[137]["duration_s"] = ""
    csv_rows[412]["duration_s"] = "timeout"
    with open(HERE / "example_bench.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(csv_rows)
    json_rows = draw(rng, 120, datetime(2024, 6, 17, 8, 0, tzinfo=UTC))
    with open(HERE / "example_bench.jsonl", "w", encoding="utf-8") as fh:
        for r in json_rows:
            fh.write(json.dumps(r) + "\n")
    gpu_rows = draw(np.random.default_rng(GPU_SEED), 400, datetime(2024, 7, 1, 8, 0, tzinfo=UTC), models=True)
    with open(HERE / "example_bench_gpus.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(gpu_rows)
    print(
        "example_bench_gpus.csv: truth: GPU speeds "
        + ", ".join(f"{g} {v}" for g, v in GPU_MODELS.items())
        + " (rtx4090 the reference)"
    )
    for kind, m in TRUTH.items():
        d = np.array(
            [
                r["duration_s"]
                for r in csv_rows + json_rows
                if r["kind"] == kind and isinstance(r["duration_s"], float)
            ]
        )
        # the same model written as calibrate's duration_model: intercept + sum coef * log(feature)
        intercept = (
            np.log(m["base_s"])
            - m["a"] * np.log(m["ref_pixels"])
            - m["b"] * np.log(m["ref_frames"])
            - m["c"] * np.log(m["ref_steps"])
        )
        print(
            f"{kind}: {len(d)} records, median {np.median(d):.1f} s, mean {d.mean():.1f} s; "
            f"truth: intercept {intercept:.3f}, log_pixels {m['a']}, log_frames {m['b']}, "
            f"log_steps {m['c']}, residual sigma {NOISE_SIGMA}"
        )


if __name__ == "__main__":
    sys.exit(main())
