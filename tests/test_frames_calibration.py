"""The frames fit (issue 59, point 6): frames per job and time per frame by kind from the bench
logs' frames column, by kind and class from a history's optional frames column; the trace-like
history's frames by its rule in a file of its own; a chunked setting's frames from a fit.

The fit recovers a known lognormal of frames and of time per frame; every bad value is one line
naming the file, line or field; a history without frames reads as before; config
scenario.chunks.frames: {fit: FILE} takes the fit's median, sigma and max per kind.
"""

import csv
import importlib.util
import json

import numpy as np
import pytest

from sched.data import frames_fit
from sched.data.frames_fit import FramesFitError

from .conftest import ROOT

OPTIONS = {
    "columns": {f: f for f in ("kind", "duration_s", "width", "height", "frames", "steps")},
    "max_bad_share": 0.05,
    "min_records": 30,
    "kinds": None,
}
PRIORITIES = {"low": {"weight": 1, "prob": 0.5}, "high": {"weight": 4, "prob": 0.5}}


def bench_rows(n=600, seed=0, median=40.0, sigma=0.7, tpf=3.0, tpf_sigma=0.2):
    """Videos of lognormal frames x lognormal time per frame, images of one frame."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        if i % 3:
            f = int(np.clip(np.round(median * np.exp(sigma * rng.standard_normal())), 1, 2000))
            kind = "video"
        else:
            f, kind = 1, "image"
        d = f * tpf * np.exp(tpf_sigma * rng.standard_normal())
        rows.append({"kind": kind, "frames": f, "steps": 20, "duration_s": round(float(d), 4)})
    return rows


def write_csv(path, rows, fields=None):
    fields = fields or list(rows[0])
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return path


def test_the_bench_fit_recovers_frames_and_time_per_frame(tmp_path):
    fit = frames_fit.fit_bench([write_csv(tmp_path / "b.csv", bench_rows())], OPTIONS)
    v, im = fit["kinds"]["video"], fit["kinds"]["image"]
    assert v["frames"]["median"] == pytest.approx(40.0, rel=0.1)
    assert v["frames"]["sigma"] == pytest.approx(0.7, abs=0.08)
    assert v["time_per_frame"]["median_s"] == pytest.approx(3.0, rel=0.05)
    assert v["time_per_frame"]["sigma"] == pytest.approx(0.2, abs=0.05)
    assert fit["frames_elasticity"]["video"] == pytest.approx(1.0, abs=0.05)
    assert im["frames"] == {"median": 1.0, "sigma": 0.0, "max": 1, "min": 1, "mean": 1.0}
    assert frames_fit.check_fit(json.loads(json.dumps(fit)), "x") == fit  # what it writes, it reads


@pytest.mark.parametrize("value, why", [("", "missing"), ("2.5", "2.5 is not a whole number")])
def test_a_bench_record_without_whole_frames_is_one_line_naming_file_line_and_field(value, why, tmp_path):
    rows = bench_rows(120)
    rows[7]["frames"] = value
    path = write_csv(tmp_path / "b.csv", rows)
    with pytest.raises(FramesFitError) as e:
        frames_fit.fit_bench([path], OPTIONS)
    assert str(e.value).startswith(f"{path}: line 9: field frames: ") and why in str(e.value)
    assert "\n" not in str(e.value)


def history_rows(n=300, seed=1, with_frames=True):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        f = int(np.clip(np.round(20 * np.exp(0.5 * rng.standard_normal())), 1, 500))
        t0 = 1_700_000_000 + 60 * i
        row = {
            "id": f"t{i}",
            "kind": "video" if i % 2 else "image",
            "submitted_at": t0,
            "priority": "high" if i % 4 == 0 else "low",
            "started_at": t0,
            "finished_at": t0 + 2 * f,
        }
        if with_frames:
            row["frames"] = f
        rows.append(row)
    return rows


def test_the_history_fit_gives_frames_by_kind_and_class_and_time_per_frame(tmp_path):
    path = write_csv(tmp_path / "h.csv", history_rows())
    fit = frames_fit.fit_history([path], PRIORITIES, 0.05)
    assert set(fit["kinds"]) == {"image", "video"} and set(fit["classes"]) == {"high", "low"}
    assert fit["kinds"]["video"]["frames"]["median"] == pytest.approx(20.0, rel=0.15)
    assert fit["kinds"]["video"]["time_per_frame"]["median_s"] == pytest.approx(2.0, rel=1e-6)
    assert sum(e["jobs"] for e in fit["classes"].values()) == fit["records"] == 300


def test_a_fractional_frames_in_a_history_is_a_malformed_record_named_by_its_line(tmp_path):
    from sched.data.workload.history import HistoryError, HistoryStats, read_history

    rows = history_rows(40)
    rows[3]["frames"] = "1.5"
    path = write_csv(tmp_path / "h.csv", rows)
    stats = HistoryStats(path, "csv")
    list(read_history(path, PRIORITIES, 0.5, stats=stats))
    assert stats.bad == [(5, "frames: '1.5' is not a whole number from 1 to 10000")]
    with pytest.raises(HistoryError, match="line 5: frames"):
        frames_fit.fit_history([path], PRIORITIES, 0.01)


def test_a_history_without_frames_reads_as_before_and_its_fit_says_so(tmp_path):
    from sched.data.workload.history import read_history

    plain = write_csv(tmp_path / "h.csv", history_rows(with_frames=False))
    chunks = list(read_history(plain, PRIORITIES, 0.05))
    assert len(chunks) == 1 and np.isnan(chunks[0].features["frames"]).all() and len(chunks[0]) == 300
    with pytest.raises(FramesFitError, match="no record gives frames"):
        frames_fit.fit_history([plain], PRIORITIES, 0.05)
    empty = frames_fit.fit_history([plain], PRIORITIES, 0.05, allow_empty=True)
    assert empty["kinds"] == {} and empty["records_without_frames"] == 300


def _trace():
    spec = importlib.util.spec_from_file_location("trace", ROOT / "resources/history/make_trace_history.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_trace_history_gets_frames_by_its_rule_and_nothing_else_changes(tmp_path):
    trace = _trace()
    plain = trace.write(tmp_path / "h.csv", days=3)
    framed = trace.write(tmp_path / "hf.csv", days=3, frames=True)
    assert all(r["frames"] == 1 for r in plain)
    assert [{**r, "frames": 1} for r in framed] == plain  # every other column as it was
    frames = np.array([r["frames"] for r in framed])
    assert frames.min() >= 1 and frames.max() <= trace.FRAMES_MAX and frames.std() > 0
    fit = frames_fit.fit_history(
        [tmp_path / "hf.csv"],
        {"low": {"weight": 1}, "normal": {"weight": 2}, "high": {"weight": 4}, "urgent": {"weight": 8}},
        0.05,
    )
    assert fit["kinds"]["image"]["frames"]["median"] == pytest.approx(trace.FRAMES_MEDIAN, rel=0.2)
    assert fit["kinds"]["image"]["frames"]["sigma"] == pytest.approx(trace.FRAMES_SIGMA, abs=0.15)


def _fit_file(tmp_path, **kinds):
    data = {
        "format": frames_fit.FORMAT,
        "source": "bench",
        "kinds": {k: {"frames": f, "time_per_frame": None} for k, f in kinds.items()},
        "classes": None,
    }
    path = tmp_path / "frames.json"
    path.write_text(json.dumps(data))
    return path


def test_a_chunked_setting_takes_its_frames_from_a_fit(tmp_path):
    from sched.data.jobs import JobsError, chunk_spec

    path = _fit_file(
        tmp_path, image={"median": 1.0, "sigma": 0.0, "max": 1}, video={"median": 30, "sigma": 0.5, "max": 90}
    )
    spec = chunk_spec({"frames": {"fit": str(path), "kinds": {"image": {"max": 4}}}}, ("image", "video"))
    assert {k: spec["frames"]["video"][k] for k in ("median", "sigma", "max")} == {
        "median": 30.0,
        "sigma": 0.5,
        "max": 90,
    }
    assert spec["frames"]["image"]["max"] == 4  # kinds still overrides a kind
    with pytest.raises(JobsError, match="both given"):
        chunk_spec({"frames": {"fit": str(path), "median": 3}}, ("image", "video"))
    with pytest.raises(FramesFitError, match="no entry for kind 'audio'"):
        chunk_spec({"frames": {"fit": str(path)}}, ("audio",))


@pytest.mark.parametrize(
    "frames, field",
    [
        ({"median": 0.5, "sigma": 0.1, "max": 5}, "kinds.video.frames.median"),
        ({"median": 3.0, "sigma": 9.0, "max": 5}, "kinds.video.frames.sigma"),
        ({"median": 3.0, "sigma": 0.1, "max": 2.5}, "kinds.video.frames.max"),
        ({"median": 30.0, "sigma": 0.1, "max": 5}, "kinds.video.frames.median"),
    ],
)
def test_a_malformed_fit_file_is_one_line_naming_the_file_and_field(frames, field, tmp_path):
    path = _fit_file(tmp_path, video=frames)
    with pytest.raises(FramesFitError) as e:
        frames_fit.load_fit(path)
    assert str(e.value).startswith(f"frames fit {path}: field {field}:") and "\n" not in str(e.value)


def test_sched_calibrate_frames_writes_the_fit_and_refuses_bad_input_with_exit_2(tmp_path, capsys):
    from sched import cli

    bench = write_csv(tmp_path / "b.csv", bench_rows(120))
    out = tmp_path / "f.json"
    assert cli.main(["calibrate-frames", str(bench), "--out", str(out)]) in (0, None)
    assert frames_fit.load_fit(out)["kinds"]["video"]["jobs"] == 80
    rows = bench_rows(120)
    rows[1]["frames"] = "7.5"
    assert cli.main(["calibrate-frames", str(write_csv(tmp_path / "c.csv", rows)), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "c.csv: line 3: field frames: 7.5 is not a whole number" in err
