"""The learned policy's time-of-week features (issue 24): the load profile ahead (``ahead_1h``,
``ahead_4h``) and the time of week (``week_sin``, ``week_cos``), from a fitted workload.

A synthetic workload file (a weekly arrival profile) stands in for ``sched calibrate-workload``'s
output; the kernel's features are checked against the plain reference of ``tests/test_kernel.py``.
"""

import json
import math

import numpy as np
import pytest

from sched.config import seed_range
from sched.data.scenario import draw, generate, scenario_model
from sched.data.workload.workload import EPOCH_WEEK_OFFSET_S, draw_arrivals
from sched.learn.policy import features as F
from sched.learn.policy import kernel as K
from sched.sim import core as S
from sched.sim import rules

from .conftest import TINY_TRAIN
from .test_kernel import decisions, make_policy, make_queue, reference_ahead, reference_observation

H = 3600.0
WEEK = 168 * H
MONDAY = 1717372800.0  # 2024-06-03T00:00:00Z, a Monday
#: the time-of-week features' positions in the context (after the candidates' means and maxima)
WEEKLY = [2 * F.N_TASK + F.GLOBAL_FEATURES.index(n) for n in ("ahead_1h", "ahead_4h", "week_sin", "week_cos")]


def weekly_rates(mean_rate):
    """168 hourly rates with a daily cycle and quiet weekends, of mean ``mean_rate``."""
    h = np.arange(168)
    shape = (1.0 + 0.8 * np.sin(2 * np.pi * (h % 24 - 8) / 24)) * np.where(h >= 120, 0.4, 1.0)
    return shape * mean_rate / shape.mean()


@pytest.fixture(scope="module")
def wl_cfg(cfg, tmp_path_factory):
    """The default config with a workload file whose mean load is the config's."""
    c = cfg.replace(scenario={"tasks": 60})
    model = scenario_model(c)
    mean_rate = c["scenario"]["load"] * model.capacity / model.mean_duration * H
    workload = {
        "format": "sched-workload/1",
        "arrivals": {"rate_per_hour": weekly_rates(mean_rate).tolist()},
        "priorities": {
            "classes": [
                {"name": "normal", "weight": 1.0, "share": 0.7},
                {"name": "urgent", "weight": 5.0, "share": 0.3},
            ],
            "by_hour_of_day": None,
        },
        "deadlines": {
            "share_without": 0.2,
            "allowance": {"estimate_edges_s": [300.0], "ratio_quantiles": [[1.5, 3.0, 6.0], [1.2, 2.0, 4.0]]},
        },
    }
    path = tmp_path_factory.mktemp("workload") / "workload.json"
    path.write_text(json.dumps(workload))
    c = c.replace(scenario={"workload": str(path)})
    return c


def test_ahead_integrates_the_profile_across_an_hour_and_the_weeks_wrap():
    profile = np.arange(168.0)  # hour h's load is h
    assert F.ahead(profile, 10.0 * H, 1.0) == pytest.approx(10.0)
    assert F.ahead(profile, 10.5 * H, 1.0) == pytest.approx(10.5)  # half of 10, half of 11
    assert F.ahead(profile, 10.5 * H, 4.0) == pytest.approx((0.5 * 10 + 11 + 12 + 13 + 0.5 * 14) / 4)
    # Sunday 23:30: half an hour of hour 167, then Monday's hours 0, 1, 2 and half of 3
    assert F.ahead(profile, 167.5 * H, 1.0) == pytest.approx((0.5 * 167 + 0.5 * 0) / 1)
    assert F.ahead(profile, 167.5 * H, 4.0) == pytest.approx((0.5 * 167 + 0 + 1 + 2 + 0.5 * 3) / 4)
    rng = np.random.default_rng(0)
    for tow in rng.uniform(0.0, WEEK, 50):
        for hours in (1.0, 4.0):
            assert F.ahead(profile, tow, hours) == pytest.approx(reference_ahead(profile, tow, hours))
    assert F.time_of_week(167.5 * H, 1.0 * H) == pytest.approx(0.5 * H)  # past Sunday: Monday
    assert F.time_of_week(EPOCH_WEEK_OFFSET_S, MONDAY) == 0.0


