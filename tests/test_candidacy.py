"""plan's candidacy (issue 46): the settings of plan.grid, each run on the winner on the validation
seeds that chose it, and the rule fixed before looking that picks one (sched.evaluate.gate: plan_gate,
choose_setting; sched.learn.search.planner: grid_setting)."""

import numpy as np
import pandas as pd
import pytest

from sched.config import ConfigError, validate_config
from sched.evaluate import gate as G
from sched.evaluate.errors import BenchmarkError
from sched.evaluate.gate import plan_gate
from sched.learn.search.planner import PlanError, grid_names, grid_setting

GRID = [
    {"name": "cheap", "rollout": "atc-tuned", "samples": 8, "horizon": 20},
    {"name": "dear", "rollout": "atc-tuned", "samples": 32, "horizon": 50},
    {"name": "dearest", "samples": 8, "horizon": 50, "depth": 20, "profile": "full"},
]


@pytest.fixture(scope="module")
def cfg():
    return validate_config({"plan": {"grid": GRID, "samples": 4, "horizon": 10}}, "test")


def _table(policy, seeds, totals):
    return pd.DataFrame({"scenario_seed": seeds, "policy": policy, "total_weighted_tardiness_s": totals})


def _result(name, mean, se):
    return {"setting": name, "mean_difference_pct": mean, "se_pct": se}


def test_the_rule_picks_the_cheapest_setting_within_half_a_standard_error_of_the_best():
    # the best (dear, -3.0 +- 1.0) admits any mean <= -2.5: cheap (-2.6) is first and within
    rs = [_result("cheap", -2.6, 0.8), _result("dear", -3.0, 1.0), _result("dearest", -2.0, 0.5)]
    assert G.choose_setting(rs, 0.5) == 0
    # with a tighter rule (0.2 se: <= -2.8) cheap is out, dear itself is the first within
    assert G.choose_setting(rs, 0.2) == 1
    # nothing measurable (no tardiness at all): no pick
    assert G.choose_setting([_result("cheap", float("nan"), float("nan"))], 0.5) is None
    # a NaN setting is skipped, and a NaN standard error admits the best alone
    assert G.choose_setting([_result("a", float("nan"), 1.0), _result("b", -1.0, float("nan"))], 0.5) == 1


def test_a_setting_overrides_plans_own_settings_and_unknown_names_are_refused(cfg):
    st = grid_setting(cfg, "dear")
    assert (st["rollout"], st["samples"], st["horizon"], st["depth"]) == ("atc-tuned", 32, 50, None)
    assert st["candidates"] == cfg.plan["candidates"] and "grid" not in st and "choice_se" not in st
    assert grid_setting(cfg, "dearest")["rollout"] == cfg.plan["rollout"]  # not overridden: plan's own
    with pytest.raises(PlanError, match=r"'other' is not a setting of plan.grid \(one of cheap, dear"):
        grid_setting(cfg, "other")


def test_the_default_profile_leaves_out_the_longer_runs_settings_and_names_are_unique(cfg):
    assert grid_names(cfg) == ["cheap", "dear", "dearest"]
    assert grid_names(cfg, "default") == ["cheap", "dear"]
    twice = validate_config({"plan": {"grid": [GRID[0], GRID[0]]}}, "test")
    with pytest.raises(ConfigError, match="two settings are named 'cheap'"):
        grid_names(twice)


def _runs(gains, n=60, base="wmdd"):
    rng = np.random.default_rng(1)
    seeds = np.arange(1000, 1000 + n)
    ref = rng.uniform(100, 200, n)
    sel = pd.concat([_table("atc", seeds, ref * 1.1), _table(base, seeds, ref)])
    runs = []
    for name, gain in gains:
        plan = ref * (1 - gain) + rng.normal(0, 2, n)
        runs.append(
            (_table("plan", seeds, plan), {"base": base, "setting": name, "settings": {"samples": 8}})
        )
    return runs, sel


def _winner():
    return {"policy": "wmdd", "rule": "wmdd", "atc_k": None, "policy_file": None, "reason": "chosen."}


@pytest.fixture
def complete(monkeypatch):
    """The tables here hold the columns the gate reads; check_complete reads more."""
    monkeypatch.setattr(G, "check_complete", lambda *a, **k: None)


def test_the_gate_records_every_setting_and_ships_the_pick_only_below_zero(cfg, complete):
    runs, sel = _runs([("cheap", 0.002), ("dear", 0.05)])
    test = pd.concat(
        [_table("wmdd", [1, 2, 3], [10.0, 20.0, 30.0]), _table("plan", [1, 2, 3], [9.0, 19.0, 29.0])]
    )
    w = plan_gate(_winner(), runs, sel, test, cfg.benchmark, 0.5)
    rec = w["plan"]
    assert [r["setting"] for r in rec["candidacy"]["settings"]] == ["cheap", "dear"]
    # cheap (about -0.2 %) is far from dear (about -5 %): dear is picked, its interval below zero
    assert rec["candidacy"]["picked"] == "dear" and rec["setting"] == "dear" and rec["chosen"]
    assert w["policy"] == "plan" and rec["validation"]["ci95_pct"][1] < 0
    assert rec["test"]["scenarios"] == 3 and "among 2" in w["reason"]
    for r in rec["candidacy"]["settings"]:
        assert r["seeds"] == [1000, 60] and sum(r["wins_ties_losses"]) == 60 and r["se_pct"] > 0
    # a pick whose interval does not lie below zero is recorded and not shipped
    runs, sel = _runs([("cheap", -0.01), ("dear", -0.02)])
    w = plan_gate(_winner(), runs, sel, test, cfg.benchmark, 0.5)
    assert w["policy"] == "wmdd" and not w["plan"]["chosen"] and w["plan"]["candidacy"]["picked"] == "cheap"
    assert "wmdd stays" in w["reason"]


def test_the_gate_refuses_settings_run_on_other_seeds_or_another_base(cfg, complete):
    runs, sel = _runs([("cheap", 0.05), ("dear", 0.05)])
    table, run = runs[1]
    shorter = (table[table["scenario_seed"] < 1050], run)
    with pytest.raises(BenchmarkError, match="'dear'.*run every setting alike"):
        plan_gate(_winner(), [runs[0], shorter], sel, sel, cfg.benchmark, 0.5)
    with pytest.raises(BenchmarkError, match="plan ran on 'atc'"):
        plan_gate(_winner(), [runs[0], (table, {**run, "base": "atc"})], sel, sel, cfg.benchmark, 0.5)
