"""Jobs of frames on a render farm (issue 59): the chunk model, the farm's dispatchers, the rules
on remaining work, the scenario CSV's chunk columns and `sched simulate`'s per-chunk schedule."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from sched.data import chunked
from sched.data.scenario import ScenarioError, read_scenario
from sched.sim import chunks, reference, rules
from sched.sim.errors import SimulationError

from .test_chunks_equivalence import random_farm

# --------------------------------------------------------------------------- the formulas


@pytest.mark.parametrize("frames", [1, 2, 7, 10, 50, 10_000])
@pytest.mark.parametrize("per", [0, 1, 3, 10, 10_000])
def test_a_job_is_ceil_frames_over_chunk_frames_chunks_the_last_one_shorter(frames, per):
    n = chunks.chunk_count(frames, per)
    assert n == (1 if per == 0 else math.ceil(frames / per))
    sizes = [chunks.frames_of(frames, per, i) for i in range(n)]
    assert sum(sizes) == frames and all(s >= 1 for s in sizes)
    assert all(s == (per or frames) for s in sizes[:-1]) and sizes[-1] <= (per or frames)
    assert chunks.counts(np.array([frames]), np.array([per]))[0] == n
    # the chunks' work adds up to the whole plus a setup per chunk; their remaining work too
    work = [chunks.chunk_work(120.0, frames, f, 2.0) for f in sizes]
    assert sum(work) == pytest.approx(120.0 + 2.0 * n)
    for started in sorted({0, 1, n // 2, n - 1, n}):
        rem = chunks.remaining_work(120.0, frames, per, n, started, 2.0)
        assert rem == pytest.approx(math.fsum(work[started:]), rel=1e-12, abs=1e-12)
    # one chunk is the whole task, exactly (no rounding of x f / f)
    assert chunks.chunk_work(0.1 + 0.2, frames, frames, 0.0) == 0.1 + 0.2
    assert chunks.remaining_work(0.1 + 0.2, frames, frames, 1, 0, 0.0) == 0.1 + 0.2


# --------------------------------------------------------------------------- the dispatch


def _run(rule, rows, machines, **cols):
    """Schedule ``rows`` ((arrival, duration, weight, due) each, estimate = duration)."""
    a, d, w, due = (np.array(c, dtype=float) for c in zip(*rows))
    got = chunks.simulate(a, d, d, w, due, rule, machines, **cols)
    want = reference.simulate_chunked(
        a, d, d, w, due, *chunks.check_chunks(len(a), *(cols.get(c) for c in _COLS)), rule, machines
    )
    assert all(np.array_equal(x, np.asarray(y)) for x, y in zip(got, want))
    return got


_COLS = ("frames", "chunk_frames", "max_gpus", "setup")


def test_a_job_spreads_over_the_free_gpus_up_to_its_limit():
    one = [(0.0, 10.0, 1.0, 100.0)]
    job, chunk, start, end, mach = _run("fifo", one, 4, frames=[10], chunk_frames=[1])
    assert list(chunk) == list(range(10)) and list(start[:4]) == [0.0] * 4 and list(mach[:4]) == [0, 1, 2, 3]
    assert np.allclose(end - start, 1.0) and end.max() == pytest.approx(3.0)
    _, _, start, end, mach = _run("fifo", one, 4, frames=[10], chunk_frames=[1], max_gpus=[2])
    assert set(mach) == {0, 1} and end.max() == pytest.approx(5.0)  # two at once: GPUs 2 and 3 stay idle
    # setup per chunk, the last chunk shorter, on a GPU of speed 2
    _, _, start, end, _ = _run("fifo", one, [2.0], frames=[10], chunk_frames=[4], setup=[1.0])
    assert np.allclose(end - start, [(1 + 4) / 2, (1 + 4) / 2, (1 + 2) / 2])


def test_farm_fifo_and_farm_balanced():
    # two equal-weight jobs of 8 one-second chunks on 4 GPUs, then an urgent heavier job
    rows = [(0.0, 8.0, 1.0, 100.0), (0.0, 8.0, 1.0, 100.0), (0.5, 2.0, 4.0, 100.0)]
    cols = {"frames": [8, 8, 2], "chunk_frames": [1, 1, 1]}
    job, _, start, _, _ = _run("farm-fifo", rows, 4, **cols)
    assert list(job[start == 0.0]) == [0, 0, 0, 0]  # submission order: the first job takes every GPU
    assert start[job == 2].min() == 1.0  # the heavier job first at the next free GPU
    job, _, start, _, _ = _run("farm-balanced", rows, 4, **cols)
    assert list(job[start == 0.0]) == [0, 0, 1, 1]  # equal weights share the hosts evenly
    assert start[job == 2].min() == 1.0 and (start[job == 2] == 1.0).all()  # then weight first


def test_rules_read_a_jobs_remaining_work():
    # one GPU: A (4 chunks of 2 s) starts alone; when B (5 s) comes, SPT compares B with A's
    # remaining 6 s, not its 2 s chunk, and B goes first
    rows = [(0.0, 8.0, 1.0, 100.0), (1.0, 5.0, 1.0, 100.0)]
    job, chunk, start, _, _ = _run("spt", rows, 1, frames=[4, 1], chunk_frames=[1, 1])
    assert list(zip(job, chunk, start)) == [(0, 0, 0.0), (0, 1, 7.0), (0, 2, 9.0), (0, 3, 11.0), (1, 0, 2.0)]
    # with 3 chunks of 2 s, A's remaining 4 s beats B's 5 s
    rows[0] = (0.0, 6.0, 1.0, 100.0)
    job, _, start, _, _ = _run("spt", rows, 1, frames=[3, 1], chunk_frames=[1, 1])
    assert start[job == 1][0] == 6.0


def test_random_chunked_schedules_keep_the_models_rules():
    rng = np.random.default_rng(5)
    for i in range(120):
        arrays, cols, speed, free = random_farm(rng)
        rule = rules.ALL_RULES[i % len(rules.ALL_RULES)]
        job, chunk, start, end, mach = chunks.simulate(*arrays, rule, speed, 2.0, free, *cols)
        frames, per, limit, setup = cols
        f = np.array([chunks.frames_of(frames[j], per[j], c) for j, c in zip(job, chunk)])
        work = setup[job] + np.where(f == frames[job], arrays[1][job], arrays[1][job] * f / frames[job])
        assert np.allclose(end - start, work / np.asarray(speed)[mach])
        assert (start >= arrays[0][job]).all()
        if free is not None:
            assert (start >= np.asarray(free)[mach]).all()
        for j in range(len(arrays[0])):
            s, e = start[job == j], end[job == j]
            assert (np.diff(s) >= 0).all()  # a job's chunks start in order
            if limit[j]:  # never more than max_gpus chunks at once
                assert max(((s <= t) & (e > t)).sum() for t in s) <= limit[j]
        for m in set(mach):  # a GPU runs one chunk at a time
            order = np.argsort(start[mach == m], kind="stable")
            assert (start[mach == m][order][1:] >= end[mach == m][order][:-1]).all()


@pytest.mark.parametrize(
    "field, value, why",
    [
        ("frames", [0], "frames: 0 is outside"),
        ("frames", [10_001], "frames: 10001 is outside"),
        ("frames", [1.5], "frames: expected integers"),
        ("chunk_frames", [-1], "chunk_frames: -1 is outside"),
        ("max_gpus", [10_001], "max_gpus: 10001 is outside"),
        ("setup", [-1.0], "setup_s: must be finite and >= 0"),
        ("setup", [math.nan], "setup_s: must be finite and >= 0"),
        ("frames", [1, 2], "frames: expected 1 values"),
    ],
)
def test_the_simulator_refuses_chunk_values_outside_the_model(field, value, why):
    one = ([0.0], [1.0], [1.0], [1.0], [5.0])
    with pytest.raises(SimulationError, match=why):
        chunks.simulate(*one, "atc", 2, **{field: np.array(value)})


def test_the_simulator_bounds_the_chunks_of_a_scenario(monkeypatch):
    monkeypatch.setattr(chunks, "MAX_SCENARIO_CHUNKS", 10)
    one = ([0.0], [1.0], [1.0], [1.0], [5.0])
    assert len(chunks.simulate(*one, "atc", 2, frames=[10], chunk_frames=[1])[0]) == 10
    with pytest.raises(SimulationError, match="11 chunks"):
        chunks.simulate(*one, "atc", 2, frames=[11], chunk_frames=[1])


# --------------------------------------------------------------------------- the scenario CSV

HEAD = "id,kind,arrival_s,duration_s,weight,due_s,estimate_s"
CHUNKED = f"""{HEAD},frames,chunk_frames,max_gpus,setup_s,note
a,image,0,30,1,40,30,10,3,2,1,split
b,video,0,200,4,150,180,,,,,defaults
c,image,10,20,2,35,25,4,,1,0.5,indivisible
d,image,10,20,2,35,25,20,5,,,no limit
e,image,12,12,1,30,12,6,4,3,0,
"""


def test_the_chunk_columns_are_read_with_their_defaults(tmp_path):
    p = tmp_path / "farm.csv"
    p.write_text(CHUNKED)
    sc = read_scenario(p)
    assert sc.chunked
    frames, per, limit, setup = sc.chunks
    assert list(frames) == [10, 1, 4, 20, 6] and list(per) == [3, 0, 0, 5, 4]
    assert list(limit) == [2, 0, 1, 0, 3] and list(setup) == [1.0, 0.0, 0.5, 0.0, 0.0]
    p.write_text("id,kind,arrival_s,duration_s,weight,due_s\na,image,0,30,1,40\n")
    assert not read_scenario(p).chunked and list(read_scenario(p).chunks[0]) == [1]


@pytest.mark.parametrize(
    "field, value, why",
    [
        ("frames", "0", "must be an integer >= 1"),
        ("frames", "-3", "must be an integer >= 1"),
        ("frames", "2.5", "must be an integer"),
        ("frames", "ten", "is not a number"),
        ("frames", "nan", "is not finite"),
        ("frames", "10001", "is out of range (<= 10000)"),
        ("chunk_frames", "0", "must be an integer >= 1"),
        ("chunk_frames", "1e9", "is out of range"),
        ("max_gpus", "0", "must be an integer >= 1"),
        ("max_gpus", "1.5", "must be an integer"),
        ("max_gpus", "20000", "is out of range (<= 10000)"),
        ("setup_s", "-1", "must be >= 0"),
        ("setup_s", "inf", "is not finite"),
        ("setup_s", "x", "is not a number"),
        ("setup_s", "1e13", "is out of range"),
    ],
)
def test_a_bad_chunk_value_is_refused_in_one_line_naming_row_and_field(tmp_path, field, value, why):
    p = tmp_path / "bad.csv"
    p.write_text(f"{HEAD},{field}\na,image,0,30,1,40,30,\nb,image,0,30,1,40,30,{value}\n")
    with pytest.raises(ScenarioError) as e:
        read_scenario(p)
    msg = str(e.value)
    assert "\n" not in msg and f"row 2 (line 3) field {field}: " in msg and why in msg and str(p) in msg


def test_a_chunked_scenario_may_not_hold_the_chunk_column_and_its_chunks_are_bounded(tmp_path, monkeypatch):
    p = tmp_path / "s.csv"
    p.write_text(f"{HEAD},frames,chunk\na,image,0,30,1,40,30,2,x\n")
    with pytest.raises(ScenarioError, match="column 'chunk'"):
        read_scenario(p)
    p.write_text(f"{HEAD},chunk\na,image,0,30,1,40,30,x\n")  # an extra column of a whole-task scenario
    assert list(read_scenario(p).frame["chunk"]) == ["x"]
    monkeypatch.setattr(chunked, "MAX_SCENARIO_CHUNKS", 5)
    p.write_text(f"{HEAD},frames,chunk_frames\na,image,0,30,1,40,30,6,1\n")
    with pytest.raises(ScenarioError, match="field frames: 6 chunks"):
        read_scenario(p)


# --------------------------------------------------------------------------- `sched simulate`


@pytest.mark.parametrize("rule", rules.ALL_RULES)
def test_simulate_writes_one_row_a_chunk_and_totals_per_job(tmp_path, cli, rule):
    src, out = tmp_path / "farm.csv", tmp_path / "farm-out.csv"
    src.write_text(CHUNKED)
    r = cli("simulate", "--policy", rule, "--scenario", src, "--machines", "2x1.0,1x0.5", "--out", out)
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout)
    sched = pd.read_csv(out, dtype={"id": str}, keep_default_na=False)
    sc = read_scenario(src)
    cols = list(sc.frame.columns)
    assert list(sched.columns) == cols + [
        "chunk",
        "machine",
        "start_s",
        "end_s",
        "tardiness_s",
        "weighted_tardiness_s",
    ]
    frames, per, limit, setup = sc.chunks
    n = chunks.counts(frames, per)
    assert len(sched) == n.sum() == line["chunks"] and line["tasks"] == len(sc)
    assert list(sched["id"]) == [i for i, k in zip(sc.frame["id"], n) for _ in range(k)]  # jobs in row order
    assert list(sched["chunk"]) == [c for k in n for c in range(k)]
    job, chunk, start, end, mach = reference.simulate_chunked(*sc.arrays, *sc.chunks, rule, "2x1.0,1x0.5")
    assert np.array_equal(sched["start_s"], start) and np.array_equal(sched["machine"], mach)
    last = sched["chunk"].to_numpy() == n[job] - 1
    assert (sched["tardiness_s"][~last] == 0).all() and (sched["weighted_tardiness_s"][~last] == 0).all()
    done = sched.groupby("id", sort=False)["end_s"].max()  # a job is done when its last chunk ends
    late = np.maximum(done.to_numpy() - sc.frame["due_s"].to_numpy(), 0.0)
    assert np.allclose(sched["tardiness_s"][last], late)
    assert line["total_weighted_tardiness_s"] == pytest.approx((late * sc.frame["weight"]).sum())
    assert line["makespan_s"] == sched["end_s"].max()
    assert line["mean_flow_time_s"] == pytest.approx((done.to_numpy() - sc.frame["arrival_s"]).mean())


def test_one_frame_columns_change_no_number_and_whole_files_keep_todays_format(tmp_path, cli):
    whole = "id,kind,arrival_s,duration_s,weight,due_s\n" + "".join(
        f"t{i},image,{i % 5},{3 + i % 7},{1 + i % 3},{10 + i}\n" for i in range(20)
    )
    ones = whole.replace("due_s\n", "due_s,frames,chunk_frames\n").replace("\n", ",1,\n")[:-1].split("\n")
    ones = "\n".join([ones[0].replace(",1,", "")] + ones[1:]) + "\n"
    a, b = tmp_path / "whole.csv", tmp_path / "ones.csv"
    a.write_text(whole)
    b.write_text(ones)
    for rule in ("atc", "farm-balanced"):
        outs = []
        for src in (a, b):
            out = tmp_path / f"{src.stem}-{rule}.csv"
            r = cli("simulate", "--policy", rule, "--scenario", src, "--machines", 3, "--out", out)
            assert r.returncode == 0, r.stderr
            outs.append((json.loads(r.stdout), pd.read_csv(out)))
        (ja, sa), (jb, sb) = outs
        assert "chunk" not in sa.columns and "chunk" in sb.columns and "chunks" not in ja
        jb.pop("chunks")
        assert {**ja, "scenario": "x"} == {**jb, "scenario": "x"}  # every number, bit for bit
        for col in ("machine", "start_s", "end_s", "tardiness_s", "weighted_tardiness_s"):
            assert np.array_equal(sa[col], sb[col])


@pytest.mark.parametrize("policy", ["plan", "ppo"])
def test_policies_of_whole_tasks_refuse_a_chunked_scenario(tmp_path, cli, policy):
    src = tmp_path / "farm.csv"
    src.write_text(CHUNKED)
    r = cli("simulate", "--policy", policy, "--scenario", src, "--policy-file", tmp_path / "none.pt")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "several chunks" in r.stderr


def test_farm_scale_a_thousand_gpus_and_ten_thousand_frames():
    # two jobs of 10,000 one-second frames, one frame a chunk, on 1,000 GPUs: 20 waves
    two = ([0.0, 0.0], [1e4, 1e4], [1e4, 1e4], [1.0, 2.0], [0.0, 0.0])
    job, _, _, end, mach = chunks.simulate(*two, "atc", 1000, frames=[10_000] * 2, chunk_frames=[1, 1])
    assert len(job) == 20_000 and end.max() == 20.0 and set(mach) == set(range(1000))
    assert end[job == 1].max() == 10.0  # the heavier job first on every GPU
    with pytest.raises(SimulationError, match="frames: 10001"):
        chunks.simulate(*two, "atc", 1000, frames=[10_001, 1])


def test_tables_built_in_python_read_like_files():
    from sched.data.scenario import validate_frame

    f = pd.DataFrame(
        {"id": ["a", "b"], "kind": ["x", "x"], "arrival_s": [0, 1], "duration_s": [3.0, 4], "weight": [1, 1],
         "due_s": [5, 5], "frames": [3, 1], "chunk_frames": [np.nan, 2.0], "max_gpus": [None, 2],
         "setup_s": [np.nan, 0.5]}
    )  # fmt: skip
    out = validate_frame(f)
    got = chunked.chunk_arrays(out)
    assert [list(c) for c in got] == [[3, 1], [0, 2], [0, 2], [0.0, 0.5]]
    with pytest.raises(ScenarioError, match="row 1 .* field frames: '0' must be an integer >= 1"):
        validate_frame(f.assign(frames=[0, 1]))
