"""Issue 35: the studio's verdict chosen on real days. Three periods in time, the validation
days weighed with the generated validation scenarios, the held-out days that only confirm,
the tuned k guarded on the validation days, and the fidelity check of the generator."""

import copy
import dataclasses
import json
import re

import numpy as np
import pandas as pd
import pytest

from sched.commands.fidelity import rules_on
from sched.data.scenario import Scenario, validate_frame
from sched.data.workload import fidelity as fid
from sched.data.workload import fidelity_text
from sched.data.workload.workload import draw_arrivals
from sched.evaluate.tuning import DAYS_GUARD, choose_k
from sched.verdict.held_out import held_out_gate
from sched.verdict.validation_days import WEIGHING, validation_days_gate
from tests.test_studio import BENCH, SPECS, _held, _winner

DAY = 86400.0


def _record():
    """A winner chosen on generated validation scenarios, with its selection record."""
    return _winner()


# ------------------------------------------------------------------ the validation-day gate


def test_validation_days_keep_a_winner_not_significantly_worse_there():
    days = _held(7, 0.97)
    w = _record()
    rec = validation_days_gate(w, days, SPECS, BENCH, lean=False, period=["2024-06-17", "2024-06-23"])
    assert w["policy"] == "ppo-1" and rec["kept"] is True and rec["best_rule"] == "wmdd"
    assert rec["days"] == 7 and rec["period"] == ["2024-06-17", "2024-06-23"]
    assert rec["mean_difference_pct"] == pytest.approx(-3.0) and rec["weighing"] == WEIGHING
    assert set(rec["means"]) == {"fifo", "atc", "wmdd", "ppo-1"} and rec["leaned_on_days"] is False


def test_validation_days_veto_a_winner_significantly_worse_there():
    w = _record()
    rec = validation_days_gate(w, _held(7, 1.2), SPECS, BENCH)
    assert rec["kept"] is False and w["policy"] == "wmdd" and w["rule"] == "wmdd"
    assert w["policy_file"] is None and w["runner_up"] == "ppo-1"
    assert "7 validation days" in w["reason"] and "significantly worse there" in w["reason"]
    assert rec["ci95_pct"][0] > 0


def _scaled(table, policy, factors):
    """``table`` with ``policy``'s totals multiplied by ``factors`` (one a day, in day order)."""
    t = table.copy()
    t.loc[t.policy == policy, "total_weighted_tardiness_s"] *= factors
    return t


#: Noise that leaves a mean difference near its factor but its interval over 7 days wide.
NOISE = [1.3, 0.8, 1.1, 0.9, 1.05, 0.95, 1.0]


def test_few_noisy_days_do_not_flip_a_verdict_when_the_generator_disagrees():
    # wmdd is the best rule on the days; ppo-1 (chosen on the scenarios) is worse than the
    # incumbent atc there on the mean, not significantly: neither has the evidence (no
    # scenario table), so the incumbent stays, whatever the days' means say
    noisy = _scaled(_held(7, 1.0), "ppo-1", [1.0 + 0.2 * (f - 1.0) + 0.12 for f in NOISE])
    noisy = _scaled(noisy, "wmdd", [1.0 + 0.5 * (f - 1.0) + 0.05 for f in NOISE])
    w = _record()
    rec = validation_days_gate(w, noisy, SPECS, BENCH, lean=True)
    assert rec["leaned_on_days"] is True and rec["incumbent"] == "atc" and rec["best_rule"] == "wmdd"
    assert [c["policy"] for c in rec["challengers"]] == ["ppo-1", "wmdd"]
    assert not any(c["replaces"] for c in rec["challengers"])
    assert w["policy"] == "atc" and rec["kept"] is False and "no challenger has the evidence" in w["reason"]


def test_a_challenger_significantly_better_on_the_days_replaces_the_incumbent():
    w = _record()  # ppo-1 at 0.9 of wmdd, atc at 1.1: significantly better than atc on every day
    rec = validation_days_gate(w, _held(7, 0.9), SPECS, BENCH, lean=True)
    assert w["policy"] == "ppo-1" and rec["kept"] is True
    first = rec["challengers"][0]
    assert first["replaces"] and first["evidence"] == "significantly better on the validation days"
    assert first["days_pct"][2] < 0 and "against the incumbent atc" in w["reason"]


