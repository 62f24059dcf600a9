"""Issue 25: the paired stopping rule, the teacher as a policy, expert iteration's seeds and
stages, the grouped baseline of PPO, and the commands' refusals."""

import numpy as np
import pytest
import torch

from .conftest import TINY_TRAIN

# ------------------------------------------------------------------ the paired stopping rule


def test_settled_only_when_every_candidate_is_clearly_better_or_worse():
    from sched.learn.search import plan as P

    base = np.array([10.0, 12.0, 11.0, 13.0])
    worse = base + np.array([5.0, 5.5, 4.5, 5.2])  # clearly worse: interval above 0
    better = base - np.array([5.0, 5.5, 4.5, 5.2])  # clearly better
    close = base + np.array([1.0, -1.0, 1.5, -1.2])  # interval around 0
    assert P.settled(np.array([base, worse, better]), 4, 2.0)
    assert not P.settled(np.array([base, worse, close]), 4, 2.0)
    assert not P.settled(np.array([base, worse]), 1, 2.0)  # one sample: no standard error
    b = np.empty(3)
    P.bounds(np.array([base, worse, close]), 4, 0.0, b)
    np.testing.assert_allclose(b, [0.0, 5.05, 0.075])


def test_the_stopping_rule_draws_fewer_samples_and_chunk_zero_is_plans_fixed_count(tiny_cfg):
    """On one scenario the teacher's planner with a stopping rule draws at most its samples, fewer
    when decisions settle; without (chunk 0, plan's) it draws every sample of every planned
    decision; both schedule every task."""
    from sched.data.scenario import draw, scenario_model
    from sched.learn.search.planner import Planner, rule_base

    d = draw(scenario_model(tiny_cfg), 2000000, tasks=300)
    sc = (d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])
    st = dict(tiny_cfg["plan"], candidates=3, samples=16, horizon=10, z=1.0, rollout="base", futures=50)
    base = rule_base("atc", 2.0)
    full, early = {}, {}
    a = Planner(tiny_cfg, base, st).schedule(sc, stats=full)
    b = Planner(tiny_cfg, base, st, chunk=4).schedule(sc, stats=early)
    assert full["samples"] == 16 * full["decisions"]
    assert early["samples"] < full["samples"]
    assert early["samples"] >= 4 * early["decisions"]
    assert len(b[0]) == len(a[0]) == 300 and np.isfinite(b[0]).all()  # every task scheduled


def test_the_teacher_policy_is_the_planner_with_the_teachers_settings(tiny_cfg):
    from sched.evaluate.policies import competes, resolve_policies

    c = tiny_cfg.replace(
        train=dict(teacher_base="wmdd", teacher_samples=8, teacher_chunk=4, teacher_horizon=12, teacher_z=1.5)
    )
    spec = resolve_policies(c, ["teacher"])[0]["teacher"]
    assert spec["kind"] == "plan" and spec["base_spec"]["rule"] == "wmdd" and spec["rollout_spec"] is None
    assert spec["settings"]["samples"] == 8 and spec["settings"]["horizon"] == 12
    assert spec["settings"]["z"] == 1.5 and spec["chunk"] == 4
    assert not competes("teacher")


# ------------------------------------------------------------------ names and seeds


def test_round_names_sort_after_their_warm_start_and_never_compete():
    from sched.evaluate.policies import competes, is_learned, parse_policies, policy_key, round_of

    names = ["ppo-2-r1", "ppo-1-r2", "ppo-1", "ppo-1-warm", "ppo-1-r1", "atc", "ppo-2"]
    assert sorted(names, key=policy_key) == [
        "atc",
        "ppo-1",
        "ppo-1-warm",
        "ppo-1-r1",
        "ppo-1-r2",
        "ppo-2",
        "ppo-2-r1",
    ]
    assert all(is_learned(n) for n in names if n != "atc")
    assert not competes("ppo-1-r2") and competes("ppo-1")
    assert round_of("ppo-3-r12") == 12
    assert parse_policies("atc,ppo-1-r2,teacher", {}) == ["atc", "ppo-1-r2", "teacher"]


def test_each_round_labels_its_own_seeds_after_the_warm_starts():
    from sched.config import seed_range
    from sched.learn.search.iterate import round_follow, round_seeds
    from sched.learn.settings import Training

    cfg = {"seeds": {"train": {"start": 100, "count": 50}}}
    a = Training.of(teacher_scenarios=10, round_scenarios=4, round_teacher_share=0.5)
    r1, r2 = round_seeds(cfg, a, 1), round_seeds(cfg, a, 2)
    assert r1 == [110, 111, 112, 113] and r2 == [114, 115, 116, 117]
    assert set(r1).isdisjoint(seed_range(cfg, "train")[:10])
    assert round_follow(a.rounds, 4) == [True, True, False, False]
    with pytest.raises(ValueError, match="round_scenarios"):
        round_seeds(cfg, Training.of(teacher_scenarios=10, round_scenarios=30), 2)


# ------------------------------------------------------------------ distillation stages


