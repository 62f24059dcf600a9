"""The gated teacher's warm start on the chunked farm (sched.learn.farm.teach, `sched farm-teach`)."""

import numpy as np
import torch

from sched.learn.farm import scorer, teach
from sched.learn.search import plan_chunks as pc
from sched.learn.settings import Training
from sched.sim import chunks, rules

from .conftest import run_here
from .random_farms import random_farm


def zero_correction(top_k=4):
    net = scorer.network(8, top_k)
    with torch.no_grad():
        net.actor[4].weight.zero_()
        net.actor[4].bias.zero_()
    return net


def test_the_labels_are_the_plan_chunks_teacher_s_choices():
    rng = np.random.default_rng(5)
    knet = scorer.compiled(zero_correction(), 2.0, 20.0, 1.0)
    plan, moved = pc.Settings(3, 4, 0.5, 0), 0
    for _ in range(3):
        arrays, cols, speed, _free = random_farm(rng)
        cols = chunks.check_chunks(len(arrays[0]), *cols)
        labels, counts, ends = teach.label_farm(
            knet, scorer.Farm(arrays, cols, 0.0, 0.0), speed, 2.0, plan, 0.5
        )
        want, st = pc.simulate(arrays, cols, speed, 2.0, plan, 0.5)
        assert np.array_equal(ends, want)  # the labelling run takes the teacher's choices
        assert counts["decisions"] == st["decisions"] and counts["deviations"] == st["deviations"]
        # candidate 0 is the base's choice: a label elsewhere is a deviation (none outside top_k here)
        assert counts["missed"] == 0 and np.count_nonzero(labels["choice"]) == st["deviations"]
        assert np.all(labels["count"] >= 2) and np.all(labels["choice"] < labels["count"])
        moved += st["deviations"]
    assert moved > 0


def test_distilling_labels_that_all_say_the_atc_choice_keeps_the_atc_schedule():
    rng = np.random.default_rng(9)
    torch.manual_seed(0)
    net = zero_correction()
    knet = scorer.compiled(net, 2.0, 20.0, 1.0)
    never = pc.Settings(3, 1, 0.0, 0)  # one sample: the teacher never deviates
    farms, parts = [], []
    for _ in range(4):
        arrays, cols, speed, _free = random_farm(rng, max_gpus=3)
        farm = scorer.Farm(arrays, chunks.check_chunks(len(arrays[0]), *cols), 0.0, 0.0)
        labels, counts, _ = teach.label_farm(knet, farm, speed, 2.0, never, 0.5)
        assert counts["deviations"] == 0 and not labels["choice"].any()
        farms.append((farm, speed)), parts.append(labels)
    labels = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    loss = teach.distil(
        net,
        labels,
        Training.of(seed=1, distill_epochs=40, distill_lr=0.01).distill,
        torch.Generator().manual_seed(1),
    )
    assert np.isfinite(loss)
    moved = scorer.compiled(net, 2.0, 20.0, 1.0)
    assert not np.array_equal(moved.W1, knet.W1) or not np.array_equal(moved.w2, knet.w2)
    for farm, speed in farms:
        job, _c, _s, end, _m = chunks.simulate(
            *farm.arrays, rules.ATC, speed, 2.0, None, *farm.cols, compiled=True
        )
        assert np.array_equal(scorer.ends(moved, farm, speed), chunks.job_ends(job, end, len(farm.arrays[0])))


def test_farm_teach_refuses_a_bad_argument_in_one_line(tmp_path):
    r = run_here("farm-teach", "--tuned", tmp_path / "t.json", "--out", tmp_path, "--scenarios", "0")
    assert r.returncode == 2
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "--scenarios" in errors[0] and "got 0" in errors[0]