def test_pooled_evidence_the_scenarios_significant_and_the_days_not_worse_on_the_mean():
    # on the days ppo-1 is 2 % better than atc on the mean, with an interval across zero
    days = _scaled(_held(7, 1.1), "ppo-1", [0.98 * (1.0 + 0.5 * (f - 1.0)) for f in NOISE])
    scenarios = _held(40, 1.0, seed=3)  # generated validation scenarios: ppo-1 10 % below atc
    w = _record()
    rec = validation_days_gate(w, days, SPECS, BENCH, lean=True, selection=scenarios)
    first = rec["challengers"][0]
    assert first["days_pct"][1] < 0 < first["days_pct"][2] and first["days_pct"][0] < 0
    assert first["scenarios_pct"][2] < 0 and first["replaces"]
    assert "not worse on the days' mean" in first["evidence"] and w["policy"] == "ppo-1"
    # the same scenarios with ppo-1 worse on the days' mean: not enough
    worse = _scaled(days, "ppo-1", 1.05)
    w2 = _record()
    rec2 = validation_days_gate(w2, worse, SPECS, BENCH, lean=True, selection=scenarios)
    assert not rec2["challengers"][0]["replaces"] and w2["policy"] in ("atc", "wmdd")


def test_the_days_best_rule_takes_over_when_only_it_has_the_evidence():
    days = _scaled(_held(7, 1.0), "ppo-1", [1.2 * f for f in NOISE])  # ppo-1: 20 % worse, noisy
    w = _record()
    rec = validation_days_gate(w, days, SPECS, BENCH, lean=True)
    chall = {c["policy"]: c for c in rec["challengers"]}
    assert not chall["ppo-1"]["replaces"] and chall["wmdd"]["replaces"]  # wmdd: 9 % below atc every day
    assert w["policy"] == "wmdd" and w["rule"] == "wmdd" and w["runner_up"] == "ppo-1"


def test_the_validation_days_need_the_winner_replayed():
    days = _held(7, 1.0)
    with pytest.raises(Exception, match="no rows for ppo-1.*sched replay --validation"):
        validation_days_gate(_record(), days[days.policy != "ppo-1"], SPECS, BENCH)


# ------------------------------------------------------------------ the held-out days only confirm


def test_a_confirmation_that_fails_falls_back_to_the_incumbent():
    # ppo-1 significantly worse than the incumbent atc on the held-out days: not confirmed, and
    # the verdict becomes atc (rank() follows it), whatever the validation days' best rule was
    w = held_out_gate(_record(), _held(7, 1.3), SPECS, BENCH, best_rule="ppo-1")
    h = w["held_out"]
    assert h["confirmed"] is False and h["deployed"] is False and h["incumbent"] == "atc"
    assert h["chosen"] == "ppo-1" and w["policy"] == "atc" and w["rule"] == "atc" and w["atc_k"] == 2.0
    assert w["policy_file"] is None and w["runner_up"] == "ppo-1"
    assert h["failed"][0] == "significantly worse than the incumbent atc"
    assert "significantly worse than wmdd, the held-out days' best rule" in h["failed"]
    assert "rank() follows the incumbent, atc" in w["reason"]


def test_the_confirmation_is_not_against_the_chosen_rule_itself():
    # issue 50: the verdict wmdd, the validation days' best rule too, was confirmed by
    # construction against itself; it is now held to the incumbent and can fail
    w = _record()
    w.update(policy="wmdd", rule="wmdd", policy_file=None)
    held = _scaled(_held(7, 1.0), "wmdd", 1.25)  # wmdd 1.25 against atc 1.1: 14 % worse
    held_out_gate(w, held, SPECS, BENCH, best_rule="wmdd")
    h = w["held_out"]
    assert h["incumbent"] == "atc" and h["mean_difference_pct"] == pytest.approx(100 * (1.25 / 1.1 - 1))
    assert h["confirmed"] is False and w["policy"] == "atc"


