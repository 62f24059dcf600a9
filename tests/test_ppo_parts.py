"""The pieces of PPO, each on its own: GAE, explained variance, run progress,
checkpoints, the observation (training end to end: test_ppo.py)."""

import numpy as np
import pytest
import torch

from sched.data.scenario import generate, scenario_model
from sched.learn.policy import features as F
from sched.learn.policy import networks as P
from sched.learn.policy import policy_file as PF
from sched.learn.settings import Training
from sched.sim import core

from .conftest import TINY_TRAIN as TINY


def test_compute_gae_on_a_three_step_toy_trajectory():
    """Hand computation: gamma = lambda = 0.5, so every number is exact in float32.

    Slot 0 never ends: delta_2 = 3 + 0.5 * 2 - 1.5 = 2.5, delta_1 = 2 + 0.5 * 1.5 - 1 = 1.75,
    delta_0 = 1 + 0.5 * 1 - 0.5 = 1; A_2 = 2.5, A_1 = 1.75 + 0.25 * 2.5 = 2.375,
    A_0 = 1 + 0.25 * 2.375 = 1.59375. Slot 1 ends an episode at step 1: no bootstrap
    across it, A_1 = 2 - 1 = 1, A_0 = 1 + 0.25 * 1 = 1.25.
    """
    from sched.learn.ppo.update import compute_gae

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
    from sched.learn.ppo.update import explained_variance

    returns = np.array([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(returns, returns) == 1.0
    assert explained_variance(np.full(4, 2.5), returns) == 0.0
    assert np.isnan(explained_variance(returns, np.ones(4)))


def test_run_progress_counts_episodes_and_keeps_the_best_weights():
    from sched.learn.ppo.checkpoint import RECENT_EPISODES, RunProgress

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
    from sched.learn.ppo import checkpoint
    from sched.learn.ppo.checkpoint import RunProgress
    from sched.learn.ppo.loop import make_env, make_optimizer

    args = Training.of(seed=4, **TINY)
    meta = PF.policy_meta(tiny_cfg, args)
    net = P.build(meta["arch"])
    opt, gen, env = make_optimizer(net, args.ppo), torch.Generator(), make_env(tiny_cfg, args, meta["atc_k"])
    env.reset()
    path = checkpoint.path_for(tmp_path / "politique.pt")
    assert path.name == "politique.pt.ckpt"
    said = []
    assert checkpoint.load(path, checkpoint.fingerprint(meta, args), net, opt, gen, env, said.append) is None
    run = RunProgress(iteration=2, rows=[{"iteration": 1}], env_steps=64, episodes=3, wall=1.5, recent=[7.0])
    checkpoint.save(path, checkpoint.fingerprint(meta, args), run, net, opt, gen, env)
    back = checkpoint.load(path, checkpoint.fingerprint(meta, args), net, opt, gen, env, said.append)
    assert back == run and said == []
    other = checkpoint.fingerprint(meta, Training.of(seed=5, **TINY))
    assert checkpoint.load(path, other, net, opt, gen, env, said.append) is None
    assert said == [f"ignoring checkpoint {path}: made with another config or arguments"]


def test_observation_names_its_parts_and_maps_actions_to_queue_positions(cfg):
    sc = generate(scenario_model(cfg), 2, tasks=60)
    state, _ = core.pack([sc.arrays], 1)
    core.advance_batch(state, True)
    tasks = F.Encoder("tasks", 2.0, 80.0, 0.85)(state)
    assert tasks.slot_qpos is None and tasks.globals_.shape == (1, F.N_GLOBAL)
    assert tasks.x.shape[:2] == tasks.mask.shape
    assert tasks.queue_positions(np.array([1])) == 1  # a row is a queue position
    with pytest.raises(F.FeatureError, match="encoding: expected 'tasks', got 'flat'"):
        F.Encoder("flat", 2.0, 80.0, 0.85)


# ------------------------------------------------------------------ the losses, by hand


@pytest.mark.parametrize(
    "advantage, ratio, want",
    [
        # inside [1 - eps, 1 + eps] = [0.8, 1.2]: the plain surrogate, -A * r
        (2.0, 1.1, -2.2),
        (-2.0, 0.9, 1.8),
        # outside, on the side the advantage favours: clipped, -A * (1 +/- eps)
        (2.0, 1.5, -2.4),
        (-1.0, 0.5, 0.8),
        # outside, on the side it penalises: not clipped (the pessimistic bound), -A * r
        (2.0, 0.5, -1.0),
        (-1.0, 1.5, 1.5),
    ],
)
def test_clipped_policy_loss_by_hand(advantage, ratio, want):
    """loss = max(-A * r, -A * clip(r, 1 - eps, 1 + eps)), eps = 0.2; its gradient in r is
    -A where the plain term is the larger, and 0 where the clipped one is (no incentive to
    move r further)."""
    from sched.learn.ppo.update import clipped_policy_loss

    r = torch.tensor([ratio], dtype=torch.float64, requires_grad=True)
    loss = clipped_policy_loss(torch.tensor([advantage], dtype=torch.float64), r, 0.2)
    assert loss.item() == pytest.approx(want, rel=1e-12)
    loss.backward()
    clipped = abs(want + advantage * ratio) > 1e-12
    assert r.grad.item() == (0.0 if clipped else -advantage)


def test_clipped_policy_loss_is_the_mean_over_decisions():
    from sched.learn.ppo.update import clipped_policy_loss

    adv = torch.tensor([2.0, -2.0, 2.0, -1.0], dtype=torch.float64)
    ratio = torch.tensor([1.1, 0.9, 1.5, 1.5], dtype=torch.float64)
    got = clipped_policy_loss(adv, ratio, 0.2).item()
    assert got == pytest.approx((-2.2 + 1.8 - 2.4 + 1.5) / 4, rel=1e-12)
    # a wider clip range lets the third ratio count in full: -2 * 1.5 = -3
    assert clipped_policy_loss(adv, ratio, 0.5).item() == pytest.approx((-2.2 + 1.8 - 3.0 + 1.5) / 4)


def test_value_loss_by_hand():
    """0.5 * mean(max((v - R)^2, (v_clip - R)^2)), v_clip = v_old + clip(v - v_old, -c, c), c = 0.2.

    Decision 0: v = 2, v_old = 1, R = 3: v_clip = 1.2, max(1, 3.24) = 3.24 (the clipped
    value is further from the return: it counts). Decision 1: v = 1.1, v_old = 1, R = 0:
    inside the clip, 1.21. Decision 2: v = 0, v_old = 1, R = 0.5: v_clip = 0.8,
    max(0.25, 0.09) = 0.25. Unclipped: 0.5 * mean(1, 1.21, 0.25).
    """
    from sched.learn.ppo.update import value_loss

    def t(*v):
        return torch.tensor(v, dtype=torch.float64)

    new, ret, old = t(2.0, 1.1, 0.0), t(3.0, 0.0, 0.5), t(1.0, 1.0, 1.0)
    assert value_loss(new, ret, old, 0.2, True).item() == pytest.approx(0.5 * (3.24 + 1.21 + 0.25) / 3)
    assert value_loss(new, ret, old, 0.2, False).item() == pytest.approx(0.5 * (1.0 + 1.21 + 0.25) / 3)


def test_entropy_is_over_the_valid_actions_only():
    """Three decisions as a compact batch of 3 candidates (the mask marks the valid ones).
    Decision 0: logits (0, 0, masked): entropy ln 2, not ln 3. Decision 1: probabilities
    (1/4, 3/4). Decision 2: one valid action: 0."""

    class Fixed(torch.nn.Module):
        def forward_compact(self, x, ctx, mask):
            logits = torch.tensor([[0.0, 0.0, 5.0], [0.0, np.log(3.0), 1.0], [0.7, 2.0, 2.0]])
            return logits.masked_fill(~mask, -1e9), torch.zeros(3)

    mask = torch.tensor([[True, True, False], [True, True, False], [True, False, False]])
    batch = {"x": None, "ctx": None, "mask": mask}
    logp, h, _ = P.evaluate_actions(Fixed(), batch, torch.tensor([0, 1, 0]))
    want = [np.log(2.0), -(0.25 * np.log(0.25) + 0.75 * np.log(0.75)), 0.0]
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(logp.exp().numpy(), [0.5, 0.75, 1.0], rtol=1e-6)


def test_distillation_loss_on_a_two_decision_toy_batch():
    """Cost-sensitive imitation: mean over decisions of sum_c softmax(logits of the valid
    candidates)_c * (label_c - min label) / scale.

    Decision 0: 3 candidates with labels 0, 200, 100 (extra weighted seconds over ATC's
    choice): regrets 0, 2, 1 at scale 100. Logits ln 2, 0, 0: probabilities 1/2, 1/4, 1/4.
    Expected regret 0.75.
    Decision 1: 2 candidates and one padding, labels 0, -50 (the second is cheaper than
    ATC's choice): regrets 0.5, 0 (and 0 for the padding). Logits ln 3, 0 (and 5 for the
    padding, which must not count): probabilities 3/4, 1/4. Expected regret 0.375.
    Loss (0.75 + 0.375) / 2 = 0.5625.
    """
    from sched.learn.search.distill import imitation_loss, regrets

    valid = torch.tensor([[True, True, True], [True, True, False]])
    # a padding label counts for nothing, whatever it holds (here less than every real one)
    label = torch.tensor([[0.0, 200.0, 100.0], [0.0, -50.0, -1000.0]])
    reg = regrets(label, valid, 100.0)
    assert reg.tolist() == [[0.0, 2.0, 1.0], [0.5, 0.0, 0.0]]
    logits = torch.tensor([[np.log(2.0), 0.0, 0.0], [np.log(3.0), 0.0, 5.0]], dtype=torch.float32)
    loss = imitation_loss(logits, valid, reg)
    assert loss.item() == pytest.approx(0.5625, rel=1e-6)


def test_improved_policy_and_its_cross_entropy_on_a_toy_batch():
    """The improved target softmax(logits - c * regret) over the valid candidates.

    Decision 0: logits 0, 0, 0 and regrets 0, ln 4, ln 4 (c = 1): target 4/6, 1/6, 1/6.
    Decision 1: logits ln 3, 0 (and a padding) and regrets 0, 0: the teacher sees no difference,
    the target is the student's own policy 3/4, 1/4 and the padding gets 0.
    The cross-entropy of logits equal to the targets' logs is their entropy; with c = 0 the target
    is the start's own policy whatever the regrets.
    """
    from sched.learn.search.distill import cross_entropy, improved_policy

    valid = torch.tensor([[True, True, True], [True, True, False]])
    logits = torch.tensor([[0.0, 0.0, 0.0], [np.log(3.0), 0.0, 7.0]], dtype=torch.float32)
    reg = torch.tensor([[0.0, np.log(4.0), np.log(4.0)], [0.0, 0.0, 0.0]], dtype=torch.float32)
    t = improved_policy(logits, valid, reg, 1.0)
    np.testing.assert_allclose(t.numpy(), [[4 / 6, 1 / 6, 1 / 6], [0.75, 0.25, 0.0]], rtol=1e-6, atol=1e-7)
    same = improved_policy(logits, valid, reg, 0.0)
    np.testing.assert_allclose(same[0].numpy(), [1 / 3] * 3, rtol=1e-6)
    ent = [-(4 / 6 * np.log(4 / 6) + 2 / 6 * np.log(1 / 6)), -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))]
    own = torch.log(t.clamp_min(1e-30))
    assert cross_entropy(own, valid, t).item() == pytest.approx(np.mean(ent), rel=1e-5)
    # any other logits cost more (Gibbs' inequality)
    assert cross_entropy(logits, valid, t).item() > np.mean(ent) + 1e-3
