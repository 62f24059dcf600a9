"""The learned policy on the chunked farm (sched.learn.farm): the compiled decision, its file, PPO."""

import numpy as np
import pytest
import torch
import yaml

from sched.learn.farm import decide, scorer
from sched.learn.policy import kernel
from sched.sim import chunks, rules

from .random_farms import random_farm


def zero_correction(hidden=8, top_k=4, scale=1.0):
    """A farm scorer whose MLP correction is exactly zero: scale x the atc feature."""
    net = scorer.network(hidden, top_k, prior_scale=scale)
    with torch.no_grad():
        net.actor[4].weight.zero_()
        net.actor[4].bias.zero_()
    return net


def test_a_zero_correction_scorer_is_the_chunked_atc_rule_bit_for_bit():
    rng = np.random.default_rng(60)
    for trial in range(150):
        arrays, cols, speed, free = random_farm(rng)
        k = float(rng.choice([0.5, 2.0, 4.0]))
        net = zero_correction(top_k=int(rng.choice([0, 1, 3, 16])), scale=float(rng.choice([0.5, 1.0, 3.0])))
        knet = scorer.compiled(net, k, 20.0, 1.0)
        cols = chunks.check_chunks(len(arrays[0]), *cols)
        want, _ = chunks.load(arrays, cols, speed, free)
        chunks.run_farm(want, rules.ATC, k)
        got, _ = chunks.load(arrays, cols, speed, free)
        n = len(arrays[0])
        taken = decide.run_policy(got, knet, decide.workspace(n, knet), np.zeros((0, 1)), decide.no_record())
        assert taken == want.start.shape[0]
        for a, b in ((got.start, want.start), (got.end, want.end), (got.mach, want.mach)):
            assert np.array_equal(a, b), trial


def test_torch_and_the_compiled_decision_agree_on_the_recorded_decisions():
    rng = np.random.default_rng(7)
    torch.manual_seed(3)
    net = scorer.network(8, 5).double()
    with torch.no_grad():  # a correction well away from zero
        net.actor[4].weight.normal_(0.0, 1.0)
    knet = scorer.compiled(net, 2.0, 20.0, 1.0)
    checked = 0
    for _ in range(8):
        arrays, cols, speed, _free = random_farm(rng)
        farm = scorer.Farm(arrays, chunks.check_chunks(len(arrays[0]), *cols), 0.0, 0.0)
        u = rng.random((scorer.chunk_count(farm), 5))
        rec, reward, job_end = scorer.sampled(knet, farm, speed, u)
        mask = torch.arange(5)[None, :] < torch.from_numpy(rec.count)[:, None]
        logits, _ = net.forward_compact(
            torch.from_numpy(rec.X).double(), torch.from_numpy(rec.ctx).double(), mask
        )
        logp = torch.log_softmax(logits, -1).gather(1, torch.from_numpy(rec.choice)[:, None])[:, 0]
        assert np.allclose(logp.detach().numpy(), rec.logp, atol=1e-4)
        assert np.all(rec.count >= 1) and np.all(rec.choice < rec.count)
        # the rewards are the counted jobs' weighted tardiness, once a job
        assert np.isclose(-reward.sum(), scorer.cost(farm, job_end))
        assert np.count_nonzero(reward) <= len(arrays[0])
        checked += len(rec.count)
    assert checked > 200


def test_the_greedy_policy_at_a_sync_schedules_every_chunk_in_order():
    rng = np.random.default_rng(11)
    knet = scorer.compiled(scorer.network(8, 4), 2.0, 20.0, 1.0)
    for _ in range(8):
        arrays, cols, speed, _free = random_farm(rng)
        farm = scorer.Farm(arrays, chunks.check_chunks(len(arrays[0]), *cols), 0.0, 0.0)
        for s in (0.0, 60.0):
            done = scorer.ends(knet, farm, speed, sync_s=s)
            assert np.all(np.isfinite(done)) and np.all(done > arrays[0])


def test_kernel_net_fields_are_the_scorer_s():
    net = scorer.network(8, 4)
    knet = scorer.compiled(net, 2.0, 20.0, 1.0)
    assert knet.W0.shape == (8, decide.N_TASK + decide.N_CTX) and knet.lin.shape == (decide.N_TASK,)
    assert isinstance(knet, kernel.Net)


