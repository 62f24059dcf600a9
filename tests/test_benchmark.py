"""The benchmark on a small configuration: files, seeds, statistics, winner, gather, demo."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from sched.config import ConfigError, seed_range, validate_config
from sched.data.scenario import generate, scenario_model
from sched.evaluate.demo import demo_pair
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS
from sched.evaluate.policies import default_policies, parse_policies
from sched.evaluate.seeds import (
    benchmark_seeds,
    clairvoyant_seeds,
    parse_seed_range,
    range_text,
    shard_ranges,
    train_seeds,
    validation_seeds,
)
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.sim import reference
from sched.verdict.summary import SUMMARY_COLUMNS
from sched.verdict.winner import WINNER_KEYS, choose_winner

from .conftest import ROOT, run_cli, run_here, starts_unlike_atc

HEURISTICS = "fifo,spt,edd,wspt,atc,wmdd,atc-tuned"
TINY = {
    "scenario": {"tasks": 40},
    "benchmark": {
        "scenarios": 8,
        "validation_scenarios": 4,
        "shards": 2,
        "atc_k_grid": [0.5, 1.0, 2.0, 4.0],
        "bootstrap_resamples": 300,
        "clairvoyant": {"scenarios": 3, "evaluations": 5000, "window": 10},
    },
}


def ok(r):
    assert r.returncode == 0, r.stderr
    return r


def bench_run(d):
    """A small benchmark run through the command line, as the workflow runs it, in the folder ``d``:
    tune, the benchmark, then its shards. Subprocesses, started in the background at the session's
    first test (tests/background_runs.py): the tests that read it run after the others."""
    d.mkdir(parents=True, exist_ok=True)
    conf = d / "config.yaml"
    conf.write_text(yaml.safe_dump(TINY))
    cfg = validate_config(yaml.safe_load(conf.read_text()))
    c = ("--config", conf)
    bench, tuned = d / "bench", d / "bench" / "tuned.json"
    ok(run_cli(*c, "tune", "--out", tuned))
    ok(run_cli(*c, "benchmark", "--policies", HEURISTICS, "--tuned", tuned, "--out", bench))
    shards = []
    for s in shard_ranges(cfg):
        out = d / "shards" / range_text(s)
        ok(
            run_cli(
                *c,
                "benchmark",
                "--policies",
                HEURISTICS,
                "--tuned",
                tuned,
                "--seeds",
                range_text(s),
                "--out",
                out,
            )
        )
        shards.append(out / "per_scenario.csv")
    return {"dir": d, "conf": conf, "bench": bench, "tuned": tuned, "shards": shards}


@pytest.fixture(scope="session")
def tiny(bench_run):
    """The small benchmark (:func:`bench_run`), run in the background."""
    return bench_run


# --------------------------------------------------------------------------- seeds


def test_seeds_are_disjoint_and_taken_from_their_ranges(cfg):
    test, val = benchmark_seeds(cfg), validation_seeds(cfg)
    assert len(test) == 300 and len(val) == cfg["benchmark"]["validation_scenarios"]
    assert test[0] == cfg["seeds"]["test"]["start"] and set(test) <= set(seed_range(cfg, "test"))
    assert set(val) <= set(seed_range(cfg, "validation"))
    train = seed_range(cfg, "train")
    assert not (set(test) & set(val))
    assert not (set(test) & set(train)) and not (set(val) & set(train))
    assert list(clairvoyant_seeds(cfg)) == list(test[:30])
    shards = shard_ranges(cfg)
    assert len(shards) == cfg["benchmark"]["shards"]
    assert [s for r in shards for s in r] == list(test)  # a partition, in order


def test_counts_must_fit_their_seed_ranges():
    with pytest.raises(ConfigError, match=r"benchmark.scenarios: 20 is more than the 10 seeds"):
        validate_config(
            {"seeds": {"test": {"start": 5000000, "count": 10}}, "benchmark": {"scenarios": 20}}, "t.yaml"
        )
    with pytest.raises(ConfigError, match=r"benchmark.clairvoyant.scenarios: 40 is more than"):
        validate_config({"benchmark": {"scenarios": 30, "clairvoyant": {"scenarios": 40}}})


def test_seeds_outside_the_test_set_are_refused(tiny):
    r = run_here(
        "--config",
        tiny["conf"],
        "benchmark",
        "--policies",
        "fifo,atc",
        "--seeds",
        "1000000-1000003",
        "--out",
        tiny["dir"] / "nope",
    )
    assert r.returncode == 2
    assert "seed 1000000 is not one of the test seeds 2000000-2000007" in r.stderr
    assert not (tiny["dir"] / "nope").exists()


def test_seed_ranges_parse():
    assert parse_seed_range("2000000-2000074") == range(2000000, 2000075)
    assert parse_seed_range("7") == range(7, 8)
    for bad in ("7-3", "a-b", "1,2", "-3"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seed_range(bad)


# --------------------------------------------------------------------------- files


def test_files_have_exactly_the_contract_columns(tiny):
    per = pd.read_csv(tiny["bench"] / "per_scenario.csv")
    assert (
        tuple(per.columns)
        == PER_SCENARIO_COLUMNS
        == (
            "scenario_seed",
            "policy",
            "total_weighted_tardiness_s",
            "mean_tardiness_s",
            "p90_tardiness_s",
            "max_tardiness_s",
            "tardy_fraction",
            "mean_flow_time_s",
            "tasks",
        )
    )
    seeds = list(benchmark_seeds(tiny["cfg"]))
    assert len(per) == len(seeds) * 7
    assert sorted(set(per["scenario_seed"])) == seeds
    assert list(dict.fromkeys(per["policy"])) == HEURISTICS.split(",")
    summary = pd.read_csv(tiny["bench"] / "resume.csv")
    assert tuple(summary.columns) == SUMMARY_COLUMNS
    assert list(summary["policy"]) == HEURISTICS.split(",")
    for ref in ("atc", "best_heuristic"):
        n = summary[[f"wins_vs_{ref}", f"ties_vs_{ref}", f"losses_vs_{ref}"]].sum(axis=1)
        assert (n == len(seeds)).all()
    winner = json.loads((tiny["bench"] / "winner.json").read_text())
    assert tuple(winner) == WINNER_KEYS
    tuned = json.loads(tiny["tuned"].read_text())
    # the verdicts say which GPUs and load they hold for (rank() matches a call against them)
    assert winner["setting"] == tuned["setting"] == {"machines": 1, "speeds": None, "load": 0.85}
    assert tuned["atc_k"] in TINY["benchmark"]["atc_k_grid"]
    assert tuned["atc_k"] == min(tuned["grid"], key=lambda g: g["mean_twt_s"])["atc_k"]
    assert summary.set_index("policy").loc["atc-tuned", "atc_k"] == tuned["atc_k"]


def test_per_scenario_values_match_the_reference_simulator(tiny):
    cfg = tiny["cfg"]
    per = pd.read_csv(tiny["bench"] / "per_scenario.csv").set_index(["scenario_seed", "policy"])
    k_tuned = json.loads(tiny["tuned"].read_text())["atc_k"]
    seed = benchmark_seeds(cfg)[3]
    arrival, duration, estimate, weight, due = generate(scenario_model(cfg), seed).arrays
    for policy, rule, k in (("wmdd", "wmdd", 2.0), ("atc", "atc", 2.0), ("atc-tuned", "atc", k_tuned)):
        start, end, _ = reference.simulate(arrival, duration, estimate, weight, due, rule, k=k)
        end = np.array(end)
        tard = np.maximum(end - due, 0)
        row = per.loc[(seed, policy)]
        assert row.total_weighted_tardiness_s == pytest.approx((weight * tard).sum(), rel=1e-12)
        assert row.max_tardiness_s == pytest.approx(tard.max())
        assert row.p90_tardiness_s == pytest.approx(np.percentile(tard, 90))
        assert row.tardy_fraction == pytest.approx((tard > 0).mean())
        assert row.mean_flow_time_s == pytest.approx((end - arrival).mean())
        assert row.tasks == 40


def test_shards_then_gather_equal_the_full_run(tiny):
    out = tiny["dir"] / "gathered"
    ok(run_here("--config", tiny["conf"], "gather", *tiny["shards"], "--tuned", tiny["tuned"], "--out", out))
    for name in ("per_scenario.csv", "resume.csv", "winner.json"):
        assert (out / name).read_bytes() == (tiny["bench"] / name).read_bytes(), name


def test_gather_refuses_duplicates_and_missing_rows(tiny):
    a, b = tiny["shards"]
    d = tiny["dir"] / "bad"
    conf = ("--config", tiny["conf"])
    r = run_here(*conf, "gather", a, a, b, "--tuned", tiny["tuned"], "--out", d)
    assert r.returncode == 2 and "appears more than once" in r.stderr
    r = run_here(*conf, "gather", a, "--tuned", tiny["tuned"], "--out", d)
    assert r.returncode == 2 and "test seed(s) missing" in r.stderr
    frame = pd.read_csv(b)
    holed = tiny["dir"] / "holed.csv"
    frame.drop(index=5).to_csv(holed, index=False)  # one policy loses one scenario
    r = run_here(*conf, "gather", a, holed, "--tuned", tiny["tuned"], "--out", d)
    assert r.returncode == 2 and "has no row for scenario" in r.stderr
    renamed = tiny["dir"] / "renamed.csv"
    frame.rename(columns={"tasks": "n"}).to_csv(renamed, index=False)
    r = run_here(*conf, "gather", a, renamed, "--tuned", tiny["tuned"], "--out", d)
    assert r.returncode == 2 and "expected exactly" in r.stderr
    assert not d.exists()


def test_a_planners_table_joins_a_full_test_run_only_and_plan_needs_its_candidacy(tiny):
    """`sched benchmark --planners` (plan's candidacy under a robustness setting, issue 46): joined to a
    full test run, never a shard; plan's rows without --plan-selection are refused before any run."""
    conf = ("--config", tiny["conf"], "benchmark", "--policies", HEURISTICS, "--tuned", tiny["tuned"])
    frame = pd.read_csv(tiny["bench"] / "per_scenario.csv")
    planners = tiny["dir"] / "planners.csv"
    mine = frame[frame["policy"] == "atc"].assign(policy="plan")
    mine.to_csv(planners, index=False)
    out = tiny["dir"] / "joined"
    r = run_here(
        *conf, "--seeds", range_text(shard_ranges(tiny["cfg"])[0]), "--planners", planners, "--out", out
    )
    assert r.returncode == 2 and "--planners: joined to a full test run only" in r.stderr
    r = run_here(*conf, "--planners", planners, "--out", out)
    assert (
        r.returncode == 2
        and "plan's rows need its candidacy's validation runs: give --plan-selection" in r.stderr
    )
    assert not out.exists()
    # a table whose policy is no planner is refused naming it
    frame[frame["policy"] == "atc"].to_csv(planners, index=False)
    r = run_here(*conf, "--planners", planners, "--out", out)
    assert r.returncode == 2 and "policy atc is not a planner" in r.stderr


def test_missing_ppo_policy_file_is_a_clear_error(tiny):
    r = run_here(
        "--config", tiny["conf"], "benchmark", "--policies", "fifo,atc,ppo-7", "--out", tiny["dir"] / "ppo"
    )
    assert r.returncode == 2
    assert "results/train/seed-7/politique.pt not found" in r.stderr
    assert "--policy-file ppo-7=PATH" in r.stderr
    r = run_here(
        "--config", tiny["conf"], "benchmark", "--policies", "fifo,spt", "--out", tiny["dir"] / "noref"
    )
    assert r.returncode == 2 and "compares to atc" in r.stderr


def test_default_policies_are_the_heuristics_and_one_ppo_per_training_seed(cfg):
    assert default_policies(cfg) == HEURISTICS.split(",") + [f"ppo-{s}" for s in train_seeds(cfg)]
    assert parse_policies("ppo-2,atc,fifo", cfg) == ["fifo", "atc", "ppo-2"]
    with pytest.raises(ValueError, match="unknown policy 'ppo'"):
        parse_policies("atc,ppo", cfg)


# --------------------------------------------------------------------------- statistics


def test_bootstrap_interval_contains_the_point_estimate(tiny):
    summary = pd.read_csv(tiny["bench"] / "resume.csv")
    for ref in ("atc", "best_heuristic"):
        p, lo, hi = (summary[f"diff_vs_{ref}{s}_pct"] for s in ("", "_ci_lo", "_ci_hi"))
        assert ((lo <= p + 1e-9) & (p <= hi + 1e-9)).all()
    assert (
        (summary.mean_twt_ci_lo_k <= summary.mean_twt_k) & (summary.mean_twt_k <= summary.mean_twt_ci_hi_k)
    ).all()
    rng = np.random.default_rng(0)
    ref = rng.gamma(2.0, 5000.0, 200)
    counts = bootstrap_counts(200, 2000, 1)
    for x in (ref * rng.lognormal(0, 0.3, 200), ref + rng.normal(0, 3000, 200).clip(-ref)):
        d, lo, hi = paired_difference(x, ref, counts, 0.95)
        assert lo <= d <= hi and lo < hi
        assert d == pytest.approx((x.mean() - ref.mean()) / ref.mean() * 100)
    # an exact 10 % reduction on every scenario: no uncertainty at all
    d, lo, hi = paired_difference(0.9 * ref, ref, counts, 0.95)
    assert d == pytest.approx(-10) and lo == pytest.approx(-10) and hi == pytest.approx(-10)


def test_wins_ties_losses_use_the_tolerance():
    x = np.array([1.0, 2.0, 3.0, 0.0, 1e6 * (1 + 1e-12)])
    ref = np.array([2.0, 2.0, 1.0, 0.0, 1e6])
    assert win_tie_loss(x, ref, 1e-9, 1e-6) == (1, 3, 1)


def _twt(means, n=150, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.gamma(2.0, 5000.0, n)
    return {p: base * m * rng.lognormal(0, noise, n) for p, m in means.items()}


SPECS = {
    "fifo": {"kind": "rule", "rule": "fifo", "atc_k": None, "policy_file": None},
    "atc": {"kind": "rule", "rule": "atc", "atc_k": 2.0, "policy_file": None},
    "wmdd": {"kind": "rule", "rule": "wmdd", "atc_k": None, "policy_file": None},
    "atc-tuned": {"kind": "rule", "rule": "atc", "atc_k": 1.5, "policy_file": None},
    "ppo-1": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "p1.pt"},
    "ppo-2": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "p2.pt"},
}


