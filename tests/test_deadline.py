"""sched deadline sync against botocore's Stubber on a real boto3 Deadline Cloud client (the
installed botocore's service model checks every call's parameters and every response): the
priorities set hold rank()'s order, change only where they must, page and batch within the
model's limits, and a refused call is one line and exit status 2 (docs/deadline.md)."""

import itertools
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

boto3 = pytest.importorskip(
    "boto3", reason="optional extra deadline not installed (pip install -e '.[deadline]')"
)
from botocore.stub import Stubber  # noqa: E402

from sched import cli, rank  # noqa: E402
from sched.farms import deadline, deadline_client, deadline_queue, mapping  # noqa: E402
from sched.farms.adapter import new_priorities  # noqa: E402

from .conftest import kept_most  # noqa: E402
from .fake_deadline import FARM, QUEUE, Queue, record_updates, stub_sync  # noqa: E402

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z, POSIX seconds
T0 = datetime.fromtimestamp(NOW, UTC)
MAP_CSV = "job,weight,due_after_h,task_s\n*-urgent,4,2,20\n*,1,12,20\n"


@pytest.fixture
def conf(tmp_path):
    """A config without verdicts: policy auto runs ATC with config rules.atc_k."""
    path = tmp_path / "config.yaml"
    path.write_text('{"rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"}}')
    return str(path)


