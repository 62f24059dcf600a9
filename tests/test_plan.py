"""The planner, policy ``plan`` (sched/learn/search/plan.py, planner.py): decisions from estimates and
sampled futures only, deterministic for a seed, the base policy's choice unless the samples say
otherwise, bad settings refused in one line, and ``rank(policy="plan")``."""

import time

import numpy as np
import pytest

from sched.config import ConfigError, validate_config
from sched.learn.policy import kernel
from sched.learn.search import lookahead as L
from sched.learn.search import plan as P
from sched.learn.search.planner import PlanError, Planner, check_settings, learned_base, rule_base
from sched.sim import core as S

from .conftest import ROOT

SETTINGS = dict(candidates=3, samples=6, horizon=12, z=1.0, seed=3, futures=40, budget_ms=None)


@pytest.fixture(scope="module")
def pcfg():
    """Default settings with estimate noise, and a small training range for the futures' seeds."""
    c = validate_config({"scenario": {"estimate_noise_sigma": 0.4, "tasks": 60}}, "test")
    c = c.replace(plan=dict(SETTINGS))
    return c


def _scenario(cfg, seed, tasks=60):
    from sched.data.scenario import draw, scenario_model

    d = draw(scenario_model(cfg), seed, tasks=tasks)
    return d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"]


def _costs(planner, arr, dur, est, w, due):
    """The sampled costs of the candidates at the first decision of a queue (all arrived at 0)."""
    st, b = planner.settings, planner.base
    state, _ = S.pack([(arr, dur, est, w, due)], 1)
    S.set_rule(state, 0, b.base)
    scratch = S.empty_state(1, len(arr) + st["horizon"], 1)
    ws = kernel.workspace(scratch.queue.shape[1], b.net)
    assert S._advance(state, 0, True)
    cands = P.candidates(state, st["candidates"], b.base, b.k, b.net, ws)
    costs = np.empty((len(cands), st["samples"]))
    ev = L.evaluator(scratch, ws, planner.pool, planner._lookahead(), b.net)
    L.sample_costs(state, cands, 0, st["samples"], costs, ev, P.futures_of(st["seed"], 0))
    return cands, costs


def test_same_seed_same_schedule_and_the_seed_matters(pcfg):
    sc = _scenario(pcfg, 7)
    a = Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"]).schedule(sc)
    b = Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"]).schedule(sc)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    cands, c1 = _costs(Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"]), *_queue())
    _, c2 = _costs(Planner(pcfg, rule_base("atc", 1.5), {**pcfg["plan"], "seed": 4}), *_queue())
    assert len(cands) == 3 and not np.array_equal(c1, c2)  # other futures, other durations


def _queue(n=8, seed=0):
    """n tasks waiting at time 0: (arrival, duration, estimate, weight, due)."""
    rng = np.random.default_rng(seed)
    est = rng.uniform(20, 200, n)
    return (
        np.zeros(n),
        est * rng.lognormal(0, 0.4, n),
        est,
        rng.choice([1.0, 2.0, 4.0, 8.0], n),
        rng.uniform(0, 600, n),
    )


def test_true_durations_are_never_read(pcfg):
    planner = Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"])
    arr, dur, est, w, due = _queue()
    cands, costs = _costs(planner, arr, dur, est, w, due)
    cands2, costs2 = _costs(planner, arr, dur * 7.0 + 1.0, est, w, due)
    np.testing.assert_array_equal(cands, cands2)
    np.testing.assert_array_equal(costs, costs2)
    # ... while the estimates are: other estimates, other costs
    _, costs3 = _costs(planner, arr, dur, est * 1.5, w, due)
    assert not np.array_equal(costs, costs3)


def test_a_clearly_optimal_base_choice_is_kept(pcfg):
    # A heavy short task and a light long one, both already late: starting the long one first
    # delays the heavy one by 1,000 s (100 x 1,000 weighted s) on every sampled future.
    arr, est, w, due = np.zeros(2), np.array([10.0, 1000.0]), np.array([100.0, 1.0]), np.zeros(2)
    planner = Planner(pcfg, rule_base("wspt"), {**pcfg["plan"], "z": 0.0})
    cands, costs = _costs(planner, arr, est, est, w, due)
    assert cands.tolist() == [0, 1]
    assert (costs[1] > costs[0]).all()
    assert P.choose(costs, costs.shape[1], 0.0) == 0
    start, _, _ = planner.order(arr, est, w, due, np.zeros(1))
    assert start[0] < start[1]


