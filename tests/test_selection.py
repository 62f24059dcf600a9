"""The verdict is chosen on validation and reported on test (issue 22, point 3).

Per-scenario tables built by hand: the winner follows the selection (validation)
means even when the test means order the policies differently; winner.json's
``selection`` field; the selection seeds disjoint from those that tune ATC's k
and choose the training checkpoints; the plan benchmark's test seeds; the
readers of winner.json with and without ``selection``.
"""

import copy
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from sched.config import ConfigError, seed_range, validate_config
from sched.errors import SchedError
from sched.evaluate.errors import BenchmarkError, ReportError
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS
from sched.evaluate.seeds import (
    benchmark_seeds,
    check_seed_uses,
    check_selection,
    plan_validation_seeds,
    selection_seeds,
    validation_seeds,
)
from sched.ranking.tasks import RankInputError
from sched.ranking.verdict_files import check_winner as _check_winner
from sched.report.inputs import read_winner
from sched.verdict.outputs import write_outputs
from sched.verdict.summary import summarise
from sched.verdict.winner import WINNER_KEYS

from .conftest import run_here

SPECS = {
    "fifo": {"kind": "rule", "rule": "fifo", "atc_k": None, "policy_file": None},
    "atc": {"kind": "rule", "rule": "atc", "atc_k": 2.0, "policy_file": None},
    "wmdd": {"kind": "rule", "rule": "wmdd", "atc_k": None, "policy_file": None},
    "ppo-1": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "p1.pt"},
    "ppo-2": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "p2.pt"},
    "ppo-1-warm": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "w1.pt"},
}
CFG = {"benchmark": {"bootstrap_resamples": 500, "selection_scenarios": 40, "selection_offset": 300}}


def table(means, seeds, noise=0.02, seed=0):
    """A per-scenario table: each policy's total = a common base x its factor x a little noise."""
    rng = np.random.default_rng(seed)
    base = rng.gamma(2.0, 5000.0, len(seeds))
    rows = []
    for p, m in means.items():
        twt = base * m * rng.lognormal(0, noise, len(seeds))
        for s, v in zip(seeds, twt):
            rows.append([s, p, v, 1.0, 2.0, 3.0, 0.5, 10.0, 40])
    return pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS))


@pytest.fixture(scope="module")
def cfg():
    return validate_config(copy.deepcopy(CFG))


def frames(cfg, test_means, sel_means, noise=0.02):
    test = table(test_means, list(benchmark_seeds(cfg))[:60], noise, seed=1)
    sel = table(sel_means, list(selection_seeds(cfg)), noise, seed=2)
    return test, sel


# --------------------------------------------------------------------------- the choice


def test_the_winner_is_the_best_on_validation_even_when_test_orders_differently(cfg):
    # on test, ppo-2 is best (and the warm start better still); on validation ppo-1 is
    test, sel = frames(
        cfg,
        {"fifo": 3.0, "atc": 1.0, "wmdd": 1.05, "ppo-1": 0.95, "ppo-2": 0.85, "ppo-1-warm": 0.80},
        {"fifo": 3.0, "atc": 1.0, "wmdd": 1.05, "ppo-1": 0.88, "ppo-2": 0.97},
    )
    _, on_test = summarise(test, cfg, SPECS)
    assert on_test["policy"] == "ppo-2"  # chosen on test, as before
    _, w = summarise(test, cfg, SPECS, selection=sel)
    assert (w["policy"], w["runner_up"], w["significant"], w["policy_file"]) == (
        "ppo-1",
        "atc",
        True,
        "p1.pt",
    )
    # reported on test: ppo-1 against atc there (about -5 %), not the validation figure (-12 %)
    t = test.pivot(index="scenario_seed", columns="policy", values="total_weighted_tardiness_s")
    want = (t["ppo-1"].mean() - t["atc"].mean()) / t["atc"].mean() * 100
    assert w["mean_difference_pct"] == pytest.approx(want)
    lo, hi = w["ci95_pct"]
    assert lo <= w["mean_difference_pct"] <= hi
    assert "selection (validation) scenarios" in w["reason"] and "On the test scenarios" in w["reason"]
    # the means of every competing policy on the selection seeds, warm starts left out
    s = w["selection"]
    start = cfg["seeds"]["validation"]["start"] + 300
    assert s["on"] == "validation" and s["seeds"] == [start, 40]
    v = sel.groupby("policy")["total_weighted_tardiness_s"].mean()
    assert s["means"] == {p: pytest.approx(v[p]) for p in ("fifo", "atc", "wmdd", "ppo-1", "ppo-2")}
    assert list(s["means"]) == ["fifo", "atc", "wmdd", "ppo-1", "ppo-2"]  # table order
    assert all(type(x) is float for x in s["means"].values())