@pytest.fixture
def client():
    return boto3.client("deadline", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y")


def farm(queue, n=50, seed=0):
    """``n`` waiting jobs with known tasks, task times, weights and due times (weights and dues
    from MAP_CSV by name pattern); returns rank()'s tasks for them, by name."""
    rng = random.Random(seed)
    tasks = {}
    for i in range(n):
        urgent = i % 5 == 0
        name = f"film-sh{i:03d}-{'urgent' if urgent else 'comp'}"
        done = rng.choice([[], [30], [30, 60, 90], [240, 240]])
        created = T0 - timedelta(seconds=rng.randint(0, 86400))
        waiting = rng.randint(1, 200)
        running = rng.randint(0, 3)
        jid = queue.add(name, waiting=waiting, done_s=done, created=created, running=running)
        task_s = sum(done) / len(done) if done else 20.0  # the CSV's task_s for jobs with none done
        due = created.timestamp() + 3600.0 * (2.0 if urgent else 12.0)
        tasks[name] = {
            "id": jid,
            "estimate_s": waiting * task_s,
            "weight": 4.0 if urgent else 1.0,
            "due": due,
            # a job of frames (issue 59): its waiting tasks a chunk each, its running ones
            "frames": waiting,
            "chunk_frames": 1,
            **({"running": running} if running else {}),
        }
    return tasks


def gpus(tasks):
    """The GPUs a sync without --machines plans on when the queue has no fleet: the running tasks'."""
    return max(1, sum(t.get("running", 0) for t in tasks))


def names(queue, ids):
    return [queue.jobs[i].name for i in ids]


def sync(client, queue, conf, tmp_path, updates=0, page=100, **kw):
    """One stubbed sync of ``queue``, with MAP_CSV; every response queued is consumed."""
    (tmp_path / "map.csv").write_text(MAP_CSV)
    rules = mapping.read_mapping(tmp_path / "map.csv", unit="task")
    with Stubber(client) as stubber:
        stub_sync(stubber, queue, page=page, updates=updates)
        report = deadline.sync(FARM, QUEUE, rules, now=NOW, client=client, config=conf, **{"calls": 1, **kw})
        stubber.assert_no_pending_responses()
    return report


def run_cli(monkeypatch, capsys, client, *more, conf=None):
    """``sched deadline sync`` in this process, its boto3 client ``client`` (stubbed)."""
    monkeypatch.setattr(deadline_client, "connect", lambda region=None, endpoint_url=None: client)
    argv = (["--config", conf] if conf else []) + ["deadline", "sync", "--farm-id", FARM, "--queue-id", QUEUE]
    code = cli.main(argv + ["--now", str(NOW), "--calls", "1", *more])  # a Stubber answers in order
    return code, capsys.readouterr()


def test_a_sync_on_50_jobs_sets_priorities_in_rank_order_and_a_second_sets_nothing(client, conf, tmp_path):
    queue = Queue()
    tasks = farm(queue)
    record_updates(client, queue)
    report = sync(client, queue, conf, tmp_path, updates=1)  # 49 changes: one BatchUpdateJob call
    want = rank(list(tasks.values()), now=NOW, config=conf, machines=gpus(tasks.values()))
    assert names(queue, want) == report.ranked == queue.by_priority()
    prios = [queue.jobs[i].priority for i in want]
    assert all(a > b for a, b in zip(prios, prios[1:])) and all(0 <= p <= 100 for p in prios)
    # the queue's default at the middle of the order: the job ranked 25th keeps 50, the rest move
    assert prios[24] == 50 and len(queue.updates) == len(report.changes) == 49
    assert prios[0] >= 95 and prios[-1] <= 5  # spread over the range
    # the second sync: no BatchUpdateJob response is queued, so a call would fail the Stubber
    again = sync(client, queue, conf, tmp_path)
    assert again.changes == [] and len(queue.updates) == 49 and again.ranked == report.ranked


def test_a_new_job_changes_only_what_it_must_and_dry_run_sets_nothing_and_prints_it(
    client, conf, tmp_path, monkeypatch, capsys
):
    queue = Queue()
    tasks = farm(queue, n=30, seed=1)
    record_updates(client, queue)
    sync(client, queue, conf, tmp_path, updates=1)
    before = queue.priorities()
    jid = queue.add("film-late-urgent", waiting=3, done_s=[10], created=T0)
    (tmp_path / "map.csv").write_text(MAP_CSV)
    mapping_file = ["--mapping", str(tmp_path / "map.csv")]
    with Stubber(client) as stubber:
        stub_sync(stubber, queue)  # no BatchUpdateJob: a dry run calls none
        code, out = run_cli(monkeypatch, capsys, client, "--dry-run", *mapping_file, conf=conf)
        stubber.assert_no_pending_responses()
    assert code == 0, out.err
    assert out.out.splitlines()[0].startswith("would set film-late-urgent: priority 50 -> ")
    assert out.out.rstrip().endswith(
        "31 waiting jobs ranked by atc, 1 priorities to change, 30 kept, 0 skipped (dry run: nothing set)"
    )
    assert queue.jobs[jid].priority == 50 and len(queue.updates) == 29
    with Stubber(client) as stubber:
        stub_sync(stubber, queue, updates=1)
        code, out = run_cli(monkeypatch, capsys, client, *mapping_file, conf=conf)
        stubber.assert_no_pending_responses()
    assert code == 0, out.err
    assert queue.updates[29:] == [(jid, queue.jobs[jid].priority)]  # the new job, alone
    assert {k: v for k, v in queue.priorities().items() if k in before} == before
    tasks["film-late-urgent"] = {"id": jid, "estimate_s": 30.0, "weight": 4.0, "due": NOW + 7200}
    want = rank(list(tasks.values()), now=NOW, config=conf, machines=gpus(tasks.values()))
    assert queue.by_priority() == names(queue, want)


def test_listing_pages_and_batches_within_the_models_limits_and_more_jobs_than_levels_share_them(
    client, conf, tmp_path
):
    queue = Queue()
    tasks = farm(queue, n=250, seed=2)  # more jobs than 101 levels: at most 3 a level
    sizes = []
    client.meta.events.register(
        "before-parameter-build.deadline.BatchUpdateJob",
        lambda params, **_: sizes.append(len(params["jobs"])),
    )
    record_updates(client, queue)
    planned = sync(client, queue, conf, tmp_path, page=40, dry_run=True)  # 7 ListJobs pages, 3 BatchGetJob
    n = len(planned.changes)
    assert n > 200 and queue.updates == []
    report = sync(client, queue, conf, tmp_path, page=40, updates=-(-n // 100))
    assert sizes == [100, 100, n - 200] and report.changes == planned.changes
    want = rank(list(tasks.values()), now=NOW, config=conf, machines=gpus(tasks.values()))
    prios = [queue.jobs[i].priority for i in want]
    assert all(a >= b for a, b in zip(prios, prios[1:])) and 0 <= min(prios) and max(prios) <= 100
    assert max(len(list(g)) for _, g in itertools.groupby(prios)) == 3  # at most ceil(250 / 101) a level
    assert sync(client, queue, conf, tmp_path, page=40).changes == []


def test_only_live_jobs_with_tasks_waiting_for_a_worker_are_read_and_touched(client, conf):
    queue = Queue()
    good = [queue.add(f"a{i}", waiting=5 + i, done_s=[10]) for i in range(3)]
    good.append(queue.add("a-resumed", waiting=2, done_s=[10], target="READY", status="RUNNING", running=1))
    others = [
        queue.add("suspended", status="SUSPENDED"),
        queue.add("done", waiting=0, status="SUCCEEDED", done_s=[5]),
        queue.add("all-running", waiting=0, running=4, status="RUNNING"),
        queue.add("archived", lifecycle="ARCHIVED"),
        queue.add("uploading", lifecycle="UPLOAD_IN_PROGRESS"),
        queue.add("incompatible", status="NOT_COMPATIBLE"),
        queue.add("being-suspended", target="SUSPENDED"),
    ]
    record_updates(client, queue)
    with Stubber(client) as stubber:
        summaries = [j.summary() for j in queue.jobs.values()]
        stubber.add_response(
            "list_jobs", {"jobs": summaries}, {"farmId": FARM, "queueId": QUEUE, "maxResults": 100}
        )
        read = sorted((queue.jobs[i] for i in good), key=lambda j: j.name)  # the only jobs read further
        ids = [{"farmId": FARM, "queueId": QUEUE, "jobId": j.id} for j in read]
        stubber.add_response(
            "batch_get_job", {"jobs": [j.item() for j in read], "errors": []}, {"identifiers": ids}
        )
        for j in read:
            params = {"farmId": FARM, "queueIds": [QUEUE], "jobId": j.id, "itemOffset": 0, "pageSize": 100}
            stubber.add_response("search_tasks", {"tasks": j.tasks(), "totalResults": 1}, params)
        stubber.add_response("batch_update_job", {"errors": []})
        report = deadline.sync(FARM, QUEUE, now=NOW, client=client, config=conf, calls=1)
        stubber.assert_no_pending_responses()
    tasks = [
        {"id": j.id, "estimate_s": 10.0 * j.waiting, "weight": 1.0, "due": j.created.timestamp() + 86400}
        for j in read
    ]
    assert report.ranked == names(queue, rank(tasks, now=NOW, config=conf))
    prios = [queue.jobs[i].priority for i in report.ranked_ids]
    assert prios == sorted(set(prios), reverse=True) and prios[1] == 50
    touched = {j for j, _ in queue.updates}
    assert len(touched) == 3 and touched < set(good)  # the second of four keeps 50
    assert all(queue.jobs[j].priority == 50 for j in others)


def test_a_jobs_own_values_come_from_its_description_over_its_parameters_over_the_mapping(
    client, conf, tmp_path
):
    queue = Queue()
    # the mapping gives every job weight 1 and 20 s a task; a's parameters say weight 50, its
    # description weight 0.5 (the description wins); b's parameters set a due time of an hour
    a = queue.add(
        "shot-a",
        waiting=10,
        parameters={"sched_weight": {"float": "50"}, "Frames": {"string": "1-10"}},
        description="Lighting pass.\nsched: weight=0.5 task_s=60\n",
    )
    b = queue.add(
        "shot-b", waiting=10, parameters={"SCHED_due_after_h": {"int": "1"}, "sched_weight": {"int": "3"}}
    )
    c = queue.add("shot-c", waiting=10, description="sched: weight=heavy")
    queue.add("shot-d", waiting=10, parameters={"sched_kind": {"stringList": ["a", "b"]}})
    report = sync(client, queue, conf, tmp_path, dry_run=True)
    skipped = dict(report.skipped)
    assert skipped["shot-c"] == "job shot-c: description: weight: expected a number, got 'heavy'"
    assert skipped["shot-d"] == "job shot-d: parameter sched_kind: expected a string or number"
    tasks = [
        {"id": a, "estimate_s": 600.0, "weight": 0.5, "due": T0.timestamp() + 12 * 3600},
        {"id": b, "estimate_s": 200.0, "weight": 3.0, "due": T0.timestamp() + 3600},
    ]
    assert report.ranked == names(queue, rank(tasks, now=NOW, config=conf)) == ["shot-b", "shot-a"]
    assert c not in report.ranked_ids


@pytest.mark.parametrize(
    "code, status, message",
    [
        (
            "AccessDeniedException",
            403,
            "User: arn:aws:iam::1:user/x is not authorized to perform: deadline:ListJobs",
        ),
        ("ResourceNotFoundException", 404, "Resource not found: queue"),
        ("ValidationException", 400, "Invalid farm id\non two lines"),
    ],
)
def test_a_refused_listing_is_one_line_naming_farm_and_queue_and_exit_status_2(
    client, conf, monkeypatch, capsys, code, status, message
):
    with Stubber(client) as stubber:
        stubber.add_client_error("list_jobs", code, message, status)
        rc, out = run_cli(monkeypatch, capsys, client, conf=conf)
    first = message.splitlines()[0]
    assert rc == 2 and out.out == ""
    assert (
        out.err
        == f"sched deadline: error: farm {FARM} queue {QUEUE}: cannot list its jobs ({code}: {first})\n"
    )


def logged_farm(client, conf, tmp_path):
    """A queue of 12 jobs whose updates are applied to it, the changes its dry run plans (ids),
    the decision log's path and the CLI's options naming the mapping and the log."""
    queue = Queue()
    farm(queue, n=12, seed=3)
    log = tmp_path / "decisions.jsonl"
    record_updates(client, queue)
    (tmp_path / "map.csv").write_text(MAP_CSV)
    more = ["--mapping", str(tmp_path / "map.csv"), "--decision-log", str(log)]
    return queue, sync(client, queue, conf, tmp_path, dry_run=True).changed_ids, log, more


def test_a_failure_part_way_says_how_many_were_set_logs_them_and_a_rerun_converges(
    client, conf, tmp_path, monkeypatch, capsys
):
    queue, planned, log, more = logged_farm(client, conf, tmp_path)
    with Stubber(client) as stubber:
        stub_sync(stubber, queue)
        refused = queue.jobs[planned[3]]  # BatchUpdateJob answers 200 and refuses it in its errors
        err = {
            "farmId": FARM,
            "queueId": QUEUE,
            "jobId": refused.id,
            "code": "ConflictException",
            "message": "busy",
        }
        stubber.add_response("batch_update_job", {"errors": [err]})
        rc, out = run_cli(monkeypatch, capsys, client, *more, conf=conf)
    assert rc == 2 and out.err.count("\n") == 1
    assert (
        f"job {refused.name}: cannot set its priority (ConflictException: busy); 10 of the sync's 11"
        in out.err
    )
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert (
        len(record["planned"]) == 11 and len(record["set"]) == 10 and "ConflictException" in record["error"]
    )
    assert refused.id not in {s["job_id"] for s in record["set"]} and record["dry_run"] is False
    # record_updates applied the refused job's priority too: put it back, as the service kept it
    refused.priority = 50
    # the task times measured then were kept beside the decision log: no job's succeeded tasks
    # changed, so no SearchTasks now (a call the Stubber was not given would fail the sync)
    times = json.loads((tmp_path / "decisions.jsonl.task-times.json").read_text())
    assert times["format"] == "sched-task-times/1" and len(times["jobs"]) == sum(
        1 for j in queue.waiting() if j.done_s
    )
    with Stubber(client) as stubber:
        stub_sync(stubber, queue, updates=1, measured=False)
        rc, out = run_cli(monkeypatch, capsys, client, *more, conf=conf)
        stubber.assert_no_pending_responses()
    assert rc == 0 and "12 waiting jobs ranked by atc, 1 priorities changed, 11 kept" in out.out, out.err
    with Stubber(client) as stubber:
        stub_sync(stubber, queue, measured=False)
        rc, out = run_cli(monkeypatch, capsys, client, *more, conf=conf)
        stubber.assert_no_pending_responses()
    assert rc == 0 and "0 priorities changed, 12 kept" in out.out
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [len(r["set"]) for r in records] == [10, 1, 0] and records[2]["error"] is None


def test_a_job_gone_before_its_update_is_skipped_named_and_logged_and_the_others_are_set(
    client, conf, tmp_path, monkeypatch, capsys
):
    queue, planned, log, more = logged_farm(client, conf, tmp_path)
    with Stubber(client) as stubber:
        stub_sync(stubber, queue)
        gone = queue.jobs[planned[3]]  # deleted since the listing: BatchUpdateJob refuses it alone
        err = {"farmId": FARM, "queueId": QUEUE, "jobId": gone.id, "code": "ResourceNotFoundException"}
        stubber.add_response("batch_update_job", {"errors": [{**err, "message": "no such job"}]})
        rc, out = run_cli(monkeypatch, capsys, client, *more, conf=conf)
    assert rc == 0 and out.err == "", out.err
    assert (
        f"skipped {gone.name}: job {gone.name}: gone from the queue before its priority was set "
        "(ResourceNotFoundException: no such job); the others are set\n" in out.out
    )
    assert out.out.endswith("12 waiting jobs ranked by atc, 10 priorities changed, 1 kept, 1 skipped\n")
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(record["planned"]) == 11 and record["error"] is None
    assert [s["job_id"] for s in record["set"]] == [i for i in planned if i != gone.id]
    assert [s["name"] for s in record["skipped"]] == [gone.name]


@pytest.mark.parametrize(
    "more, message",
    [
        (["--priority-range", "0:101"], "--priority-range: expected 0 <= LO < HI <= 100 (Deadline Cloud's"),
        (["--priority-range", "10:20"], "--middle-priority: expected a priority within 10:20, got 50"),
        (["--default-due-h", "inf"], "--default-due-h: expected hours >= 0 and at most 2.77778e+08"),
    ],
)
def test_a_bad_option_is_refused_before_the_service_is_called(client, monkeypatch, capsys, more, message):
    with Stubber(client):  # nothing queued: any call would fail
        rc, out = run_cli(monkeypatch, capsys, client, "--dry-run", *more)
    assert rc == 2 and out.err.startswith(f"sched deadline: error: {message}") and out.err.count("\n") == 1


def test_a_mapping_column_of_the_other_farm_is_refused_naming_the_keys(tmp_path):
    f = tmp_path / "map.csv"
    f.write_text("job,frame_s\nx,10\n")
    with pytest.raises(mapping.MappingError, match="column 'frame_s': unknown; expected job and any of"):
        mapping.read_mapping(f, unit="task")


def test_the_client_retries_in_botocores_standard_mode_and_keeps_an_endpoint_url_as_given():
    c = deadline_client.connect("us-west-2", "http://127.0.0.1:9")
    assert c.meta.config.retries["mode"] == "standard" and c.meta.endpoint_url == "http://127.0.0.1:9"
    assert c.meta.config.inject_host_prefix is False  # else botocore asks management.127.0.0.1
    assert deadline_client.connect("us-west-2").meta.config.inject_host_prefix is True


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=0, max_size=7), st.integers(1, 3), st.integers(10, 14))
def test_spread_priorities_decrease_along_the_order_and_keep_the_most_they_can(current, lo, hi):
    out = new_priorities(current, lo, hi, shared=True, spread=True, middle=(lo + hi) // 2)
    assert all(a > b for a, b in zip(out, out[1:])) and all(lo <= p <= hi for p in out)
    assert sum(a == b for a, b in zip(out, current)) == kept_most(current, lo, hi)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2, 8), min_size=0, max_size=40), st.integers(0, 3))
