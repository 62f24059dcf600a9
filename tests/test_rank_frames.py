"""rank() of jobs of frames (issue 59, point 8): the rule's forward plan on the chunked model.

The order is the order in which the chunked simulator (``sched.sim.chunks.simulate``) first
starts each job's chunks on the same jobs; explain's planned finishes are the simulator's job
ends; running chunks hold GPUs and count against a job's limit; every bad field is one line
naming the task and the field; whole-task calls are unchanged; policies that plan whole tasks
are refused or, for auto's verdict, replaced by tuned ATC saying why; ``sched serve`` and
``sched rank`` pass the fields through.
"""

import json

import numpy as np
import pytest

from sched.ranking.farm import frames as frames_mod
from sched.ranking.ranker import decide, rank
from sched.ranking.tasks import RankInputError
from sched.ranking.verdicts import Choice
from sched.sim import chunks, rules


def conf(tmp_path):
    return {"rank": {k: str(tmp_path / f) for k, f in (("winner", "w.json"), ("tuned", "t.json"))}}


def random_jobs(rng, n):
    """``n`` jobs of frames as rank() tasks, and the same as the simulator's arrays."""
    tasks = []
    for i in range(n):
        t = {
            "id": f"j{i}",
            "frames": int(rng.integers(1, 30)),
            "frame_s": float(rng.choice([5.0, 10.0, 30.0, rng.uniform(1, 60)])),
            "weight": float(rng.choice([1.0, 2.0, 4.0])),
            "due": float(rng.uniform(0, 600)),
            "arrival": float(rng.choice([0.0, 0.0, rng.uniform(0, 100)])),
        }
        if rng.random() < 0.5:
            t["chunk_frames"] = int(rng.integers(1, 8))
        if rng.random() < 0.5:
            t["max_gpus"] = int(rng.integers(1, 4))
        if rng.random() < 0.3:
            t["setup_s"] = float(rng.uniform(0, 20))
        tasks.append(t)
    return tasks


def simulated(tasks, rule, machines, k=rules.ATC_K_DEFAULT, machine_free=None):
    """(ids in first-start order, {id: (first start, first GPU, job end)}) by the simulator."""
    n = len(tasks)
    est = np.array([t["frames"] * t["frame_s"] for t in tasks])
    col = lambda f, d: np.array([t.get(f, d) for t in tasks])  # noqa: E731
    job, chunk, start, end, mach = chunks.simulate(
        col("arrival", 0.0), est, est, col("weight", 1.0), col("due", 0.0), rule, machines, k,
        machine_free=machine_free, frames=col("frames", 1).astype(np.int64),
        chunk_frames=col("chunk_frames", 1).astype(np.int64), max_gpus=col("max_gpus", 0).astype(np.int64),
        setup=col("setup_s", 0.0).astype(float), compiled=True,
    )  # fmt: skip
    first = chunk == 0
    order = np.lexsort((mach[first], start[first]))  # decisions: by time, lowest GPU first
    ends = chunks.job_ends(job, end, n)
    info = {tasks[j]["id"]: (start[first][i], mach[first][i], ends[j]) for i, j in enumerate(job[first])}
    return [tasks[j]["id"] for j in job[first][order]], info


@pytest.mark.parametrize("seed", range(12))
def test_the_order_is_the_simulators_first_start_order_and_explain_its_job_ends(seed, tmp_path):
    rng = np.random.default_rng(seed)
    tasks = random_jobs(rng, int(rng.integers(1, 25)))
    machines = [1, 3, "2x1.0,2x0.5", 8][seed % 4]
    for rule in rules.RULES:
        want, info = simulated(tasks, rule, machines, k=2.0)
        got = rank(tasks, now=0.0, policy=rule, machines=machines, config=conf(tmp_path))
        assert got == want, rule
        table = rank(tasks, now=0.0, policy=rule, machines=machines, explain=True, config=conf(tmp_path))
        assert table.id.tolist() == want
        for row in table.itertuples():
            start, gpu, end = info[row.id]
            assert (row.start_s, row.machine, row.end_s) == (start, gpu, end)
            due = next(t["due"] for t in tasks if t["id"] == row.id)
            assert row.tardiness_s == max(end - due, 0.0)


