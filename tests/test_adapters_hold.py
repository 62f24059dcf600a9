"""The adapters' holds and limits (sched.farms.hold): only what the decision holds, released only
by the adapter that held it; Deadline Cloud's calls checked against the real API model."""

import pytest

from sched.farms import hold
from sched.farms.adapter import FarmJob, SyncReport

JOB = "job-" + "c" * 32


class CueJob:
    """A pycue Job's calls the adapter makes, recorded."""

    def __init__(self):
        self.calls = []

    def pause(self):
        self.calls.append("pause")

    def resume(self):
        self.calls.append("resume")

    def setMaxCores(self, n):  # noqa: N802 (pycue's name)
        self.calls.append(("setMaxCores", n))


def jobs(*ids):
    return {i: FarmJob(i, f"name-{i}", 50, 3, 10.0, 0.0, handle=CueJob()) for i in ids}


def test_holds_what_the_decision_holds_and_releases_only_its_own(tmp_path):
    state = str(tmp_path / "held.json")
    farm = jobs("a", "b", "c")
    report = SyncReport("show")
    got = hold.sync_holds(state, {"a": 1.0}, farm, hold.opencue_hold, hold.opencue_release, report)
    assert got == (["a"], []) and farm["a"].handle.calls == ["pause"] and hold.read_state(state) == ["a"]
    # next sync: a no longer held: resumed; b held; c (paused by someone else) never touched
    got = hold.sync_holds(state, {"b": 2.0}, farm, hold.opencue_hold, hold.opencue_release, report)
    assert got == (["b"], ["a"]) and farm["a"].handle.calls == ["pause", "resume"]
    assert farm["c"].handle.calls == [] and hold.read_state(state) == ["b"]
    # a held job gone from the farm is forgotten, not released
    got = hold.sync_holds(state, {}, jobs("a"), hold.opencue_hold, hold.opencue_release, report)
    assert got == ([], []) and hold.read_state(state) == []


def test_dry_run_changes_nothing(tmp_path):
    state = str(tmp_path / "held.json")
    farm = jobs("a")
    hold.sync_holds(state, {"a": 1.0}, farm, hold.opencue_hold, hold.opencue_release, SyncReport("s"), True)
    assert farm["a"].handle.calls == [] and hold.read_state(state) == []


def test_a_bad_state_file_is_named(tmp_path):
    state = tmp_path / "held.json"
    state.write_text('{"held": [1]}')
    with pytest.raises(hold.HoldError, match="held.json: field held"):
        hold.read_state(str(state))


def test_opencue_limit_sets_max_cores():
    j = jobs("a")["a"]
    hold.opencue_limit(j, 4, cores_per_frame=8)
    hold.opencue_limit(j, 0)
    assert j.handle.calls == [("setMaxCores", 32)]


def test_deadline_suspends_releases_and_limits_through_the_real_api_model():
    boto3 = pytest.importorskip("boto3")
    from botocore.stub import Stubber

    from .fake_deadline import FARM, QUEUE

    client = boto3.client(
        "deadline", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y"
    )
    base = {"farmId": FARM, "queueId": QUEUE, "jobId": JOB}
    job = FarmJob(JOB, "shot", 50, 3, 10.0, 0.0, max_gpus=2)
    do_hold, do_release, limit = hold.deadline_calls(client, FARM, QUEUE)
    with Stubber(client) as stub:  # the Stubber validates each call's parameters against the model
        stub.add_response("update_job", {}, {**base, "targetTaskRunStatus": "SUSPENDED"})
        stub.add_response("update_job", {}, {**base, "targetTaskRunStatus": "READY"})
        stub.add_response("update_job", {}, {**base, "maxWorkerCount": 4})
        do_hold(job)
        do_release(job)
        limit(job, 2)  # already its limit: no call
        limit(job, 4)
        stub.assert_no_pending_responses()


# --------------------------------------------------------------------------- the syncs, end to end