def winner(means, noise=0.02, specs=SPECS):
    twt = _twt(means, noise=noise)
    return choose_winner(twt, specs, bootstrap_counts(150, 2000, 3), 0.95)


def test_a_significant_winner_is_picked():
    w = winner({"fifo": 3.0, "atc": 1.0, "wmdd": 1.05, "ppo-1": 0.9, "ppo-2": 0.91})
    assert (w["policy"], w["significant"], w["policy_file"], w["rule"]) == ("ppo-1", True, "p1.pt", None)
    # the runner-up is the best rule, not the other training seed of the same method
    assert w["runner_up"] == "atc"
    lo, hi = w["ci95_pct"]
    assert lo <= w["mean_difference_pct"] <= hi < 0
    w = winner({"fifo": 3.0, "atc": 1.0, "wmdd": 1.05, "atc-tuned": 0.93})
    assert (w["policy"], w["rule"], w["atc_k"], w["significant"]) == ("atc-tuned", "atc", 1.5, True)


def test_a_best_heuristic_whose_lead_is_not_significant_is_kept():
    """Here the best mean is a heuristic's (atc) both times; the fallback from a learned policy
    that is best but not significantly: test_statistics.py."""
    w = winner({"fifo": 3.0, "atc": 1.0, "wmdd": 1.05, "ppo-1": 0.995}, noise=0.3)
    assert (w["policy"], w["significant"], w["rule"], w["atc_k"]) == ("atc", False, "atc", 2.0)
    assert w["runner_up"] == "ppo-1" and w["policy_file"] is None
    lo, hi = w["ci95_pct"]
    assert lo < 0 < hi and "not lie entirely below zero" in w["reason"]
    # the same when the best is a heuristic whose lead is not significant
    w = winner({"fifo": 3.0, "atc": 1.0, "wmdd": 1.002}, noise=0.3)
    assert (w["policy"], w["significant"], w["runner_up"]) == ("atc", False, "wmdd")