def test_choose_deviates_only_on_clear_evidence():
    base = np.array([10.0, 12.0, 9.0, 11.0])
    clear = np.vstack([base, base - 3.0 + np.array([0.1, -0.1, 0.2, 0.0])])
    noisy = np.vstack([base, base + np.array([-5.0, 4.0, -6.0, 5.5])])  # mean < 0, se large
    assert P.choose(clear, 4, 2.0) == 1
    assert P.choose(noisy, 4, 2.0) == 0
    assert P.choose(clear, 1, 2.0) == 0  # one sample: no standard error, no deviation
    # the candidate with the lowest upper bound wins, not the lowest mean
    three = np.vstack([base, base - 3.0 + np.array([0.1, -0.1, 0.2, 0.0]), base + np.array([-9, 1, -8, 0.0])])
    assert P.choose(three, 4, 2.0) == 1


def test_plan_beats_or_matches_nothing_it_cannot_know_and_schedules_every_task(pcfg):
    sc = _scenario(pcfg, 11)
    planner = Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"])
    stats = {}
    start, end, mach = planner.schedule(sc, stats=stats)
    assert np.isfinite(start).all() and (start >= sc[0] - 1e-9).all()
    np.testing.assert_allclose(end - start, sc[1])  # the simulator runs the true durations
    assert stats["decisions"] > 0 and 0 <= stats["deviations"] <= stats["decisions"]


@pytest.mark.parametrize(
    "field, value",
    [("candidates", 1), ("candidates", 17), ("samples", 0), ("horizon", 2.5), ("z", -1.0),
     ("z", float("nan")), ("futures", "many"), ("seed", -1), ("budget_ms", 0), ("budget_ms", float("inf"))],
)  # fmt: skip
def test_bad_settings_are_refused_naming_the_field(field, value):
    with pytest.raises(PlanError, match=f"plan.{field}: expected") as e:
        check_settings({**SETTINGS, field: value})
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("field, value", [("candidates", 1), ("samples", 0), ("budget_ms", -5), ("base", "")])
def test_the_config_schema_refuses_bad_plan_settings(field, value):
    with pytest.raises(ConfigError, match=f"plan.{field}"):
        validate_config({"plan": {field: value}}, "config")


def test_an_unknown_base_policy_is_refused(pcfg):
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import plan_spec

    c = pcfg.replace(plan={"base": "no-such-policy"})
    with pytest.raises(BenchmarkError, match="plan.base: unknown base policy 'no-such-policy'"):
        plan_spec(c)
    c = c.replace(plan={"base": "wspt"})
    assert plan_spec(c)["base_spec"]["rule"] == "wspt"


def _tasks(n=12):
    arr, _, est, w, due = _queue(n, seed=5)
    return [
        dict(id=f"t{i}", estimate_s=float(est[i]), weight=float(w[i]), due=float(due[i])) for i in range(n)
    ]


def test_rank_plan_returns_a_permutation_and_checks_its_arguments(pcfg):
    from sched.ranking.ranker import RankInputError, rank

    c = pcfg.replace(plan={"base": "atc"})
    tasks = _tasks()
    out = rank(tasks, policy="plan", config=c)
    assert sorted(out) == sorted(t["id"] for t in tasks)
    assert rank(tasks, policy="plan", config=c) == out  # no budget: deterministic
    timed = rank(tasks, policy="plan", config=c, budget_ms=50.0)
    assert sorted(timed) == sorted(out)
    # after the planned first start, the base policy's order of the rest
    rest = rank([t for t in tasks if t["id"] != out[0]], policy="atc", config=c)
    assert out[1:] == rest
    for bad in (0, -1.0, float("nan"), "10"):
        with pytest.raises(RankInputError, match="budget_ms: expected"):
            rank(tasks, policy="plan", config=c, budget_ms=bad)
    with pytest.raises(RankInputError, match="budget_ms: only used with policy 'plan'"):
        rank(tasks, policy="atc", config=c, budget_ms=10)
    c = c.replace(plan={"base": "nope"})
    with pytest.raises(RankInputError, match="^plan.base: policy: unknown policy 'nope'"):
        rank(tasks, policy="plan", config=c)
    c = c.replace(plan={"base": "plan"})
    with pytest.raises(RankInputError, match="plan cannot be its own base"):
        rank(tasks, policy="plan", config=c)


