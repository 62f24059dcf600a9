"""The learned policy on the chunked farm (sched.learn.farm): the compiled decision, its file, PPO."""

import numpy as np
import pytest
import torch

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
    for _ in range(20):
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
    for _ in range(20):
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


if __name__ == "__main__":
    pytest.main([__file__])
