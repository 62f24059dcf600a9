"""sched deadline sync through boto3's real transport, signing, serialisation and retries: a
small in-process HTTP server (tests/fake_deadline.py) answers the service's REST paths at
``--endpoint-url http://127.0.0.1:PORT``. Throttling is retried by botocore's standard mode;
access denied, a missing queue, no network and no credentials are one line and exit status 2
(docs/deadline.md)."""

import json
import re
import socket
import subprocess
import sys

import pytest

pytest.importorskip("boto3", reason="optional extra deadline not installed (pip install -e '.[deadline]')")

from sched import cli  # noqa: E402

from .conftest import ROOT  # noqa: E402
from .fake_deadline import FARM, QUEUE, DeadlineServer, Queue, fake_aws_env  # noqa: E402

NOW = 1_800_000_000.0


@pytest.fixture
def aws(tmp_path, monkeypatch):
    """This process's environment as a run here sees it; returns it for a subprocess."""
    return fake_aws_env(monkeypatch, tmp_path)


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text('{"rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"}}')
    return str(path)


def jobs(queue, n, fresh=3):
    """``n`` jobs of known tasks; every ``fresh``-th has none done yet (0: each has some)."""
    for i in range(n):
        none = fresh and i % fresh == 0
        queue.add(f"shot-{i:02d}", waiting=3 + (7 * i) % 11, done_s=[] if none else [20 + i, 40])
    return queue


def argv(conf, url, *more):
    return [
        "--config",
        conf,
        "deadline",
        "sync",
        "--farm-id",
        FARM,
        "--queue-id",
        QUEUE,
        "--now",
        str(NOW),
    ] + [
        "--endpoint-url",
        url,
        *more,
    ]


