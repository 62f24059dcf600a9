"""plan on the chunked farm (sched.learn.search.plan_chunks): without a comparison it is its base
rule's chunked loop, chunk for chunk; it deviates where its rollouts show a better job, and only
by the paired test; the same inputs give the same decisions."""

import json

import numpy as np
import pytest

from sched.learn.search import plan_chunks as pc
from sched.sim import chunks

from .random_farms import random_farm


def rule_ends(arrays, cols, speed, rule, k):
    job, _c, _s, end, _m = chunks.simulate(*arrays, rule, speed, k, None, *cols, compiled=True)
    return chunks.job_ends(job, end, len(arrays[0]))


def test_without_a_comparison_plan_is_its_base_rules_chunked_loop():
    rng = np.random.default_rng(61)
    for i in range(40):
        arrays, cols, speed, _free = random_farm(rng)
        rule = ("atc", "wspt", "farm-balanced")[i % 3]
        want = rule_ends(arrays, cols, speed, rule, 1.5)
        for plan in (pc.Settings(1, 8, 2.0, 0), pc.Settings(4, 1, 2.0, 0)):  # one candidate, one sample
            ends, stats = pc.simulate(arrays, cols, speed, 1.5, plan, 0.4, rule)
            assert np.array_equal(ends, want)
            assert stats["planned"] == 0 and stats["deviations"] == 0
            assert stats["decisions"] == chunks.counts(cols[0], cols[1]).sum()


def test_plan_starts_the_job_its_rollouts_show_better_and_only_then():
    # one GPU; WSPT starts the short loose job first and the tight one ends 1 s late
    arrays = (np.zeros(2), np.array([2.0, 1.0]), np.array([2.0, 1.0]), np.ones(2), np.array([2.0, 100.0]))
    cols = (np.array([2, 1]), np.array([1, 0]), np.zeros(2, np.int64), np.zeros(2))
    assert rule_ends(arrays, cols, [1.0], "wspt", 2.0).tolist() == [3.0, 1.0]
    ends, stats = pc.simulate(arrays, cols, [1.0], 2.0, pc.Settings(2, 4, 2.0, 0), 0.0, "wspt")
    assert ends.tolist() == [2.0, 3.0]  # exact futures (sigma 0): every sample says the tight job
    assert stats["deviations"] >= 1
    # where the two orders cost the same, the paired test keeps the base's choice
    loose = (arrays[0], arrays[1], arrays[2], arrays[3], np.array([100.0, 100.0]))
    ends, stats = pc.simulate(loose, cols, [1.0], 2.0, pc.Settings(2, 4, 2.0, 0), 0.0, "wspt")
    assert ends.tolist() == [3.0, 1.0] and stats["deviations"] == 0


def test_the_same_inputs_give_the_same_decisions():
    rng = np.random.default_rng(62)
    arrays, cols, speed, _ = random_farm(rng, max_jobs=30, max_gpus=3)
    plan = pc.Settings(3, 6, 1.0, 5)
    a = pc.simulate(arrays, cols, speed, 2.0, plan, 0.5)
    b = pc.simulate(arrays, cols, speed, 2.0, plan, 0.5)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]


def test_the_candidacy_pays_only_when_the_validation_interval_lies_below_zero():
    import types

    import pandas as pd

    from sched.evaluate.farm import plan_candidacy as pcand
    from sched.evaluate.farm.report import _comparisons

    class Cfg:
        benchmark = {
            "bootstrap_resamples": 500, "bootstrap_seed": 1, "ci_level": 0.95,
            "tie_relative": 1e-9, "tie_absolute_s": 1e-6,
        }  # fmt: skip
        scenario = types.SimpleNamespace(chunks={"plan": {"samples": 6}})

    seeds = range(100, 120)
    base = np.linspace(10.0, 30.0, 20)

    def frame(policy, twt):
        return pd.DataFrame(
            {"scenario_seed": list(seeds), "policy": policy, "total_weighted_tardiness_s": twt}
        )

    sel = frame("atc-tuned", base)
    better = pcand.judge(Cfg, sel, frame("plan", base * 0.9), seeds, {"decisions": 1})
    assert better["pays"] and better["validation"]["ci_hi_pct"] < 0 and better["settings"]["samples"] == 6
    noisy = base * np.where(np.arange(20) % 2, 0.8, 1.25)
    worse = pcand.judge(Cfg, sel, frame("plan", noisy), seeds, {"decisions": 1})
    assert not worse["pays"] and worse["validation"]["ci_lo_pct"] < 0 < worse["validation"]["ci_hi_pct"]
    assert not pcand.not_run(Cfg)["pays"] and not pcand.not_run(Cfg)["run"]
    # judged against the shipped decision: better than tuned ATC is not enough when what ships is better
    both = pd.concat([sel, frame("atc-tuned-cap", base * 0.5)], ignore_index=True)
    capped = pcand.judge(Cfg, both, frame("plan", base * 0.9), seeds, {"decisions": 1}, "atc-tuned-cap")
    assert not capped["pays"] and capped["against"] == "atc-tuned-cap"
    assert capped["validation"]["ci_lo_pct"] > 0
    assert "against atc-tuned-cap (shipped)" in capped["reason"] and better["against"] == "atc-tuned"
    table = pd.DataFrame(columns=["policy", "reference"])
    table.attrs["plan"] = worse
    (line,) = [x for x in _comparisons(table, "atc-tuned") if x.startswith("- plan")]
    assert "20 validation scenarios" in line and "does not join" in line
    # the means beside the percentage (which explodes against a reference near zero)
    v = capped["validation"]
    table.attrs["plan"] = capped
    (line,) = [x for x in _comparisons(table, "atc-tuned-cap") if x.startswith("- plan")]
    assert f"means {v['mean_twt_s'] / 1e3:,.3f} against {v['base_mean_twt_s'] / 1e3:,.3f} k w.s" in line
    for record in (better, worse, capped, pcand.not_run(Cfg)):
        assert pcand.check(json.loads(json.dumps(record)), "p.json", ValueError) == record


