"""plan's candidacy (issue 46): the settings of plan.grid, each run on the winner on the validation
seeds that chose it, and the rule fixed before looking that picks one (sched.verdict.candidacy: plan_gate,
choose_setting; sched.learn.search.planner: grid_setting)."""

import numpy as np
import pandas as pd
import pytest

from sched.config import ConfigError, validate_config
from sched.evaluate.errors import BenchmarkError
from sched.learn.search.planner import PlanError, elsewhere_names, grid_names, grid_setting
from sched.verdict import candidacy as G
from sched.verdict.candidacy import plan_gate

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


def test_a_setting_marked_off_runs_in_no_profile_yet_runs_by_name(cfg):
    off = validate_config(
        {"plan": {"grid": [*GRID, {"name": "by-hand", "samples": 2, "profile": "off"}]}}, "test"
    )
    assert grid_names(off) == ["cheap", "dear", "dearest"]
    assert grid_names(off, "default") == ["cheap", "dear"]
    assert grid_setting(off, "by-hand")["samples"] == 2  # `--plan-setting by-hand` still runs it
    # plan.elsewhere may not name it: it would run where the main candidacy never does
    named = validate_config(
        {
            "plan": {
                "grid": [*GRID, {"name": "by-hand", "profile": "off"}],
                "elsewhere": {"grid": ["by-hand"]},
            }
        },
        "test",
    )
    with pytest.raises(ConfigError, match=r"plan.elsewhere.grid: 'by-hand' is not a setting of plan.grid"):
        elsewhere_names(named)
    with pytest.raises(ConfigError, match="profile"):
        validate_config({"plan": {"grid": [{"name": "x", "profile": "never"}]}}, "test")


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


def test_the_robustness_settings_candidacy_names_grid_settings_and_follows_its_profile(cfg):
    # plan.elsewhere (issue 46): the grid settings tried under the robustness settings and the studio
    def where(**kw):
        return validate_config({"plan": {"grid": GRID, "elsewhere": kw}}, "test")

    assert elsewhere_names(where(grid=["dear", "cheap", "dear"]), "full") == ["dear", "cheap"]
    assert elsewhere_names(where(grid=["dear"]), "default") == []  # the longer run's by default
    assert elsewhere_names(where(grid=["dear"], profile="default"), "default") == ["dear"]
    assert elsewhere_names(where(grid=["dear"], profile="off"), "full") == []
    with pytest.raises(ConfigError, match=r"plan.elsewhere.grid: 'other' is not a setting of plan.grid"):
        elsewhere_names(where(grid=["other"]), "full")
    # a setting's own grid (plan.elsewhere.grids), the others the common one
    both = where(grid=["cheap"], grids={"studio": ["cheap", "dear"]})
    assert elsewhere_names(both, "full", "studio") == ["cheap", "dear"]
    assert elsewhere_names(both, "full", "load-0.70") == ["cheap"]
    assert elsewhere_names(both, "full") == ["cheap", "dear"]  # every name any setting tries
    with pytest.raises(ConfigError, match=r"plan.elsewhere.grids.studio: 'other' is not a setting"):
        elsewhere_names(where(grid=["cheap"], grids={"studio": ["other"]}), "full", "load-0.70")
    with pytest.raises(ConfigError, match="profile"):
        where(grid=["dear"], profile="sometimes")


def _days(base_totals, plan_totals):
    days = list(range(len(base_totals)))
    return pd.concat(
        [
            _table("wmdd", days, base_totals),
            _table("plan", days, plan_totals),
            _table("atc", days, base_totals),
        ]
    )


def test_the_studios_validation_days_are_recorded_and_veto_a_plan_worse_there(cfg, complete):
    runs, sel = _runs([("cheap", 0.05)])
    test = pd.concat([_table("wmdd", [1, 2], [10.0, 20.0]), _table("plan", [1, 2], [9.0, 19.0])])
    base = np.array([100.0, 120.0, 90.0, 150.0, 110.0, 130.0, 95.0])
    # better on the days too: shipped, and the days' result recorded
    w = plan_gate(_winner(), runs, sel, test, cfg.benchmark, 0.5, days=_days(base, base * 0.97))
    d = w["plan"]["validation_days"]
    assert w["policy"] == "plan" and d["days"] == 7 and d["mean_difference_pct"] == pytest.approx(-3.0)
    assert d["ci95_pct"][1] < 0
    assert "which lies entirely below zero; on the 7 validation days -3.00 %" in w["reason"]
    assert "], not significantly worse: plan on wmdd is the verdict" in w["reason"]
    # significantly worse on the days: the days veto it, the base stays
    w = plan_gate(_winner(), runs, sel, test, cfg.benchmark, 0.5, days=_days(base, base * 1.04))
    assert (
        w["policy"] == "wmdd" and not w["plan"]["chosen"] and w["plan"]["validation_days"]["ci95_pct"][0] > 0
    )
    assert "], significantly worse: the validation days veto it, wmdd stays" in w["reason"]
    # without plan's rows the days cannot weigh it: the error says how to replay them
    days = _days(base, base)
    with pytest.raises(BenchmarkError, match="validation-day table: no rows for plan; replay the days"):
        plan_gate(_winner(), runs, sel, test, cfg.benchmark, 0.5, days=days[days["policy"] != "plan"])
    # no days (the main setting): the record says so
    assert plan_gate(_winner(), runs, sel, test, cfg.benchmark, 0.5)["plan"]["validation_days"] is None