def sched(env, *args):
    return subprocess.run(
        [sys.executable, "-m", "sched", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_sync_through_boto3s_transport_sets_rank_order_and_a_second_sets_nothing(aws, conf, tmp_path):
    queue = jobs(Queue(), 20)
    (tmp_path / "map.csv").write_text("job,task_s\n*,30\n")  # the jobs with no task done yet
    log = tmp_path / "decisions.jsonl"
    more = ["--mapping", str(tmp_path / "map.csv"), "--decision-log", str(log)]
    with DeadlineServer(queue, page=7) as server:
        r = sched(aws, *argv(conf, server.url, *more))
        assert r.returncode == 0, r.stderr
        assert len(server.calls_of("ListJobs")) == 3 and len(server.calls_of("BatchUpdateJob")) == 1
        assert len(server.calls_of("SearchTasks")) == 13  # the jobs with a task done
        assert "20 waiting jobs ranked by atc, 19 priorities changed, 1 kept, 0 skipped" in r.stdout
        (record,) = [json.loads(line) for line in log.read_text().splitlines()]
        assert {(s["job_id"], s["to"]) for s in record["set"]} == set(queue.updates) and len(
            queue.updates
        ) == 19
        order = [queue.jobs[i].priority for i in record["order"]]
        assert order == sorted(set(order), reverse=True) and 50 in order
        r = sched(aws, *argv(conf, server.url, *more))
        assert r.returncode == 0, r.stderr
        assert "0 priorities changed, 20 kept" in r.stdout and len(server.calls_of("BatchUpdateJob")) == 1
        assert [len(json.loads(line)["set"]) for line in log.read_text().splitlines()] == [19, 0]
        # the task times were kept beside the decision log: no job's succeeded tasks changed, so
        # no SearchTasks; then one job finishes a task, and only it is read again
        assert len(server.calls_of("SearchTasks")) == 13
        moved = next(j for j in queue.jobs.values() if j.done_s)
        moved.done_s.append(90)
        assert cli.main(argv(conf, server.url, *more, "--dry-run")) == 0  # in this process: faster
        assert len(server.calls_of("SearchTasks")) == 14 and server.calls_of("SearchTasks")[-1] == (
            "SearchTasks",
            moved.id,
        )


def test_concurrent_per_job_calls_give_the_serial_sync_and_bad_task_times_are_set_aside(
    aws, conf, capsys, tmp_path
):
    results = []
    for calls in ("1", "8"):
        queue = jobs(Queue(), 15)
        with DeadlineServer(queue, page=9) as server:
            code = cli.main(argv(conf, server.url, "--calls", calls, "--mapping", str(_map(tmp_path))))
            out = capsys.readouterr()
            assert code == 0, out.err
            results.append(
                (out.out, sorted(queue.updates), sorted(c[1] for c in server.calls_of("SearchTasks")))
            )
    assert results[0] == results[1] and len(results[0][2]) == 10
    # a task-times file that is not one: a warning naming the field, every job measured, rewritten
    times = tmp_path / "t.json"
    times.write_text(
        json.dumps({"format": "sched-task-times/1", "farm": FARM, "queue": QUEUE, "jobs": {"j": [0, 1.0]}})
    )
    queue = jobs(Queue(), 15)
    with DeadlineServer(queue) as server:
        code = cli.main(argv(conf, server.url, "--task-times", str(times), "--mapping", str(_map(tmp_path))))
        out = capsys.readouterr()
        assert code == 0 and len(server.calls_of("SearchTasks")) == 10
    assert f"task times {times}: field jobs.j: expected [succeeded tasks > 0, seconds >= 0]" in out.err
    assert len(json.loads(times.read_text())["jobs"]) == 10
    assert cli.main(argv(conf, "http://127.0.0.1:9", "--calls", "0")) == 2
    assert "calls: expected 1 to 64" in capsys.readouterr().err


def _map(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text("job,task_s\n*,30\n")
    return path


def test_throttling_is_retried_by_botocores_standard_mode_then_succeeds(aws, conf, capsys):
    queue = jobs(Queue(), 5, fresh=0)
    with DeadlineServer(queue) as server:
        server.fail = {
            "ListJobs": [(429, "ThrottlingException")],
            "BatchUpdateJob": [(429, "ThrottlingException")],
        }
        code = cli.main(argv(conf, server.url))
        out = capsys.readouterr()
        assert code == 0, out.err
        assert len(server.calls_of("ListJobs")) == 2 and len(server.calls_of("BatchUpdateJob")) == 2
        assert len(queue.updates) == 4 and "4 priorities changed" in out.out


def test_a_throttling_storm_on_concurrent_calls_is_absorbed_and_one_past_every_retry_sets_nothing(
    aws, conf, capsys, tmp_path, monkeypatch
):
    """Issue 47's campaign: every other SearchTasks throttled while 8 run at once. A call can meet
    three throttles in a row (botocore's 3 attempts): it is made again once the others are done,
    one at a time, and the sync ends as an unthrottled one. A service that throttles every call
    stops the sync with one line naming the job, nothing set."""
    ref = jobs(Queue(), 12)
    with DeadlineServer(ref) as server:
        assert cli.main(argv(conf, server.url, "--mapping", str(_map(tmp_path)))) == 0
    queue = jobs(Queue(), 12)
    with DeadlineServer(queue) as server:
        server.throttle = {"SearchTasks": 2}
        code = cli.main(argv(conf, server.url, "--calls", "8", "--mapping", str(_map(tmp_path))))
        out = capsys.readouterr()
        assert code == 0, out.err
        assert sorted(queue.updates) == sorted(ref.updates) and len(server.calls_of("SearchTasks")) >= 16
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # fewer backoffs: the same outcome, sooner
    queue = jobs(Queue(), 12)
    with DeadlineServer(queue) as server:
        server.throttle = {"SearchTasks": 1}
        code = cli.main(argv(conf, server.url, "--mapping", str(_map(tmp_path))))
        out = capsys.readouterr()
    assert code == 2 and queue.updates == [] and out.err.count("\n") == 1
    assert "cannot read its tasks (ThrottlingException: Rate exceeded" in out.err


def test_access_denied_is_one_line_on_stderr_and_exit_status_2_with_nothing_set(aws, conf):
    queue = jobs(Queue(), 5, fresh=0)
    with DeadlineServer(queue) as server:
        server.fail = {"BatchUpdateJob": [(403, "AccessDeniedException")]}
        r = sched(aws, *argv(conf, server.url))
    assert r.returncode == 2 and r.stdout == "" and queue.updates == []
    (line,) = [line for line in r.stderr.splitlines() if "error" in line]  # and rank()'s note on auto
    assert re.fullmatch(
        f"sched deadline: error: farm {FARM} queue {QUEUE}: job shot-0[0-4]: cannot set its priority "
        r"\(AccessDeniedException: AccessDeniedException \(from the test's server\)\); "
        "0 of the sync's 4 changes were made, a rerun makes the rest",
        line,
    )
    assert r.stderr.endswith(line + "\n")


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


@pytest.mark.parametrize("case", ["missing queue", "no network", "no credentials"])
def test_a_missing_queue_no_network_or_no_credentials_is_one_line_and_exit_status_2(
    aws, conf, monkeypatch, capsys, case
):
    queue = jobs(Queue(), 3)
    with DeadlineServer(queue) as server:
        url, queue_id = server.url, QUEUE
        if case == "missing queue":
            queue_id = "queue-" + "f" * 32
        elif case == "no network":
            url = f"http://127.0.0.1:{_free_port()}"
            monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # a refused connection is retried too, else
        else:
            monkeypatch.delenv("AWS_ACCESS_KEY_ID")
            monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        args = argv(conf, url)
        args[args.index(QUEUE)] = queue_id
        code = cli.main(args)
    err = capsys.readouterr().err
    where = f"sched deadline: error: farm {FARM} queue {queue_id}: cannot list its jobs ("
    assert code == 2 and err.startswith(where) and err.count("\n") == 1 and queue.updates == []
    assert {
        "missing queue": "ResourceNotFoundException: Resource not found: queue)",
        "no network": f'Could not connect to the endpoint URL: "{url}/2023-10-12/farms/',
        "no credentials": "Unable to locate credentials)",
    }[case] in err