def test_estimate_s_is_the_waiting_frames_work_as_frame_s_times_frames(tmp_path):
    rng = np.random.default_rng(7)
    tasks = random_jobs(rng, 15)
    as_estimates = []
    for t in tasks:
        u = dict(t)
        u["estimate_s"] = u.pop("frame_s") * u["frames"]
        u.setdefault("chunk_frames", 1)  # frames alone is a feature of the duration model
        as_estimates.append(u)
    for rule in ("atc", "wspt"):
        a = rank(tasks, now=0.0, policy=rule, machines=4, explain=True, config=conf(tmp_path))
        b = rank(as_estimates, now=0.0, policy=rule, machines=4, explain=True, config=conf(tmp_path))
        assert a.id.tolist() == b.id.tolist(), rule
        np.testing.assert_allclose(a.end_s, b.end_s)


def test_running_chunks_hold_gpus_and_count_against_the_limit(tmp_path):
    c = conf(tmp_path)
    # a runs 2 chunks on 2 GPUs (its limit): b takes the third GPU, a waits for its own to end
    tasks = [
        {"id": "a", "frames": 4, "frame_s": 10.0, "max_gpus": 2, "running": 2, "weight": 9, "due": 0},
        {"id": "b", "frames": 1, "frame_s": 100.0, "weight": 1, "due": 1e6},
    ]
    t = rank(tasks, now=0.0, policy="wspt", machines=3, explain=True, config=c)
    assert t.id.tolist() == ["b", "a"]
    rows = {r.id: r for r in t.itertuples()}
    assert rows["b"].start_s == 0.0 and rows["b"].machine == 2
    assert rows["a"].start_s == 5.0  # half a chunk's estimate: the running chunks' assumed end
    assert rows["a"].end_s == 25.0  # 4 chunks, 2 at a time, from 5 s
    # without the limit the running chunks are GPUs busy until 5 s: the simulator's machine_free
    free = [{"id": "a", "frames": 4, "frame_s": 10.0, "running": 2, "weight": 9, "due": 0}, tasks[1]]
    want, info = simulated([free[0] | {"running": 0}, free[1]], "wspt", 3, machine_free=[5.0, 5.0, -np.inf])
    t = rank(free, now=0.0, policy="wspt", machines=3, explain=True, config=c)
    assert t.id.tolist() == want
    assert [info[i][2] for i in want] == t.end_s.tolist()
    # a job whose waiting chunk ends before its running ones finishes with them
    late = [{"id": "a", "frames": 1, "frame_s": 2.0, "chunk_frames": 1, "running": 1, "weight": 1, "due": 0}]
    t = rank(late, now=0.0, policy="atc", machines=[{"speed": 0.1}, {}], explain=True, config=c)
    assert t.start_s.tolist() == [0.0] and t.machine.tolist() == [1] and t.end_s.tolist() == [10.0]


def test_whole_task_calls_are_unchanged_and_one_chunk_jobs_plan_as_whole_tasks(tmp_path):
    from sched.ranking.ranker import prepare

    c = conf(tmp_path)
    rng = np.random.default_rng(3)
    whole = [
        {
            "id": i,
            "estimate_s": float(rng.uniform(1, 100)),
            "weight": 1.0 + i % 3,
            "due": float(rng.uniform(0, 300)),
        }
        for i in range(30)
    ]
    with_frames = [dict(t, frames=int(rng.integers(1, 50))) for t in whole]  # a feature, as before
    one_chunk = [dict(t, setup_s=0, max_gpus=5) for t in whole]  # jobs of frames of one frame each
    assert prepare(whole, now=0.0, config=c).q.chunks is None
    assert prepare(with_frames, now=0.0, config=c).q.chunks is None
    for rule in rules.RULES:
        for machines in (1, 3, "1x1.0,2x0.5"):
            a = rank(whole, now=0.0, policy=rule, machines=machines, explain=True, config=c)
            for other in (with_frames, one_chunk):
                b = rank(other, now=0.0, policy=rule, machines=machines, explain=True, config=c)
                assert a.id.tolist() == b.id.tolist(), (rule, machines)
                for col in ("machine", "start_s", "end_s", "tardiness_s"):
                    assert a[col].tolist() == b[col].tolist(), (rule, machines, col)


