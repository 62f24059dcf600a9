"""The learned farm policy under the adapters' sync interval (sched.learn.farm.synced, rank_ppo)."""

import itertools

import numpy as np
import pytest
import torch

from sched.learn.farm import decide, rank_ppo, scorer, synced
from sched.sim import chunks, rules, sync

from .random_farms import random_farm


def zero_correction(hidden=8, top_k=4, scale=1.0):
    net = scorer.network(hidden, top_k, prior_scale=scale)
    with torch.no_grad():
        net.actor[4].weight.zero_()
        net.actor[4].bias.zero_()
    return net


def greedy_run(knet, arrays, cols, speed, free, sync_s):
    state, order = chunks.load(arrays, chunks.check_chunks(len(arrays[0]), *cols), speed, free)
    n = len(order)
    y = sync.Synced(np.zeros(n), np.zeros(n), np.zeros(n, np.int64))
    ws, sc = decide.workspace(n, knet), synced.scratch(n)
    synced.run_ranked(state, y, knet, ws, sync_s, np.zeros((0, 1)), synced.record(0, 1), sc)
    return chunks.unload(state, order)


def test_a_zero_correction_ranking_at_a_sync_is_the_synced_atc_rule_bit_for_bit():
    rng = np.random.default_rng(61)
    for trial in range(80):
        arrays, cols, speed, free = random_farm(rng, arrivals=(0, 200))
        k, s = float(rng.choice([0.5, 2.0, 4.0])), float(rng.choice([1.0, 5.0, 60.0]))
        net = zero_correction(top_k=int(rng.choice([0, 1, 3, 16])), scale=float(rng.choice([0.5, 1.0, 3.0])))
        want = sync.simulate(*arrays, rules.ATC, speed, k, free, *cols, sync_s=s)
        got = greedy_run(scorer.compiled(net, k, 20.0, 1.0), arrays, cols, speed, free, s)
        for a, b in zip(got, want):
            assert np.array_equal(a, b), trial


def test_the_gumbel_ranking_is_plackett_luce_and_its_log_probabilities_sum_to_one():
    v = np.array([0.3, -1.0, 1.2])
    sc = synced.scratch(3)
    probs = {}
    for perm in itertools.permutations(range(3)):  # the closed form: prod of softmax over the rest
        p, rest = 1.0, list(range(3))
        for i in perm:
            p *= np.exp(v[i]) / np.exp(v[rest]).sum()
            rest.remove(i)
        probs[perm] = p
    assert sum(probs.values()) == pytest.approx(1.0)
    rng = np.random.default_rng(2)
    counts = dict.fromkeys(probs, 0)
    draws = 20000
    for _ in range(draws):
        lp = synced.rank(v, 3, rng.random(3), sc)
        perm = tuple(int(i) for i in sc[0][0, :3])
        assert lp == pytest.approx(np.log(probs[perm]), abs=1e-12)
        counts[perm] += 1
    for perm, p in probs.items():
        assert abs(counts[perm] / draws - p) < 4 * np.sqrt(p * (1 - p) / draws) + 1e-3, perm
    synced.rank(v, 3, np.zeros(0), sc)  # greedy: by score
    assert list(sc[0][0, :3]) == [2, 0, 1]


def test_torch_and_the_compiled_ranking_log_probabilities_agree():
    rng = np.random.default_rng(8)
    torch.manual_seed(4)
    net = scorer.network(8, 5).double()
    with torch.no_grad():  # a correction well away from zero
        net.actor[4].weight.normal_(0.0, 1.0)
    knet = scorer.compiled(net, 2.0, 20.0, 1.0)
    checked = 0
    for _ in range(25):
        arrays, cols, speed, _free = random_farm(rng, arrivals=(0, 300))
        farm = scorer.Farm(arrays, chunks.check_chunks(len(arrays[0]), *cols), 0.0, 0.0)
        D = synced.max_syncs(len(arrays[0]), scorer.chunk_count(farm))
        rec, late, last_start, job_end = scorer.sampled_synced(knet, farm, speed, 10.0, rng.random((D, 5)))
        assert np.all(rec.count >= 1) and np.all(rec.count <= 5) and np.all(np.diff(rec.time) > 0)
        for d in range(len(rec.count)):  # a ranking is a permutation of its candidates
            assert sorted(rec.perm[d, : rec.count[d]]) == list(range(rec.count[d]))
        t = (torch.from_numpy(a) for a in (rec.X, rec.ctx, rec.count, rec.perm))
        logp, _entropy = rank_ppo.ranking_logp(net, *(a.double() if a.is_floating_point() else a for a in t))
        assert np.allclose(logp.detach().numpy(), rec.logp, atol=1e-4)
        assert np.isclose(late.sum(), scorer.cost(farm, job_end)) and np.all(np.isfinite(last_start))
        checked += int((rec.count >= 2).sum())
    assert checked > 100


CHUNKS = {
    "frames": {"median": 12, "sigma": 1.0, "max": 200},
    "chunk_frames": 4,
    "max_gpus": None,
    "setup_s": 0,
}
TRAIN = {"group_size": 2, "num_envs": 4, "iterations": 1, "eval_every": 1, "validation_scenarios": 3,
         "hidden": 8, "top_k": 4, "patience": 0, "sync_s": 60}  # fmt: skip


def test_farm_training_at_sync_60_starts_at_atc_tuned_at_60_and_validates_there():
    from sched.config import validate_config
    from sched.learn.farm import train as farm_train

    scenario = {"tasks": 40, "machines": 1, "load": 1.2, "chunks": CHUNKS}
    cfg = validate_config({"scenario": scenario, "train": TRAIN}, "test")
    net, meta, curve = farm_train.train(cfg, 2.0, seed=5, progress=False)
    first = curve.iloc[0]
    assert first["val_mean_twt_s"] == first["val_atc_tuned_twt_s"] > 0  # iteration 0 is the rule at 60 s
    assert meta["train_sync_s"] == 60.0 and curve["decisions"].iloc[1] > 0
    val = farm_train.Validator(cfg, 3, 2.0)
    assert val.sync_s == 60.0 and val.atc == first["val_atc_tuned_twt_s"]
    assert farm_train.Validator(cfg, 3, 2.0, sync_s=0.0).atc != val.atc  # the interval matters here
    with pytest.raises(ValueError, match="train.top_k"):
        farm_train.settings_of(
            validate_config({"scenario": scenario, "train": {**TRAIN, "top_k": 0}}, "t"), 1
        )
