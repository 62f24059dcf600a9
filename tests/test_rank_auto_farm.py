"""rank(policy="auto") for jobs of frames follows a chunked farm setting's farm_verdict.json (issue
59, point 4), and that verdict's setting states its load per GPU.

A call holding jobs of frames follows the farm verdict measured on its GPUs (the rule, with its
tuned k); a whole-task call, or a call on other GPUs, does not; a malformed farm verdict is one
line naming the file and field; one whose fields disagree is not followed, saying so; config
rank.farm_setting picks one of several, else the closest load; rank.farm_settings null turns it off.
"""

import json

import numpy as np
import pandas as pd
import pytest

from sched.ranking.ranker import decide, rank
from sched.ranking.tasks import RankSetupError


def verdict(policy="wspt", rule=None, k=None, machines=32, load=0.85, sync_s=0.0, **extra):
    return {
        "policy": policy,
        "rule": rule or ("atc" if policy == "atc-tuned" else policy),
        "atc_k": k,
        "sync_s": sync_s,
        "reason": "chosen on validation",
        "setting": {"machines": machines, "speeds": None, "load": load, "offered_gpus": load * machines},
        **extra,
    }


def farm_dir(tmp_path, **settings):
    root = tmp_path / "farm"
    for name, data in settings.items():
        (root / name).mkdir(parents=True)
        text = data if isinstance(data, str) else json.dumps(data)
        (root / name / "farm_verdict.json").write_text(text)
    return root


def conf(tmp_path, farm=None, pinned=None, atc_k=2.0):
    rank_cfg = {k: str(tmp_path / f) for k, f in (("winner", "w.json"), ("tuned", "t.json"))}
    rank_cfg["settings"] = None
    rank_cfg["farm_settings"] = None if farm is None else str(farm)
    rank_cfg["farm_setting"] = pinned
    return {"rank": rank_cfg, "rules": {"atc_k": atc_k}}