def _job(**kw):
    return dict({"id": "x", "frames": 10, "frame_s": 3.0, "weight": 1.0, "due": 100.0}, **kw)


BAD = [
    (_job(frames=0), "frames", "whole number from 1"),
    (_job(frames=2.5), "frames", "whole number"),
    (_job(frames="ten"), "frames", "not a number"),
    (_job(frames=10_001), "frames", "10000"),
    (_job(frames=True), "frames", "not a number"),
    (_job(frame_s=0), "frame_s", "> 0"),
    (_job(frame_s=-1.0), "frame_s", "> 0"),
    (_job(frame_s=float("nan")), "frame_s", "finite"),
    (_job(frame_s="3"), "frame_s", "not a number"),
    (_job(frame_s=1e12), "frame_s", "at most"),  # 10 frames of 1e12 s: past MAX_SECONDS
    (_job(estimate_s=30.0), "frame_s", "not both"),
    (_job(duration_s=30.0), "frame_s", "not both"),
    (_job(chunk_frames=0), "chunk_frames", "whole number from 1"),
    (_job(chunk_frames=1.5), "chunk_frames", "whole number"),
    (_job(max_gpus=0), "max_gpus", "whole number from 1"),
    (_job(max_gpus=20_000), "max_gpus", "10000"),
    (_job(max_gpus=[2]), "max_gpus", "not a number"),
    (_job(setup_s=-1), "setup_s", ">= 0"),
    (_job(setup_s=float("inf")), "setup_s", "finite"),
    (_job(setup_s=2e12), "setup_s", "at most"),
    (_job(running=-1), "running", "whole number from 0"),
    (_job(running=0.5), "running", "whole number"),
    (_job(running=3), "running", "GPUs free now"),  # 2 GPUs below
]


@pytest.mark.parametrize("task, field, why", BAD)
def test_a_bad_field_is_one_line_naming_the_task_and_the_field(task, field, why, tmp_path):
    ok = {"id": "ok", "frames": 2, "frame_s": 1.0, "weight": 1, "due": 0}
    for tasks in ([task], [ok, task]):
        with pytest.raises(RankInputError) as e:
            rank(tasks, now=0.0, machines=2, policy="atc", config=conf(tmp_path))
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"task 'x': field {field}: ") and why in msg, msg


def test_bad_fields_of_a_dataframe_and_of_sched_serve_read_alike(tmp_path):
    pd = pytest.importorskip("pandas")
    from sched.ranking.request import rank_body

    c = conf(tmp_path)
    tasks = [_job(), _job(id="y", max_gpus=0)]
    with pytest.raises(RankInputError) as a:
        rank(tasks, now=0.0, config=c)
    with pytest.raises(RankInputError) as b:
        rank(pd.DataFrame(tasks), now=0.0, config=c)
    with pytest.raises(RankInputError) as d:
        rank(**rank_body(json.dumps({"tasks": tasks, "now": 0}).encode()), config=c)
    for e in (a, b, d):  # (a frame's column with NaN holds floats: "got 0.0")
        want = "task 'y': field max_gpus: expected a whole number from 1 to 10000, got 0"
        assert str(e.value).startswith(want) and "\n" not in str(e.value)
    # NaN cells of a frame are absent fields: whole tasks among jobs of frames
    mixed = [_job(), {"id": "w", "estimate_s": 5.0, "weight": 1.0, "due": 0.0}]
    assert rank(pd.DataFrame(mixed), now=0.0, config=c) == rank(mixed, now=0.0, config=c)


def test_the_chunks_of_a_call_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(frames_mod, "MAX_RANK_CHUNKS", 25)
    tasks = [_job(id=f"t{i}") for i in range(3)]
    with pytest.raises(
        RankInputError, match=r"^task 't2': field frames: .*more than 25 chunks .*MAX_RANK_CHUNKS"
    ):
        rank(tasks, now=0.0, config=conf(tmp_path))
    assert len(rank([dict(t, chunk_frames=5) for t in tasks], now=0.0, config=conf(tmp_path))) == 3