def test_held_out_confirmation_when_not_worse():
    w = held_out_gate(_record(), _held(7, 1.0), SPECS, BENCH, best_rule="atc")
    h = w["held_out"]
    assert h["confirmed"] is True and h["deployed"] is True and h["failed"] == []
    assert h["mean_difference_pct"] == pytest.approx(100 * (1.0 / 1.1 - 1)) and "confirmed." in w["reason"]
    # the held-out days' own best rule is a reference too (ppo-1 ties it here), never chosen on
    assert h["best_rule_there"] == "wmdd" and w["policy"] == "ppo-1"


def test_worse_than_the_incumbent_by_more_than_the_margin_is_not_confirmed():
    held = _scaled(_held(7, 1.1), "wmdd", 1.2)  # atc the best rule there too
    held = _scaled(held, "ppo-1", [1.04 * (1.0 + 0.5 * (f - 1.0)) for f in NOISE])
    w = held_out_gate(_record(), held, SPECS, BENCH, best_rule="atc", margin=2.0)
    h = w["held_out"]
    assert h["ci95_pct"][0] < 0 < h["mean_difference_pct"] and h["mean_difference_pct"] > 2.0
    assert h["failed"] == ["worse than the incumbent atc by more than the margin (2 %)"]
    assert w["policy"] == "atc"
    wide = held_out_gate(_record(), held, SPECS, BENCH, best_rule="atc", margin=10.0)
    assert wide["held_out"]["confirmed"] is True and wide["policy"] == "ppo-1"


def test_worse_than_the_incumbent_on_both_test_scenarios_and_held_out_days_is_not_confirmed():
    held = _scaled(_held(7, 1.1), "wmdd", 1.2)  # atc the best rule there too
    held = _scaled(held, "ppo-1", [1.01 * (1.0 + 0.5 * (f - 1.0)) for f in NOISE])
    test_better, test_worse = _held(30, 1.0, seed=5), _held(30, 1.12, seed=5)
    ok = held_out_gate(_record(), held, SPECS, BENCH, best_rule="atc", test=test_better, margin=5.0)
    assert ok["held_out"]["confirmed"] is True and ok["held_out"]["test_against_incumbent_pct"] < 0
    w = held_out_gate(_record(), held, SPECS, BENCH, best_rule="atc", test=test_worse, margin=5.0)
    h = w["held_out"]
    assert h["test_against_incumbent_pct"] == pytest.approx(100 * (1.12 / 1.1 - 1))
    assert h["failed"][0].startswith("worse than the incumbent atc on both the generated test scenarios")
    assert h["confirmed"] is False and w["policy"] == "atc"


def test_without_validation_days_the_held_out_gate_still_picks_its_own_best_rule():
    w = held_out_gate(_record(), _held(7, 1.3), SPECS, BENCH)
    assert w["policy"] == "wmdd" and w["held_out"]["best_rule_on"] == "held-out days"
    assert w["held_out"]["deployed"] is False and "no validation days" in w["reason"]


# ------------------------------------------------------------------ the tuned k's guard


@pytest.mark.parametrize(
    "generated, real, best, lean, want",
    [
        # the generated k (index 2) is 3 % worse than the default (ref 100) on the days: kept
        ([30, 20, 10], [100, 100, 103], 2, False, 2),
        # 10 % worse: the best generated k within the guard (index 1) instead
        ([30, 20, 10], [100, 104, 110], 2, False, 1),
        # the generator disagrees: the lowest on the days
        ([30, 20, 10], [99, 104, 110], 2, True, 0),
    ],
)
def test_the_tuned_k_is_at_most_5_percent_worse_than_the_default_on_the_days(
    generated, real, best, lean, want
):
    chosen, why = choose_k(generated, real, 100.0, best, lean)
    assert chosen == want
    assert lean or real[chosen] <= DAYS_GUARD * 100.0
    assert (why is None) == (not lean and chosen != best)


def test_a_k_beyond_the_guard_is_kept_only_when_no_k_is_within_it_and_says_so():
    chosen, why = choose_k([3, 2, 1], [120, 130, 140], 100.0, 2)
    assert chosen == 2 and "no k of the grid within" in why


# ------------------------------------------------------------------ fidelity


def _workload(rate=30.0):
    return {"arrivals": {"rate_per_hour": [rate] * 168}}


