"""Replay of the queue history: windows as scenarios, `sched replay`, the report's table."""

import numpy as np
import pandas as pd
import pytest

from sched.data.bench.calibration import load_calibration, predict_duration
from sched.data.workload.history import read_history
from sched.data.workload.replay import replay_scenarios
from sched.data.workload.workload import NO_DEADLINE_S
from sched.data.workload.workload_fit import estimates
from sched.report.workload import read_replay, replay_section
from tests.conftest import ROOT, run_cli

DAY = 86400.0
MONDAY = 1717372800.0  # 2024-06-03T00:00:00Z


@pytest.fixture(scope="module")
def wcfg(cfg, calibrated):
    c = cfg.replace(scenario={"calibration": str(calibrated.calibration)})
    return c


def _history(path, days=3, per_day=30, seed=0, durations=(5, 300), unmeasured=True):
    """A history CSV of ``days`` days from Monday 2024-06-03 (one task a day never measured when
    ``unmeasured``); returns (path, rows)."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(days):
        sub = np.sort(MONDAY + d * DAY + rng.uniform(0, DAY, per_day))
        for i, t in enumerate(sub):
            dur = float(rng.integers(*durations))
            rows.append(
                {
                    "id": f"d{d}-{i}",
                    "kind": "image" if i % 4 else "video",
                    "submitted_at": t,
                    "priority": ["low", "normal", "high", "urgent"][i % 4],
                    "due": "" if i % 5 == 0 else t + 600 + 10 * i,
                    "started_at": t + 1,
                    "finished_at": t + 1 + dur
                    if i != 3 or not unmeasured
                    else "",  # one a day never measured
                    "width": 1024,
                    "height": 1024,
                    "frames": 1 if i % 4 else 49,
                    "steps": 30,
                }
            )
    pd.DataFrame(rows).to_csv(path, index=False)
    return path, rows


def test_estimates_match_predict_duration(wcfg, calibrated):
    # the vectorised estimate against the scalar reference, task by task, on the example history
    cal = load_calibration(calibrated.calibration)
    chunk = next(
        read_history(
            ROOT / "resources/history/example_history.jsonl",
            wcfg["scenario"]["priorities"],
            0.05,
            chunk_size=300,
        )
    )
    est = estimates(cal, chunk.kind, chunk.features)
    ref = [
        predict_duration(calibrated.calibration, k, {f: chunk.features[f][i] for f in chunk.features})
        for i, k in enumerate(chunk.kind)
    ]
    np.testing.assert_allclose(est, ref, rtol=1e-12)


def test_windows_are_days_with_real_tasks(tmp_path, wcfg, calibrated):
    path, rows = _history(tmp_path / "h.csv")
    rep = replay_scenarios([path], wcfg, calibrated.calibration)
    assert [s.name for s in rep.scenarios] == ["replay-2024-06-03", "replay-2024-06-04", "replay-2024-06-05"]
    assert rep.unmeasured == 3 and len(rep.scenarios[0]) == 29
    assert [s.week_start_s for s in rep.scenarios] == [0.0, DAY, 2 * DAY]  # Monday, Tuesday, ...
    f = rep.scenarios[1].frame.set_index("id")
    src = {r["id"]: r for r in rows}
    for tid, row in f.iterrows():
        r = src[tid]
        assert row["arrival_s"] == pytest.approx(r["submitted_at"] - MONDAY - DAY)
        assert row["duration_s"] == pytest.approx(r["finished_at"] - r["started_at"])
        due = r["due"] - MONDAY - DAY if r["due"] != "" else row["arrival_s"] + NO_DEADLINE_S
        assert row["due_s"] == pytest.approx(due)
        assert row["weight"] == wcfg["scenario"]["priorities"][r["priority"]]["weight"]
    # windows of 12 hours: twice as many, none empty
    half = replay_scenarios([path], wcfg, calibrated.calibration, window_hours=12, min_tasks=1)
    assert len(half.scenarios) == 6 and sum(map(len, half.scenarios)) == 87
    assert [s.week_start_s for s in half.scenarios] == [h * 3600.0 for h in range(0, 72, 12)]


def test_replay_command_and_report_section(tmp_path, cfg, calibrated):
    path, _ = _history(tmp_path / "h.csv", days=4)
    out = tmp_path / "replay"
    r = run_cli(
        "--config",
        calibrated.config,
        "replay",
        path,
        "--policies",
        "fifo,atc,wmdd,edd",
        "--out",
        out,
        "--scenarios-out",
        tmp_path / "scen",
    )
    assert r.returncode == 0, r.stderr
    assert "4 tasks without a measured duration were left out" in r.stderr
    summary, windows = read_replay(out)
    assert list(windows["window"]) == [f"replay-2024-06-0{d}" for d in (3, 4, 5, 6)]
    assert len(list((tmp_path / "scen").glob("replay-*.csv"))) == 4
    per = pd.read_csv(out / "per_scenario.csv")
    assert sorted(set(per["scenario_seed"])) == [0, 1, 2, 3]
    lines = replay_section(cfg, (summary, windows))
    assert lines[0] == "## Replayed history"
    assert sum(line.startswith("| ") for line in lines) == 1 + 4  # the header and one row a policy
    assert read_replay(tmp_path / "absent") is None and replay_section(cfg, None) == []
    from sched.data.workload.workload_fit import calibrate_workload
    from sched.report.workload import read_fit

    c = cfg.replace(scenario={"calibration": str(calibrated.calibration)})
    # a fit needs a week of history (issue 23 point 2): 120 tasks over ten days
    long_path, _ = _history(tmp_path / "long.csv", days=10, per_day=12)
    fit = calibrate_workload([long_path], c, calibrated.calibration).data
    with_fit = replay_section(cfg, (summary, windows), fit)
    assert with_fit[2].startswith("The history's fit") and "120 tasks over" in with_fit[2]
    assert read_fit(tmp_path / "absent.json") is None
    # a policy absent from the replay's summary, a folder without windows: still read; bad windows refused
    (out / "windows.csv").write_text("scenario_seed,window\n0,x\n")
    with pytest.raises(ValueError, match="windows.csv"):
        read_replay(out)


def test_replay_scenarios_out_removes_an_earlier_replays_windows_only(tmp_path, calibrated):
    from .test_verdict_files import probe

    path, _ = _history(tmp_path / "h.csv", days=2)
    scen = tmp_path / "scen"
    scen.mkdir()
    for name in ("replay-2024-05-01.csv", "replay-2024-05-01T1200.csv"):  # an earlier replay's
        (scen / name).write_text("old\n")
    for name in ("notes.csv", "replay-2024-05-01.csv.bak", "my-replay-2024-05-01.csv"):  # not ours
        (scen / name).write_text("mine\n")
    code, _, err = probe(
        "--config", calibrated.config, "replay", path, "--policies", "fifo,atc",
        "--out", tmp_path / "out", "--scenarios-out", scen, cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    assert "removed 2 window file(s) of an earlier replay" in err
    assert sorted(p.name for p in scen.iterdir()) == [
        "my-replay-2024-05-01.csv",
        "notes.csv",
        "replay-2024-05-01.csv.bak",
        "replay-2024-06-03.csv",
        "replay-2024-06-04.csv",
    ]
