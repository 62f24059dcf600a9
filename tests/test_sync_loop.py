"""The farm as the adapters drive it (issue 59, point 4): the rule ranks the jobs at syncs every
``sync_s`` seconds and the farm dispatches by those ranks between them (sched.sim.sync). The
compiled loop equals the plain-Python reference chunk by chunk on random scenarios and random
intervals; sync 0 is today's chunked loop bit for bit; the model's rules, case by case."""

import json

import numpy as np
import pandas as pd
import pytest

from sched.data.scenario import read_scenario
from sched.limits import MAX_SYNC_S, MIN_SYNC_S
from sched.sim import chunks, reference, rules, sync
from sched.sim.errors import SimulationError

from .random_farms import random_farm as shared_random_farm

#: intervals on and off the scenarios' integer grid (ties of a sync with ends and arrivals), and
#: one beyond every scenario (one sync, at 0)
INTERVALS = (1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 25.0, 60.0, MAX_SYNC_S)


def random_farm(rng):
    """A small chunked scenario, some jobs arriving before the first sync at 0."""
    return shared_random_farm(rng, max_jobs=25, max_frames=40, max_gpus=6, arrivals=(-3, 30), spread=0.85)


def _same(got, want):
    return all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, want))


@pytest.mark.parametrize("part", range(4))
def test_compiled_sync_loop_equals_reference_on_1000_random_scenarios(part):
    # 4 x 250 scenarios, every rule, random intervals, 1-6 GPUs of mixed speeds: every chunk's job,
    # index, GPU, start and end are the reference's (which visits every sync instant), bit for bit
    rng = np.random.default_rng(59_400 + part)
    for i in range(250):
        arrays, cols, speed, free = random_farm(rng)
        rule = rules.ALL_RULES[i % len(rules.ALL_RULES)]
        k = float(rng.choice([0.5, 2.0, 5.0]))
        s = float(rng.choice(INTERVALS))
        got = sync.simulate(*arrays, rule, speed, k, free, *cols, sync_s=s)
        want = reference.simulate_chunked(*arrays, *cols, rule, speed, k, free, sync_s=s)
        assert _same(got, want), (part, i, rule, s)
        assert len(got[0]) == chunks.counts(cols[0], cols[1]).sum()


def test_sync_zero_is_todays_chunked_loop_bit_for_bit():
    rng = np.random.default_rng(59_404)
    for i in range(80):
        arrays, cols, speed, free = random_farm(rng)
        rule = rules.ALL_RULES[i % len(rules.ALL_RULES)]
        for compiled in (None, True):
            want = chunks.simulate(*arrays, rule, speed, 2.0, free, *cols, compiled=compiled)
            got = sync.simulate(*arrays, rule, speed, 2.0, free, *cols, compiled=compiled, sync_s=0.0)
            assert _same(got, want), i
        ref = reference.simulate_chunked(*arrays, *cols, rule, speed, 2.0, free)
        assert _same(reference.simulate_chunked(*arrays, *cols, rule, speed, 2.0, free, sync_s=0), ref)


@pytest.mark.parametrize("s", [1.0, 7.5, 60.0, MAX_SYNC_S])
def test_with_one_priority_class_farm_fifo_synced_is_farm_fifo(s):
    # every job of one class: the synced order (arrival) and the farm's own order (arrival) agree
    rng = np.random.default_rng(int(s) % 1000)
    for _ in range(40):
        arrays, cols, speed, free = random_farm(rng)
        arrays = (*arrays[:3], np.ones(len(arrays[0])), arrays[4])
        want = chunks.simulate(*arrays, "farm-fifo", speed, 2.0, free, *cols, compiled=True)
        assert _same(sync.simulate(*arrays, "farm-fifo", speed, 2.0, free, *cols, sync_s=s), want)


@pytest.mark.parametrize("rule", rules.RULES)
def test_jobs_arriving_after_the_last_sync_are_dispatched_as_farm_fifo(rule):
    # arrivals after 0 and one sync every 1e12 s: no job is ever ranked, the farm orders them all
    # by class then submission, whatever the rule
    rng = np.random.default_rng(len(rule))
    for _ in range(30):
        arrays, cols, speed, _ = random_farm(rng)
        arrays = (arrays[0] - arrays[0].min() + 1.0, *arrays[1:])
        want = chunks.simulate(*arrays, "farm-fifo", speed, 2.0, None, *cols, compiled=True)
        assert _same(sync.simulate(*arrays, rule, speed, 2.0, None, *cols, sync_s=MAX_SYNC_S), want)


def _rank_at_zero(rule, arrays, cols, k):
    """Each job's rank by ``rule`` at time 0, every job waiting and nothing running (the test's
    own reading of the model: priority on remaining work, pbar their mean, a GPU of speed 1)."""
    arr, _, est, w, due = arrays
    n = len(arr)
    total = chunks.counts(cols[0], cols[1])
    rem = np.array(
        [chunks.remaining_work(est[j], cols[0][j], cols[1][j], total[j], 0, cols[3][j]) for j in range(n)]
    )
    rid = rules.rule_id(rule)
    at = rules.Decision(0.0, float(rem.mean()), 1.0)
    x = [
        rules.priority(rid, k, at, 0.0, rem[j], w[j], due[j], rules.static_part(rid, rem[j], w[j]))
        for j in range(n)
    ]
    order = sorted(range(n), key=lambda j: -x[j])  # stable: ties by row (every arrival is 0)
    rank = np.empty(n)
    rank[order] = np.arange(n)
    return rank