def jobs(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return [
        {
            "id": f"j{i}",
            "frames": int(rng.integers(1, 40)),
            "frame_s": float(rng.uniform(1, 30)),
            "chunk_frames": 4,
            "weight": float(rng.choice([1.0, 2.0, 4.0])),
            "due": float(rng.uniform(0, 300)),
        }
        for i in range(n)
    ]


def test_jobs_of_frames_follow_the_farm_verdict_of_their_gpus(tmp_path):
    farm = farm_dir(tmp_path, **{"farm-32": verdict("wspt"), "one": verdict("spt", machines=1)})
    tasks = jobs()
    d = decide(tasks, now=0.0, machines=32, config=conf(tmp_path, farm))
    assert d.policy == "wspt" and "farm setting farm-32" in d.why and "farm_verdict.json" in d.why
    assert d.ids == rank(tasks, now=0.0, machines=32, policy="wspt", config=conf(tmp_path))
    one = decide(tasks, now=0.0, machines=1, config=conf(tmp_path, farm))
    assert one.policy == "spt" and "farm setting one" in one.why
    # other GPUs: no farm verdict, the verdicts for whole tasks (here none: ATC with rules.atc_k)
    other = decide(tasks, now=0.0, machines=4, config=conf(tmp_path, farm))
    assert other.policy == "atc" and "farm" not in other.why


def test_an_atc_tuned_farm_verdict_runs_its_own_k(tmp_path):
    farm = farm_dir(tmp_path, f=verdict("atc-tuned", k=0.5))
    tasks = jobs(seed=3)
    d = decide(tasks, now=0.0, machines=32, config=conf(tmp_path, farm, atc_k=6.0))
    assert d.policy == "atc-tuned" and "k = 0.5" in d.why
    assert d.ids == rank(tasks, now=0.0, machines=32, policy="atc", config=conf(tmp_path, atc_k=0.5))


def test_whole_tasks_and_a_null_folder_do_not_read_farm_verdicts(tmp_path):
    farm = farm_dir(tmp_path, f=verdict("wspt", machines=1))
    keep = ("id", "weight", "due")
    whole = [{k: v for k, v in t.items() if k in keep} | {"estimate_s": 5.0} for t in jobs()]
    assert "farm" not in decide(whole, now=0.0, machines=1, config=conf(tmp_path, farm)).why
    assert "farm" not in decide(jobs(), now=0.0, machines=1, config=conf(tmp_path, None)).why


def test_farm_setting_pins_one_verdict_else_the_closest_load(tmp_path):
    made = {"a": verdict("spt", load=0.5), "b": verdict("wspt", load=0.8), "c": verdict("edd", load=1.5)}
    farm = farm_dir(tmp_path, **made)
    c = conf(tmp_path, farm)
    d = decide(jobs(), now=0.0, machines=32, config=c)  # config scenario.load: 0.85, the default
    assert d.policy == "wspt" and "closest to config scenario.load" in d.why
    pinned = decide(jobs(), now=0.0, machines=32, config=conf(tmp_path, farm, pinned="c"))
    assert pinned.policy == "edd" and "config rank.farm_setting c" in pinned.why
    gone = decide(jobs(), now=0.0, machines=32, config=conf(tmp_path, farm, pinned="zz"))
    assert gone.policy == "atc" and "rank.farm_setting zz" in gone.why


@pytest.mark.parametrize(
    "data, field",
    [
        ("[1, 2]", "expected a JSON object"),
        (verdict("ppo-1", rule="atc"), "field policy"),
        (verdict("wspt", rule="nope"), "field rule"),
        (verdict("atc-tuned", k=-1.0), "field atc_k"),
        (verdict("wspt", sync_s="soon"), "field sync_s"),
        ({**verdict("wspt"), "setting": {"machines": 32, "speeds": None, "load": -1}}, "setting.load"),
        ({**verdict("wspt"), "setting": {**verdict()["setting"], "offered_gpus": 0}}, "setting.offered_gpus"),
        ('{"policy": "wspt", "policy": "spt"}', "farm_verdict.json"),
    ],
)
def test_a_malformed_farm_verdict_is_one_line_naming_the_file_and_field(data, field, tmp_path):
    farm = farm_dir(tmp_path, bad=data)
    with pytest.raises(RankSetupError) as e:
        rank(jobs(), now=0.0, machines=32, config=conf(tmp_path, farm))
    msg = str(e.value)
    assert "\n" not in msg and "farm_verdict.json" in msg and field in msg


def test_a_farm_verdict_whose_fields_disagree_is_not_followed_and_why_says_so(tmp_path):
    farm = farm_dir(tmp_path, f=verdict("atc-tuned", rule="wspt", k=2.0))
    d = decide(jobs(), now=0.0, machines=32, config=conf(tmp_path, farm))
    assert d.policy == "atc" and "fields disagree" in d.why and "not followed" in d.why


def test_the_farm_verdict_records_its_load_per_gpu_and_the_offered_gpus(monkeypatch):
    from sched import setting
    from sched.config import load_config
    from sched.evaluate.farm import bench

    fitted = {"sha256": "0" * 64}
    monkeypatch.setattr(
        setting, "of_workload", lambda path, scale=1.0: {"load": 0.5 * scale, "workload": fitted}
    )
    cfg = load_config(None).replace(
        scenario={
            "machines": 32,
            "workload": "w.json",
            "workload_scale": 48.0,
            "chunks": {"chunk_frames": 8},
        },
        benchmark={"bootstrap_resamples": 200},
        robustness={"settings": []},
        train={"loads": None},
    )
    rng = np.random.default_rng(0)
    rows = [
        {"scenario_seed": s, "policy": p, "total_weighted_tardiness_s": float(rng.uniform(1, 2))}
        for p in bench.CANDIDATES
        for s in range(10)
    ]
    v = bench.choose(cfg, pd.DataFrame(rows), 2.0, range(100, 110))
    assert v["setting"]["load"] == pytest.approx(0.5 * 48 / 32)
    assert v["setting"]["offered_gpus"] == pytest.approx(0.5 * 48)
    one = cfg.replace(scenario={"machines": 1, "workload_scale": 1.5})
    assert setting.of_config(one)["load"] == 0.5 * 1.5  # one GPU: today's value, exactly


def capped_verdict(cap=2, **kw):
    return verdict("atc-tuned-cap", rule="atc", k=1.0, cap=cap, **kw)


def test_a_capped_farm_verdict_plans_each_job_within_its_limit_and_returns_it(tmp_path, capsys, monkeypatch):
    from sched import cli

    farm = farm_dir(tmp_path, f=capped_verdict(cap=2))
    tasks = jobs(seed=5)
    tasks[0]["max_gpus"] = 1
    tasks[1]["max_gpus"] = 9
    d = decide(tasks, now=0.0, machines=32, config=conf(tmp_path, farm), explain=True)
    assert d.policy == "atc-tuned-cap" and "at most 2 chunks at once" in d.why
    want = {t["id"]: min(t.get("max_gpus", 2), 2) for t in tasks}
    assert d.limits == want and d.frame["limit"].tolist() == [want[i] for i in d.frame["id"]]
    # the plan is ATC's (k 1) with every job's max_gpus = its limit; without the limit it differs
    same = [{**t, "max_gpus": want[t["id"]]} for t in tasks]
    ref = decide(same, now=0.0, machines=32, policy="atc", config=conf(tmp_path, atc_k=1.0), explain=True)
    assert d.ids == ref.ids and d.frame["end_s"].tolist() == ref.frame["end_s"].tolist()
    free = decide(tasks, now=0.0, machines=32, policy="atc", config=conf(tmp_path, atc_k=1.0), explain=True)
    assert free.limits is None and "limit" not in free.frame
    assert free.frame["end_s"].tolist() != d.frame["end_s"].tolist()
    # sched rank --explain carries each job's limit
    path = tmp_path / "q.json"
    path.write_text(json.dumps(tasks))
    (tmp_path / "config.yaml").write_text(json.dumps(conf(tmp_path, farm)))
    monkeypatch.setenv("SCHED_CONFIG", str(tmp_path / "config.yaml"))
    cli.main(["rank", str(path), "--now", "0", "--machines", "32", "--explain"])
    out = json.loads(capsys.readouterr().out)
    assert {r["id"]: r["limit"] for r in out} == want


@pytest.mark.parametrize(
    "data, field",
    [
        (capped_verdict(cap=0), "field cap"),
        (capped_verdict(cap="2"), "field cap"),
        (capped_verdict(cap=2.5), "field cap"),
    ],
)
def test_a_bad_cap_is_one_line_naming_it(data, field, tmp_path):
    with pytest.raises(RankSetupError) as e:
        rank(jobs(), now=0.0, machines=32, config=conf(tmp_path, farm_dir(tmp_path, bad=data)))
    assert "\n" not in str(e.value) and field in str(e.value)


@pytest.mark.parametrize("data", [capped_verdict(cap=None), verdict("atc-tuned", k=1.0, cap=4)])
def test_a_cap_and_a_policy_that_disagree_are_not_followed(data, tmp_path):
    d = decide(jobs(), now=0.0, machines=32, config=conf(tmp_path, farm_dir(tmp_path, f=data)))
    assert d.policy == "atc" and "fields disagree" in d.why and d.limits is None


def test_sched_serve_answers_each_jobs_limit(tmp_path):
    pytest.importorskip("starlette", reason="optional extra serve not installed")
    pytest.importorskip("uvicorn", reason="optional extra serve not installed")
    httpx = pytest.importorskip("httpx", reason="httpx (extra test) not installed")
    from sched.serve.http import ServiceSettings

    from .serve_helpers import live

    farm = farm_dir(tmp_path, f=capped_verdict(cap=3))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(conf(tmp_path, farm)))
    tasks = jobs(seed=2)
    want = decide(tasks, now=0.0, machines=32, config=str(cfg))
    with live(ServiceSettings(config=str(cfg))) as url, httpx.Client(base_url=url) as c:
        out = c.post("/v1/rank", content=json.dumps({"now": 0, "machines": 32, "tasks": tasks})).json()
    assert out["order"] == want.ids and out["limits"] == [want.limits[i] for i in want.ids] == [3] * len(
        tasks
    )
