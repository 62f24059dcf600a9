"""Hardening round 6 (issue 58), the evidence tools and the farm adapters: a job listed twice
counts once (class 7); the manifest follows links to files, refuses the rest by name, refuses an
empty manifest, round-trips any name and prints every name escaped (class 9); a file a command
writes over is of its own format, never a link's target, and a dry run writes nothing (class 10);
a task-times entry or a farm's answer with a number out of bounds is named and skipped (class 13)."""

import hashlib
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from sched.evidence import manifest

from .conftest import run_here

# --------------------------------------------------------------------------- class 9: the manifest

FILES = {"calibration.json": "c", "benchmark/winner.json": "{}", "train/seed-1/politique.pt": "w"}


def tree(root, files=FILES):
    results = root / "results"
    for rel, text in files.items():
        p = results / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return results


def write(tmp_path, results, out=None, record=None):
    out = out or tmp_path / "m.sha256"
    record = record or tmp_path / "run.json"
    return run_here("manifest", "write", "--results", results, "--out", out, "--record", record)


def test_ordinary_names_keep_the_manifests_bytes(tmp_path):
    """The workflow's names need no escaping: each line is `<sha256>  results/<path>`, as before."""
    results = tree(tmp_path)
    r = write(tmp_path, results)
    assert r.returncode == 0, r.stderr
    want = "".join(
        f"{hashlib.sha256(FILES[rel].encode()).hexdigest()}  results/{rel}\n"
        for rel in ("calibration.json", "train/seed-1/politique.pt", "benchmark/winner.json")
    )
    assert (tmp_path / "m.sha256").read_bytes() == want.encode()


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_a_link_to_a_file_is_listed_and_its_targets_bytes_hashed(tmp_path, where):
    results = tree(tmp_path)
    target = results / "calibration.json" if where == "inside" else tmp_path / "elsewhere.bin"
    target.write_text("first")
    (results / "benchmark/linked.json").symlink_to(target)
    assert write(tmp_path, results).returncode == 0
    entries = dict(manifest.read(tmp_path / "m.sha256"))
    assert entries["results/benchmark/linked.json"] == hashlib.sha256(b"first").hexdigest()
    before = manifest.digest(tmp_path / "m.sha256")
    target.write_text("second")  # the linked file changes: so does the manifest
    assert write(tmp_path, results).returncode == 0
    assert manifest.digest(tmp_path / "m.sha256") != before


@pytest.mark.parametrize("kind", ["dangling", "folder", "device", "fifo"])
def test_a_link_that_is_not_to_a_file_or_a_special_file_is_refused_by_name(tmp_path, kind):
    results = tree(tmp_path)
    bad = results / "benchmark" / f"odd-{kind}"
    if kind == "dangling":
        bad.symlink_to(tmp_path / "nothing-here")
    elif kind == "folder":
        bad.symlink_to(results / "train")
    elif kind == "device":
        bad.symlink_to("/dev/null")
    else:
        os.mkfifo(bad)
    r = write(tmp_path, results)
    assert r.returncode == 2 and str(bad) in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "m.sha256").exists() and not (tmp_path / "run.json").exists()


@pytest.mark.parametrize("side", ["a", "b", "both"])
def test_an_empty_manifest_is_an_error_on_compare(tmp_path, side):
    results = tree(tmp_path)
    assert write(tmp_path, results).returncode == 0
    empty = tmp_path / "empty.sha256"
    empty.write_bytes(b"")
    full = tmp_path / "m.sha256"
    a, b = {"a": (empty, full), "b": (full, empty), "both": (empty, empty)}[side]
    r = run_here("manifest", "compare", a, b)
    assert r.returncode == 2 and "no entry" in r.stderr and "identical" not in r.stdout


ODD = [
    " leading space",
    "trailing space ",
    "tab\there",
    "new\nline",
    "carriage\rreturn",
    "back\\slash",
    "\\n literally",
    "escape\x1b[2J",
    "bidi\u202eeert",
    b"not-utf8-\xff\xfe",
]


def _name(raw):
    return os.fsdecode(raw) if isinstance(raw, bytes) else raw


