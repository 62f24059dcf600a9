"""Jobs of frames (issue 59): the compiled chunked loop equals the plain-Python reference on
random chunked scenarios, chunk by chunk, and on one-chunk scenarios both are today's model."""

import numpy as np
import pytest

from sched.sim import chunks, core, reference, rules

from .random_farms import random_farm


def _same(got, want):
    return all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, want))


@pytest.mark.parametrize("part", range(4))
def test_compiled_equals_reference_on_1000_random_chunked_scenarios(part):
    # 4 x 250 scenarios, every rule (the farm's own included), 1-8 GPUs of mixed speeds: every
    # chunk's job, index, GPU, start and end are the reference's, bit for bit
    rng = np.random.default_rng(59_000 + part)
    for i in range(250):
        arrays, cols, speed, free = random_farm(rng)
        rule = rules.ALL_RULES[i % len(rules.ALL_RULES)]
        k = float(rng.choice([0.5, 2.0, 5.0]))
        got = chunks.simulate(*arrays, rule, speed, k, free, *cols, compiled=True)
        want = reference.simulate_chunked(*arrays, *cols, rule, speed, k, free)
        assert _same(got, want), (part, i, rule)
        assert len(got[0]) == chunks.counts(cols[0], cols[1]).sum()


@pytest.mark.parametrize("rule", rules.ALL_RULES)
def test_the_chunked_loop_on_one_chunk_jobs_is_todays_core(rule):
    # one chunk per job (one frame, or indivisible, or a chunk size of every frame), any limit:
    # the chunked loop gives today's schedules exactly, setup added to the duration
    rng = np.random.default_rng(hash(rule) % 2**32)
    for i in range(60):
        arrays, cols, speed, free = random_farm(rng, one_chunk=True)
        if i % 2:
            cols = (np.ones_like(cols[0]), *cols[1:3], np.zeros(len(cols[0])))
        job, chunk, start, end, mach = chunks.simulate(*arrays, rule, speed, 2.0, free, *cols, compiled=True)
        assert np.array_equal(job, np.arange(len(arrays[0]))) and not chunk.any()
        arr, dur, est, w, due = arrays
        todays = core.simulate(arr, cols[3] + dur, cols[3] + est, w, due, rule, speed, 2.0, free)
        assert _same((start, end, mach), todays), i
        fast = chunks.simulate(*arrays, rule, speed, 2.0, free, *cols)  # takes today's core
        assert _same(fast, (job, chunk, start, end, mach))
        if rule in rules.RULES and not cols[3].any():
            assert _same((start, end, mach), reference.simulate(*arrays, rule, speed, 2.0, free))


def test_one_frame_defaults_are_todays_schedule_bit_for_bit():
    rng = np.random.default_rng(7)
    for rule in rules.RULES:
        arrays, _, speed, free = random_farm(rng)
        _, _, start, end, mach = chunks.simulate(*arrays, rule, speed, 2.0, free, compiled=True)
        assert _same((start, end, mach), core.simulate(*arrays, rule, speed, 2.0, free))
