"""The compiled decision of a learned policy (``sched.learn.policy.kernel``) against a plain
reference, and against the torch network that trains it.

``reference_decision`` below recomputes a decision from the queue with plain Python
and NumPy, from the definitions in the kernel's docstring (candidates by ATC index,
their features, the context over them, the global features), then scores it with
torch's training forward (``TaskScorer.forward_compact``) in float64. The kernel must
give the same candidates, features and context, scores within rounding, and the same
greedy pick; whole rollouts (the benchmark's batch, rank()'s single queue) must give
the reference's schedule.
"""

import math

import numpy as np
import pytest
import torch

from sched.config import validate_config
from sched.learn.policy import features as F
from sched.learn.policy import kernel as K
from sched.learn.policy.networks import ArchitectureError, Policy, build
from sched.learn.policy.policy_file import arch_of, policy_meta
from sched.learn.settings import Training
from sched.sim import core as S
from sched.sim import rules


def make_policy(top_k, hidden=16, seed=0, sigma=0.3):
    """A scorer with weights drawn from N(0, sigma): its choices differ from ATC's."""
    args = Training.of(seed=1, top_k=top_k, hidden=hidden)
    torch.manual_seed(seed)
    net = build(arch_of(args.network))
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, sigma)
    return Policy(net, policy_meta(validate_config({}, "defaults"), args))


