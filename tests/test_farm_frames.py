"""The farm adapters pass jobs of frames to rank() (issue 59, point 8): OpenCue's waiting and
running frames and the show's hosts; Deadline Cloud's waiting and running tasks, each job's
maxWorkerCount and the queue's fleets' workers. ``--machines`` defaults to the farm's count and an
explicit one wins (fakes: tests/fake_cuebot.py, tests/fake_deadline.py)."""

from datetime import timedelta

import pytest

from sched import rank

NOW = 1_800_000_000.0


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text('{"rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"}}')
    return str(path)


# --------------------------------------------------------------------------- OpenCue


def test_opencue_plans_frames_on_the_shows_hosts_and_an_explicit_machines_wins(conf):
    pytest.importorskip("opencue", reason="optional extra opencue not installed")
    from sched.farms import opencue

    from .fake_cuebot import FakeCuebot

    with FakeCuebot() as cue:
        tasks = []
        for i, (waiting, avg, running) in enumerate([(40, 30, 3), (5, 600, 0), (200, 10, 1), (12, 90, 2)]):
            jid = cue.add_job(
                f"shot-{i}", waiting=waiting, avg_frame_s=avg, running=running, start_time=int(NOW)
            )
            task = {"id": jid, "estimate_s": waiting * float(avg), "weight": 1.0, "due": NOW + 86400.0}
            tasks.append(
                task | {"frames": waiting, "chunk_frames": 1} | ({"running": running} if running else {})
            )
        for h in range(8):
            cue.add_host(f"h{h}", alloc="local.gpu")
        cue.add_host("down", alloc="local.gpu", up=False)
        cue.add_host("locked", alloc="local.gpu", locked=True)
        cue.add_host("other", alloc="other.gpu")  # an allocation the show does not subscribe to
        cue.subscribe("film", "local.gpu")
        report = opencue.sync("film", hosts=[cue.address], now=NOW, config=conf, dry_run=True, policy="atc")
        want = rank(tasks, now=NOW, machines=8, policy="atc", config=conf)
        assert report.ranked_ids == want and not report.warnings
        two = opencue.sync(
            "film", hosts=[cue.address], now=NOW, config=conf, dry_run=True, policy="atc", machines=6
        )
        assert two.ranked_ids == rank(tasks, now=NOW, machines=6, policy="atc", config=conf)
        # more running frames than the GPUs given: planned on those, with a warning
        few = opencue.sync(
            "film", hosts=[cue.address], now=NOW, config=conf, dry_run=True, policy="atc", machines=2
        )
        assert any("6 frames (tasks) running, more than the 2 GPUs" in w for w in few.warnings)


def test_opencue_without_hosts_plans_on_the_hosts_its_running_frames_hold(conf):
    pytest.importorskip("opencue", reason="optional extra opencue not installed")
    from sched.farms import opencue

    from .fake_cuebot import FakeCuebot

    with FakeCuebot() as cue:
        a = cue.add_job("a", waiting=10, avg_frame_s=60, running=3, start_time=int(NOW))
        b = cue.add_job("b", waiting=2, avg_frame_s=60, start_time=int(NOW))
        tasks = [
            {
                "id": a,
                "estimate_s": 600.0,
                "weight": 1.0,
                "due": NOW + 86400,
                "frames": 10,
                "chunk_frames": 1,
                "running": 3,
            },
            {"id": b, "estimate_s": 120.0, "weight": 1.0, "due": NOW + 86400, "frames": 2, "chunk_frames": 1},
        ]
        report = opencue.sync("film", hosts=[cue.address], now=NOW, config=conf, dry_run=True, policy="fifo")
        assert report.ranked_ids == rank(tasks, now=NOW, machines=3, policy="fifo", config=conf)
        cue.refuse("GetSubscriptions", __import__("grpc").StatusCode.PERMISSION_DENIED, 1)
        report = opencue.sync("film", hosts=[cue.address], now=NOW, config=conf, dry_run=True, policy="fifo")
        assert any("cannot count its hosts" in w and "--machines" in w for w in report.warnings)


# --------------------------------------------------------------------------- Deadline Cloud


def test_deadline_plans_tasks_on_the_fleets_workers_with_each_jobs_limit(conf):
    boto3 = pytest.importorskip("boto3", reason="optional extra deadline not installed")
    from botocore.stub import Stubber

    from sched.farms import deadline

    from .fake_deadline import FARM, QUEUE, Queue, stub_sync

    client = boto3.client(
        "deadline", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y"
    )
    queue = Queue()
    spec = [(30, [60.0], 2, 2), (4, [300.0], 0, None), (100, [20.0], 1, 3), (9, [120.0, 120.0], 0, -1)]
    tasks = []
    for i, (waiting, done, running, limit) in enumerate(spec):
        jid = queue.add(f"shot-{i}", waiting=waiting, done_s=done, running=running, max_workers=limit)
        created = queue.jobs[jid].created
        task = {"id": jid, "estimate_s": waiting * sum(done) / len(done), "weight": 1.0}
        task |= {"due": (created + timedelta(hours=24)).timestamp(), "frames": waiting, "chunk_frames": 1}
        task |= {"running": running} if running else {}
        task |= {"max_gpus": limit} if limit and limit > 0 else {}  # -1: no limit
        tasks.append(task)
    queue.fleets = {"fleet-" + "1" * 32: ("ACTIVE", 5), "fleet-" + "2" * 32: ("ACTIVE", 2)}
    queue.fleets["fleet-" + "3" * 32] = ("STOPPED", 50)  # not counted
    with Stubber(client) as stubber:
        stub_sync(stubber, queue)
        report = deadline.sync(
            FARM, QUEUE, now=NOW, client=client, config=conf, dry_run=True, policy="atc", calls=1
        )
        stubber.assert_no_pending_responses()
    assert report.ranked_ids == rank(tasks, now=NOW, machines=7, policy="atc", config=conf)
    assert not report.warnings
    with Stubber(client) as stubber:  # an explicit --machines: no fleet call
        stub_sync(stubber, queue, fleets=False)
        kw = {"dry_run": True, "policy": "atc", "calls": 1, "machines": 3}
        report = deadline.sync(FARM, QUEUE, now=NOW, client=client, config=conf, **kw)
        stubber.assert_no_pending_responses()
    assert report.ranked_ids == rank(tasks, now=NOW, machines=3, policy="atc", config=conf)


def test_the_command_lines_leave_machines_to_the_farm_unless_given():
    from sched import cli
    from sched.commands.rank import parse_machines

    for verb in (
        ["deadline", "sync", "--farm-id", "f", "--queue-id", "q"],
        ["opencue", "sync", "--show", "s"],
    ):
        assert cli.build_parser().parse_args(verb).machines is None
        assert parse_machines(cli.build_parser().parse_args([*verb, "--machines", "4"]).machines) == 4
