"""Issue 46, point 5: the report opens with what rank() runs in each setting, every cell read from
the run's files (sched/report/shipped.py)."""

import json
import re

import pandas as pd
import pytest

from sched.evaluate.errors import ReportError
from sched.report.shipped import read_setting, runs_text, shipped_row, shipped_section
from tests.serve_helpers import rule_winner
from tests.test_studio import _held

BENCH = {
    "bootstrap_resamples": 500,
    "bootstrap_seed": 3,
    "ci_level": 0.95,
    "tie_relative": 1e-9,
    "tie_absolute_s": 1e-6,
    "scenarios": 40,
}


def _table():
    """40 scenarios: fifo, atc, wmdd (the best rule) and ppo-1; atc-tuned 5 % above wmdd."""
    t = _held(40, 0.9, seed=4)
    tuned = t[t.policy == "wmdd"].copy()
    tuned["policy"] = "atc-tuned"
    tuned["total_weighted_tardiness_s"] *= 1.05
    return pd.concat([t, tuned], ignore_index=True)


def _cell(row, i):
    return [c.strip() for c in row.strip("|").split("|")][i]


def test_a_row_gives_the_verdict_against_atc_tuned_and_the_best_rule_from_the_table():
    t = _table()
    row = shipped_row("main", ({"policy": "ppo-1"}, t), BENCH)
    x = t[t.policy == "ppo-1"].sort_values("scenario_seed")["total_weighted_tardiness_s"].to_numpy()
    for col, ref in ((2, "atc-tuned"), (3, "wmdd")):
        r = t[t.policy == ref].sort_values("scenario_seed")["total_weighted_tardiness_s"].to_numpy()
        want = (x.mean() - r.mean()) / r.mean() * 100
        m = re.fullmatch(
            r"(?:wmdd: )?([+-]\d+\.\d) % \[([+-]\d+\.\d), ([+-]\d+\.\d)\], (\d+)/(\d+)/(\d+)", _cell(row, col)
        )
        assert m, _cell(row, col)
        d, lo, hi = (float(v) for v in m.groups()[:3])
        assert d == pytest.approx(want, abs=0.051) and lo <= d <= hi
        assert [int(v) for v in m.groups()[3:]] == [
            int((x < r).sum()),
            int((x == r).sum()),
            int((x > r).sum()),
        ]
    assert _cell(row, 1) == "ppo-1" and _cell(row, 4) == "not run here"


def test_the_verdict_that_is_a_rule_is_not_compared_with_itself_and_names_its_k():
    row = shipped_row("heavy-tails", ({"policy": "atc-tuned", "atc_k": 4.0}, _table()), BENCH)
    assert _cell(row, 1) == "atc-tuned (k = 4)" and _cell(row, 2) == "— (itself)"
    assert _cell(row, 3).startswith("wmdd: +")  # 5 % above wmdd


def test_plans_candidacy_and_its_decision_time_are_read_from_the_run(tmp_path):
    plan = {"base": "ppo-1", "chosen": False, "setting": "atc-8x20",
            "validation": {"mean_difference_pct": -0.5, "ci95_pct": [-2.0, 1.0]}}  # fmt: skip
    timed = tmp_path / "validation" / "atc-8x20" / "plan.run.json"
    timed.parent.mkdir(parents=True)
    timed.write_text(json.dumps({"decision_ms": {"p50": 0.734, "p99": 2.4}}))
    row = shipped_row("main", ({"policy": "ppo-1", "plan": plan}, _table()), BENCH, tmp_path)
    assert _cell(row, 4) == "-0.5 % [-2.0, +1.0] at atc-8x20 (not shipped)"
    assert _cell(row, 5) == "0.73 / 2.40 ms"
    assert runs_text({"policy": "plan", "plan": {**plan, "chosen": True}}) == "plan on ppo-1 at atc-8x20"
    # the README's copy leaves the run record out: its block is the same bytes from any run
    bare = shipped_row("main", ({"policy": "ppo-1", "plan": plan}, _table()), BENCH, tmp_path, times=False)
    assert bare == row.rsplit(" |", 2)[0] + " |" and "ms" not in bare
    timed.write_text(json.dumps({"decision_ms": {"p50": "fast"}}))
    with pytest.raises(Exception, match="field decision_ms: expected p50 and p99"):
        shipped_row("main", ({"policy": "ppo-1", "plan": plan}, _table()), BENCH, tmp_path)


def test_the_table_has_a_row_a_setting_and_says_which_the_run_did_not_build(tmp_path, cfg):
    d = tmp_path / "load-0.70"
    d.mkdir()
    _table().to_csv(d / "per_scenario.csv", index=False)
    winner = rule_winner("wmdd")
    (d / "winner.json").write_text(json.dumps(winner))
    verdict = read_setting(d)
    assert verdict[0] == winner and len(verdict[1]) == len(_table())
    assert read_setting(tmp_path / "absent") is None
    settings = [({"name": "load-0.70"}, verdict), ({"name": "machines-4", "profile": "full"}, None),
                ({"name": "other"}, None)]  # fmt: skip
    lines = shipped_section(cfg, ({"policy": "ppo-1"}, _table()), settings, None, tmp_path)
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| setting")]
    assert [_cell(r, 0) for r in rows] == ["main", "load-0.70", "machines-4", "other"]
    assert _cell(rows[2], 1) == "in the longer run only (`--config profile=full`)"
    assert _cell(rows[3], 1) == "not built by this run"
    # plan's candidacy under a setting (config plan.elsewhere) is the longer run's by default
    assert _cell(rows[1], 4) == "in the longer run only (`--config profile=full`)"


def test_a_settings_and_the_studios_candidacy_are_read_from_their_folders(tmp_path, cfg):
    plan = {"base": "ppo-2", "chosen": True, "setting": "atc-8x20",
            "validation": {"mean_difference_pct": -3.1, "ci95_pct": [-3.9, -2.4]},
            "validation_days": {"days": 7, "mean_difference_pct": -1.25,
                                "ci95_pct": [-4.0, 1.5]}}  # fmt: skip
    timed = tmp_path / "studio" / "plan" / "validation" / "atc-8x20" / "plan.run.json"
    timed.parent.mkdir(parents=True)
    timed.write_text(json.dumps({"decision_ms": {"p50": 0.4, "p99": 1.5}}))
    t = _table()
    mine = t[t.policy == "ppo-1"].copy()
    mine["policy"] = "plan"
    studio = ({"policy": "plan", "plan": plan}, pd.concat([t, mine], ignore_index=True))
    lines = shipped_section(cfg, ({"policy": "ppo-1"}, t), [], studio, tmp_path / "main", robust_dir=tmp_path)
    (row,) = [line for line in lines if line.startswith("| studio")]
    assert _cell(row, 1) == "plan on ppo-2 at atc-8x20"
    assert _cell(row, 4) == "-3.1 % [-3.9, -2.4] at atc-8x20; 7 days: -1.2 % [-4.0, +1.5] (shipped)"
    assert _cell(row, 5) == "0.40 / 1.50 ms"


def test_a_settings_winner_is_checked_as_rank_checks_it(tmp_path):
    d = tmp_path / "load-0.70"
    d.mkdir()
    _table().to_csv(d / "per_scenario.csv", index=False)
    (d / "winner.json").write_text(json.dumps({**rule_winner("wmdd"), "rule": "nope"}))
    with pytest.raises(ReportError, match=r"winner.json: field rule"):
        read_setting(d)
