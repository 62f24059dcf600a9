"""The Gymnasium environment: registration, action masks, invalid actions, rewards."""

import numpy as np
import pytest
import yaml

from sched.data.objective import weighted_tardiness
from sched.data.scenario import draw, scenario_model
from sched.errors import SchedError
from sched.learn.policy import features as F
from sched.sim import core

# gymnasium is an optional extra (`pip install '.[gym]'`, part of `.[dev]`)
gymnasium = pytest.importorskip("gymnasium")

from sched.learn.env import gym_env as G  # noqa: E402  (needs gymnasium)


def _cfg(cfg, tasks=40):
    c = cfg.replace(scenario={"tasks": tasks})
    return c


def _late_cfg(cfg, tasks):
    """Deadlines shorter than the tasks: tardiness accrues before the first choice too."""
    c = _cfg(cfg, tasks)
    c = c.replace(scenario={"due": {"flow_factor": [0.1, 0.2], "slack_s": [0.0, 0.0]}})
    return c


class _AnyActionToValid(gymnasium.ActionWrapper):
    """Maps any action onto a valid row, for ``check_env``: it steps with unmasked random actions."""

    def action(self, action):
        return int(action) % int(self.env.unwrapped.action_masks().sum())


def test_registered_id_makes_the_environment(cfg):
    spec = gymnasium.spec(G.ENV_ID)
    assert G.ENV_ID == "sched/RenderQueue-v0"
    assert spec.entry_point == "sched.learn.env.gym_env:RenderQueueEnv"
    for env_id in (G.ENV_ID, "sched.learn.env.gym_env:sched/RenderQueue-v0"):
        env = gymnasium.make(env_id, cfg=_cfg(cfg), max_queue=16)
        assert isinstance(env.unwrapped, G.RenderQueueEnv) and env.unwrapped.max_queue == 16
        obs, info = env.reset(seed=1)
        assert obs["tasks"].shape == (16, F.N_TASK) and obs["globals"].shape == (F.N_GLOBAL,)
        assert np.array_equal(env.unwrapped.action_masks(), obs["action_mask"].astype(bool))
        obs, r, terminated, truncated, info = env.step(0)
        assert isinstance(r, float) and not truncated
        env.close()


# check_env warns that it checks a wrapped environment: the wrapper only maps its random actions
@pytest.mark.filterwarnings("ignore:.*is different from the unwrapped version")
def test_passes_check_env_and_rewards_sum_to_the_total(cfg):
    from gymnasium.utils.env_checker import check_env

    env = G.make_gym_env(_cfg(cfg), max_queue=16)
    check_env(_AnyActionToValid(env), skip_render_check=True)
    obs, info = env.reset(seed=7)
    total, done = 0.0, False
    while not done:
        valid = np.flatnonzero(obs["action_mask"])
        obs, r, done, trunc, info = env.step(int(valid[-1]))
        total += r
    assert total == pytest.approx(-0.001 * info["total_weighted_tardiness_s"], rel=1e-9, abs=1e-12)


def test_invalid_action_raises_naming_it_and_the_valid_count(cfg):
    env = G.make_gym_env(_cfg(cfg, 60), max_queue=8)
    env.reset(seed=2)
    while env.action_masks().sum() in (0, 8):  # a decision with some rows masked
        env.step(0)
    n = int(env.action_masks().sum())
    for bad in (n, 8, 100, -1, 0.5, "0"):
        with pytest.raises(G.InvalidActionError, match=rf"action {bad!r}: .* {n} valid actions"):
            env.step(bad)
    assert issubclass(G.InvalidActionError, SchedError) and issubclass(G.InvalidActionError, ValueError)
    before = int(env.state.nstarted[0])
    env.step(np.int64(n - 1))  # a refused action changed nothing: a valid one still plays
    assert env.state.nstarted[0] == before + 1


def test_step_after_the_end_or_before_reset_is_refused(cfg):
    env = G.make_gym_env(_cfg(cfg, 5), max_queue=8)
    with pytest.raises(G.InvalidActionError, match="0 valid actions"):
        env.step(0)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(0)
    assert not env.action_masks().any()
    with pytest.raises(G.InvalidActionError, match="action 0: .* 0 valid actions .*reset"):
        env.step(0)


def test_masks_match_the_waiting_tasks(cfg):
    c = _cfg(cfg, 120)
    c = c.replace(scenario={"load": 1.3})  # long queues: more tasks wait than max_queue shows
    env = G.make_gym_env(c, max_queue=6)
    obs, info = env.reset(seed=4)
    crowded = 0
    done = False
    while not done:
        mask = env.action_masks()
        ql = int(env.state.qlen[0])
        n = min(ql, 6)
        assert mask.dtype == bool and mask.shape == (6,)
        assert np.array_equal(mask, np.arange(6) < n)
        assert np.array_equal(mask, obs["action_mask"].astype(bool))
        assert (obs["tasks"][n:] == 0).all()
        if ql > 6:  # the visible rows are the best by ATC index, best first
            crowded += 1
            ranks = np.round(obs["tasks"][:n, F.ATC_RANK_INDEX] * ql)
            assert np.array_equal(ranks, np.arange(n))
        obs, r, done, trunc, info = env.step(int(np.flatnonzero(mask)[-1]))
    assert crowded > 0  # the case this test is about


def test_first_row_policy_pays_minus_the_scaled_fifo_tardiness(cfg):
    """Row 0 is the oldest waiting task while every task is visible: always playing it is FIFO."""
    c = _late_cfg(cfg, 50)
    scale = 0.002
    env = G.make_gym_env(c, max_queue=50, reward_scale=scale)
    for scenario_seed in (11, 12):
        obs, info = env.reset(options={"scenario_seed": scenario_seed})
        total, steps, done = 0.0, 0, False
        while not done:
            obs, r, done, trunc, info = env.step(0)
            total += r
            steps += 1
        d = draw(scenario_model(c), scenario_seed)
        ((_, end, _),) = core.simulate_batch(
            [(d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])], "fifo", machines=1
        )
        want = weighted_tardiness(end, d["due"], d["weight"])
        assert want > 0 and steps == 50  # every decision is a step, forced ones included
        assert info["total_weighted_tardiness_s"] == pytest.approx(want, rel=1e-12)
        assert total == pytest.approx(-scale * want, rel=1e-9)


def test_shows_every_decision_and_pays_every_second_of_tardiness(cfg):
    env = G.make_gym_env(_late_cfg(cfg, 1), max_queue=4)
    obs, info = env.reset(seed=3)
    assert obs["action_mask"].sum() == 1  # one task: a step with one valid action
    obs, r, done, trunc, info = env.step(0)
    assert done and not trunc
    assert info["total_weighted_tardiness_s"] > 0
    assert r == pytest.approx(-0.001 * info["total_weighted_tardiness_s"], rel=1e-9)


def test_without_a_config_it_reads_config_yaml_like_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert G.make_gym_env().cfg["scenario"]["tasks"] == 400  # no config.yaml: the defaults
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"scenario": {"tasks": 17, "calibration": None}}))
    env = G.make_gym_env(max_queue=4)
    assert env.cfg["scenario"]["tasks"] == 17
    env.reset(seed=0)
    done, steps = False, 0
    while not done:
        _, _, done, _, _ = env.step(0)
        steps += 1
    assert steps == 17