def test_arrivals_start_at_a_given_time_of_week_and_keep_the_rest_of_the_draws():
    w = {"arrivals": {"rate_per_hour": list(np.linspace(1, 60, 168))}}
    a, how_a, start_a = draw_arrivals(w, np.random.default_rng(5), 200)
    b, how_b, start_b = draw_arrivals(w, np.random.default_rng(5), 200, start_hour=30.0)
    assert start_b == 30.0 and start_a != 30.0
    assert how_b[0] == 30 + int(b[0] // 3600)  # hours counted from Monday 00:00 + 30 h
    c, _, _ = draw_arrivals(w, np.random.default_rng(5), 200, start_hour=30.0)
    assert np.array_equal(b, c)


def _sample(arrival, duration, due, weight=None, counted_from=0.0, days=1.0):
    n = len(arrival)
    frame = pd.DataFrame(
        {
            "id": [str(i) for i in range(n)],
            "kind": "image",
            "arrival_s": arrival,
            "duration_s": duration,
            "weight": np.ones(n) if weight is None else weight,
            "due_s": due,
            "estimate_s": duration,
        }
    )
    return fid.Sample(Scenario("s", validate_frame(frame), 0.0), counted_from, days)


def _reference_metrics(sample, start, end):
    """Queue length and backlog at each hour mark, one task at a time (plain Python)."""
    arr, dur, _est, _w, _due = sample.scenario.arrays
    queue, backlog = [], []
    for h in range(int(round(sample.days * 24))):
        t = sample.counted_from + 3600.0 * h
        q = sum(1 for i in range(len(arr)) if arr[i] <= t < start[i])
        b = sum(end[i] - max(start[i], t) for i in range(len(arr)) if arr[i] <= t < end[i])
        queue.append(q)
        backlog.append(b / 3600.0)
    return np.array(queue), np.array(backlog)


def test_sample_metrics_match_a_plain_reference():
    rng = np.random.default_rng(3)
    n = 300
    arr = np.sort(rng.uniform(0, 2 * DAY, n))
    dur = rng.uniform(100, 900, n)
    due = arr + rng.uniform(0, 3000, n)
    w = rng.choice([1.0, 2.0, 4.0], n)
    sample = _sample(arr, dur, due, w, counted_from=DAY, days=1.0)
    from sched.sim.core import simulate

    sched = {r: simulate(*sample.scenario.arrays, r, machines=1, k=2.0)[:2] for r in fid.RULES}
    m, queue = fid.sample_metrics(sample, sched)
    q_ref, b_ref = _reference_metrics(sample, *sched["wmdd"])
    assert np.array_equal(queue, q_ref)
    assert m[("backlog_gpu_hours_mean", "wmdd")] == pytest.approx(b_ref.mean())
    assert m[("backlog_gpu_hours_at_midnight", "wmdd")] == pytest.approx(b_ref[0])
    counted = arr >= DAY
    assert m[("arrivals_per_hour", "")] == pytest.approx(counted.sum() / 24)
    end = sched["edd"][1]
    twt = np.sum(w[counted] * np.maximum(0, end[counted] - due[counted]))
    assert m[("weighted_tardiness_k_per_day", "edd")] == pytest.approx(twt / 1000.0)


def test_a_generator_that_is_the_real_days_agrees_and_one_that_reverses_them_does_not():
    rng = np.random.default_rng(4)
    samples = []
    for _ in range(3):
        arr = np.sort(rng.uniform(0, 2 * DAY, 400))
        dur = rng.lognormal(5.5, 0.8, 400)
        samples.append(
            _sample(arr, dur, arr + rng.uniform(0, 2000, 400), rng.choice([1.0, 8.0], 400), DAY, 1.0)
        )
    table, record, queues = fid.check(samples[0], [samples[0]], [samples[0]], rules_on(1, 2.0))
    assert (
        record["tau"] == pytest.approx({"streams": 1.0, "scenarios": 1.0}) and record["lean_on_days"] is False
    )
    assert np.allclose(table["real"], table["streams"]) and set(fid.TABLE_COLUMNS) == set(table.columns)
    assert len(queues["real"][0]) == 24
    # a threshold no order can reach: the verdict leans on the days, and the record says so
    _t, rec, _q = fid.check(samples[0], samples[1:], samples[1:], rules_on(1, 2.0), threshold=1.01)
    assert rec["lean_on_days"] is True and "below 1.01" in fidelity_text.verdict_text(rec)
    assert fid.kendall_tau(np.arange(6.0), -np.arange(6.0)) == pytest.approx(-1.0)
    # a generator that is the real days misses nothing, and the sentence says nothing
    assert record["misses"] == {"against": "scenarios", "levels": {}, "discordant": []}
    assert fidelity_text.misses_text(record) == ""


def _fidelity_table(real, generated, levels_real, levels_generated):
    """A fidelity table: the rules' ratios to wmdd (dicts by rule) and the levels (by LEVELS)."""
    rows = [
        {"metric": m, "rule": r, "real": a, "streams": b, "scenarios": b}
        for (m, r), a, b in zip(fid.LEVELS, levels_real, levels_generated)
    ]
    rows += [
        {
            "metric": "ratio_to_wmdd",
            "rule": r,
            "real": real[r],
            "streams": generated[r],
            "scenarios": generated[r],
        }
        for r in fid.RULES
    ]
    return pd.DataFrame(rows, columns=list(fid.TABLE_COLUMNS))


def test_what_the_generator_misses_is_named_level_by_level_and_pair_by_pair():
    real = {"fifo": 12.9, "spt": 1.17, "edd": 3.3, "wspt": 0.983, "atc": 1.003, "wmdd": 1.0}
    gen = {"fifo": 10.4, "spt": 1.27, "edd": 3.7, "wspt": 1.066, "atc": 1.016, "wmdd": 1.0}
    # arrivals 1.41x the generated, queue 5.9x, backlog within 25 %, late share 0.8x (just inside)
    table = _fidelity_table(real, gen, [12.6, 372.0, 15.9, 0.2, 1700.0], [8.9, 63.0, 13.0, 0.25, 736.0])
    m = fid.misses(table)
    assert set(m["levels"]) == {
        "arrivals_per_hour",
        "queue_length_mean (wmdd)",
        "weighted_tardiness_k_per_day (wmdd)",
    }
    assert m["levels"]["arrivals_per_hour"] == pytest.approx(12.6 / 8.9, rel=1e-5)
    # wspt is first on the real days, third generated: two pairs swapped, each named in real order
    assert [d["rules"] for d in m["discordant"]] == [["wspt", "atc"], ["wspt", "wmdd"]]
    assert m["discordant"][1]["real"] == [0.983, 1.0] and m["discordant"][1]["generated"] == [1.066, 1.0]
    text = fidelity_text.misses_text({"misses": m, "reference": "wmdd"})
    assert text.startswith(
        "What the generated scenarios miss of the real days: arrivals_per_hour 1.42x theirs"
    )
    assert (
        "wspt before wmdd (ratio to wmdd 0.983 and 1.000 on the real days, 1.066 and 1.000 generated)" in text
    )


def test_streams_cover_the_real_hours_from_the_same_time_of_week(wcfg_workload):
    model, week_start = wcfg_workload
    streams = fid.stream_samples(model, range(5, 8), week_start, 2.0)
    assert len(streams) == 3
    for s in streams:
        arr = s.scenario.frame["arrival_s"].to_numpy()
        assert s.scenario.week_start_s == week_start and s.counted_from == DAY and s.days == 2.0
        assert arr.max() < 3 * DAY and arr.max() > 2.9 * DAY  # the span, no task beyond it
    again = fid.stream_samples(model, [5], week_start, 2.0)[0]
    assert again.scenario.frame.equals(streams[0].scenario.frame)  # seeded


@pytest.fixture(scope="module")
def wcfg_workload(cfg, calibrated, tmp_path_factory):
    from sched.data.model import scenario_model
    from sched.data.workload.workload_fit import calibrate_workload
    from tests.test_studio import _history

    d = tmp_path_factory.mktemp("periods")
    path = _history(d / "h.csv", 9, per_day=120, seed=2)
    c = cfg.replace(scenario={"calibration": str(calibrated.calibration)})
    result = calibrate_workload([path], c, calibrated.calibration)
    (d / "w.json").write_text(json.dumps(result.data))
    model = scenario_model(c.replace(scenario={"workload": str(d / "w.json"), "tasks": "day"}))
    return model, 2 * DAY + 5 * 3600.0  # Wednesday 05:00


@pytest.mark.parametrize(
    "change, field",
    [
        ({"format": "x"}, "format"),
        ({"lean_on_days": "no"}, "lean_on_days"),
        ({"tau": {"streams": 1}}, "tau"),
        ({"misses": []}, "misses"),
        ({"misses": {"against": "scenarios", "levels": {"arrivals_per_hour": "1.4"}, "discordant": []}},
         "misses.levels"),
        ({"misses": {"against": "scenarios", "levels": {}, "discordant": [{"rules": ["wspt"]}]}},
         "misses.discordant[0]"),
    ],
)  # fmt: skip
def test_a_malformed_fidelity_record_is_refused_naming_the_field(tmp_path, change, field):
    pair = {"rules": ["wspt", "wmdd"], "real": [0.98, 1.0], "generated": [1.07, 1.0]}
    # every field a reader uses (issue 58: checked where the record is read)
    good = {"format": fid.FORMAT, "lean_on_days": False, "tau": {"streams": 0.9, "scenarios": 1.0},
            "threshold": 0.8, "days": 7, "streams": 4, "scenarios": 6, "reference": "fifo",
            "misses": {"against": "scenarios", "levels": {"arrivals_per_hour": 1.4},
                       "discordant": [pair]}}  # fmt: skip
    (tmp_path / "ok.json").write_text(json.dumps(good))
    assert fid.read_fidelity(tmp_path / "ok.json")["tau"]["streams"] == 0.9
    (tmp_path / "bad.json").write_text(json.dumps({**copy.deepcopy(good), **change}))
    with pytest.raises(fid.FidelityError, match=re.escape(f"field {field}")):
        fid.read_fidelity(tmp_path / "bad.json")


# ------------------------------------------------------------------ the commands


def test_replay_takes_one_period(cli):
    r = cli("replay", "--held-out", "--validation")
    assert r.returncode == 2 and "give one period to replay, not both" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def example_fit(calibrated, tmp_path_factory):
    """The shipped example history fitted with the three periods (its 28 days: 14, 7, 7)."""
    from tests.conftest import run_cli

    d = tmp_path_factory.mktemp("example-fit")
    r = run_cli("--config", calibrated.config, "calibrate-workload", "--out", d / "workload.json")
    assert r.returncode == 0, r.stderr
    return d, json.loads((d / "workload.json").read_text())


def test_the_example_history_has_three_periods_and_the_fit_reads_only_the_first(example_fit):
    _d, w = example_fit
    split = w["split"]
    assert split["fitted"] == ["2024-06-03", "2024-06-16"] and split["validation"] == [
        "2024-06-17",
        "2024-06-23",
    ]
    assert split["held_out"] == ["2024-06-24", "2024-06-30"] and split["note"] is None
    assert w["span"]["end"][:10] <= "2024-06-16"


def test_fidelity_and_the_validation_replay_from_the_command_line(cli, example_fit, tmp_path):
    d, _w = example_fit
    wl = d / "workload.json"
    r = cli("fidelity", "--workload", wl, "--streams", "2", "--out", tmp_path / "fid")
    assert r.returncode == 0, r.stderr
    table = pd.read_csv(tmp_path / "fid" / "fidelity.csv")
    record = json.loads((tmp_path / "fid" / "fidelity.json").read_text())
    assert tuple(table.columns) == fid.TABLE_COLUMNS and record["period"] == ["2024-06-17", "2024-06-23"]
    assert (
        record["streams"] == 2 and record["days"] == 7 and (tmp_path / "fid" / "fidelity.png").stat().st_size
    )
    assert "Kendall's tau" in r.stdout
    r = cli("replay", "--validation", wl, "--policies", "fifo,atc,wmdd", "--out", tmp_path / "val")
    assert r.returncode == 0, r.stderr
    windows = pd.read_csv(tmp_path / "val" / "windows.csv")
    assert windows["window"].tolist() == [f"2024-06-{d}" for d in range(17, 24)]
    assert "7 validation days replayed as one stream" in r.stdout


def test_a_workload_without_validation_days_is_refused_in_one_line(cli, tmp_path, example_fit):
    _d, w = example_fit
    w = copy.deepcopy(w)
    w["split"]["validation"] = None
    (tmp_path / "w.json").write_text(json.dumps(w))
    for args in (
        ("fidelity", "--workload", tmp_path / "w.json"),
        ("replay", "--validation", tmp_path / "w.json"),
    ):
        r = cli(*args, "--out", tmp_path / "o")
        assert r.returncode == 2 and "holds no validation days (split.validation is null" in r.stderr, (
            r.stderr
        )
        assert len(r.stderr.strip().splitlines()) == 1


def test_readers_accept_the_selection_days_record_and_refuse_a_malformed_one(tmp_path):
    from sched.evaluate.errors import ReportError
    from sched.ranking.tasks import RankInputError
    from sched.ranking.verdict_files import _check_selection
    from sched.report.inputs import check_selection_record

    days = {"days": 7, "best_rule": "wmdd", "chosen": "ppo-1", "kept": True, "leaned_on_days": False}
    sel = {"on": "validation", "seeds": [1000, 300], "means": {"wmdd": 1.0}, "days": days}
    check_selection_record(sel, "winner.json")
    _check_selection(sel, "winner.json")
    bad = {**sel, "days": {**days, "kept": "yes"}}
    with pytest.raises(ReportError, match="selection.days.kept"):
        check_selection_record(bad, "winner.json")
    with pytest.raises(RankInputError, match="selection.days"):
        _check_selection({**sel, "days": [1]}, "winner.json")


# ------------------------------------------------------------------ warm-up days


def test_a_warm_up_needs_a_workload(cfg):
    from sched.data.model import ModelError, scenario_model

    with pytest.raises(ModelError, match="scenario.warm_up_days: 1 needs a workload"):
        scenario_model(cfg.replace(scenario={"warm_up_days": 1, "calibration": None}))


def test_warm_up_tasks_are_drawn_beyond_the_count_and_count_toward_nothing(wcfg_workload, cfg):
    from sched.data.model import day_tasks
    from sched.data.scenario import generate
    from sched.evaluate.per_scenario import schedule_metrics
    from sched.evaluate.policies import rule_spec
    from sched.evaluate.runs import run_on_scenarios
    from sched.sim.core import simulate

    model, _ = wcfg_workload
    warm = dataclasses.replace(model, warm_up_s=DAY, warm_up_tasks=day_tasks(model.workload))
    sc = generate(warm, 11, warm_up=True)
    assert len(sc) == model.tasks + day_tasks(model.workload) and sc.counted_from_s == DAY
    # without warm_up (the lookahead's futures, `sched scenario`) the model's warm-up is not drawn
    plain = generate(warm, 11)
    assert plain.counted_from_s == 0.0 and len(plain) == model.tasks
    arr, _dur, _est, w, due = sc.arrays
    start, end, _ = simulate(*sc.arrays, "wmdd", machines=1)
    m = schedule_metrics(sc.arrays, start, end, sc.counted_from_s)
    keep = arr >= DAY
    assert 0 < keep.sum() < len(arr) and m["tasks"] == keep.sum()
    assert m["total_weighted_tardiness_s"] == pytest.approx(
        np.sum(w[keep] * np.maximum(0, end[keep] - due[keep]))
    )
    assert schedule_metrics(sc.arrays, start, end)["tasks"] == len(arr)
    frame = run_on_scenarios(cfg, [11], [sc], {"wmdd": rule_spec("wmdd")})
    assert frame["tasks"].tolist() == [keep.sum()]
    assert frame["total_weighted_tardiness_s"].iloc[0] == pytest.approx(m["total_weighted_tardiness_s"])


# ------------------------------------------------------------------ the report


def test_the_report_shows_the_periods_the_fidelity_table_the_k_and_the_validation_days(tmp_path, cfg):
    from sched import layout
    from sched.report.studio import read_studio, studio_readme_line, studio_section
    from sched.verdict.outputs import write_outputs

    studio = tmp_path / "robustness" / layout.STUDIO
    (tmp_path / "p.pt").write_bytes(b"weights")  # hashed into the summary's winner, never loaded
    specs = {**SPECS, "ppo-1": {**SPECS["ppo-1"], "policy_file": str(tmp_path / "p.pt")}}
    windows = pd.DataFrame({"scenario_seed": range(7), "window": [f"2024-06-{d}" for d in range(17, 24)],
                            "tasks": 100, "window_hours": 24.0})  # fmt: skip
    write_outputs(studio, _held(7, 0.99, seed=1), cfg, specs, full=False, subset_summary=True)
    write_outputs(studio / "replay-validation", _held(7, 1.02, seed=2), cfg, specs, full=False,
                  subset_summary=True, extra=[(layout.REPLAY_WINDOWS, windows)])  # fmt: skip
    rng = np.random.default_rng(4)
    arr = np.sort(rng.uniform(0, 2 * DAY, 300))
    sample = _sample(arr, rng.lognormal(5.5, 0.8, 300), arr + rng.uniform(0, 2000, 300), None, DAY, 1.0)
    table, record, _q = fid.check(sample, [sample], [sample], rules_on(1, 2.0), threshold=1.01)
    record["period"] = ["2024-06-17", "2024-06-23"]
    (studio / "fidelity").mkdir()
    table.to_csv(studio / "fidelity" / layout.FIDELITY_TABLE, index=False)
    (studio / "fidelity" / layout.FIDELITY_RECORD).write_text(json.dumps(record))
    tuned = {"atc_k": 2.0, "validation_days": {"generated_atc_k": 4.0, "default_atc_k": 2.0, "days": 7,
                                               "reason": "beyond the guard"}}  # fmt: skip
    (studio / layout.TUNED).write_text(json.dumps(tuned))
    winner = _record()
    days = validation_days_gate(winner, _held(7, 1.02, seed=2), SPECS, BENCH, period=record["period"])
    held_out_gate(winner, _held(7, 1.0), SPECS, BENCH, best_rule=days["best_rule"])
    winner["selection"] = {"on": "validation", "seeds": [1000, 300], "means": {"wmdd": 1.0}, "days": days}
    (studio / layout.WINNER).write_text(json.dumps(winner))
    read = read_studio(tmp_path / "robustness")
    fit = {"split": {"fitted": ["2024-06-03", "2024-06-16"], "validation": record["period"],
                     "held_out": ["2024-06-24", "2024-06-30"]}}  # fmt: skip
    text = "\n".join(studio_section(cfg, read, fit))
    assert (
        "the validation days **2024-06-17 to 2024-06-23**" in text and "**2024-06-03 to 2024-06-16**" in text
    )
    assert "**Fidelity of the generator**" in text and "below 1.01" in text
    assert "| kendall_tau |  | 1.000 |" in text and "](robustness/studio/fidelity/fidelity.png)" in text
    assert (
        "**ATC's k**: 2 (generated scenarios: 4; default 2); on the 7 validation days: beyond the guard."
        in text
    )
    assert "**Validation days** (7 days, 700 tasks" in text
    line = studio_readme_line(read)[0]
    assert "chosen on 7 validation days and generated validation scenarios" in line
    assert (
        "(confirmed on the held-out days)" in line and "on the validation days vs wmdd: ppo-1 +2.0 %" in line
    )


def test_training_and_validation_hold_the_warm_up_and_count_only_after_it(wcfg_workload, cfg, tmp_path):

    from sched.learn.env.vec_env import VecQueue
    from sched.learn.validation import Validator

    model, _ = wcfg_workload
    c = cfg.replace(scenario={"workload": model.workload_file, "tasks": "day", "warm_up_days": 1,
                              "calibration": model.calibration})  # fmt: skip
    from sched.data.model import scenario_model

    warm = scenario_model(c)
    assert warm.warm_up_tasks > 0 and warm.warm_up_s == DAY
    v = Validator(c, 2)
    assert all(0 < m.sum() < len(m) for m in v.counted)
    assert len(v.scenarios[0][0]) == warm.tasks + warm.warm_up_tasks
    env = VecQueue(c, 2, np.random.default_rng(4), range(100000, 100100), "tasks", 2.0, model=warm)
    assert env.tasks == warm.tasks + warm.warm_up_tasks
    _seed, _load, d = env._draw_next()
    assert len(d["arrival"]) == env.tasks and d["counted_from_s"] == DAY
