"""The compiled sampler of PPO's rollout (sched.learn.ppo.sampler) against the greedy decision and
torch's definitions, and the privileged hint's reuse of its ATC rollout (core.cost_to_go_cached)
against a fresh one."""

import numpy as np
import pytest
import torch

from sched.learn.policy import kernel, policy_file
from sched.learn.policy import networks as P
from sched.learn.ppo.loop import make_env
from sched.learn.ppo.rollout import CompiledSampler, collect_compiled
from sched.learn.settings import Training
from sched.sim import core


def setup(cfg, seed=5, envs=6, tasks=80, privileged=False):
    args = Training.of(
        seed=seed, num_envs=envs, tasks=tasks, teacher_scenarios=0, hidden=16, privileged_critic=privileged
    )
    meta = policy_file.policy_meta(cfg, args)
    torch.manual_seed(seed)
    net = P.build(meta["arch"])
    with torch.no_grad():  # a correction network that matters, so the test sees it
        net.actor[-1].weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(seed))
    env = make_env(cfg, args, meta["atc_k"])
    env.reset()
    return args, net, env


def sample_now(env, net, u=None):
    draw = CompiledSampler(env, net)
    B, K = env.B, draw.K
    X = np.zeros((B, K, 12), np.float32)
    C = np.zeros((B, kernel.N_CTX), np.float32)
    count, choice = np.zeros(B, np.int64), np.zeros(B, np.int64)
    logp = np.zeros(B, np.float32)
    if u is not None:
        env.action_rng = type("Fixed", (), {"random": lambda self, out: out.__setitem__(Ellipsis, u)})()
    qpos = draw(env, env.kernel_net(net), X, C, count, choice, logp).copy()
    return X, C, count, choice, logp, qpos


def test_the_sampler_observes_what_the_greedy_decision_observes(cfg):
    """The sampler's observation is the compiled decision's; with uniforms that favour no
    candidate strongly it may draw another, but the greedy argmax of its scores is the
    greedy policy's choice, and torch's training forward scores it alike."""
    _, net, env = setup(cfg)
    knet = env.kernel_net(net)
    ws = kernel.workspace(env.tasks, knet)
    checked = 0
    for _ in range(30):  # queues of various lengths
        X, C, count, choice, logp, qpos = sample_now(env, net)
        mask = torch.arange(X.shape[1]).unsqueeze(0) < torch.from_numpy(count).unsqueeze(1)
        with torch.no_grad():
            clog, _ = net.forward_compact(torch.from_numpy(X), torch.from_numpy(C), mask)
        for b in range(env.B):
            if env.state.pending[b] < 0:
                continue
            m = kernel.scored(env.state, b, kernel.at(knet, env.slot_profile[b], env.slot_week[b]), ws)
            assert count[b] == m == min(net.top_k, env.state.qlen[b])
            assert np.allclose(X[b, :m], ws.X[:m], atol=1e-6) and np.allclose(C[b], ws.ctx, atol=1e-6)
            assert np.allclose(clog[b, :m].numpy(), ws.v[:m], atol=1e-4)
            assert np.all(clog[b, m:].numpy() == -1e9)
            assert ws.cand[choice[b]] == qpos[b]
            checked += 1
        env.step(qpos, observe=False)
    assert checked > 100


def test_sampler_log_probability_is_the_softmax_of_the_logits(cfg):
    _, net, env = setup(cfg)
    X, C, count, choice, logp, _ = sample_now(env, net)
    mask = torch.arange(X.shape[1]).unsqueeze(0) < torch.from_numpy(count).unsqueeze(1)
    with torch.no_grad():
        batch = {"x": torch.from_numpy(X), "ctx": torch.from_numpy(C), "mask": mask}
        ref, _, _ = P.evaluate_actions(net, batch, torch.from_numpy(choice))
    assert np.allclose(logp, ref.numpy(), atol=1e-4)
    assert (choice < count).all() and (choice >= 0).all()


def test_gumbel_max_draws_from_the_softmax(cfg):
    """Frequencies of the sampled candidate over many uniforms match softmax(logits) (one state)."""
    _, net, env = setup(cfg, envs=1, tasks=120)
    for _ in range(40):  # a decision with several candidates
        X, C, count, *_, qpos = sample_now(env, net)
        if count[0] >= 4:
            break
        env.step(qpos, observe=False)
    m = int(count[0])
    mask = torch.arange(X.shape[1]).unsqueeze(0) < torch.from_numpy(count).unsqueeze(1)
    with torch.no_grad():
        logits, _ = net.forward_compact(torch.from_numpy(X), torch.from_numpy(C), mask)
    probs = torch.softmax(logits[0, :m].double(), 0).numpy()
    rng = np.random.default_rng(0)
    n = 4000
    hits = np.zeros(m)
    for _ in range(n):
        *_, choice, _, _ = sample_now(env, net, u=rng.random((1, X.shape[1])))
        hits[choice[0]] += 1
    # each frequency within 5 standard errors of its probability
    se = np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(hits / n - probs) <= 5 * se + 1e-3), (hits / n, probs)


def test_cached_hint_equals_a_fresh_atc_rollout(cfg):
    """Following ATC reuses the rollout, departing from it recomputes: the hint is the same."""
    _, net, env = setup(cfg, envs=5, tasks=70, privileged=True)
    rng = np.random.default_rng(1)
    reused = 0
    for _ in range(250):
        hint = env.value_hint().astype(np.float64)
        fresh = np.zeros(env.B)
        core.cost_to_go_batch(env.state, env.scratch, core.rules.ATC, env.atc_k, fresh)
        assert np.allclose(hint, -env.reward_scale * fresh, rtol=1e-5, atol=1e-6)
        assert np.array_equal(env.value_hint(), hint.astype(np.float32))  # twice: no change
        follow = rng.random(env.B) < 0.7
        actions = np.where(follow, env._atc_choice, 0)
        reused += int((actions == env._atc_choice).sum())
        env.step(actions, observe=False)
    assert reused > 500  # the reuse path ran


@pytest.mark.parametrize("privileged", [False, True])
def test_compiled_rollout_is_reproducible(cfg, privileged):
    outs = []
    for _ in range(2):
        _, net, env = setup(cfg, privileged=privileged)
        draw = CompiledSampler(env, net)
        r = collect_compiled(env, net, 12, draw)
        outs.append((r.actions.numpy(), r.rewards, r.values, r.store.x.numpy()))
    for a, b in zip(*outs):
        assert np.array_equal(a, b)
    assert outs[0][1].sum() < 0  # tardiness was charged