def make_queue(rng, n, kind):
    """(arrival, duration, estimate, weight, due) of n tasks: all waiting now, earlier or
    later arrivals, Unix-epoch clocks, duplicated tasks (ties), far and tiny values."""
    now = 1.7e9 if kind in ("epoch", "earlier") else 0.0
    est = rng.lognormal(math.log(600.0), 1.0, n)
    w = rng.choice([1.0, 2.0, 5.0, 10.0], n)
    arr = np.full(n, now)
    if kind == "earlier":
        arr = now - rng.uniform(0.0, 5000.0, n)
    elif kind == "later":
        arr = now + np.sort(rng.uniform(0.0, 20000.0, n))
    due = arr + rng.uniform(-2000.0, 20000.0, n) * rng.choice([0.1, 1.0, 10.0], n)
    if kind == "duplicates":
        pick = rng.integers(0, max(1, n // 5), n)
        est, w, due = est[pick], w[pick], due[pick]
    elif kind == "extreme":
        due[rng.random(n) < 0.1] = now + 1e12
        est[rng.random(n) < 0.05] = 1e-3
        w[rng.random(n) < 0.05] = 1e6
    return arr, est.copy(), est, w, due


KINDS = ("now", "epoch", "earlier", "later", "duplicates", "extreme")


WEEK = 7 * 86400.0


def reference_ahead(profile, tow, hours):
    """The mean of the hourly profile over [tow, tow + hours h), in plain Python: each hour of
    the week (and of the next, for the wrap) weighted by its overlap with the window."""
    lo, hi = tow, tow + hours * 3600.0
    total = 0.0
    for h in range(2 * 168):
        overlap = min(hi, (h + 1) * 3600.0) - max(lo, h * 3600.0)
        if overlap > 0:
            total += profile[h % 168] * overlap
    return total / (hours * 3600.0)


def reference_globals(s, b, t, ql, work, pbar, p_ref, late, net):
    """The N_GLOBAL features of slot b's decision, in plain Python from their definitions."""
    mfree = [float(x) for x in s.mfree[b]]
    speed = [float(x) for x in s.speed[b]]
    M = len(mfree)
    busy = sum(f - t for f in mfree if f > t)
    tow = (net.week_start_s + t) % WEEK
    weekly = max(net.profile) > min(net.profile)
    angle = 2 * math.pi * tow / WEEK
    return np.array(
        [
            math.log1p(ql),
            math.log1p(work / p_ref),
            math.log(pbar / p_ref),
            math.asinh(busy / M / p_ref),
            sum(1 for f in mfree if f <= t) / M,
            late / ql,
            reference_ahead(net.profile, tow, 1.0),
            reference_ahead(net.profile, tow, 4.0),
            math.sin(angle) if weekly else 0.0,
            math.cos(angle) if weekly else 0.0,
            speed[int(s.pending[b])] * M / sum(speed),
        ]
    )


def reference_observation(s, b, net):
    """(candidates' queue positions, features (m, N_TASK), context) of slot b's decision,
    in plain Python from the definitions (sched.learn.policy.kernel's docstring); ``net``: the
    settings (top_k, atc_k, p_ref, the load profile and week start)."""
    top_k, atc_k, p_ref = net.top_k, net.atc_k, net.p_ref
    ql, t, mach = int(s.qlen[b]), float(s.t[b]), int(s.pending[b])
    v = float(s.speed[b, mach])
    js = [int(s.queue[b, q]) for q in range(ql)]
    p = [float(s.est[b, j]) / v for j in js]
    w = [float(s.w[b, j]) for j in js]
    d = [float(s.due[b, j]) for j in js]
    lwp = [math.log(w[i] / float(s.est[b, js[i]])) for i in range(ql)]  # speed-1 static part
    work = sum(float(s.est[b, j]) for j in js) / v
    pbar = work / ql
    atc = [lwp[i] - max(d[i] - p[i] - t, 0.0) / (atc_k * pbar) for i in range(ql)]
    order = sorted(range(ql), key=lambda i: (-atc[i], i))  # ties: queue order
    m = ql if top_k == 0 else min(top_k, ql)
    cand = order[:m]
    lkmin = math.log(min(max(p[i], d[i] - t) / w[i] for i in range(ql)))
    smax = max(lwp)
    late = sum(1 for i in range(ql) if d[i] < t + p[i])
    X = np.empty((m, F.N_TASK))
    for r, i in enumerate(cand):
        X[r] = [
            p[i] / pbar,
            math.log(p[i] / pbar),
            math.log(w[i]),
            math.asinh((d[i] - t - p[i]) / pbar),
            min(max(d[i] - t - p[i], 0.0) / pbar, -F.ATC_FLOOR),
            math.asinh((d[i] - t) / pbar),
            math.asinh((t - float(s.arr[b, js[i]])) / pbar),
            max(atc[i] - atc[cand[0]], F.ATC_FLOOR),
            max(-(math.log(max(p[i], d[i] - t) / w[i]) - lkmin), F.ATC_FLOOR),
            max(lwp[i] - smax, F.ATC_FLOOR),
            1.0 if d[i] < t + p[i] else 0.0,
            r / ql,
        ]
    g = reference_globals(s, b, t, ql, work, pbar, p_ref, late, net)
    ctx = np.concatenate([X.mean(0), X.max(0), g])
    return np.array(cand), X, ctx


def reference_scores(policy, X, ctx):
    """The scores of torch's training forward, in float64."""
    net = policy.net.double()
    try:
        with torch.no_grad():
            mask = torch.ones(1, len(X), dtype=torch.bool)
            logits, _ = net.forward_compact(torch.from_numpy(X)[None], torch.from_numpy(ctx)[None], mask)
        return logits[0].numpy()
    finally:
        policy.net.float()


def decisions(policy, sc, machines=1, free=None, limit=60, net=None, with_state=False):
    """Walk a greedy rollout of the kernel; at each of the first ``limit`` decisions yield
    (kernel's ws after the decision's observation and scores, m, reference observation), and
    with ``with_state`` the state of the decision as a fourth item. ``net``: the policy's
    compiled settings (default: ``K.of_policy(policy)``)."""
    net = K.of_policy(policy) if net is None else net
    state, _ = S.pack([sc], machines, free)
    S.set_rule(state, 0, rules.ATC)
    ws = K.workspace(state.queue.shape[1], net)
    n = 0
    while S._advance(state, 0, True) and n < limit:
        ref = reference_observation(state, 0, net)
        m = K.scored(state, 0, net, ws)
        yield (ws, m, ref, state) if with_state else (ws, m, ref)
        S._start(state, 0, ws.cand[K.argmax(ws.v, m)], state.pending[0])
        n += 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("top_k", [0, 1, 4, 16])
def test_the_kernel_observes_and_scores_as_the_reference(kind, top_k):
    rng = np.random.default_rng(hash((kind, top_k)) % 2**32)
    policy = make_policy(top_k, seed=top_k)
    n_checked = 0
    for machines, free in ((1, None), (3, [0.0, 500.0, 2000.0])):
        sc = make_queue(rng, 70, kind)
        for ws, m, (cand, X, ctx) in decisions(policy, sc, machines, free):
            assert m == len(cand)
            assert np.array_equal(ws.cand[:m], cand)
            np.testing.assert_allclose(ws.X[:m], X, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(ws.ctx, ctx, rtol=1e-12, atol=1e-12)
            want = reference_scores(policy, X, ctx)
            np.testing.assert_allclose(ws.v[:m], want, rtol=1e-9, atol=1e-9)
            top = np.sort(want)[::-1]
            if m == 1 or top[0] - top[1] > 1e-7:  # a clear best: the same pick
                assert K.argmax(ws.v, m) == int(np.argmax(want))
            n_checked += 1
    assert n_checked > 60


@pytest.mark.parametrize("kind", KINDS)
def test_the_encoders_features_are_the_kernels(kind):
    """Two feature computations exist: the kernel's (``K.observe``: rank(), the benchmark, PPO's
    sampler) and the Gymnasium env's and ``VecQueue``'s (``F._encode_slot``). On every decision
    of rollouts on random queues, one GPU and three busy ones, they give the same per-task rows
    (the kernel's candidates, with every waiting task a candidate, are the encoder's rows in ATC
    order) and the same global features."""
    rng = np.random.default_rng(abs(hash(kind)) % 2**32)
    policy = make_policy(0, seed=7)
    n_checked = 0
    for machines, free in ((1, None), (3, [0.0, 500.0, 2000.0])):
        net = K.of_policy(policy)
        queue = make_queue(rng, 60, kind)
        for ws, m, _, state in decisions(policy, queue, machines, free, net=net, with_state=True):
            ql = int(state.qlen[0])
            x, g = np.zeros((ql, F.N_TASK)), np.zeros(F.N_GLOBAL)
            model = F.Model(net.p_ref, net.profile, net.weekly, net.week_start_s)
            order = F._encode_slot(state, 0, net.atc_k, model, x, g)
            assert m == ql and np.array_equal(ws.cand[:m], order)
            np.testing.assert_allclose(ws.X[:m], x[ws.cand[:m]], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(ws.ctx[2 * F.N_TASK :], g, rtol=1e-12, atol=1e-12)
            n_checked += 1
    assert n_checked > 60


def test_torch_float32_training_forward_picks_what_the_kernel_picks():
    """The network PPO trains (float32) scores the kernel's observations as the kernel does."""
    rng = np.random.default_rng(5)
    policy = make_policy(16, seed=9)
    agree = total = 0
    for kind in ("now", "later", "earlier"):
        for ws, m, _ in decisions(policy, make_queue(rng, 60, kind)):
            with torch.no_grad():
                x = torch.from_numpy(ws.X[:m].astype(np.float32))[None]
                c = torch.from_numpy(ws.ctx.astype(np.float32))[None]
                logits, _ = policy.net.forward_compact(x, c, torch.ones(1, m, dtype=torch.bool))
            np.testing.assert_allclose(logits[0].numpy(), ws.v[:m], rtol=1e-4, atol=1e-4)
            agree += int(np.argmax(logits[0].numpy()) == K.argmax(ws.v, m))
            total += 1
    assert agree >= total - 2  # float32 may flip a near-tie


def reference_rollout(policy, sc, machines=1, free=None):
    """Start times of a greedy rollout taking every decision by the plain reference."""
    net = K.of_policy(policy)
    state, (order,) = S.pack([sc], machines, free)
    S.set_rule(state, 0, rules.ATC)
    while S._advance(state, 0, True):
        cand, X, ctx = reference_observation(state, 0, net)
        S._start(state, 0, int(cand[int(np.argmax(reference_scores(policy, X, ctx)))]), state.pending[0])
    return S._unpack(state, [order])[0][0]


@pytest.mark.parametrize("top_k", [0, 16])
def test_a_whole_rollout_is_the_reference_schedule(top_k):
    """With every waiting task a candidate (top_k 0) as with a limit: the schedule of the
    compiled rollout (rank's and the benchmark's) is the plain reference's."""
    rng = np.random.default_rng(21 + top_k)
    policy = make_policy(top_k, seed=4)
    for kind in ("now", "later", "duplicates"):
        sc = make_queue(rng, 40, kind)
        want = reference_rollout(policy, sc, 2)
        (start, _, _) = K.run_one(policy, sc, 2)
        assert np.array_equal(start, want), kind


def test_a_trained_policy_is_the_reference_schedule_and_unlike_atc(distinct_policy):
    from sched.learn.policy.policy_file import load

    policy = load(distinct_policy)
    rng = np.random.default_rng(11)
    unlike = 0
    for kind in KINDS:
        sc = make_queue(rng, 40, kind)
        start = K.run_one(policy, sc, 2)[0]
        assert np.array_equal(start, reference_rollout(policy, sc, 2)), kind
        ((atc, _, _),) = S.simulate_batch([sc], "atc", machines=2, k=policy.meta["atc_k"])
        unlike += int(not np.array_equal(start, atc))
    assert unlike > 0


def test_the_batch_and_the_single_queue_give_the_same_schedules(distinct_policy, tiny_cfg):
    """The benchmark runs many scenarios in one call, rank() one: the same schedules."""
    from sched.data.scenario import generate, scenario_model
    from sched.learn.policy.policy_file import load

    policy = load(distinct_policy)
    scs = [generate(scenario_model(tiny_cfg), s, tasks=90).arrays for s in range(6)]
    batch = K.run(policy, scs, 2)
    for sc, got in zip(scs, batch):
        one = K.run_one(policy, sc, 2)
        for u, v in zip(got, one):
            assert np.array_equal(u, v)


def test_the_untrained_prior_is_atc_exactly(tiny_cfg):
    """The ATC prior with a zero correction network: the greedy policy is ATC, the same
    task at every decision, on one GPU and on several."""
    from sched.data.scenario import generate, scenario_model

    net = build({"name": "scorer", "hidden": 16, "atc_prior": True, "prior_scale": 3.0, "top_k": 16})
    torch.nn.init.zeros_(net.actor[-1].weight)
    torch.nn.init.zeros_(net.actor[-1].bias)
    pol = Policy(net, {"arch": {"name": "scorer"}, "atc_k": 2.0, "p_ref": 80.0, "profile": [0.85] * 168})
    for machines in (1, 3):
        scs = [generate(scenario_model(tiny_cfg), s, tasks=150, machines=machines).arrays for s in range(3)]
        got = K.run(pol, scs, machines)
        want = S.simulate_batch(scs, "atc", machines=machines, k=2.0)
        for (s1, _, _), (s2, _, _) in zip(got, want):
            assert np.array_equal(s1, s2)


def test_tanh_is_within_its_stated_error():
    x = np.concatenate([np.linspace(-25, 25, 200001), [0.0, -0.0, 1e-300, -1e-12, 19.999, 20.0, 1e6]])
    y = x.copy()
    K._tanh(y, len(y))
    assert np.abs(y - np.tanh(x)).max() < 4e-15
    z = -x
    K._tanh(z, len(z))
    assert np.array_equal(z, -y) and (np.abs(y) <= 1.0).all()  # odd, bounded


def test_a_diverged_network_falls_back_to_atcs_choice():
    """No finite score (NaN weights): candidate 0, ATC's choice, not garbage."""
    rng = np.random.default_rng(3)
    policy = make_policy(16, seed=2)
    with torch.no_grad():
        policy.net.actor[-1].bias.fill_(float("nan"))
    sc = make_queue(rng, 30, "now")
    (start, _, _) = K.run_one(policy, sc)
    ((atc, _, _),) = S.simulate_batch([sc], "atc", k=policy.meta["atc_k"])
    assert np.array_equal(start, atc)


def test_the_untrained_wmdd_prior_is_wmdd(tiny_cfg):
    """prior_rule wmdd with a zero correction network and every waiting task a candidate: the
    greedy policy is WMDD (the same starts as the compiled rule), on one GPU and on several."""
    from sched.data.scenario import generate, scenario_model

    arch = {
        "name": "scorer",
        "hidden": 16,
        "atc_prior": True,
        "prior_scale": 1.0,
        "top_k": 0,
        "prior_rule": "wmdd",
    }
    net = build(arch)
    torch.nn.init.zeros_(net.actor[-1].weight)
    torch.nn.init.zeros_(net.actor[-1].bias)
    pol = Policy(net, {"arch": {"name": "scorer"}, "atc_k": 2.0, "p_ref": 80.0, "profile": [0.85] * 168})
    differs = 0
    for machines in (1, 3):
        scs = [generate(scenario_model(tiny_cfg), s, tasks=150, machines=machines).arrays for s in range(3)]
        got = K.run(pol, scs, machines)
        want = S.simulate_batch(scs, "wmdd", machines=machines)
        atc = S.simulate_batch(scs, "atc", machines=machines, k=2.0)
        for (s1, _, _), (s2, _, _), (s3, _, _) in zip(got, want, atc):
            assert np.array_equal(s1, s2)
            differs += not np.array_equal(s1, s3)
    assert differs  # not ATC's schedules: the prior is another rule
    with pytest.raises(ArchitectureError, match="prior_rule"):
        build({**arch, "prior_rule": "edd"})