NOW = 1_800_000_000.0


def _config(tmp_path, cap=None, machines=4):
    """A config whose farm verdict (on ``machines`` GPUs) ships atc-tuned-cap with ``cap``."""
    import json

    cfg = {"rank": {"winner": "w.json", "tuned": "t.json", "settings": None, "farm_settings": "farm"}}
    if cap is not None:
        (tmp_path / "farm" / "f").mkdir(parents=True)
        v = {"policy": "atc-tuned-cap", "rule": "atc", "atc_k": 1.0, "cap": cap, "sync_s": 0.0}
        v["setting"] = {"machines": machines, "speeds": None, "load": 0.85}
        (tmp_path / "farm" / "f" / "farm_verdict.json").write_text(json.dumps(v))
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(cfg))
    return str(path)


def _holding(monkeypatch, pick):
    """decide() as it is, its decision holding the job ``pick(ids)`` (the delayed rule's part is
    tests/test_rank_hold.py's)."""
    from sched.ranking import ranker

    real = ranker.decide

    def decide(*a, **kw):
        d = real(*a, **kw)
        held = pick(d.ids)
        return d._replace(held={held: NOW + 60} if held else None)

    monkeypatch.setattr(ranker, "decide", decide)


def test_opencue_sync_holds_ranks_its_paused_job_releases_it_and_sets_limits(tmp_path, monkeypatch):
    pytest.importorskip("opencue")
    from sched import cli

    from .fake_cuebot import FakeCuebot

    conf, state = _config(tmp_path, cap=2), str(tmp_path / "held.json")
    with FakeCuebot() as cue:
        ids = [cue.add_job(f"j{i}", waiting=5 + i, avg_frame_s=10, start_time=int(NOW)) for i in range(3)]
        other = cue.add_job("paused-by-someone", is_paused=True)
        base = ["--config", conf, "opencue", "sync", "--show", "film", "--cuebot", cue.address]
        base += ["--now", str(NOW), "--machines", "4"]
        # off by default: nothing paused, no limit
        _holding(monkeypatch, lambda order: ids[0])
        assert cli.main(base) in (0, None)
        assert not cue.calls.get("Pause") and not cue.calls.get("SetMaxCores")
        # a dry run writes nothing and calls nothing
        assert cli.main(base + ["--hold", state, "--limits", "--dry-run"]) in (0, None)
        assert not cue.calls.get("Pause") and not (tmp_path / "held.json").exists()
        assert cli.main(base + ["--hold", state, "--limits"]) in (0, None)
        assert cue.jobs[ids[0]].is_paused and hold.read_state(state) == [ids[0]]
        assert all(cue.jobs[i].max_cores == 2 for i in ids) and cue.jobs[other].max_cores != 2
        # next sync: the paused job is still ranked, and released when no longer held
        _holding(monkeypatch, lambda order: None)
        assert cli.main(base + ["--hold", state]) in (0, None)
        assert not cue.jobs[ids[0]].is_paused and cue.jobs[other].is_paused
        assert hold.read_state(state) == [] and cue.calls["SetMaxCores"] == 3


def test_a_deadline_job_the_adapter_suspended_is_still_ranked_its_suspended_tasks_waiting():
    summary = {
        "jobId": JOB, "name": "shot", "priority": 50, "lifecycleStatus": "CREATE_COMPLETE",
        "taskRunStatus": "SUSPENDED", "targetTaskRunStatus": "SUSPENDED",
        "taskRunStatusCounts": {"SUSPENDED": 4},
    }  # fmt: skip
    from sched.farms.deadline_jobs import farm_job, waits

    assert not waits(summary) and waits(summary, {JOB})  # suspended by this adapter: ranked
    import datetime

    job = farm_job({**summary, "createdAt": datetime.datetime.now(datetime.UTC)}, {}, 10.0, held=True)
    assert job.waiting == 4