def test_the_same_rule_twice_is_not_its_own_runner_up():
    specs = dict(SPECS, **{"atc-tuned": dict(SPECS["atc"])})
    twt = _twt({"fifo": 3.0, "atc": 1.0, "wmdd": 1.1})
    twt["atc-tuned"] = twt["atc"].copy()
    w = choose_winner(twt, specs, bootstrap_counts(150, 2000, 3), 0.95)
    # atc has the lowest mean (first in table order), atc-tuned the same schedules: the
    # incumbent's name is recorded
    assert (w["policy"], w["runner_up"], w["significant"]) == ("atc-tuned", "wmdd", True)


# --------------------------------------------------------------------------- demo and PPO


def test_demo_writes_each_policy_and_a_gantt_chart(tiny):
    out, figs = tiny["dir"] / "demo", tiny["dir"] / "figs"
    r = ok(
        run_here(
            "--config",
            tiny["conf"],
            "demo",
            "--policies",
            HEURISTICS,
            "--tuned",
            tiny["tuned"],
            "--out",
            out,
            "--figures",
            figs,
        )
    )
    table = pd.read_csv(out / "demo.csv")
    assert tuple(table.columns) == PER_SCENARIO_COLUMNS
    assert list(table["policy"]) == HEURISTICS.split(",") and (table["scenario_seed"] == 2026).all()
    arrays = generate(scenario_model(tiny["cfg"]), 2026).arrays
    _, end, _ = reference.simulate(*arrays, "edd")
    assert table.set_index("policy").loc["edd", "total_weighted_tardiness_s"] == pytest.approx(
        float((arrays[3] * np.maximum(np.array(end) - arrays[4], 0)).sum())
    )
    assert (figs / "demo_gantt.png").stat().st_size > 10_000
    for p in HEURISTICS.split(","):
        assert f"\n{p} " in r.stdout
    left, right = demo_pair(table)
    assert left == "atc" and right != "atc"
    assert table.set_index("policy").loc[right, "total_weighted_tardiness_s"] == min(
        table.loc[table.policy != "atc", "total_weighted_tardiness_s"]
    )