def test_more_jobs_than_levels_share_them_evenly_and_a_second_pass_keeps_all(current, lo):
    hi = lo + 4  # 5 levels
    out = new_priorities(current, lo, hi, shared=True, spread=True, middle=lo + 2)
    k = max(1, -(-len(current) // 5))
    assert all(a >= b for a, b in zip(out, out[1:])) and all(lo <= p <= hi for p in out)
    assert all(len(list(g)) <= k for _, g in itertools.groupby(out))
    assert new_priorities(out, lo, hi, shared=True, spread=True, middle=lo + 2) == out


@pytest.mark.parametrize("n", [1, 2, 3, 50, 100, 101])
def test_a_fresh_queue_of_at_most_101_jobs_gets_distinct_levels_around_50(n):
    out = new_priorities([50] * n, 0, 100, shared=True, spread=True, middle=50)
    assert len(set(out)) == n and out == sorted(out, reverse=True) and out[(n - 1) // 2] == 50
    assert n < 101 or out == list(range(100, -1, -1))


def test_with_a_botocore_without_the_batch_operations_each_job_is_read_and_set_alone(
    client, conf, tmp_path, monkeypatch
):
    # botocore 1.40.0's Deadline Cloud model has GetJob and UpdateJob, not their batch forms
    monkeypatch.setattr(deadline_queue, "BATCHES", ("BatchGetJob", "NoSuchOperation"))
    queue = Queue()
    farm(queue, n=6, seed=4)
    gone = queue.waiting()[2]  # deleted between ListJobs and GetJob: skipped, named
    with Stubber(client) as stubber:
        stubber.add_response(
            "list_jobs",
            {"jobs": [j.summary() for j in queue.jobs.values()]},
            {"farmId": FARM, "queueId": QUEUE, "maxResults": 100},
        )
        for j in queue.waiting():
            params = {"farmId": FARM, "queueId": QUEUE, "jobId": j.id}
            if j is gone:
                stubber.add_client_error("get_job", "ResourceNotFoundException", "no such job", 404, params)
            else:
                stubber.add_response(
                    "get_job", {k: v for k, v in j.item().items() if k not in ("farmId", "queueId")}, params
                )
        for j in queue.waiting():
            if j.done_s and j is not gone:
                params = {
                    "farmId": FARM,
                    "queueIds": [QUEUE],
                    "jobId": j.id,
                    "itemOffset": 0,
                    "pageSize": 100,
                }
                stubber.add_response(
                    "search_tasks", {"tasks": j.tasks(), "totalResults": len(j.done_s)}, params
                )
        for _ in range(4):  # 5 ranked jobs, the middle one keeps 50
            stubber.add_response("update_job", {})
        (tmp_path / "map.csv").write_text(MAP_CSV)
        rules = mapping.read_mapping(tmp_path / "map.csv", unit="task")
        report = deadline.sync(FARM, QUEUE, rules, now=NOW, client=client, config=conf, calls=1)
        stubber.assert_no_pending_responses()
    assert len(report.changes) == 4 and len(report.ranked) == 5
    assert report.skipped == [
        (gone.name, f"job {gone.name}: cannot read it (ResourceNotFoundException: no such job)")
    ]


def test_task_times_round_trip_and_a_file_of_another_queue_or_not_json_is_set_aside(tmp_path):
    from sched.farms import task_times

    path = tmp_path / "t.json"
    assert task_times.read(path, FARM, QUEUE) == ({}, None)  # none yet: nothing to say
    task_times.write(path, FARM, QUEUE, {"job-b": (3, 41.5), "job-a": (1, 20.0)})
    assert task_times.read(path, FARM, QUEUE) == ({"job-a": (1, 20.0), "job-b": (3, 41.5)}, None)
    got, warning = task_times.read(path, FARM, "queue-other")
    assert got == {} and "fields farm, queue: another queue's file; measuring every job again" in warning
    path.write_text("{not json")
    got, warning = task_times.read(path, FARM, QUEUE)
    assert got == {} and warning.startswith(f"task times {path}: not valid JSON")
    bad = {"format": "sched-task-times/1", "farm": FARM, "queue": QUEUE, "jobs": {"j": [2, -1]}}
    path.write_text(json.dumps(bad))
    assert (
        "field jobs.j: expected [succeeded tasks > 0, seconds >= 0]" in task_times.read(path, FARM, QUEUE)[1]
    )


def test_a_task_times_file_that_cannot_be_written_costs_a_warning_not_the_sync(client, conf, tmp_path):
    queue = Queue()
    farm(queue, n=12, seed=2)
    record_updates(client, queue)
    folder = tmp_path / "a-folder"  # a folder where the file should be: neither read nor written
    folder.mkdir()
    report = sync(client, queue, conf, tmp_path, updates=1, task_times=str(folder))
    assert len(report.ranked) == 12 and report.changes
    assert any("is a folder" in w and "measuring every job again" in w for w in report.warnings)
    assert any("the task times measured are not kept" in w for w in report.warnings)