def _misleading_labels(policy, n=400):
    """Labels that call ATC's choice (candidate 0) the most expensive one: a student that learns
    them does worse than its ATC start."""
    from sched.learn.policy import kernel

    K = policy.meta["arch"]["top_k"]
    rng = np.random.default_rng(0)
    return {
        "x": rng.normal(size=(n, K, kernel.N_TASK)).astype(np.float32),
        "ctx": rng.normal(size=(n, kernel.N_CTX)).astype(np.float32),
        "count": np.full(n, K, dtype=np.int64),
        "label": np.tile(np.r_[1e4, np.zeros(K - 1)], (n, 1)).astype(np.float32),
        "mean": np.tile(np.r_[1e4, np.zeros(K - 1)], (n, 1)).astype(np.float32),
        "scenario_seed": np.zeros(n, dtype=np.int64),
    }


def test_a_round_that_does_worse_on_validation_keeps_its_start(tmp_path, tiny_cfg, tiny_policy):
    """distill_stage validates the student against its start and keeps the start's weights when
    the student is worse; the file says which it kept, and both scores."""
    from sched.learn.policy import policy_file
    from sched.learn.search.iterate import distill_stage
    from sched.learn.settings import Training

    start, _ = tiny_policy
    pol = policy_file.load(start)
    args = Training.of(**{**TINY_TRAIN, "seed": 3, "distill_epochs": 3, "distill_lr": 0.05})
    out = tmp_path / "round-1.pt"
    summary = distill_stage(tiny_cfg, args, _misleading_labels(pol), out, start=start, stage="round-1")
    got = policy_file.load(out)
    assert (
        summary["kept"]
        == got.meta["kept"]
        == ("start" if summary["val_distilled"] > summary["val_start"] else "distilled")
    )
    assert got.meta["stage"] == "round-1"
    assert got.meta["val_weighted_tardiness_s"] == min(summary["val_start"], summary["val_distilled"])
    if summary["kept"] == "start":
        for k, v in pol.net.state_dict().items():
            torch.testing.assert_close(got.net.state_dict()[k], v)


def test_distill_and_teach_round_refuse_bad_arguments_in_one_line(tmp_path, calibrated, capsys):
    from sched import cli  # in this process: each call fails before any work, in a second

    def run(*args):
        code = cli.main(["--config", str(calibrated.config), *map(str, args)])
        return code, capsys.readouterr().err

    code, err = run("teach", "--round", "1", "--out", tmp_path / "l.npz")
    assert code == 2 and "--round: needs --policy" in err and "Traceback" not in err
    code, err = run("teach", "--round", "0", "--policy", "x.pt", "--out", tmp_path / "l.npz")
    assert code == 2 and "--round: expected a round >= 1, got 0" in err
    code, err = run("teach", "--policy", "x.pt", "--out", tmp_path / "l.npz")
    assert code == 2 and "--policy: only with --round" in err
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a label file")
    code, err = run("distill", "--labels", bad, "--out", tmp_path / "p.pt")
    assert code == 2 and "not a teacher label file" in err and "Traceback" not in err
    assert not (tmp_path / "p.pt").exists()


def test_train_init_refuses_a_policy_of_another_architecture(tmp_path, tiny_cfg, tiny_policy):
    from sched.learn.chain import train
    from sched.learn.settings import Training, TrainSettingsError

    start, _ = tiny_policy
    args = Training.of(**{**TINY_TRAIN, "seed": 3, "hidden": 8, "teacher_scenarios": 0})
    with pytest.raises(TrainSettingsError, match=r"--init: .*architecture"):
        train(tiny_cfg, args, tmp_path / "p.pt", progress=False, init=start)


# ------------------------------------------------------------------ the grouped baseline


def test_leave_one_out_takes_the_others_return_at_the_same_time():
    """Two groups of 3: each decision's baseline is the mean of the other slots' return from
    their first decision at or after its time (0 past their last decision), computed by hand."""
    from sched.learn.ppo.rollout import leave_one_out

    nan = np.nan
    times = np.array([[0.0, 0.0, 0.0, 0, 0, 0], [5.0, 7.0, 3.0, 1, 1, 1], [9.0, nan, 8.0, 2, 2, 2]])
    returns = np.array([[-9.0, -6.0, -3.0, 1, 2, 3], [-4.0, -2.0, -1.0, 1, 2, 3], [-1.0, 0.0, -0.5, 1, 2, 3]])
    b = leave_one_out(times, returns, 3)
    # slot 0 at t=5: slot 1's first decision at/after 5 is t=7 (-2), slot 2's is t=8 (-0.5)
    assert b[1, 0] == pytest.approx((-2.0 + -0.5) / 2)
    # slot 0 at t=9: slot 1 has none left (0), slot 2 none at/after 9 (0)
    assert b[2, 0] == 0.0
    # slot 1 at t=0: the others' returns from t=0
    assert b[0, 1] == pytest.approx((-9.0 + -3.0) / 2)
    assert np.isnan(b[2, 1])  # no decision there
    assert b[1, 4] == pytest.approx((1 + 3) / 2)  # the second group reads only its own slots