@pytest.mark.parametrize("odd", ODD, ids=lambda n: repr(n)[:20])
def test_any_name_write_accepts_round_trips_and_sha256sum_checks_it(tmp_path, odd):
    results = tree(tmp_path)
    with open(os.path.join(os.fsencode(results), b"benchmark", os.fsencode(_name(odd))), "wb") as fh:
        fh.write(b"odd")
    r = write(tmp_path, results)
    assert r.returncode == 0, r.stderr
    entries = dict(manifest.read(tmp_path / "m.sha256"))
    assert entries[f"results/benchmark/{_name(odd)}"] == hashlib.sha256(b"odd").hexdigest()
    assert len(entries) == 4
    same = run_here("manifest", "compare", tmp_path / "m.sha256", tmp_path / "m.sha256")
    assert same.returncode == 0 and same.stdout.startswith("identical: 4 result artefacts")
    if shutil.which("sha256sum"):  # the format is sha256sum's: it checks the tree too
        check = subprocess.run(["sha256sum", "--quiet", "-c", tmp_path / "m.sha256"], cwd=tmp_path)
        assert check.returncode == 0
    # and a differing artefact of that name is printed escaped, on one line
    with open(os.path.join(os.fsencode(results), b"benchmark", os.fsencode(_name(odd))), "wb") as fh:
        fh.write(b"other")
    assert write(tmp_path, results, out=tmp_path / "n.sha256").returncode == 0
    r = run_here("manifest", "compare", tmp_path / "m.sha256", tmp_path / "n.sha256")
    assert r.returncode == 1
    first = r.stdout.splitlines()[0]
    assert first == f"first difference (DAG order): results/benchmark/{manifest.shown(_name(odd))} (differs)"
    assert all(c.isprintable() for c in r.stdout.replace("\n", ""))


def test_a_hostile_manifests_names_cannot_draw_on_the_terminal(tmp_path):
    """Names with escape sequences, CR and a forged "identical" line print escaped."""
    sha = hashlib.sha256(b"x").hexdigest()
    forged = "results/a\x1b[2K\ridentical: 9 result artefacts, sha256 " + "0" * 64 + "\x1b[8m"
    (tmp_path / "a.sha256").write_bytes(f"{sha}  {forged}\n{sha}  results/\u202ebidi\n".encode())
    (tmp_path / "b.sha256").write_bytes(f"{sha}  results/b\n".encode())
    r = run_here("manifest", "compare", tmp_path / "a.sha256", tmp_path / "b.sha256")
    assert r.returncode == 1
    assert "\x1b" not in r.stdout and "\r" not in r.stdout and "\u202e" not in r.stdout
    assert not any(line.startswith("identical") for line in r.stdout.splitlines())
    assert "\\x1b[2K\\ridentical" in r.stdout and "\\u202ebidi" in r.stdout


@pytest.mark.parametrize(
    "existing",
    [
        '{"decision_id": "1", "order": []}\n{"decision_id": "2", "order": []}\n',  # a decision log
        '{"format": "sched-task-times/1", "jobs": {}}',
        "job,weight\n*,1\n",
    ],
)
@pytest.mark.parametrize("which", ["out", "record"])
def test_write_never_writes_over_a_file_of_another_format(tmp_path, existing, which):
    results = tree(tmp_path)
    victim = tmp_path / "precious"
    victim.write_text(existing)
    kw = {which: victim}
    r = write(tmp_path, results, **kw)
    assert r.returncode == 2 and "not written over" in r.stderr and str(victim) in r.stderr
    assert victim.read_text() == existing
    other = tmp_path / ("run.json" if which == "out" else "m.sha256")
    assert not other.exists()  # both checked before either is written


@pytest.mark.parametrize("which", ["out", "record"])
def test_write_never_writes_through_a_link(tmp_path, which):
    results = tree(tmp_path)
    assert write(tmp_path, results).returncode == 0  # a manifest and a run record to point at
    target = tmp_path / ("m.sha256" if which == "out" else "run.json")
    before = target.read_bytes()
    link = tmp_path / "link"
    link.symlink_to(target)
    (results / "calibration.json").write_text("changed")
    r = write(tmp_path, results, **{which: link, ("record" if which == "out" else "out"): tmp_path / "x"})
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert link.is_symlink() and target.read_bytes() == before


def test_write_replaces_its_own_manifest_and_record(tmp_path):
    results = tree(tmp_path)
    assert write(tmp_path, results).returncode == 0
    (results / "calibration.json").write_text("changed")
    assert write(tmp_path, results).returncode == 0
    assert dict(manifest.read(tmp_path / "m.sha256"))["results/calibration.json"] == (
        hashlib.sha256(b"changed").hexdigest()
    )


# --------------------------------------------------------------------------- Deadline Cloud

boto3 = pytest.importorskip("boto3", reason="optional extra deadline not installed")

from botocore.stub import Stubber  # noqa: E402

from sched.farms import deadline, deadline_client, mapping, task_times  # noqa: E402

from .fake_deadline import (  # noqa: E402
    FARM,
    QUEUE,
    DeadlineServer,
    Queue,
    fake_aws_env,
    record_updates,
    stub_fleets,
    stub_sync,
)