def test_a_learned_base_runs_the_scorers_decisions(pcfg, distinct_policy):
    from sched.learn.policy.policy_file import load

    pol = load(distinct_policy)
    base = learned_base(pol, "distinct")
    arr, dur, est, w, due = _queue(10, seed=2)
    # the candidates start with the scorer's own choice, and the base's rollout is its greedy one
    state, _ = S.pack([(arr, dur, est, w, due)], 1)
    S.set_rule(state, 0, S.rules.ATC)
    assert S._advance(state, 0, True)
    ws = kernel.workspace(10, base.net)
    cands = P.candidates(state, 4, base.base, base.k, base.net, ws)
    assert cands[0] == kernel.greedy(state, 0, base.net, ws) and len(set(cands)) == len(cands) == 4
    P.continue_base(state, base.base, base.k, base.net, ws)
    ref = kernel.run_one(pol, (arr, dur, est, w, due))
    np.testing.assert_array_equal(S._unpack(state, [np.arange(10)])[0][0], ref[0])
    # and a whole scenario under the planner is deterministic
    sc = _scenario(pcfg, 5, tasks=30)
    a = Planner(pcfg, base, pcfg["plan"]).schedule(sc)
    b = Planner(pcfg, base, pcfg["plan"]).schedule(sc)
    np.testing.assert_array_equal(a[0], b[0])


def test_the_benchmark_runs_plan_beside_its_base(pcfg):
    from sched.evaluate.policies import parse_policies, plan_spec, rule_spec
    from sched.evaluate.runs import run_policies

    c = pcfg.replace(plan={"base": "atc"})
    assert parse_policies("atc,plan", c) == ["atc", "plan"]
    specs = {"atc": rule_spec("atc", 2.0), "plan": plan_spec(c)}
    frame = run_policies(c, [2000000, 2000001], specs)
    assert sorted(set(frame["policy"])) == ["atc", "plan"] and len(frame) == 4


def test_a_rollout_rule_equal_to_the_base_changes_nothing_and_others_are_refused(pcfg):
    from sched.evaluate.errors import BenchmarkError
    from sched.evaluate.policies import plan_spec

    sc = _scenario(pcfg, 9, tasks=40)
    same = Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"]).schedule(sc)
    rolled = Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"], rule_base("atc", 1.5)).schedule(sc)
    np.testing.assert_array_equal(same[0], rolled[0])
    c = pcfg.replace(plan=dict(base="atc", rollout="wspt"))
    assert plan_spec(c)["rollout_spec"]["rule"] == "wspt"
    c = c.replace(plan={"rollout": "ppo-1"})
    with pytest.raises(BenchmarkError, match="plan.rollout: unknown rollout policy 'ppo-1'"):
        plan_spec(c)