def test_grouped_ppo_runs_one_scenario_per_group_and_logs_its_baseline(tmp_path, tiny_cfg):
    """With group_size 2 every group's slots hold one scenario; a training run logs the
    baseline's explained variance (a number, not NaN) and the critic's learned part."""
    import csv

    from sched.learn.chain import train
    from sched.learn.ppo.loop import make_env
    from sched.learn.settings import Training

    over = {"seed": 4, "group_size": 2, "teacher_scenarios": 0, "iterations": 2, "tasks": 200}
    args = Training.of(**{**TINY_TRAIN, **over, "eval_every": 2, "checkpoint_every": 0})
    env = make_env(tiny_cfg, args, 2.0)
    env.load_groups()
    assert (env.slot_seed[0::2] == env.slot_seed[1::2]).all()
    np.testing.assert_array_equal(env.state.due[0], env.state.due[1])
    out = tmp_path / "p.pt"
    train(tiny_cfg, args, out, progress=False)
    rows = list(csv.DictReader(open(out.with_name("train_log.csv"))))
    ev = [float(r["explained_variance_baseline"]) for r in rows if int(r["iteration"]) > 0]
    assert len(ev) == 2 and all(np.isfinite(ev)) and all(e <= 1.0 for e in ev)
    assert all(r["explained_variance_learned"] != "" for r in rows)


def test_plan_on_two_threads_gives_the_schedules_of_one(tiny_cfg):
    """The benchmark runs plan's scenarios side by side (its compiled rollout releases the GIL):
    the schedules are those of one thread, in the scenarios' order."""
    from sched import threads
    from sched.evaluate.policies import teacher_spec
    from sched.evaluate.runs import generate_scenarios, schedule_policy

    c = tiny_cfg.replace(train=dict(teacher_samples=6, teacher_chunk=2, teacher_horizon=8))
    c = c.replace(plan={"futures": 50})
    spec = teacher_spec(c)
    sc = generate_scenarios(c, range(2000000, 2000004))
    arrays = [s.arrays for s in sc]
    try:
        threads.apply(1)
        one = schedule_policy(spec, sc, arrays, 1, c)
        threads.apply(2)
        two = schedule_policy(spec, sc, arrays, 1, c)
    finally:
        threads.apply(1)
    for a, b in zip(one, two):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_the_gated_teacher_as_a_policy_gives_the_same_schedules_call_after_call(tiny_cfg):
    """Its paired stopping rule reads the candidates' rows of its costs only: with fewer waiting
    tasks than candidates, the rows past them are uninitialised memory, which made the teacher's
    row of the plan benchmark change from one call to the next (issue 45)."""
    from sched.evaluate.policies import teacher_spec
    from sched.evaluate.runs import generate_scenarios, schedule_policy

    c = tiny_cfg.replace(
        train=dict(teacher_samples=8, teacher_chunk=2, teacher_horizon=8, teacher_candidates=6)
    )
    c = c.replace(plan={"futures": 50})
    spec = teacher_spec(c)
    sc = generate_scenarios(c, range(2000000, 2000006))
    arrays = [s.arrays for s in sc]
    first = schedule_policy(spec, sc, arrays, 1, c)
    for _ in range(4):
        for a, b in zip(first, schedule_policy(spec, sc, arrays, 1, c)):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)


def test_a_round_continued_by_atc_labels_the_policys_states_with_other_costs(tiny_cfg, tiny_policy):
    """train.round_continuation: on the scenarios that follow the policy, a round whose rollouts
    ATC continues labels the very states a round continued by the policy labels (the candidates
    and the states are the policy's either way), with costs of other rollouts: the labels differ
    somewhere. Both report their label yield, the share of labelled decisions where some
    candidate's bound (yield_bound) or mean (yield_mean) is below the policy's choice's."""
    from sched.learn.policy import policy_file
    from sched.learn.search.iterate import round_labels
    from sched.learn.settings import Training

    start, _ = tiny_policy
    pol = policy_file.load(start)
    common = dict(
        TINY_TRAIN,
        seed=3,
        teacher_scenarios=2,
        round_scenarios=2,
        round_teacher_share=0.0,
        round_samples=6,
        round_chunk=3,
        round_horizon=8,
    )
    out = {}
    for how in ("policy", "atc"):
        labels, stats = round_labels(tiny_cfg, Training.of(**common, round_continuation=how), pol, 1)
        out[how] = labels
        assert stats["labelled"] == len(labels["count"]) > 0
        assert stats["yield_bound"] == pytest.approx(float((labels["label"].min(1) < 0).mean()))
        assert stats["yield_mean"] == pytest.approx(float((labels["mean"].min(1) < 0).mean()))
        assert stats["yield_bound"] <= stats["yield_mean"] + 1e-12  # a bound below 0 has its mean below
    p, a = out["policy"], out["atc"]
    np.testing.assert_array_equal(p["x"], a["x"])
    np.testing.assert_array_equal(p["count"], a["count"])
    assert not np.array_equal(p["mean"], a["mean"])