@pytest.mark.parametrize("policy", ["plan", "ppo", "ppo-1", "results/train/seed-1/politique.pt"])
def test_policies_that_plan_whole_tasks_are_refused_in_one_line(policy, tmp_path):
    with pytest.raises(RankInputError) as e:
        rank([_job()], now=0.0, policy=policy, config=conf(tmp_path))
    assert "plans whole tasks" in str(e.value) and "\n" not in str(e.value)
    assert rank([_job(), _job(id="y", frame_s=1.0)], now=0.0, policy="spt", config=conf(tmp_path)) == [
        "y",
        "x",
    ]


@pytest.mark.parametrize("verdict", ["learned", "plan", "rule"])
def test_auto_follows_a_rule_verdict_and_replaces_a_learned_one_by_tuned_atc(verdict, tmp_path, monkeypatch):
    from sched.ranking import ranker

    made = {
        "learned": Choice("ppo-1", None, None, "p.pt", "auto: the winner of w.json"),
        "plan": Choice("plan", rules.ATC, 2.0, None, "auto: the winner of w.json", None, {"base": "atc"}),
        "rule": Choice("wspt", rules.rule_id("wspt"), None, None, "auto: the winner of w.json"),
    }[verdict]
    monkeypatch.setattr(ranker, "auto_choice", lambda st, farm: made)
    tasks = [_job(), _job(id="y", frames=2, weight=3.0)]
    d = decide(tasks, now=0.0, machines=2, config=conf(tmp_path))
    if verdict == "rule":
        assert d.policy == "wspt" and d.ids == rank(
            tasks, now=0.0, machines=2, policy="wspt", config=conf(tmp_path)
        )
    else:
        assert d.policy == "atc" and "plans whole tasks" in d.why and "rules.atc_k" in d.why
        assert d.ids == rank(tasks, now=0.0, machines=2, policy="atc", config=conf(tmp_path))


def test_sched_rank_reads_the_fields_from_its_json(tmp_path, capsys, monkeypatch):
    from sched import cli

    tasks = [_job(), _job(id="y", frames=1, max_gpus=1, running=1)]
    path = tmp_path / "q.json"
    path.write_text(json.dumps(tasks))
    (tmp_path / "config.yaml").write_text(json.dumps(conf(tmp_path)))
    monkeypatch.setenv("SCHED_CONFIG", str(tmp_path / "config.yaml"))
    code = cli.main(["rank", str(path), "--now", "0", "--machines", "3", "--policy", "spt"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, None) and out == rank(tasks, now=0.0, machines=3, policy="spt", config=conf(tmp_path))


def test_sched_serve_passes_the_fields_through(tmp_path):
    pytest.importorskip("starlette", reason="optional extra serve not installed")
    pytest.importorskip("uvicorn", reason="optional extra serve not installed")
    httpx = pytest.importorskip("httpx", reason="httpx (extra test) not installed")
    from sched.serve.http import ServiceSettings

    from .serve_helpers import live, rule_winner, write_config

    cfg = str(write_config(tmp_path, winner=rule_winner("wspt"), tuned={"atc_k": 0.7}))
    rng = np.random.default_rng(11)
    tasks = random_jobs(rng, 12)
    tasks[0]["running"] = 1
    want = decide(tasks, now=0.0, machines=3, config=cfg, explain=True)
    with live(ServiceSettings(config=cfg)) as url, httpx.Client(base_url=url) as c:
        body = {"now": 0, "machines": 3, "tasks": tasks, "explain": True}
        out = c.post("/v1/rank", content=json.dumps(body)).json()
        assert out["order"] == want.ids and out["policy"] == want.policy and out["why"] == want.why
        assert [r["end_s"] for r in out["plan"]] == want.frame.end_s.tolist()
        bad = c.post("/v1/rank", content=json.dumps({"now": 0, "tasks": [_job(running=9)]}))
        assert bad.status_code == 400 and "field running" in bad.text
