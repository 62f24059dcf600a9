"""Tests that show learning: PPO, the distillation and the teacher each move the policy
towards the cheaper task on states small enough to compute the answer by hand.

The other learning tests check plumbing (shapes, determinism, finite losses); a learner
whose policy loss had the wrong sign would pass them. Each test here was run once on a
deliberately broken learner and failed: the PPO test with the clipped policy loss negated,
the advantages negated, the update skipped, or the rewards zeroed; the distillation test
with the imitation loss negated, the labels' sign swapped, or Adam never stepping; the
teacher test with its labels' sign swapped, the teacher starting ATC's choice instead of
its best candidate, or the candidate evaluator starting candidate 0 for every candidate.

The running example, one GPU, two tasks waiting at t = 0 and nothing arriving later:

* A: duration 10 s, weight 1, due at 100 s (slack 90 s);
* B: duration 100 s, weight 2, due at 100 s (no slack).

ATC (k = 2, mean duration 55 s) ranks A first: log(1/10) - 90 / 110 = -3.12 against
log(2/100) = -3.91. A first leaves B 10 s late (weighted tardiness 2 x 10 = 20); B first
leaves A 10 s late (1 x 10 = 10): ATC's choice costs twice as much. With the ATC prior
(weight 1 on the ``atc`` feature, a correction near 0) the untrained policy starts B with
probability sigmoid(-3.91 + 3.12) = 0.31.
"""

import csv
import math

import numpy as np
import pytest
import torch

from sched.learn.policy import kernel as K
from sched.learn.policy import networks as P
from sched.learn.policy import policy_file as PF
from sched.learn.search import lookahead as L
from sched.learn.search import teacher as T
from sched.learn.search.distill import distill, imitation_loss, regrets
from sched.learn.search.plan import Gate
from sched.learn.settings import Training
from sched.sim import core as S
from sched.sim import rules

DURATION = np.array([10.0, 100.0])  # A, B
WEIGHT = np.array([1.0, 2.0])
DUE = np.array([100.0, 100.0])
A, B = 0, 1


def two_tasks(duration=DURATION, weight=WEIGHT, due=DUE):
    """(arrival, duration, estimate, weight, due) of two tasks waiting at t = 0 (exact estimates)."""
    return (np.zeros(2), np.array(duration), np.array(duration), np.array(weight), np.array(due))


def cost_first(sc, first):
    """Total weighted tardiness, one GPU from t = 0, of starting row ``first`` of the two
    tasks of ``sc`` and then the other one (by hand: no simulator)."""
    _, p, _, w, d = sc
    end, total = 0.0, 0.0
    for j in (first, 1 - first):
        end += p[j]
        total += w[j] * max(end - d[j], 0.0)
    return total


def weighted_tardiness(sc, start):
    _, p, _, w, d = sc
    return float((w * np.maximum(np.asarray(start) + p - d, 0.0)).sum())


def first_decision(sc, net):
    """A state of ``sc`` (one GPU) at its first decision, and the kernel's workspace after
    observing and scoring it with ``net``; returns (state, order, ws, m)."""
    state, (order,) = S.pack([sc], 1)
    S.set_rule(state, 0, rules.ATC)
    assert S._advance(state, 0, True)
    ws = K.workspace(len(order), net)
    m = K.scored(state, 0, net, ws)
    return state, order, ws, m


def candidate_rows(sc, net):
    """The scenario rows of the kernel's candidates at the first decision, ATC's best first."""
    state, order, ws, m = first_decision(sc, net)
    return [int(order[state.queue[0, q]]) for q in ws.cand[:m]]


def probability_of(sc, net, row):
    """The probability that the sampling policy ``net`` (a ``kernel.Net``) starts ``row`` first:
    the softmax of the kernel's scores, the same the PPO sampler draws from."""
    state, order, ws, m = first_decision(sc, net)
    v = ws.v[:m]
    prob = np.exp(v - v.max())
    prob /= prob.sum()
    rows = [int(order[state.queue[0, q]]) for q in ws.cand[:m]]
    return float(prob[rows.index(row)])