def test_the_kernel_reads_the_profile_at_sunday_night_as_the_reference():
    """A decision at Sunday 23:30 UTC (the scenario starts 1,000 s earlier): the compiled
    features are the plain reference's, the profile read across the week's wrap."""
    profile = np.arange(168.0) / 100.0
    policy = make_policy(4, seed=3)
    sc = make_queue(np.random.default_rng(2), 20, "now")
    arr = np.full(20, 1000.0)
    sc = (arr, sc[1], sc[2], sc[3], sc[4] + 1000.0)
    net = K.of_network(policy.net, policy.meta["atc_k"], policy.meta["p_ref"], profile, 167.5 * H - 1000.0)
    ws, m, (cand, X, ctx) = next(decisions(policy, sc, net=net))
    np.testing.assert_allclose(ws.ctx, ctx, rtol=1e-12, atol=1e-12)
    got = dict(zip(("ahead_1h", "ahead_4h", "week_sin", "week_cos"), ws.ctx[WEEKLY]))
    assert got["ahead_1h"] == pytest.approx(0.835)
    assert got["ahead_4h"] == pytest.approx(0.22)
    assert got["week_sin"] == pytest.approx(math.sin(2 * math.pi * 167.5 / 168))
    assert got["week_cos"] == pytest.approx(math.cos(2 * math.pi * 167.5 / 168))


@pytest.mark.parametrize("week_start", [0.0, 3 * 86400.0 + 1234.5, WEEK - 600.0])
def test_the_kernel_observes_a_weekly_profile_as_the_reference(week_start):
    rng = np.random.default_rng(int(week_start) % 2**32)
    profile = rng.uniform(0.2, 1.5, 168)
    policy = make_policy(16, seed=7)
    net = K.of_network(policy.net, policy.meta["atc_k"], policy.meta["p_ref"], profile, week_start)
    checked = 0
    for kind in ("now", "later", "epoch"):
        for ws, m, (cand, _, ctx) in decisions(policy, make_queue(rng, 50, kind), 2, net=net):
            assert np.array_equal(ws.cand[:m], cand)
            np.testing.assert_allclose(ws.ctx, ctx, rtol=1e-12, atol=1e-12)
            checked += 1
    assert checked > 30


def test_without_a_workload_ahead_is_the_load_and_the_week_is_zero(cfg):
    model = scenario_model(cfg)
    np.testing.assert_array_equal(model.load_profile(), np.full(168, cfg["scenario"]["load"]))
    policy = make_policy(4, seed=1)
    ws, _, _ = next(decisions(policy, make_queue(np.random.default_rng(1), 20, "later")))
    assert list(ws.ctx[WEEKLY]) == [cfg["scenario"]["load"]] * 2 + [0.0, 0.0]
    assert generate(model, 1, tasks=20).week_start_s == 0.0
    assert draw(model, 1, tasks=20)["week_start_s"] == 0.0


def test_the_load_profile_is_the_workloads_offered_load(wl_cfg):
    model = scenario_model(wl_cfg)
    rate = np.array(model.workload["arrivals"]["rate_per_hour"])
    want = model.workload_scale * rate / H * model.mean_duration / model.capacity
    np.testing.assert_allclose(model.load_profile(), want, rtol=1e-12)
    assert model.load_profile().mean() == pytest.approx(wl_cfg["scenario"]["load"])


def test_a_scenario_from_a_workload_starts_at_the_drawn_time_of_week(wl_cfg):
    model = scenario_model(wl_cfg)
    starts = []
    for seed in (1, 2, 3):
        sc = generate(model, seed, tasks=50)
        # draw()'s arrival stream: the first of the six spawned from the seed
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(6)[0])
        arrival, _, start_hour = draw_arrivals(model.workload, rng, 50, model.workload_scale)
        np.testing.assert_array_equal(sc.frame["arrival_s"].to_numpy(), arrival)
        assert sc.week_start_s == start_hour * H == draw(model, seed, tasks=50)["week_start_s"]
        starts.append(sc.week_start_s)
    assert len(set(starts)) == 3 and all(0 <= s < WEEK for s in starts)


def test_training_slots_and_validation_carry_their_scenarios_week_start(wl_cfg):
    from sched.learn.ppo.loop import make_env
    from sched.learn.settings import Training
    from sched.learn.validation import Validator

    args = Training.of(seed=2, num_envs=4, tasks=40, teacher_scenarios=0, validation_scenarios=3)
    env = make_env(wl_cfg, args, 2.0)
    obs = env.reset()
    model = scenario_model(wl_cfg)
    for b in range(env.B):
        d = draw(model, int(env.slot_seed[b]), tasks=40, machines=env.speeds)
        assert env.slot_week[b] == d["week_start_s"]
        np.testing.assert_allclose(env.slot_profile[b], model.load_profile())
        if env.state.pending[b] >= 0:  # the Gymnasium encoding reads the same time of week
            g = obs.globals_[b]
            tow = (env.slot_week[b] + env.state.t[b]) % WEEK
            assert g[F.GLOBAL_FEATURES.index("week_sin")] == pytest.approx(math.sin(2 * math.pi * tow / WEEK))
    val = Validator(wl_cfg, args.validation_scenarios, args.tasks)
    seeds = list(seed_range(wl_cfg, "validation"))[:3]
    assert val.weeks == [draw(model, s, tasks=40)["week_start_s"] for s in seeds]