def test_ppo_policies_are_benchmarked_in_one_batch(tmp_path, distinct_policy):
    """Two policy files in one batch: one just trained by `sched train`, and one that
    schedules unlike ATC (so that the comparison tests the learned part, not only ATC's)."""
    conf = tmp_path / "c.yaml"
    # benchmark scenarios of 120 tasks: queues long enough for the distinct policy's totals to
    # differ from ATC's (training keeps 40, as fast as before)
    conf.write_text(yaml.safe_dump(dict(TINY, scenario={"tasks": 120}, train={"tasks": 40})))
    pt = tmp_path / "politique.pt"
    ok(run_here("--config", conf, "train", "--iterations", 2, "--out", pt))
    out = tmp_path / "b"
    ok(
        run_here(
            "--config",
            conf,
            "benchmark",
            "--policies",
            "fifo,atc,ppo-1,ppo-2",
            "--policy-file",
            f"ppo-1={pt}",
            "--policy-file",
            f"ppo-2={distinct_policy}",
            "--seeds",
            "2000000-2000003",
            "--out",
            out,
        )
    )
    per = pd.read_csv(out / "per_scenario.csv")
    assert sorted(set(per["policy"])) == ["atc", "fifo", "ppo-1", "ppo-2"]
    # expected: each scenario on its own through the one-queue rollout (not the
    # batched path the benchmark takes), tardiness summed here
    from sched.learn.policy import policy_file
    from sched.learn.policy.kernel import run_one as run_greedy_one

    cfg = validate_config(yaml.safe_load(conf.read_text()))
    seeds = range(2000000, 2000004)
    totals = per.set_index(["policy", "scenario_seed"])["total_weighted_tardiness_s"]
    for name, path in (("ppo-1", pt), ("ppo-2", distinct_policy)):
        pol = policy_file.load(path)
        want = []
        for seed in seeds:
            arrays = generate(scenario_model(cfg), seed).arrays  # arrival, duration, estimate, weight, due
            _, duration, _, weight, due = arrays
            start, end, _ = run_greedy_one(pol, arrays, 1, None)
            assert np.allclose(np.asarray(end) - start, duration)
            want.append(float((weight * np.maximum(np.asarray(end) - due, 0.0)).sum()))
        got = totals.loc[name]
        assert list(got.index) == list(seeds)
        assert got.to_numpy() == pytest.approx(want, rel=1e-12), name
    # `sched simulate --policy ppo` of each seed prints exactly the benchmark's total
    r = run_here(
        "--config", conf, "simulate", "--policy", "ppo", "--policy-file", distinct_policy, "--seed", *seeds
    )
    ok(r)
    printed = [json.loads(line)["total_weighted_tardiness_s"] for line in r.stdout.splitlines()]
    assert printed == list(totals.loc["ppo-2"].to_numpy())
    # the distinct policy's schedules, and totals, are not ATC's
    assert sum(starts_unlike_atc(distinct_policy, generate(scenario_model(cfg), s).arrays) for s in seeds) > 0
    assert (totals.loc["ppo-2"] != totals.loc["atc"]).any()