def per_seed(totals, seeds):
    """A per-scenario table with ``totals[policy][i]`` on ``seeds[i]`` (the other columns fixed)."""
    rows = [
        [s, p, v[i], 1.0, 2.0, 3.0, 0.5, 10.0, 40] for p, v in totals.items() for i, s in enumerate(seeds)
    ]
    return pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS))


def test_without_a_significant_lead_on_validation_the_incumbent_is_kept(cfg):
    # validation: ppo-1 1 % below atc on average, +-30 % from scenario to scenario: not
    # significant; wmdd is the best heuristic on test only, ppo-1 the best policy there
    test, _ = frames(cfg, {"fifo": 3.0, "atc": 1.0, "wmdd": 0.9, "ppo-1": 0.8, "ppo-2": 0.85}, {})
    seeds = list(selection_seeds(cfg))
    totals = {"fifo": [3000.0] * 40, "atc": [1000.0] * 40, "wmdd": [1100.0] * 40, "ppo-2": [1200.0] * 40}
    totals["ppo-1"] = [700.0, 1280.0] * 20
    sel = per_seed(totals, seeds)
    _, w = summarise(test, cfg, SPECS, selection=sel)
    assert (w["policy"], w["runner_up"], w["significant"], w["rule"]) == ("atc", "ppo-1", False, "atc")
    assert "The incumbent, atc, is kept" in w["reason"]
    t = test.pivot(index="scenario_seed", columns="policy", values="total_weighted_tardiness_s")
    want = (t["atc"].mean() - t["ppo-1"].mean()) / t["ppo-1"].mean() * 100
    assert w["mean_difference_pct"] == pytest.approx(want) and want > 0  # test: atc loses to ppo-1
    assert w["selection"]["means"]["ppo-1"] == pytest.approx(990.0)


def test_a_rule_replaces_the_incumbent_only_when_significantly_better_on_validation(cfg):
    # validation: edd 1 % below atc-tuned on average, +-30 % from scenario to scenario (a tie);
    # on test edd is 10 % below it on every scenario: the choice is still validation's
    specs = dict(SPECS, edd=dict(SPECS["wmdd"], rule="edd"), **{"atc-tuned": dict(SPECS["atc"], atc_k=1.0)})
    means = {"fifo": 3.0, "atc": 1.05, "atc-tuned": 1.0, "edd": 0.9, "ppo-1": 1.02}
    test, _ = frames(cfg, means, {})
    seeds = list(selection_seeds(cfg))
    totals = {"fifo": [3000.0] * 40, "atc": [1050.0] * 40, "atc-tuned": [1000.0] * 40, "ppo-1": [1020.0] * 40}
    totals["edd"] = [700.0, 1280.0] * 20
    sel = per_seed(totals, seeds)
    _, w = summarise(test, cfg, specs, selection=sel)
    assert (w["policy"], w["runner_up"], w["significant"], w["atc_k"]) == ("atc-tuned", "edd", False, 1.0)
    assert w["reason"].startswith(
        "The incumbent, atc-tuned, is kept: no policy is significantly better than it on the selection "
        "(validation) scenarios."
    )
    assert "edd against atc-tuned: -1.0" in w["reason"]
    # edd 1 % below atc-tuned on every validation scenario: significant, edd replaces it
    totals["edd"] = [990.0] * 40
    _, w = summarise(test, cfg, specs, selection=per_seed(totals, seeds))
    assert (w["policy"], w["runner_up"], w["significant"], w["rule"]) == ("edd", "atc-tuned", True, "edd")


def test_the_selection_table_must_hold_every_policy_that_may_win(cfg):
    test, sel = frames(cfg, {"fifo": 3.0, "atc": 1.0, "ppo-1": 0.9}, {"fifo": 3.0, "atc": 1.0})
    with pytest.raises(BenchmarkError, match="selection table: no rows for policy ppo-1"):
        summarise(test, cfg, SPECS, selection=sel)
    test, sel = frames(cfg, {"fifo": 3.0, "atc": 1.0}, {"fifo": 3.0, "atc": 1.0, "ppo-1": 0.9})
    with pytest.raises(BenchmarkError, match="policy ppo-1 is not in the test table"):
        summarise(test, cfg, SPECS, selection=sel)


