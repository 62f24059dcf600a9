"""The pieces of PPO, each on its own: GAE, explained variance, Args, run progress,
checkpoints, the observation (training end to end: test_ppo.py)."""

import numpy as np
import torch

from sched.data.scenario import generate
from sched.learn import features as F
from sched.learn import networks as P
from sched.learn import policy_file as PF
from sched.learn.ppo import Args
from sched.sim import core

from .conftest import TINY_TRAIN as TINY


def test_compute_gae_on_a_three_step_toy_trajectory():
    """Hand computation: gamma = lambda = 0.5, so every number is exact in float32.

    Slot 0 never ends: delta_2 = 3 + 0.5 * 2 - 1.5 = 2.5, delta_1 = 2 + 0.5 * 1.5 - 1 = 1.75,
    delta_0 = 1 + 0.5 * 1 - 0.5 = 1; A_2 = 2.5, A_1 = 1.75 + 0.25 * 2.5 = 2.375,
    A_0 = 1 + 0.25 * 2.375 = 1.59375. Slot 1 ends an episode at step 1: no bootstrap
    across it, A_1 = 2 - 1 = 1, A_0 = 1 + 0.25 * 1 = 1.25.
    """
    from sched.learn.update import compute_gae

    rewards = np.array([[1, 1], [2, 2], [3, 3]], dtype=np.float32)
    values = np.array([[0.5, 0.5], [1.0, 1.0], [1.5, 1.5]], dtype=np.float32)
    dones = np.array([[0, 0], [0, 1], [0, 0]], dtype=np.float32)
    next_value = np.array([2.0, 2.0], dtype=np.float32)
    adv, ret = compute_gae(rewards, values, dones, next_value, gamma=0.5, gae_lambda=0.5)
    assert adv.dtype == np.float32 and adv.shape == (3, 2)
    np.testing.assert_array_equal(adv[:, 0], [1.59375, 2.375, 2.5])
    np.testing.assert_array_equal(adv[:, 1], [1.25, 1.0, 2.5])
    np.testing.assert_array_equal(ret, adv + values)
    # gamma = lambda = 1, no episode end: the advantage is the return-to-go minus the value
    adv1, _ = compute_gae(rewards, values, np.zeros_like(dones), next_value, gamma=1.0, gae_lambda=1.0)
    np.testing.assert_array_equal(adv1[:, 0], [6 + 2 - 0.5, 5 + 2 - 1.0, 3 + 2 - 1.5])


def test_explained_variance():
    from sched.learn.update import explained_variance

    returns = np.array([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(returns, returns) == 1.0
    assert explained_variance(np.full(4, 2.5), returns) == 0.0
    assert np.isnan(explained_variance(returns, np.ones(4)))


def test_every_setting_of_args_has_a_docstring():
    import ast
    import inspect

    import sched.learn.ppo as ppo

    (cls,) = [n for n in ast.parse(inspect.getsource(ppo)).body if getattr(n, "name", "") == "Args"]
    documented = {
        a.target.id
        for a, b in zip(cls.body, cls.body[1:])
        if isinstance(a, ast.AnnAssign) and isinstance(b, ast.Expr) and isinstance(b.value.value, str)
    }
    import dataclasses

    assert documented == {f.name for f in dataclasses.fields(Args)}


def test_run_progress_counts_episodes_and_keeps_the_best_weights():
    from sched.learn.checkpoint import RECENT_EPISODES, RunProgress

    run = RunProgress()
    run.count([(1, 0.85, 10.0), (2, 0.85, 20.0)], steps=32)
    run.count([(3, 0.85, float(i)) for i in range(RECENT_EPISODES)], steps=32)
    assert (run.env_steps, run.episodes) == (64, RECENT_EPISODES + 2)
    assert run.recent == [float(i) for i in range(RECENT_EPISODES)]
    net = torch.nn.Linear(2, 1)
    run.keep_if_best(5.0, 3, net)
    kept = run.best["state"]["weight"].clone()
    with torch.no_grad():
        net.weight += 1.0
    run.keep_if_best(6.0, 4, net)  # worse: not kept
    run.keep_if_best(float("nan"), 5, net)  # no score: not kept
    assert run.best["iteration"] == 3 and run.best["score"] == 5.0
    assert torch.equal(run.best["state"]["weight"], kept)  # a copy, not the live weights


def test_checkpoint_of_other_settings_is_ignored(tmp_path, tiny_cfg):
    from sched.learn import checkpoint
    from sched.learn.checkpoint import RunProgress
    from sched.learn.ppo import make_env, make_optimizer

    args = Args(seed=4, **TINY)
    meta = PF.policy_meta(tiny_cfg, args)
    net = P.build(meta["arch"])
    opt, gen, env = make_optimizer(net, args), torch.Generator(), make_env(tiny_cfg, args, meta["atc_k"])
    env.reset()
    path = checkpoint.path_for(tmp_path / "politique.pt")
    assert path.name == "politique.pt.ckpt"
    said = []
    assert checkpoint.load(path, checkpoint.fingerprint(meta, args), net, opt, gen, env, said.append) is None
    run = RunProgress(iteration=2, rows=[{"iteration": 1}], env_steps=64, episodes=3, wall=1.5, recent=[7.0])
    checkpoint.save(path, checkpoint.fingerprint(meta, args), run, net, opt, gen, env)
    back = checkpoint.load(path, checkpoint.fingerprint(meta, args), net, opt, gen, env, said.append)
    assert back == run and said == []
    other = checkpoint.fingerprint(meta, Args(seed=5, **TINY))
    assert checkpoint.load(path, other, net, opt, gen, env, said.append) is None
    assert said == [f"ignoring checkpoint {path}: made with another config or arguments"]


def test_observation_names_its_parts_and_maps_actions_to_queue_positions(cfg):
    sc = generate(cfg, 2, tasks=60)
    state, _ = core.pack([sc.arrays], 1)
    core.advance_batch(state, True)
    tasks = F.Encoder("tasks", 2.0, 80.0, 0.85)(state)
    assert tasks.slot_qpos is None and tasks.globals_.shape == (1, F.N_GLOBAL)
    assert tasks.x.shape[:2] == tasks.mask.shape
    assert tasks.queue_positions(np.array([1])) == 1  # a row is a queue position
    flat = F.Encoder("flat", 2.0, 80.0, 0.85)(state)
    assert flat.globals_ is None and flat.x.shape == (1, F.FLAT_SIZE)
    assert flat.queue_positions(np.array([0])) == flat.slot_qpos[0, 0]