NOW = 1_800_000_000.0
T0 = datetime.fromtimestamp(NOW, UTC)


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text('{"rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"}}')
    return str(path)


@pytest.fixture
def client():
    return boto3.client("deadline", region_name="us-west-2", aws_access_key_id="x", aws_secret_access_key="y")


def shots(n=8):
    queue = Queue()
    for i in range(n):
        queue.add(
            f"shot-{i:02d}",
            waiting=3 + (7 * i) % 11,
            done_s=[20 + i, 40] if i % 3 else [],
            created=T0 - timedelta(hours=i),
        )
    return queue


def stubbed(client, queue, conf, tmp_path, **kw):
    (tmp_path / "map.csv").write_text("job,task_s\n*,30\n")
    rules = mapping.read_mapping(tmp_path / "map.csv", unit="task")
    with Stubber(client) as stubber:
        stub_sync(stubber, queue, page=kw.pop("page", 100), measured=kw.pop("measured", True))
        report = deadline.sync(
            FARM, QUEUE, rules, now=NOW, client=client, config=conf, dry_run=True, calls=1, **kw
        )
        stubber.assert_no_pending_responses()
    return report


@pytest.mark.parametrize("listing", ["ListJobs", "BatchGetJob", "SearchTasks"])
def test_deadline_a_job_or_task_listed_twice_counts_once_and_the_repeat_is_logged_once(
    client, conf, tmp_path, listing
):
    plain = stubbed(client, shots(), conf, tmp_path / "plain" if (tmp_path / "plain").mkdir() else tmp_path)
    queue = shots()
    twice = sorted(queue.jobs)[4]  # a job with tasks done
    if listing == "ListJobs":
        queue.relisted += [twice, twice]  # on a later page than its first listing, and a third time
    elif listing == "BatchGetJob":
        queue.detailed_twice.add(twice)
    else:
        queue.jobs[twice].tasks_twice = True
    report = stubbed(client, queue, conf, tmp_path, page=3)
    assert report.ranked == plain.ranked and report.changes == plain.changes and not report.skipped
    repeats = [w for w in report.warnings if listing in w]
    assert all("counts once" in w for w in repeats)
    if listing == "SearchTasks":  # each of its task ids once, the job named
        ids = [t["taskId"] for t in queue.jobs[twice].tasks()[: len(queue.jobs[twice].done_s)]]
        assert len(repeats) == len(ids) and all(queue.jobs[twice].name in w for w in repeats)
        assert all(sum(i in w for w in repeats) == 1 for i in ids)
    else:
        assert len(repeats) == 1 and twice in repeats[0]


def test_deadline_a_job_on_two_pages_through_boto3s_transport(conf, tmp_path, monkeypatch, capsys):
    from sched import cli

    fake_aws_env(monkeypatch, tmp_path)
    queue = shots(10)
    twice = sorted(queue.jobs)[2]
    queue.relisted.append(twice)
    (tmp_path / "map.csv").write_text("job,task_s\n*,30\n")
    with DeadlineServer(queue, page=4) as server:
        argv = ["--config", conf, "deadline", "sync", "--farm-id", FARM, "--queue-id", QUEUE]
        argv += ["--now", str(NOW), "--endpoint-url", server.url, "--mapping", str(tmp_path / "map.csv")]
        code = cli.main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "10 waiting jobs ranked" in out.out and "0 skipped" in out.out
    assert out.err.count(twice) == 1 and "ListJobs listed" in out.err


# --------------------------------------------------------------------------- class 10: task times


def test_deadline_task_times_never_writes_over_another_format_or_through_a_link(
    client, conf, tmp_path, monkeypatch, capsys
):
    from sched import cli

    log = tmp_path / "decisions.jsonl"
    log.write_text('{"decision_id": "a", "order": []}\n')
    target = tmp_path / "real.task-times.json"
    task_times.write(target, FARM, QUEUE, {"job-x": (1, 5.0)})
    link = tmp_path / "link.json"
    link.symlink_to(target)
    monkeypatch.setattr(deadline_client, "connect", lambda region=None, endpoint_url=None: client)
    for victim in (log, link):
        before = victim.read_bytes()
        queue = shots()
        record_updates(client, queue)
        with Stubber(client) as stubber:
            stub_sync(stubber, queue)
            stubber.add_response("batch_update_job", {"errors": []})
            argv = ["--config", conf, "deadline", "sync", "--farm-id", FARM, "--queue-id", QUEUE]
            code = cli.main(argv + ["--now", str(NOW), "--calls", "1", "--task-times", str(victim)])
        out = capsys.readouterr()
        assert code == 0, out.err
        assert victim.read_bytes() == before and "not overwritten" in out.err and str(victim) in out.err
    assert link.is_symlink() and json.loads(target.read_text())["jobs"] == {"job-x": [1, 5.0]}
    for victim in (log, link):
        with pytest.raises(task_times.TaskTimesError):
            task_times.write(victim, FARM, QUEUE, {})