def test_winner_json_has_selection_with_exactly_its_keys(cfg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the winner's policy file is hashed into winner.json
    for name in ("p1.pt", "p2.pt"):
        (tmp_path / name).write_bytes(name.encode())
    test, sel = frames(cfg, {"fifo": 3.0, "atc": 1.0, "ppo-1": 0.9}, {"fifo": 3.0, "atc": 1.0, "ppo-1": 0.9})
    write_outputs(tmp_path, test, cfg, SPECS, full=True, selection=sel)
    w = json.loads((tmp_path / "winner.json").read_text())
    assert tuple(w) == (*WINNER_KEYS, "selection")
    assert tuple(w["selection"]) == ("on", "seeds", "means")
    assert set(w["selection"]["means"]) == {"fifo", "atc", "ppo-1"}
    assert read_winner(tmp_path / "winner.json") == w
    # without a selection table: the winner is chosen on test, with no selection field
    write_outputs(tmp_path / "old", test, cfg, SPECS, full=True)
    old = json.loads((tmp_path / "old" / "winner.json").read_text())
    assert tuple(old) == WINNER_KEYS
    assert read_winner(tmp_path / "old" / "winner.json") == old


# --------------------------------------------------------------------------- seeds


def test_selection_seeds_lie_after_tuning_and_checkpointing_by_default():
    c = validate_config({})
    sel, tune = selection_seeds(c), validation_seeds(c)
    checkpoints = seed_range(c, "validation")[: c["train"]["validation_scenarios"]]
    assert len(sel) == 1000 and sel.start == c["seeds"]["validation"]["start"] + 1000
    assert set(sel) <= set(seed_range(c, "validation"))
    assert not set(sel) & set(tune) and not set(sel) & set(checkpoints)
    assert not set(sel) & set(benchmark_seeds(c))
    check_seed_uses(c)


@pytest.mark.parametrize(
    "cfg, field",
    [
        (
            {"benchmark": {"validation_scenarios": 100, "selection_offset": 50}},
            "benchmark.validation_scenarios",
        ),
        (
            {"train": {"validation_scenarios": 300}, "benchmark": {"selection_offset": 200}},
            "train.validation_scenarios",
        ),
        (
            {"robustness": {"settings": [{"name": "x", "train": {"validation_scenarios": 2000}}]}},
            r"robustness.settings\[0\].train.validation_scenarios",
        ),
    ],
)
def test_selection_seeds_overlapping_tuning_or_checkpoints_are_refused(cfg, field):
    c = validate_config(cfg)
    with pytest.raises(ConfigError, match=rf"benchmark.selection_offset: \d+ is below {field}") as e:
        check_selection(c)
    assert isinstance(e.value, SchedError)


def test_selection_seeds_must_fit_in_the_validation_range():
    c = validate_config(
        {"seeds": {"validation": {"start": 1000000, "count": 1500}}, "benchmark": {"selection_offset": 1000}}
    )
    with pytest.raises(
        ConfigError, match="benchmark.selection_scenarios: 1000 seeds .* end past the 1500 seeds"
    ):
        selection_seeds(c)


def test_plans_candidacy_runs_on_the_first_selection_seeds_those_that_chose_its_base():
    c = validate_config({})
    seeds = plan_validation_seeds(c)
    assert seeds == selection_seeds(c)[: c["plan"]["validation_scenarios"]]
    assert len(seeds) == 300 and seeds[0] == c["seeds"]["validation"]["start"] + 1000
    c = validate_config({"benchmark": {"selection_scenarios": 200}, "plan": {"validation_scenarios": 300}})
    with pytest.raises(
        ConfigError, match=r"plan.validation_scenarios: 300 is more than benchmark.selection_scenarios"
    ):
        plan_validation_seeds(c)
    with pytest.raises(ConfigError, match="plan.validation_scenarios"):
        check_seed_uses(c)


# --------------------------------------------------------------------------- readers


def test_rank_reads_winner_json_with_and_without_selection(tmp_path):
    base = {"policy": "atc", "rule": "atc", "atc_k": 2.0, "policy_file": None}
    plan, _ = _check_winner(base, "w.json")
    assert plan.name == "atc"
    good = dict(base, selection={"on": "validation", "seeds": [1001000, 1000], "means": {"atc": 1.0}})
    assert _check_winner(good, "w.json")[0] == plan
    for bad, msg in [
        ({"on": "validation", "seeds": [1, 2]}, "field selection: keys on, seeds; expected exactly"),
        (
            {"on": "validation", "seeds": "1-2", "means": {}},
            r"field selection.seeds: expected \[START, COUNT\]",
        ),
    ]:
        with pytest.raises(RankInputError, match=msg):
            _check_winner(dict(base, selection=bad), "w.json")


def test_the_report_refuses_a_malformed_selection(tmp_path):
    w = {k: None for k in WINNER_KEYS}
    for bad, msg in [
        ({"on": "test", "seeds": [1, 2], "means": {"atc": 1.0}}, 'selection.on: expected "validation"'),
        ({"on": "validation", "seeds": [1, 0], "means": {"atc": 1.0}}, "selection.seeds"),
        ({"on": "validation", "seeds": [1, 2], "means": {"atc": "x"}}, "selection.means.atc"),
    ]:
        p = tmp_path / "winner.json"
        p.write_text(json.dumps({**w, "selection": bad}))
        with pytest.raises(ReportError, match=msg):
            read_winner(p)


# --------------------------------------------------------------------------- command line


def test_benchmark_on_the_selection_seeds_then_gather_chooses_on_them(tmp_path):
    """`sched benchmark --split selection`, then `sched gather --selection`, as the workflow runs them."""
    conf = tmp_path / "config.yaml"
    small = {
        "scenario": {"tasks": 30},
        "train": {"validation_scenarios": 2},
        "benchmark": {
            "scenarios": 4,
            "validation_scenarios": 2,
            "selection_scenarios": 5,
            "selection_offset": 2,
            "shards": 1,
            "bootstrap_resamples": 200,
            "clairvoyant": {"scenarios": 1},
        },
    }
    conf.write_text(yaml.safe_dump(small))
    pols = "fifo,atc,wmdd"
    r = run_here(
        "--config", conf, "benchmark", "--split", "selection", "--policies", pols, "--out", tmp_path / "sel"
    )
    assert r.returncode == 0, r.stderr
    sel = pd.read_csv(tmp_path / "sel" / "per_scenario.csv")
    assert sorted(set(sel["scenario_seed"])) == list(range(1000002, 1000007))
    assert not (tmp_path / "sel" / "winner.json").exists()
    # a seed outside the selection seeds is refused, naming them
    r = run_here(
        "--config", conf, "benchmark", "--split", "selection", "--policies", pols, "--seeds", "1000000"
    )
    assert r.returncode == 2 and "is not one of the selection seeds 1000002-1000006" in r.stderr
    r = run_here(
        "--config",
        conf,
        "benchmark",
        "--policies",
        pols,
        "--seeds",
        "2000000-2000003",
        "--out",
        tmp_path / "t",
    )
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    r = run_here(
        "--config", conf, "gather", tmp_path / "t" / "per_scenario.csv",
        "--selection", tmp_path / "sel" / "per_scenario.csv", "--out", out,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    w = json.loads((out / "winner.json").read_text())
    assert w["selection"]["seeds"] == [1000002, 5] and set(w["selection"]["means"]) == {"fifo", "atc", "wmdd"}
    means = sel.groupby("policy")["total_weighted_tardiness_s"].mean()
    assert w["selection"]["means"] == {p: pytest.approx(means[p]) for p in means.index}


def test_the_reports_conclusion_says_how_the_winner_was_chosen(cfg):
    from sched import setting
    from sched.report.conclusion import conclusion_section

    test, sel = frames(
        cfg,
        {"fifo": 3.0, "atc": 1.0, "wmdd": 1.05, "ppo-1": 0.95, "ppo-2": 0.85},
        {"fifo": 3.0, "atc": 1.0, "wmdd": 1.05, "ppo-1": 0.88, "ppo-2": 0.97},
    )
    summary, w = summarise(test, cfg, SPECS, selection=sel)
    w = {**w, "setting": setting.of_config(cfg)}
    text = "\n".join(conclusion_section(cfg, {"summary": summary, "winner": w}))
    start = cfg["seeds"]["validation"]["start"] + 300
    assert (
        f"The winner is chosen on 40 validation scenarios (seeds {start}-{start + 39} of seeds.validation"
        in text
    )
    assert "The test scenarios below only confirm the choice" in text
    assert "**The winner is ppo-1**" in text and "on the test scenarios its mean" in text