CHUNKS = {
    "frames": {"median": 12, "sigma": 1.0, "max": 200},
    "chunk_frames": 4,
    "max_gpus": None,
    "setup_s": 0,
}
TRAIN = {"group_size": 2, "num_envs": 4, "iterations": 2, "eval_every": 1, "validation_scenarios": 3,
         "hidden": 8, "top_k": 4, "patience": 0}  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from sched.config import validate_config
    from sched.learn.farm import policy_file
    from sched.learn.farm import train as farm_train

    cfg = validate_config(
        {"scenario": {"tasks": 25, "machines": 2, "chunks": CHUNKS}, "train": TRAIN}, "test"
    )
    net, meta, curve = farm_train.train(cfg, 2.0, seed=5, progress=False)
    path = tmp_path_factory.mktemp("farm") / "p.pt"
    policy_file.save(path, net, meta)
    return cfg, net, meta, curve, path


def test_farm_training_starts_at_atc_tuned_and_keeps_its_best_validated_weights(trained):
    cfg, _net, meta, curve, path = trained
    from sched.learn.farm import policy_file
    from sched.learn.farm import train as farm_train

    assert list(curve["iteration"]) == [0, 1, 2]
    first = curve.iloc[0]
    assert first["val_mean_twt_s"] == first["val_atc_tuned_twt_s"]  # iteration 0 is the rule, exactly
    assert meta["val_weighted_tardiness_s"] == curve["val_mean_twt_s"].min()
    assert curve["val_mean_twt_s"].iloc[meta["best_iteration"]] == meta["val_weighted_tardiness_s"]
    assert (curve["decisions"].iloc[1:] > 0).all()
    loaded = policy_file.load(path)  # the file gives the validated score back, through the compiled decision
    val = farm_train.Validator(cfg, 3, 2.0)
    assert val(loaded.knet) == pytest.approx(meta["val_weighted_tardiness_s"], rel=1e-9)


def test_a_farm_policy_file_that_is_not_one_is_refused_naming_the_field(trained, tmp_path):
    _cfg, net, meta, _curve, _path = trained
    from sched.learn.farm import policy_file

    bad = tmp_path / "bad.pt"
    policy_file.save(bad, net, {**meta, "task_features": ["est_rel"]})
    with pytest.raises(policy_file.FarmPolicyError, match="meta.task_features"):
        policy_file.load(bad)
    torch.save({"format": "other"}, bad)
    with pytest.raises(policy_file.FarmPolicyError, match="format"):
        policy_file.load(bad)
    with torch.no_grad():
        w = {k: v.clone() for k, v in net.state_dict().items()}
    w["linear.weight"] = torch.full_like(w["linear.weight"], float("nan"))
    net2 = scorer.network(8, 4)
    net2.load_state_dict(w)
    policy_file.save(bad, net2, meta)
    with pytest.raises(policy_file.FarmPolicyError, match="linear.weight"):
        policy_file.load(bad)


def test_the_learned_farm_policy_is_built_by_the_longer_run_only_and_leaves_the_benchmark_alone():
    from sched import layout
    from sched.config import load_yaml, validate_config
    from sched.pipeline.plan import FARM_LEARNED_FILES, FARM_TRAIN_FILES, Plan

    from .conftest import ROOT

    data = load_yaml(ROOT / "config.yaml")
    plans = {}
    for profile in ("default", "full"):
        cfg = validate_config({**data, "profile": profile}, "config.yaml")
        plans[profile] = Plan(cfg.to_dict(), cfg)
    default, full = plans["default"], plans["full"]
    learned = [n for n, s in full.farm.items() if s.get("train")]
    assert learned and default.farm_learned() == [] and full.farm_learned() == learned
    name = learned[0]
    files = [f"{layout.farm_root(name)}/{f}" for f in FARM_TRAIN_FILES + FARM_LEARNED_FILES]
    assert not set(files) & set(default.farm_outputs()) and set(files) <= set(full.farm_outputs())
    # the benchmark's config file has no train block: a train block changes none of its results
    bare = {**data, "farm": {"settings": [{k: v for k, v in s.items() if k != "train"}
                                          for s in data["farm"]["settings"]]}}  # fmt: skip
    cfg = validate_config({**bare, "profile": "full"}, "config.yaml")
    assert Plan(cfg.to_dict(), cfg).farm_config_text(name) == full.farm_config_text(name)
    text = yaml.safe_load(full.farm_train_config_text(name))
    assert (
        text["train"]["group_size"] >= 2
        and text["scenario"] == yaml.safe_load(full.farm_config_text(name))["scenario"]
    )