@pytest.mark.parametrize("rule", ["spt", "edd", "wspt", "atc", "wmdd"])
def test_scores_are_frozen_between_syncs(rule):
    # every job present at the sync at 0 and no other sync: the farm follows the order of the
    # rule's scores at 0 all along (a fixed priority list: farm-fifo on the ranks as classes),
    # however remaining work and time change the rule's scores after 0
    rng = np.random.default_rng(len(rule) + 100)
    for _ in range(30):
        arrays, cols, speed, _ = random_farm(rng)
        arrays = (np.zeros(len(arrays[0])), *arrays[1:])
        ranked = (*arrays[:3], len(arrays[0]) - _rank_at_zero(rule, arrays, cols, 2.0), arrays[4])
        want = chunks.simulate(*ranked, "farm-fifo", speed, 2.0, None, *cols, compiled=True)
        assert _same(sync.simulate(*arrays, rule, speed, 2.0, None, *cols, sync_s=MAX_SYNC_S), want)


def _one_gpu(rows, rule="spt", s=10.0):
    """(start, end) of each chunk of jobs (arrival, frames of 1 s each, weight) on one GPU."""
    arr = np.array([r[0] for r in rows], float)
    frames = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows], float)
    dur = frames.astype(float)
    cols = (frames, np.ones_like(frames), None, None)
    job, chunk, start, end, _ = sync.simulate(
        arr, dur, dur, w, arr + 1000, rule, 1, 2.0, None, *cols, sync_s=s
    )
    ref = reference.simulate_chunked(
        arr, dur, dur, w, arr + 1000, *cols[:2], [0] * len(arr), [0] * len(arr), rule, 1, 2.0, None, s
    )
    assert _same((job, chunk, start, end), ref[:4])
    return {(int(j), int(c)): float(t) for j, c, t in zip(job, chunk, start)}


def test_a_new_job_waits_below_the_synced_ones_until_the_next_sync():
    # A: 30 frames from 0 (synced at 0); B: 2 frames at 10.5, shorter (SPT ranks it first), lands
    # between the syncs at 10 and 20: A runs on until 20, then B
    start = _one_gpu([(0.0, 30, 1.0), (10.5, 2, 1.0)])
    assert start[1, 0] == 20.0 and start[1, 1] == 21.0
    assert start[0, 20] == 22.0  # A's chunk 20 after B's two


def test_a_job_arriving_at_a_sync_instant_is_ranked_by_that_sync():
    # B arrives at 10, exactly at a sync, as A's chunk ends there: arrival and end come first, so
    # the sync at 10 ranks B, and B starts at 10
    start = _one_gpu([(0.0, 30, 1.0), (10.0, 2, 1.0)])
    assert start[1, 0] == 10.0 and start[1, 1] == 11.0


def test_jobs_submitted_since_the_sync_go_by_class_then_submission_below_every_synced_job():
    # A (weight 1) synced at 0 holds the GPU until its frames are done, whatever the classes of B
    # and C, which land after the only sync; then C (weight 4) before B (weight 2), then D
    # (weight 2, after B)
    start = _one_gpu([(0.0, 5, 1.0), (1.0, 2, 2.0), (2.0, 2, 4.0), (3.0, 2, 2.0)], rule="spt", s=MAX_SYNC_S)
    assert [start[0, c] for c in range(5)] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert (start[2, 0], start[1, 0], start[3, 0]) == (5.0, 7.0, 9.0)


@pytest.mark.parametrize(
    "bad", [-1.0, 0.5, MIN_SYNC_S / 2, MAX_SYNC_S * 2, float("nan"), float("inf"), "x", None]
)
def test_a_sync_interval_outside_the_bounds_is_refused_naming_it(bad):
    with pytest.raises(SimulationError, match="sync_s") as e:
        sync.check_sync(bad)
    assert "\n" not in str(e.value)
    with pytest.raises(SimulationError, match="sync_s"):
        sync.simulate([0.0], [1.0], [1.0], [1.0], [5.0], "atc", sync_s=bad)


def test_the_bounds_themselves_are_taken():
    assert sync.check_sync(0) == 0.0 and sync.check_sync(MIN_SYNC_S) == MIN_SYNC_S
    assert sync.check_sync(MAX_SYNC_S) == MAX_SYNC_S


def test_todays_core_has_no_syncs():
    with pytest.raises(SimulationError, match="sync"):
        sync.simulate([0.0], [1.0], [1.0], [1.0], [5.0], "atc", compiled=False, sync_s=60.0)


