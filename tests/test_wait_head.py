"""The learned policy's wait output (issue 60; sched/learn/policy/wait_head.py): absent, nothing
changes; present, the compiled decision and torch agree, a masked wait has no probability, the
env's waits are the plain-Python model's, and PPO trains and ships it."""

import numpy as np
import pytest
import torch

from sched.data.objective import weighted_tardiness
from sched.learn import settings as S
from sched.learn.env.vec_env import VecQueue
from sched.learn.policy import kernel, networks, policy_file, wait_head
from sched.learn.ppo import rollout
from sched.sim import core, reference, rules

MAX_WAIT = 3600.0


def _net(wait, seed=0, **kw):
    torch.manual_seed(seed)
    return networks.TaskScorer(hidden=8, top_k=4, prior_scale=1.0, wait=wait, **kw)


def _scenarios(n, tasks=25, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        arr = np.sort(rng.uniform(0, 40 * tasks, tasks))
        dur = rng.lognormal(3.5, 1.2, tasks)
        est = dur * rng.lognormal(0, 0.3, tasks)
        out.append((arr, dur, est, rng.choice([1.0, 2.0, 4.0], tasks), arr + 3 * est))
    return out


def test_without_wait_nothing_changes_and_the_head_draws_last():
    plain, waits = _net(False), _net(True)
    sd, sw = plain.state_dict(), waits.state_dict()
    assert list(sw)[: len(sd)] == list(sd) and all(torch.equal(sd[k], sw[k]) for k in sd)
    assert not any(k.startswith("wait") for k in sd) and not plain.waits and waits.waits
    assert "wait" not in S.Training.of().as_dict()  # records (train_args, fingerprints) keep their bytes
    assert "wait" not in policy_file.arch_of(S.Training.of().network)
    on = S.Training.of(wait=True)
    assert list(on.as_dict())[-1] == "wait" and policy_file.arch_of(on.network)["wait"] is True


def test_the_untrained_wait_policy_never_waits_its_schedules_are_the_plain_networks():
    scen = _scenarios(4)
    plain = kernel.of_network(_net(False), 2.0, 40.0, 1.0)
    waits = wait_head.of_network(_net(True), 2.0, 40.0, 1.0, MAX_WAIT)
    for a, b in zip(kernel.run(plain, scen), kernel.run(waits, scen)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def _vec(cfg, net, B=4, max_wait=MAX_WAIT):
    env = VecQueue(
        cfg, B, np.random.default_rng(1), range(100000, 100100), "tasks", 2.0, tasks=25,
        action_rng=np.random.default_rng(2), max_wait=max_wait, privileged=False,
    )  # fmt: skip
    env.reset()
    return env


def test_compiled_and_torch_log_probabilities_agree_and_waits_are_sampled(cfg):
    net = _net(True)
    with torch.no_grad():
        net.wait_out.bias.fill_(0.5)  # waits are likely: both columns get exercised
    env = _vec(cfg, net)
    draw = rollout.CompiledSampler(env, net)
    ro = rollout.collect_compiled(env, net, 40, draw)
    K = draw.K
    waited = ro.actions == K
    assert waited.any() and (~waited).any()
    ok = ro.store.wait[1]
    assert bool(ok[waited].all())  # a wait only where waiting is on
    logp, entropy, _ = networks.evaluate_actions(net, ro.store.all(), ro.actions)
    assert torch.allclose(logp, ro.logprobs, atol=1e-4)
    # off: the wait column has no probability and adds nothing to the entropy
    batch = ro.store.all()
    off = {k: v for k, v in batch.items() if k not in ("wait", "wait_ok")}
    lp0, h0, _ = networks.evaluate_actions(net, off, torch.zeros_like(ro.actions))
    masked = dict(batch, wait_ok=torch.zeros_like(batch["wait_ok"]))
    lp1, h1, _ = networks.evaluate_actions(net, masked, torch.zeros_like(ro.actions))
    assert torch.equal(lp0, lp1) and torch.equal(h0, h1)


def test_a_wait_where_waiting_is_off_is_refused_and_never_chosen(cfg):
    net = _net(True)
    with torch.no_grad():
        net.wait_out.bias.fill_(50.0)  # it would always wait where it may
    env = _vec(cfg, net, B=1)
    s = env.state
    assert not wait_head.allowed(s, 0, MAX_WAIT)  # the first decision: the GPU never ran a task
    wnet = env.kernel_net(net)
    ws, sc = kernel.workspace(env.tasks, wnet.net), wait_head.scratch(wnet)
    assert wait_head.greedy(s, 0, wnet, ws, sc) != wait_head.WAIT
    with pytest.raises(ValueError, match="waiting is off"):
        env.apply(np.array([wait_head.WAIT]))


def _scripted(env, waits):
    """Play slot 0's episode: wait at the decisions ``waits`` where waiting is on, ATC elsewhere;
    returns the scenario's arrays and its total weighted tardiness."""
    s = env.state
    n = int(s.n[0])
    arrays = [np.array(a[0, :n]) for a in (s.arr, s.dur, s.est, s.w, s.due)]
    dec = 0
    while True:
        act = core.pick(s, 0, rules.ATC, env.atc_k)
        if dec in waits and wait_head.allowed(s, 0, env.max_wait):
            act = wait_head.WAIT
        _, _, done = env.step(np.array([act]), observe=False)
        dec += 1
        if done[0]:
            return arrays, env.finished[-1][2]


def test_scripted_waits_give_the_plain_python_models_schedule(cfg):
    env = _vec(cfg, _net(True), B=1, max_wait=200.0)
    waits = {1, 2, 3, 5, 8, 9, 13, 21}
    arrays, total = _scripted(env, waits)
    start, end, _ = reference.simulate_delayed(
        *arrays, "atc-wait", np.inf, 200.0, machines=env.speeds, k=env.atc_k, waits=waits
    )
    ref = weighted_tardiness(np.array(end), arrays[4], arrays[3])
    plain = reference.simulate_delayed(*arrays, "atc-wait", np.inf, 200.0, machines=env.speeds, k=env.atc_k)
    assert not np.allclose(plain[0], start)  # the waits moved the schedule
    assert total == pytest.approx(ref, rel=1e-9, abs=1e-6)


def test_ppo_trains_a_wait_output_and_its_policy_file_loads_and_acts(cfg, tmp_path):
    from sched.learn.ppo import loop

    t = S.Training.of(
        seed=3, wait=True, iterations=2, num_envs=4, num_steps=16, tasks=25, hidden=8, top_k=4,
        teacher_scenarios=0, group_size=2, validation_scenarios=2, eval_every=1, threads=1,
    )  # fmt: skip
    out = tmp_path / "w.pt"
    loop.train(cfg, t, out, progress=False, resume=False)
    pol = policy_file.load(out)
    assert pol.waits and pol.meta["max_wait_s"] == policy_file.max_wait_of(cfg)
    assert pol.meta["train_args"]["wait"] is True
    sched_ = kernel.run(pol, _scenarios(2))
    assert all(np.isfinite(e).all() for _, e, _ in sched_)
    blob = torch.load(out, weights_only=True)
    del blob["meta"]["max_wait_s"]
    torch.save(blob, tmp_path / "bad.pt")
    with pytest.raises(policy_file.PolicyFileError, match="meta.max_wait_s"):
        policy_file.load(tmp_path / "bad.pt")