@pytest.mark.parametrize("exists", [False, True])
def test_deadline_a_dry_run_writes_no_task_times(client, conf, tmp_path, exists):
    path = tmp_path / "t.json"
    if exists:
        task_times.write(path, FARM, QUEUE, {"job-x": (1, 5.0)})
    before = path.read_bytes() if exists else None
    stubbed(client, shots(), conf, tmp_path, task_times=str(path))
    assert (path.read_bytes() if path.exists() else None) == before


def test_deadline_a_dry_run_writes_neither_the_decision_log_nor_the_task_times(
    client, conf, tmp_path, monkeypatch, capsys
):
    from sched import cli

    monkeypatch.setattr(deadline_client, "connect", lambda region=None, endpoint_url=None: client)
    log = tmp_path / "decisions.jsonl"
    with Stubber(client) as stubber:
        stub_sync(stubber, shots())
        argv = ["--config", conf, "deadline", "sync", "--farm-id", FARM, "--queue-id", QUEUE, "--dry-run"]
        code = cli.main(argv + ["--now", str(NOW), "--calls", "1", "--decision-log", str(log)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "would set" in out.out and not list(tmp_path.glob("decisions*"))


# --------------------------------------------------------------------------- class 13: numbers


@pytest.mark.parametrize(
    "entry",
    [[2, 1e300], [2, -1.0], [2, 1e12 + 1], [0, 5.0], [-1, 5.0], [2.5, 5.0], [True, 5.0], [2, "5"], [2], "x"],
    ids=repr,
)
def test_a_bad_task_times_entry_is_dropped_named_and_the_job_measured_again(client, conf, tmp_path, entry):
    queue = shots()
    victim = sorted(queue.jobs)[1]  # a job with 2 tasks done
    path = tmp_path / "t.json"
    good = {jid: [len(j.done_s), 30.0] for jid, j in queue.jobs.items() if j.done_s and jid != victim}
    doc = {"format": task_times.FORMAT, "farm": FARM, "queue": QUEUE, "jobs": {**good, victim: entry}}
    path.write_text(json.dumps(doc))
    times, warning = task_times.read(path, FARM, QUEUE)
    assert set(times) == set(good)
    assert str(path) in warning and f"field jobs.{victim}" in warning and "dropped" in warning
    # the sync: only that job is measured (SearchTasks), nothing is skipped
    (tmp_path / "map.csv").write_text("job,task_s\n*,30\n")
    rules = mapping.read_mapping(tmp_path / "map.csv", unit="task")
    with Stubber(client) as stubber:
        stub_sync(stubber, queue, measured=False, fleets=False)
        j = queue.jobs[victim]
        params = {"farmId": FARM, "queueIds": [QUEUE], "jobId": victim, "itemOffset": 0, "pageSize": 100}
        stubber.add_response("search_tasks", {"tasks": j.tasks(), "totalResults": 2}, params)
        stub_fleets(stubber, queue)  # a sync without --machines asks for the fleets' workers, after the tasks
        stubber.add_response("batch_update_job", {"errors": []})
        report = deadline.sync(
            FARM, QUEUE, rules, now=NOW, client=client, config=conf, calls=1, task_times=str(path)
        )
        stubber.assert_no_pending_responses()
    assert not report.skipped and len(report.ranked) == len(queue.jobs)
    assert any(f"jobs.{victim}" in w for w in report.warnings)
    kept = json.loads(path.read_text())["jobs"]
    assert kept[victim] == [2, sum(j.done_s) / 2]


def test_deadline_a_task_ending_before_it_started_is_left_out_of_the_mean_named(client, conf, tmp_path):
    queue = shots(3)
    job = queue.jobs[sorted(queue.jobs)[1]]
    job.done_s = [-30, 40]
    report = stubbed(client, queue, conf, tmp_path)
    (line,) = [w for w in report.warnings if "left out of its mean" in w]
    assert job.name in line and "1 succeeded tasks" in line and "endedAt - startedAt: -30 s" in line
    assert not report.skipped and len(report.ranked) == 3


def _bad_summary(field, value):
    def summary(job, orig):
        d = orig(job)
        if field == "count":
            d["taskRunStatusCounts"] = {**d["taskRunStatusCounts"], "SUCCEEDED": value}
        else:
            d[field] = value
        return d

    return summary


@pytest.mark.parametrize(
    "field, value",
    [("priority", -5), ("priority", 1000), ("priority", 2**40), ("count", -3), ("count", 2**40)],
)
def test_deadline_an_answer_with_a_number_out_of_bounds_skips_that_job_named(
    conf, tmp_path, monkeypatch, capsys, field, value
):
    from sched import cli

    from . import fake_deadline

    fake_aws_env(monkeypatch, tmp_path)
    queue = shots(6)
    bad = queue.jobs[sorted(queue.jobs)[2]]
    orig, hook = fake_deadline.Job.summary, _bad_summary(field, value)
    monkeypatch.setattr(
        fake_deadline.Job, "summary", lambda self: hook(self, orig) if self.id == bad.id else orig(self)
    )
    (tmp_path / "map.csv").write_text("job,task_s\n*,30\n")
    with DeadlineServer(queue) as server:
        argv = ["--config", conf, "deadline", "sync", "--farm-id", FARM, "--queue-id", QUEUE, "--dry-run"]
        code = cli.main(
            argv + ["--now", str(NOW), "--endpoint-url", server.url, "--mapping", str(tmp_path / "map.csv")]
        )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "5 waiting jobs ranked" in out.out and "1 skipped" in out.out
    (line,) = [x for x in out.out.splitlines() if x.startswith("skipped")]
    name = "taskRunStatusCounts.SUCCEEDED" if field == "count" else field
    assert bad.name in line and name in line and str(value) in line


def test_deadline_an_answer_botocore_cannot_read_is_one_line_naming_the_call(
    conf, tmp_path, monkeypatch, capsys
):
    from sched import cli

    from . import fake_deadline

    fake_aws_env(monkeypatch, tmp_path)
    queue = shots(3)
    orig = fake_deadline.Job.summary
    monkeypatch.setattr(fake_deadline.Job, "summary", lambda self: {**orig(self), "priority": "abc"})
    with DeadlineServer(queue) as server:
        argv = ["--config", conf, "deadline", "sync", "--farm-id", FARM, "--queue-id", QUEUE, "--dry-run"]
        code = cli.main(argv + ["--now", str(NOW), "--endpoint-url", server.url])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"queue {QUEUE}: cannot list its jobs (its answer cannot be read" in err


# --------------------------------------------------------------------------- OpenCue


@pytest.fixture
def cuebot():
    pytest.importorskip("opencue", reason="optional extra opencue not installed")
    from .fake_cuebot import FakeCuebot

    with FakeCuebot() as cue:
        yield cue


def opencue_sync(conf, cue, capsys, *more):
    from sched import cli

    argv = ["--config", conf, "opencue", "sync", "--show", "film", "--cuebot", cue.address, "--now", str(NOW)]
    code = cli.main(argv + list(more))
    return code, capsys.readouterr()


def test_opencue_a_job_listed_twice_is_ranked_once_and_the_repeat_logged(conf, cuebot, capsys):
    ids = [cuebot.add_job(f"good-{i}", waiting=5 + i, avg_frame_s=10, start_time=int(NOW)) for i in range(4)]
    cuebot.list_twice(ids[1])
    cuebot.list_twice(ids[1])
    code, out = opencue_sync(conf, cuebot, capsys)
    assert code == 0, out.err
    assert "4 pending jobs ranked" in out.out and "0 skipped" in out.out
    assert out.err.count(ids[1]) == 1 and "GetJobs listed" in out.err and "3 times" in out.err
    assert len(cuebot.set_calls) == len({j for j, _ in cuebot.set_calls})  # each job set once


@pytest.mark.parametrize(
    "stats, field", [({"avg_frame_s": -5}, "average frame time"), ({"waiting": -4}, "waiting frames")]
)
def test_opencue_a_job_with_a_negative_number_is_skipped_named(conf, cuebot, capsys, stats, field):
    for i in range(3):
        cuebot.add_job(f"good-{i}", waiting=5 + i, avg_frame_s=10, start_time=int(NOW))
    cuebot.add_job("bad", **{"waiting": 5, "avg_frame_s": 10, "start_time": int(NOW), **stats})
    code, out = opencue_sync(conf, cuebot, capsys, "--dry-run")
    assert code == 0, out.err
    assert "3 pending jobs ranked" in out.out and "1 skipped" in out.out
    (line,) = [x for x in out.out.splitlines() if x.startswith("skipped")]
    assert (
        line.startswith("skipped bad: job bad: ")
        and field in line
        and str(next(iter(stats.values()))) in line
    )