def test_clairvoyant_command_on_the_first_test_seeds(tiny):
    out = tiny["dir"] / "clairvoyant.csv"
    ok(run_here("--config", tiny["conf"], "clairvoyant", "--out", out))
    from sched.evaluate.headroom import CLAIRVOYANT_COLUMNS

    c = pd.read_csv(out)
    assert tuple(c.columns) == CLAIRVOYANT_COLUMNS
    assert list(c["scenario_seed"]) == list(clairvoyant_seeds(tiny["cfg"]))
    assert (c["clairvoyant_twt_s"] <= c["start_twt_s"] * (1 + 1e-12)).all()
    assert (c["evaluations"] <= c["budget_evaluations"]).all()
    # the start is the best rule on each scenario: never worse than any benchmarked heuristic
    per = pd.read_csv(tiny["bench"] / "per_scenario.csv")
    best = per.groupby("scenario_seed")["total_weighted_tardiness_s"].min()
    assert (c["start_twt_s"].to_numpy() <= best.loc[c["scenario_seed"]].to_numpy() + 1e-9).all()
    # a shard of one seed gives the same row: each scenario's search depends on nothing else
    one = tiny["dir"] / "one.csv"
    ok(run_here("--config", tiny["conf"], "clairvoyant", "--seeds", c["scenario_seed"].iloc[1], "--out", one))
    pd.testing.assert_frame_equal(pd.read_csv(one), c.iloc[[1]].reset_index(drop=True))


def test_shipped_config_sets_the_schema_defaults_of_the_benchmark():
    from sched.config import load_config

    shipped = load_config(ROOT / "config.yaml")
    defaults = validate_config({})
    # benchmark.waiting (issue 60) has no default: present, it tunes the delayed rules it names
    bench = {k: v for k, v in shipped["benchmark"].items() if k != "waiting"}
    assert "waiting" not in defaults["benchmark"] and set(shipped["benchmark"]["waiting"]["rules"]) == {
        "wspt-wait",
        "atc-wait",
    }
    assert bench == defaults["benchmark"] and shipped["report"] == defaults["report"]
    assert defaults["benchmark"]["scenarios"] == 300 and defaults["benchmark"]["demo_seed"] == 2026


def test_library_errors_are_sched_errors():
    from sched.errors import SchedError
    from sched.evaluate.errors import BenchmarkError, ReportError

    assert issubclass(BenchmarkError, SchedError) and issubclass(ReportError, SchedError)
    with pytest.raises(BenchmarkError, match="ends before it starts"):
        parse_seed_range("9-3")
