"""Speed and memory of `sched calibrate-workload` on a large history (issue 17: 1,000,000 tasks in <= 60 s,
bounded memory).

    python -m pytest benchmarks/test_workload_speed.py --benchmark-only -s

Writes synthetic histories of 100,000 and 1,000,000 tasks (CSV, ISO 8601
times, the example's columns and features; JSON Lines for 100,000) in a
temporary folder, outside the timed region, then calibrates each in a fresh
process (one round: the files are large) and prints its wall time and its
peak resident memory. Memory is bounded when the 1,000,000-task peak is close
to the 100,000-task one: the history is streamed in chunks of
sched.data.workload.history.CHUNK records and only fixed-size sums and a fixed-size
reservoir are kept.
"""

import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from tests.conftest import ROOT

RUN = """
import sys, time
from sched.config import validate_config
from sched.data.workload.workload_fit import calibrate_workload
cfg = validate_config({})
t = time.perf_counter()
r = calibrate_workload([sys.argv[1]], cfg, sys.argv[2])
seconds = time.perf_counter() - t
# VmHWM, the peak resident set of this process image (ru_maxrss would count the forking parent's)
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM"))
print(seconds, r.data["tasks"], hwm / 1024)
"""


def _history(path, n, fmt):
    rng = np.random.default_rng(n)
    sub = 1717372800 + np.sort(rng.uniform(0, 86400 * 7 * 40, n))
    iso = pd.to_datetime(sub, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    video = rng.random(n) < 0.2
    frame = pd.DataFrame(
        {
            "id": [f"t{i}" for i in range(n)],
            "kind": np.where(video, "video", "image"),
            "submitted_at": iso,
            "priority": np.array(["low", "normal", "high", "urgent"])[rng.integers(0, 4, n)],
            "due": np.where(
                rng.random(n) < 0.15,
                "",
                pd.to_datetime(sub + rng.uniform(100, 5000, n), unit="s", utc=True).strftime(
                    "%Y-%m-%dT%H:%M:%S+00:00"
                ),
            ),
            "started_at": iso,
            "finished_at": pd.to_datetime(sub + 60, unit="s", utc=True).strftime("%Y-%m-%dT%H:%M:%S+00:00"),
            "width": 1024,
            "height": 1024,
            "frames": np.where(video, 49, 1),
            "steps": rng.integers(20, 50, n),
        }
    )
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        with open(path, "w") as fh:
            for rec in frame.to_dict("records"):
                fh.write(json.dumps({k: v for k, v in rec.items() if v != ""}) + "\n")
    return path


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    out = tmp_path_factory.mktemp("cal") / "calibration.json"
    r = subprocess.run(
        [sys.executable, "-m", "sched", "calibrate", "--out", out], cwd=ROOT, capture_output=True
    )
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize(
    "n,fmt", [(100_000, "csv"), (100_000, "jsonl"), (1_000_000, "csv"), (1_000_000, "jsonl")]
)
def test_calibrate_workload_speed(benchmark, tmp_path, calibration, n, fmt):
    path = _history(tmp_path / f"history.{fmt}", n, fmt)
    out = {}

    def run():
        t = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-c", RUN, path, calibration], cwd=ROOT, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr[-2000:]
        inner, tasks, rss = r.stdout.split()
        out.update(
            process_s=time.perf_counter() - t, fit_s=float(inner), tasks=int(tasks), peak_rss_mb=float(rss)
        )

    benchmark.group = "calibrate-workload"
    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(out)
    print(
        f"\n{n:,} tasks ({fmt}): calibrated in {out['fit_s']:.1f} s "
        f"({out['process_s']:.1f} s with the process start), "
        f"{n / out['fit_s']:,.0f} tasks/s; peak resident memory {out['peak_rss_mb']:.0f} MB"
    )
    assert out["tasks"] == n