@pytest.mark.parametrize("t", [-7.0, -0.5, 0.0, 3.0, 59.999, 60.0, 1e6 + 0.25, 1e12])
@pytest.mark.parametrize("s", [1.0, 7.5, 60.0, 0.1 * 3])
def test_sync_instants_are_the_multiples_of_the_interval(t, s):
    # k x s for an integer k, the largest <= t (< t): k x s and (k + 1) x s as the loops compute them
    at, before = sync.sync_floor(t, s, False), sync.sync_floor(t, s, True)
    ka, kb = round(at / s), round(before / s)
    assert ka * s == at and kb * s == before
    assert at <= t < (ka + 1) * s and before < t <= (kb + 1) * s
    assert (at == t) == (before < at) and (at == t or before == at)


# --------------------------------------------------------------------------- `sched simulate --sync-s`

HEAD = "id,kind,arrival_s,duration_s,weight,due_s,estimate_s"
FARM = (
    HEAD
    + ",frames,chunk_frames,max_gpus,setup_s\n"
    + "".join(
        f"j{i},image,{7 * i % 90},{20 + 13 * i % 70},{1 + i % 3},{60 + 11 * i},{25 + 7 * i % 50},"
        f"{1 + 5 * i % 40},{'' if i % 4 == 0 else 1 + i % 6},{'' if i % 3 else 1 + i % 2},{i % 2 * 0.5}\n"
        for i in range(24)
    )
)
WHOLE = (
    HEAD
    + "\n"
    + "".join(f"t{i},image,{i % 5},{3 + i % 7},{1 + i % 3},{10 + i},{4 + i % 5}\n" for i in range(20))
)


@pytest.mark.parametrize("rule", ["atc", "wspt", "farm-fifo"])
@pytest.mark.parametrize("text", [FARM, WHOLE], ids=["chunked", "whole"])
def test_sync_zero_on_the_command_line_changes_no_byte(tmp_path, cli, rule, text):
    src = tmp_path / "s.csv"
    src.write_text(text)
    runs = []
    for extra in ((), ("--sync-s", "0")):
        out = tmp_path / f"out{len(extra)}.csv"
        r = cli("simulate", "--policy", rule, "--scenario", src, "--machines", 3, "--out", out, *extra)
        assert r.returncode == 0, r.stderr
        runs.append((r.stdout, out.read_bytes()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("rule", ["atc", "farm-balanced"])
@pytest.mark.parametrize("text", [FARM, WHOLE], ids=["chunked", "whole"])
def test_simulate_with_a_sync_interval_runs_the_sync_loop(tmp_path, cli, rule, text):
    src, out = tmp_path / "s.csv", tmp_path / "out.csv"
    src.write_text(text)
    r = cli(
        "simulate",
        "--policy",
        rule,
        "--scenario",
        src,
        "--machines",
        "2x1.0,1x0.5",
        "--sync-s",
        5,
        "--out",
        out,
    )
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout)
    assert line["sync_s"] == 5.0
    sched = pd.read_csv(out, dtype={"id": str}, keep_default_na=False)
    sc = read_scenario(src)
    assert ("chunk" in sched.columns) == sc.chunked  # a whole-task file keeps today's format
    k = 2.0 if rule != "atc" else json.loads(r.stdout)["atc_k"]
    _, _, start, end, mach = reference.simulate_chunked(
        *sc.arrays, *sc.chunks, rule, "2x1.0,1x0.5", k, None, 5.0
    )
    assert np.array_equal(sched["start_s"], start) and np.array_equal(sched["machine"], mach)
    assert np.array_equal(sched["end_s"], end)


@pytest.mark.parametrize("bad", ["-1", "0.5", "nan", "inf", "1e13", "x"])
def test_a_bad_sync_interval_is_refused_in_one_line(tmp_path, cli, bad):
    src = tmp_path / "s.csv"
    src.write_text(FARM)
    r = cli("simulate", "--policy", "atc", "--scenario", src, "--sync-s", bad)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--sync-s" in r.stderr, r.stderr
    assert not r.stdout


@pytest.mark.parametrize("policy", ["plan", "ppo"])
def test_policies_of_whole_tasks_refuse_a_sync_interval(tmp_path, cli, policy):
    src = tmp_path / "s.csv"
    src.write_text(WHOLE)
    r = cli(
        "simulate",
        "--policy",
        policy,
        "--scenario",
        src,
        "--sync-s",
        60,
        "--policy-file",
        tmp_path / "none.pt",
    )
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--sync-s" in r.stderr, r.stderr


def test_times_beyond_the_exact_grid_still_end():
    # ten jobs of 1e12 s on a GPU of speed 0.001: ends beyond 2**53 syncs of 1 s from 0, where
    # k x s is coarser than the integers; the loop's adjustments are bounded, the schedule ends
    assert sync.sync_floor(1e30, 1.0, False) <= 1e30 and sync.sync_floor(-1e30, 1.0, True) < -1e29
    n = 10
    big = np.full(n, 1e12)
    _, _, start, end, _ = sync.simulate(np.zeros(n), big, big, np.ones(n), big, "atc", [0.001], sync_s=1.0)
    assert np.array_equal(start, np.arange(n) * 1e15) and end.max() == 1e16