@pytest.mark.parametrize(
    "path, value",
    [
        (("run",), "yes"),
        (("reason",), None),
        (("settings", "samples"), 0),
        (("validation", "wins"), 1.5),
        (("validation", "losses"), -1),
        (("validation", "seeds"), [100]),
        (("validation", "diff_pct"), "-3 %"),
        (("validation", "mean_twt_s"), True),
        (("against",), 3),
    ],
)
def test_a_candidacy_record_with_a_field_of_the_wrong_type_is_refused_by_name(path, value):
    from sched.evaluate.farm import plan_candidacy as pcand

    record = {
        "run": True, "pays": False, "base": "atc-tuned", "against": "wmdd", "reason": "r",
        "settings": {"candidates": 4, "samples": 8, "z": 2.0, "seed": 0, "depth": 2},
        "validation": {"seeds": [1001000, 30], "diff_pct": 9.3, "ci_lo_pct": 4.4, "ci_hi_pct": 15.7,
                       "wins": 7, "ties": 0, "losses": 23, "mean_twt_s": 2.0,
                       "base_mean_twt_s": float("nan")},
        "counts": {"decisions": 10, "planned": 5, "deviations": 1},
    }  # fmt: skip
    assert pcand.check(record, "p.json", ValueError) is record
    bad = json.loads(json.dumps(record))
    where = bad
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    with pytest.raises(ValueError, match=rf"p.json: field {'.'.join(path)}: unexpected value"):
        pcand.check(bad, "p.json", ValueError)


def test_the_candidacy_may_run_on_the_first_selection_seeds_only():
    import types

    from sched.evaluate.farm import plan_candidacy as pcand

    cfg = types.SimpleNamespace(
        scenario=types.SimpleNamespace(chunks={"plan": {"scenarios": 12, "depth": 5}})
    )
    assert pcand.seeds(cfg, range(100, 200)) == range(100, 112)
    assert pcand.settings(cfg).depth == 5 and pcand.settings(cfg).samples == pcand.DEFAULTS["samples"]
    cfg.scenario.chunks = {}
    assert pcand.seeds(cfg, range(100, 200)) == range(100, 100 + pcand.SCENARIOS)


def test_the_candidacys_scenarios_side_by_side_give_the_same_table_in_seed_order(monkeypatch):
    import types

    from sched import threads
    from sched.data import model
    from sched.evaluate.farm import plan_candidacy as pcand

    rng = np.random.default_rng(63)
    scs, speeds = [], [1.0, 0.5, 2.0]
    for _ in range(7):
        arrays, cols, _speed, _free = random_farm(rng, max_jobs=20)
        scs.append(types.SimpleNamespace(arrays=arrays, chunks=cols, counted_from_s=0.0))
    cfg = types.SimpleNamespace(
        scenario=types.SimpleNamespace(chunks={"plan": {"samples": 4}}, machines=speeds)
    )
    monkeypatch.setattr(model, "scenario_model", lambda _cfg: types.SimpleNamespace(sigma=0.4))
    keys = list(range(500, 507))
    monkeypatch.setattr(threads, "_allowed", 1)
    one, counts_one = pcand.run(cfg, keys, scs, 1.5)
    monkeypatch.setattr(threads, "_allowed", 3)
    three, counts_three = pcand.run(cfg, keys, scs, 1.5)
    assert one.equals(three) and counts_one == counts_three
    assert one["scenario_seed"].tolist() == keys and counts_one["decisions"] > 0
    # each row is its own scenario's: the planner alone on the fourth gives the fourth row
    ends, _ = pc.simulate(scs[3].arrays, scs[3].chunks, speeds, 1.5, pcand.settings(cfg), 0.4)
    arr = scs[3].arrays
    assert np.isclose(
        three["total_weighted_tardiness_s"].iloc[3], (arr[3] * np.maximum(ends - arr[4], 0)).sum()
    )