@pytest.fixture
def one_torch_thread():
    """Torch on one thread for the test (the machine is shared; small tensors gain nothing)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_example_is_one_where_atc_chooses_the_costlier_task():
    sc = two_tasks()
    ((start, _, _),) = S.simulate_batch([sc], "atc", k=2.0)
    assert start[A] == 0.0 and start[B] == DURATION[A]  # ATC starts A first
    assert weighted_tardiness(sc, start) == cost_first(sc, A)
    assert cost_first(sc, B) < cost_first(sc, A)


# ------------------------------------------------------------------ PPO


def test_ppo_raises_the_probability_of_the_better_task(tmp_path, cfg, monkeypatch):
    """20 iterations of the trainer (``ppo.train``, no teacher) whose every training episode is
    the two-task example: the probability of starting B first rises from the prior's 0.31 to
    near 1, and the greedy policy then schedules B first.

    Every episode is one decision, so its advantage is its cost against the critic's value of
    that one state: only the sign and the size of the costs can move the policy."""
    from sched.learn.chain import train
    from sched.learn.env import vec_env

    sc = two_tasks()

    def the_example(model, seed, tasks=None, load=None, machines=None, warm_up=False):
        keys = ("arrival", "duration", "estimate", "weight", "due")
        return {**{key: np.array(a) for key, a in zip(keys, sc)}, "week_start_s": 0.0, "counted_from_s": 0.0}

    monkeypatch.setattr(vec_env, "draw", the_example)  # the training scenarios: only the example
    args = Training.of(
        seed=3,
        iterations=20,
        num_envs=8,
        num_steps=4,
        num_minibatches=2,
        update_epochs=3,
        tasks=2,
        hidden=16,
        teacher_scenarios=0,
        eval_every=0,  # no validation: the policy file holds the last weights
        checkpoint_every=0,
    )
    meta = PF.policy_meta(cfg, args)
    torch.manual_seed(args.seed)  # train()'s initialisation
    untrained = P.build(meta["arch"])
    before = probability_of(sc, K.of_network(untrained, meta["atc_k"], meta["p_ref"], meta["profile"]), B)
    assert before < 0.4  # the ATC prior: 0.31

    train(cfg, args, tmp_path / "politique.pt", progress=False, resume=False, log=lambda *a: None)

    with open(tmp_path / "train_log.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if int(r["iteration"]) >= 1]
    assert len(rows) == args.ppo.iterations
    episodes = [float(r["mean_episode_weighted_tardiness_s"]) for r in rows]
    # the episodes were the example: each cost 10 (B first) or 20 (A first), the last ones 10
    assert all(cost_first(sc, B) <= x <= cost_first(sc, A) for x in episodes)
    assert episodes[-1] < episodes[0]

    policy = PF.load(tmp_path / "politique.pt")
    after = probability_of(sc, K.of_policy(policy), B)
    assert after > 0.9, (before, after)
    start, _, _ = K.run_one(policy, sc)
    assert start[B] == 0.0
    assert weighted_tardiness(sc, start) == cost_first(sc, B)


# ------------------------------------------------------------------ distillation


def decisions_with_labels(meta, n_each=8, seed=0):
    """Two-task decisions at t = 0 (random durations, weights, dues), ``n_each`` where ATC's
    choice costs at least 50 weighted seconds more than the other candidate and ``n_each``
    where it costs at least 50 less; labelled as the teacher labels them (each candidate's
    cost minus ATC's choice's, here exact). Returns (labels dict, cheaper candidate per row)."""
    obs = K.no_net(2, meta["atc_k"], meta["p_ref"], meta["profile"])
    rng = np.random.default_rng(seed)
    x, ctx, label, cheaper = [], [], [], []
    want = {0: n_each, 1: n_each}
    while want[0] or want[1]:
        sc = two_tasks(
            rng.lognormal(math.log(60.0), 0.8, 2), rng.choice([1.0, 2.0, 4.0, 8.0], 2), rng.uniform(0, 300, 2)
        )
        state, order, ws, m = first_decision(sc, obs)
        rows = [int(order[state.queue[0, q]]) for q in ws.cand[:m]]
        gap = cost_first(sc, rows[1]) - cost_first(sc, rows[0])
        best = int(gap < 0)
        if abs(gap) < 50.0 or not want[best]:
            continue
        want[best] -= 1
        x.append(ws.X[:m].copy())
        ctx.append(ws.ctx.copy())
        label.append([0.0, gap])
        cheaper.append(best)
    labels = {
        "x": np.array(x, dtype=np.float32),
        "ctx": np.array(ctx, dtype=np.float32),
        "count": np.full(len(x), 2, dtype=np.int64),
        "label": np.array(label, dtype=np.float32),
    }
    return labels, np.array(cheaper)


def test_distillation_lowers_the_imitation_loss_and_picks_the_cheaper_task(cfg, one_torch_thread):
    """On 16 labelled decisions, half where ATC's choice is the costlier: the distillation
    lowers the cost-sensitive imitation loss well below its start, and afterwards the
    network's first choice is the cheaper candidate of every decision. Before, the ATC prior
    picks candidate 0 (ATC's choice) everywhere."""
    args = Training.of(seed=5, hidden=16, top_k=2, distill_epochs=30, distill_lr=1e-2)
    meta = PF.policy_meta(cfg, args)
    labels, cheaper = decisions_with_labels(meta)
    x, ctx = torch.from_numpy(labels["x"]), torch.from_numpy(labels["ctx"])
    valid = torch.ones(x.shape[:2], dtype=torch.bool)
    regret = regrets(torch.from_numpy(labels["label"]), valid, args.distill.scale)
    torch.manual_seed(args.seed)
    net = P.build(meta["arch"])

    def loss_and_choice():
        with torch.no_grad():
            logits, _ = net.forward_compact(x, ctx, valid)
        return imitation_loss(logits, valid, regret).item(), logits.argmax(1).numpy()

    loss_before, choice_before = loss_and_choice()
    assert (choice_before == 0).all()  # the prior is ATC
    assert (cheaper == 1).sum() == 8
    distill(net, labels, args.distill, torch.Generator().manual_seed(args.seed))
    loss_after, choice_after = loss_and_choice()
    assert loss_after < 0.25 * loss_before, (loss_before, loss_after)
    np.testing.assert_array_equal(choice_after, cheaper)


def test_improved_target_moves_the_student_where_the_teacher_differs_and_holds_it_elsewhere(
    cfg, one_torch_thread
):
    """distill_target "improved" against "mean" on the same 16 decisions: the 8 where ATC's
    choice is the costlier (by 50 weighted seconds or more) keep their labels, the 8 others are
    relabelled as ties (the teacher sees no difference). Both targets end picking the cheaper
    candidate where the teacher found one. On the ties "mean" gives no gradient, so nothing holds
    them while the shared weights move; "improved" aims there at the student's own policy and
    moves their probabilities on average less than 0.1 and at least 5 times less than "mean"."""

    def run(target):
        args = Training.of(
            seed=5,
            hidden=16,
            top_k=2,
            distill_epochs=30,
            distill_lr=1e-2,
            distill_target=target,
            distill_improve=4.0,
        )
        meta = PF.policy_meta(cfg, args)
        labels, cheaper = decisions_with_labels(meta)
        differs = cheaper == 1
        labels["label"][~differs] = 0.0
        labels["mean"] = labels["label"]
        x, ctx = torch.from_numpy(labels["x"]), torch.from_numpy(labels["ctx"])
        valid = torch.ones(x.shape[:2], dtype=torch.bool)
        torch.manual_seed(args.seed)
        net = P.build(meta["arch"])

        def probs():
            with torch.no_grad():
                return torch.softmax(net.forward_compact(x, ctx, valid)[0], 1).numpy()

        before = probs()
        distill(net, labels, args.distill, torch.Generator().manual_seed(args.seed))
        after = probs()
        assert (after[differs].argmax(1) == 1).all(), (target, after[differs])
        return np.abs(after[~differs] - before[~differs]).mean()

    held, drift = run("improved"), run("mean")
    assert held < 0.1 and 5 * held < drift, (held, drift)


# ------------------------------------------------------------------ the teacher

#: The example with a third task, C (50 s, weight 1, due at 1,000 s: plenty of slack). ATC
#: ranks A, B, C. Without later arrivals the costs are 20 (A first, then B, C), 10 (B, then
#: A, C) and 120 (C, then A, B): B is the cheap start, C the expensive one.
THREE = (np.zeros(3), np.array([10.0, 100.0, 50.0]), np.array([10.0, 100.0, 50.0]), np.array([1.0, 2.0, 1.0]))
THREE = (*THREE, np.array([100.0, 100.0, 1000.0]))
#: The fields of ``lookahead.Futures`` in the order of a scenario's arrays.
FIELDS = ("arr", "dur", "est", "w", "due")


def rollout_cost(sc, pool, f, first, k):
    """Weighted tardiness of starting row ``first`` of ``sc`` (all waiting at t = 0) and then
    ATC, with future ``f`` of ``pool`` arriving too: the scenario written out and simulated."""
    arr, p, e, w, d = (np.concatenate([a, getattr(pool, n)[f]]) for a, n in zip(sc, FIELDS))
    s, (order,) = S.pack([(arr, p, e, w, d)], 1)
    S.set_rule(s, 0, rules.ATC)
    assert S._advance(s, 0, True)
    queue = [int(order[s.queue[0, q]]) for q in range(s.qlen[0])]
    S._start(s, 0, queue.index(first), s.pending[0])
    while S._advance(s, 0, True):
        S._start(s, 0, S.pick(s, 0, rules.ATC, k), s.pending[0])
    return float(s.wt_started[0])


def _gated_labels(cfg, samples, z, follow=True):
    """The gated teacher (``teacher.label_gated``) on THREE with ATC as its base: estimates only
    (THREE's estimates are its durations, and with sigma 0 the drawn durations are too), 3
    candidates, ``samples`` futures of 6 arrivals; returns (Q, M, rows, start, costs, decisions)."""
    meta = PF.policy_meta(cfg, Training.of())
    k, horizon = meta["atc_k"], 6
    pool = L.Futures(*T.future_pool(cfg, [cfg["seeds"]["train"]["start"]], horizon, futures=samples))
    obs = K.no_net(3, k, meta["p_ref"], meta["profile"])
    assert candidate_rows(THREE, obs) == [0, 1, 2]  # ATC ranks A, B, C
    costs = np.array([[rollout_cost(THREE, pool, f, c, k) for f in range(samples)] for c in range(3)])
    state, (order,) = S.pack([THREE], 1)
    n = len(order)
    X, C = np.zeros((n, 3, K.N_TASK)), np.zeros((n, K.N_CTX))
    M, Q, QM = np.zeros(n, dtype=np.int64), np.zeros((n, 3)), np.zeros((n, 3))
    scratch, ws = S.empty_state(1, n + horizon, 1), K.workspace(n + horizon, obs)
    la = L.Lookahead(horizon, 0.0, True, rules.ATC, k)
    rows, decisions, moved, drawn = T.label_gated(
        state,
        Gate(3, samples, samples, float(z)),
        L.evaluator(scratch, ws, pool, la, K.no_net()),
        0,
        rules.ATC,
        k,
        follow,
        T.Rows(obs, X, C, M, Q, QM),
    )
    np.testing.assert_allclose(QM[0], costs.mean(1) - costs[0].mean(), rtol=1e-9, atol=1e-9)
    start, _, _ = S._unpack(state, [order])[0]
    return Q, M, rows, start, costs, decisions, drawn


def test_the_gated_teachers_label_is_the_pessimistic_bound_against_its_base(cfg):
    """The gated teacher on THREE: each candidate's label is the mean paired difference of its
    rollout cost with ATC's choice (computed here by simulating each written-out future) plus
    z standard errors, 0 for ATC's choice; with z = 0 it is the plain mean difference. B's
    rollouts cost clearly less, so the teacher starts B, and it drew every sample."""
    samples = 8
    Q, M, rows, start, costs, decisions, drawn = _gated_labels(cfg, samples, 0.0)
    want = costs.mean(1) - costs[0].mean()
    assert want[B] < -5.0 and want[B] == want.min()
    assert rows >= 1 and decisions >= rows and M[0] == 3
    np.testing.assert_allclose(Q[0], want, rtol=1e-9, atol=1e-9)
    assert start[B] == 0.0  # the teacher started the cheaper task
    z = 2.0
    Q2, _, _, _, _, _, _ = _gated_labels(cfg, samples, z)
    d = costs - costs[0]
    se = d.std(1, ddof=1) / np.sqrt(samples)
    np.testing.assert_allclose(Q2[0], want + z * se, rtol=1e-9, atol=1e-9)


def test_following_the_base_starts_the_bases_choice_and_labels_the_same_first_state(cfg):
    """With ``follow`` False (a round's policy states) the teacher still labels, but starts its
    base's choice (ATC's: A); the first decision's labels are the same either way."""
    Qt, _, _, _, _, _, _ = _gated_labels(cfg, 8, 0.0, follow=True)
    Qb, _, _, start, _, _, _ = _gated_labels(cfg, 8, 0.0, follow=False)
    np.testing.assert_array_equal(Qt[0], Qb[0])
    assert start[0] == 0.0 and start[B] > 0.0  # A (ATC's choice) first, not B
