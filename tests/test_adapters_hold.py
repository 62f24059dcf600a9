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