@pytest.fixture(scope="module")
def wl_policy(wl_cfg, tmp_path_factory):
    """A policy file trained (briefly) on the workload: its meta holds the workload's profile."""
    from sched.learn.chain import train
    from sched.learn.settings import Training

    out = tmp_path_factory.mktemp("wl-train") / "weekly.pt"
    train(wl_cfg, Training.of(seed=4, **dict(TINY_TRAIN, iterations=2)), out, progress=False)
    return out


def test_a_workload_policy_file_holds_the_profile(wl_policy, wl_cfg):
    from sched.learn.policy.policy_file import load

    policy = load(wl_policy)
    np.testing.assert_allclose(policy.meta["profile"], scenario_model(wl_cfg).load_profile(), rtol=1e-15)
    assert K.of_policy(policy).weekly


def test_rank_at_two_times_of_week_differs_only_in_the_time_of_week(wl_policy, tmp_path, monkeypatch):
    """The same queue, relative to ``now``, on a Monday at 10:30 and on a Sunday at 23:30 UTC:
    rank() passes the epoch's week start, and the first decision's features differ only in
    ahead_1h, ahead_4h, week_sin and week_cos, which are the profile's at those times."""
    from sched import rank
    from sched.learn.policy.policy_file import load

    seen = []
    real = K.run_one

    def spy(policy, scenario, machines=1, machine_free=None, week_start_s=0.0):
        seen.append((policy, scenario, machines, machine_free, week_start_s))
        return real(policy, scenario, machines, machine_free, week_start_s)

    monkeypatch.setattr(K, "run_one", spy)
    rng = np.random.default_rng(8)
    est, w, slack = rng.lognormal(5.0, 1.0, 25), rng.choice([1.0, 5.0], 25), rng.uniform(-500, 5000, 25)
    config = {"rank": {k: str(tmp_path / k) for k in ("winner", "tuned", "settings")}}
    profile = np.array(load(wl_policy).meta["profile"])
    seen_obs = []
    for tow in (10.5 * H, 167.5 * H):
        now = MONDAY + tow
        tasks = [
            {"id": f"t{i}", "estimate_s": float(e), "weight": float(x), "due": now + float(s)}
            for i, (e, x, s) in enumerate(zip(est, w, slack))
        ]
        rank(tasks, now=now, policy=str(wl_policy), config=config)
        policy, scenario, machines, free, week = seen[-1]
        assert week == EPOCH_WEEK_OFFSET_S
        net = K.at_week(K.of_policy(policy), week)
        state, _ = S.pack([scenario], machines, free)
        S.set_rule(state, 0, rules.ATC)
        assert S._advance(state, 0, True)
        ws = K.workspace(state.queue.shape[1], net)
        m = K.observe(state, 0, net, ws)
        assert (float(state.t[0]) + week) % WEEK == pytest.approx(tow)
        _, X, ctx = reference_observation(state, 0, net)
        np.testing.assert_allclose(ws.ctx, ctx, rtol=1e-12, atol=1e-12)
        want = [reference_ahead(profile, tow, 1.0), reference_ahead(profile, tow, 4.0)]
        want += [math.sin(2 * math.pi * tow / WEEK), math.cos(2 * math.pi * tow / WEEK)]
        np.testing.assert_allclose(ws.ctx[WEEKLY], want, rtol=1e-9, atol=1e-12)
        seen_obs.append((ws.cand[:m].copy(), ws.X[:m].copy(), ws.ctx.copy()))
    (c1, x1, g1), (c2, x2, g2) = seen_obs
    assert np.array_equal(c1, c2)
    np.testing.assert_allclose(x1, x2, rtol=1e-9, atol=1e-9)
    rest = np.setdiff1d(np.arange(K.N_CTX), WEEKLY)
    np.testing.assert_allclose(g1[rest], g2[rest], rtol=1e-9, atol=1e-9)
    assert np.all(np.abs(g1[WEEKLY] - g2[WEEKLY]) > 1e-3)