def test_sched_rank_refuses_a_bad_budget_in_one_line(tmp_path):
    import json

    from .conftest import run_cli

    (tmp_path / "q.json").write_text(json.dumps(_tasks(3)))
    r = run_cli("rank", tmp_path / "q.json", "--policy", "plan", "--budget-ms", "0", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "budget_ms: expected a number of milliseconds > 0, got 0" in r.stderr


def test_the_budget_bounds_the_whole_call_and_explain_says_what_was_planned(pcfg):
    """Issue 23, item 8: on a long queue, a budget of 5 ms costs about what the base policy's
    own rollout costs (the tail), not samples over the whole queue; the explain table says
    which starts were planned. Without a budget: every sample, deterministic."""
    from sched.ranking.ranker import rank

    c = pcfg.replace(plan=dict(base="atc", rollout="base", candidates=4, samples=64, horizon=50))
    rng = np.random.default_rng(8)
    n = 6000
    est, w, due = rng.lognormal(3.5, 1.0, n), rng.choice([1.0, 2.0, 4.0, 8.0], n), rng.uniform(0, 86400, n)
    big = [dict(id=i, estimate_s=float(est[i]), weight=float(w[i]), due=float(due[i])) for i in range(n)]

    base = rank(big, now=0.0, config=c, explain=True, policy="atc")
    planned = rank(big, now=0.0, config=c, explain=True, policy="plan", budget_ms=5)
    # before: two samples of four rollouts over 6,000 tasks each (8 tails) ran before the first
    # look at the clock; now none starts once the tail's own time fills the budget (the time
    # itself is measured by benchmarks/plan_budget.py, not asserted here)
    assert planned.why.iloc[0].endswith(
        "planned: no start, the budget was spent after 0 of 64 samples (two needed); "
        "every start by the base policy"
    )
    assert planned.id.tolist() == base.id.tolist()  # the base policy's order, every start
    small = _tasks(12)
    full = rank(small, policy="plan", config=c, explain=True)
    assert full.why.iloc[0].endswith(
        "planned: the first start, on 64 of 64 samples; the rest by the base policy"
    )
    cut = rank(small, policy="plan", config=c, explain=True, budget_ms=0.01).why.iloc[0]
    assert "planned: no start, the budget was spent after" in cut or "the budget cut the samples short" in cut
    one = rank(small[:1], policy="plan", config=c, explain=True).why.iloc[0]
    assert one.endswith(
        "planned: no start, fewer than two candidates to compare; every start by the base policy"
    )


def test_the_budget_counts_from_when_the_call_began_as_its_caller_says(pcfg):
    """Issue 46: ``prepare(started=...)`` (sched serve passes when the request arrived): a call
    that waited its budget away before it ran samples nothing; one that just began plans."""
    from sched.ranking import ranker

    c = pcfg.replace(plan=dict(base="atc", rollout="base", candidates=4, samples=8, horizon=10))
    small = _tasks(12)
    late = ranker.prepare(small, policy="plan", config=c, budget_ms=50, started=time.perf_counter() - 1.0)
    assert ranker.run(late).why.endswith(
        "planned: no start, the budget was spent after 0 of 8 samples (two needed); "
        "every start by the base policy"
    )
    now = ranker.prepare(small, policy="plan", config=c, budget_ms=60_000)
    assert ranker.run(now).why.endswith(
        "planned: the first start, on 8 of 8 samples; the rest by the base policy"
    )


def test_a_budgeted_call_starts_from_the_planners_last_measured_time_per_unit(pcfg):
    """A planner remembers what a unit of work took in its last budgeted call, so that the next
    call's first batch is bounded too (sched serve: no unbounded probe beside other calls)."""
    settings = dict(pcfg["plan"], base="atc", rollout="base", candidates=4, samples=8, horizon=10)
    planner = Planner(pcfg, rule_base("atc", 1.5), settings)
    assert planner.per_unit is None
    arr, est, w, due = (
        np.asarray(x, np.float64) for x in zip(*[(0.0, 30.0 + i, 1.0, 60.0) for i in range(12)])
    )
    stats = {}
    planner.order(arr, est, w, due, np.zeros(1), budget_ms=60_000, stats=stats)
    assert stats["samples"] == 8 and planner.per_unit is not None and planner.per_unit > 0
    planner.per_unit = 1.0  # as if a unit took a second: nothing fits in a minute beside the tail
    planner.order(arr, est, w, due, np.zeros(1), budget_ms=60_000, stats=stats)
    assert stats["samples"] == 0 and stats["budget"] and not stats["planned"]


def test_samples_interrupted_by_their_work_bound_are_the_unbounded_ones(pcfg):
    """``sample_costs_upto``: the samples it completes under a bound on work have exactly the
    costs of ``sample_costs``; it stops inside a rollout, and reports how far it got."""
    planner = Planner(pcfg, rule_base("atc", 1.5), pcfg["plan"])
    st, b = planner.settings, planner.base
    arr, dur, est, w, due = _queue(30, seed=4)
    state, _ = S.pack([(arr, dur, est, w, due)], 1)
    S.set_rule(state, 0, b.base)
    scratch = S.empty_state(1, 30 + st["horizon"], 1)
    ws = kernel.workspace(scratch.queue.shape[1], b.net)
    assert S._advance(state, 0, True)
    cands = P.candidates(state, st["candidates"], b.base, b.k, b.net, ws)
    ev = L.evaluator(scratch, ws, planner.pool, planner._lookahead(), b.net)
    seeds = P.futures_of(st["seed"], 0)
    full = np.empty((len(cands), st["samples"]))
    L.sample_costs(state, cands, 0, st["samples"], full, ev, seeds)
    done, work = L.sample_costs_upto(state, cands, 0, st["samples"], full.copy(), ev, seeds, -1)
    assert done == st["samples"] and work > 0
    _, two = L.sample_costs_upto(state, cands, 0, 2, full.copy(), ev, seeds, -1)
    cap = two + 30 + st["horizon"] + 5  # the third sample's first copy, then a few decisions
    part = np.full_like(full, np.nan)
    done, used = L.sample_costs_upto(state, cands, 0, st["samples"], part, ev, seeds, cap)
    assert done == 2 and used > cap
    np.testing.assert_array_equal(part[:, :2], full[:, :2])
    done, _ = L.sample_costs_upto(state, cands, 2, st["samples"], part, ev, seeds, -1)
    assert done == st["samples"]
    np.testing.assert_array_equal(part, full)  # resumed from sample 2: the same costs


def test_an_empty_queue_still_checks_the_plan_budget():
    from sched import rank
    from sched.ranking.tasks import RankInputError

    for bad in (-1, 0, float("nan")):
        with pytest.raises(RankInputError, match="budget_ms: expected"):
            rank([], policy="plan", budget_ms=bad)
    assert rank([], policy="plan", budget_ms=5) == []


def test_plan_before_any_tuning_continues_its_rollouts_with_atc_and_says_so(tmp_path, calibrated):
    """config.yaml's plan continues its rollouts with atc-tuned; before a benchmark tuned k (a
    fresh clone, a new farm), rank(policy="plan") runs ATC with rules.atc_k there and says so,
    rather than refusing the call. A rollout named otherwise that cannot be resolved is refused."""
    import yaml

    from sched.ranking.ranker import decide
    from sched.ranking.tasks import RankSetupError

    shipped = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert shipped["plan"]["rollout"] == "atc-tuned"
    conf = {
        "scenario": {"calibration": str(calibrated.calibration)},
        "rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"},
        "plan": {k: shipped["plan"][k] for k in ("base", "rollout", "samples", "horizon", "depth")},
        "root": str(tmp_path),
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(conf))
    tasks = [dict(id=i, estimate_s=30.0 + i, weight=1.0 + i % 3, due=100.0 * i) for i in range(10)]
    d = decide(tasks, now=0, policy="plan", config=str(path))
    assert "rollouts by atc (k 2, config rules.atc_k: no tuned k yet); planned: " in d.why
    path.write_text(yaml.safe_dump({**conf, "plan": {**conf["plan"], "rollout": "ppo-9"}}))
    with pytest.raises(RankSetupError, match="plan.rollout: "):
        decide(tasks, now=0, policy="plan", config=str(path))


def test_simulate_with_plans_atc_tuned_rollouts_and_no_tuning_names_the_setting(tmp_path, calibrated):
    """sched simulate runs what the benchmark runs, so it does not fall back as rank() does:
    plan.rollout atc-tuned without sched tune's file is one line naming the setting and the way out."""
    import yaml

    from .conftest import run_here

    conf = {
        "scenario": {"calibration": str(calibrated.calibration), "tasks": 20},
        "plan": {"base": "atc", "rollout": "atc-tuned"},
        "root": str(tmp_path),
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(conf))
    r = run_here("--config", tmp_path / "config.yaml", "simulate", "--policy", "plan", "--seed", "1")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (
        "sched simulate: error: plan.rollout: atc-tuned: results/benchmark/tuned.json: tuned-k "
        "file not found; run `sched tune` first, or set plan.rollout to atc or base\n"
    )
