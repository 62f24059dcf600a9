"""sched opencue sync, against an in-process fake Cuebot (tests/fake_cuebot.py): the priorities
that arrive at the server hold rank()'s order, change only where they must, and a Cuebot that
is down is one line and exit status 2 (docs/opencue.md)."""

import random
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("opencue", reason="optional extra opencue not installed (pip install -e '.[opencue]')")
pytest.importorskip("opencue_proto", reason="optional extra opencue not installed")
pytest.importorskip("grpc", reason="optional extra opencue not installed")

from sched import cli, rank  # noqa: E402
from sched.farms import mapping  # noqa: E402
from sched.farms.opencue import new_priorities  # noqa: E402

from .conftest import kept_most, run_cli  # noqa: E402
from .fake_cuebot import FakeCuebot  # noqa: E402

NOW = 1_800_000_000.0  # 2027-01-15, POSIX seconds


@pytest.fixture
def conf(tmp_path):
    """A config without verdicts: policy auto runs ATC with config rules.atc_k."""
    path = tmp_path / "config.yaml"
    path.write_text('{"rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"}}')
    return str(path)


def farm(cue, n=50, seed=0):
    """``n`` pending jobs of show film with known frames, frame times, weights and due times
    (weights and dues from a mapping CSV by name pattern); returns (csv text, expected tasks)."""
    rng = random.Random(seed)
    tasks = {}
    for i in range(n):
        waiting, avg = rng.randint(1, 200), rng.choice([0, 5, 30, 240])
        name = f"film-sh{i:03d}-{'urgent' if i % 5 == 0 else 'comp'}"
        jid = cue.add_job(name, waiting=waiting, avg_frame_s=avg, start_time=int(NOW - rng.randint(0, 86400)))
        submitted = cue.jobs[jid].start_time
        frame_s = float(avg) if avg > 0 else 20.0  # the CSV's frame_s for jobs with no finished frame
        weight = 4.0 if i % 5 == 0 else 1.0
        due = submitted + 3600.0 * (2.0 if i % 5 == 0 else 12.0)
        tasks[name] = {"id": name, "estimate_s": waiting * frame_s, "weight": weight, "due": due}
    csv = "job,weight,due_after_h,frame_s\n*-urgent,4,2,20\n*,1,12,20\n"
    return csv, tasks


def sync(conf, cue, *more, mapping_file=None, capsys=None):
    argv = ["--config", conf, "opencue", "sync", "--show", "film", "--cuebot", cue.address, "--now", str(NOW)]
    if mapping_file is not None:
        argv += ["--mapping", str(mapping_file)]
    code = cli.main(argv + list(more))
    out = capsys.readouterr() if capsys else None
    return code, out


def by_priority(cue, show="film"):
    jobs = [j for j in cue.jobs.values() if j.show == show]
    return [j.name for j in sorted(jobs, key=lambda j: -j.priority)], [j.priority for j in jobs]


def test_a_sync_on_50_jobs_sets_priorities_in_rank_order_and_a_second_sets_nothing(conf, tmp_path, capsys):
    with FakeCuebot() as cue:
        csv, tasks = farm(cue)
        (tmp_path / "map.csv").write_text(csv)
        want = rank(list(tasks.values()), now=NOW, config=conf)
        code, out = sync(conf, cue, mapping_file=tmp_path / "map.csv", capsys=capsys)
        assert code == 0, out.err
        order, prios = by_priority(cue)
        assert order == want and len(set(prios)) == 50  # strictly decreasing along rank's order
        changed = {jid for jid, _ in cue.set_calls}
        assert len(cue.set_calls) == len(changed) == 49  # one job (the last, at 1) kept its priority
        assert "50 pending jobs ranked by atc, 49 priorities changed, 1 kept" in out.out
        calls = len(cue.set_calls)
        code, out = sync(conf, cue, mapping_file=tmp_path / "map.csv", capsys=capsys)
        assert code == 0 and len(cue.set_calls) == calls and "0 priorities changed, 50 kept" in out.out


def test_a_new_job_changes_only_what_it_must_and_dry_run_changes_nothing(conf, tmp_path, capsys):
    with FakeCuebot() as cue:
        csv, tasks = farm(cue, n=30, seed=1)
        (tmp_path / "map.csv").write_text(csv)
        assert sync(conf, cue, mapping_file=tmp_path / "map.csv", capsys=capsys)[0] == 0
        before = cue.priorities()
        cue.add_job("film-late-urgent", waiting=3, avg_frame_s=10, start_time=int(NOW))
        calls = len(cue.set_calls)
        code, out = sync(conf, cue, "--dry-run", mapping_file=tmp_path / "map.csv", capsys=capsys)
        assert code == 0 and len(cue.set_calls) == calls and "dry run: nothing set" in out.out
        assert "would set film-late-urgent: priority 1 -> " in out.out
        code, out = sync(conf, cue, mapping_file=tmp_path / "map.csv", capsys=capsys)
        assert [cue.jobs[j].name for j, _ in cue.set_calls[calls:]] == ["film-late-urgent"]
        assert {k: v for k, v in cue.priorities().items() if k in before} == before
        tasks["film-late-urgent"] = {
            "id": "film-late-urgent",
            "estimate_s": 30.0,
            "weight": 4.0,
            "due": NOW + 7200,
        }
        assert by_priority(cue)[0] == rank(list(tasks.values()), now=NOW, config=conf)


def test_only_pending_unpaused_jobs_of_the_show_with_waiting_frames_are_touched(conf, capsys):
    from opencue_proto import job_pb2

    with FakeCuebot() as cue:
        for i in range(4):
            cue.add_job(f"a{i}", waiting=5 + i, avg_frame_s=10, start_time=int(NOW))
        paused = cue.add_job("paused", is_paused=True)
        other = cue.add_job("other-show", show="ads")
        done = cue.add_job("finished", state=job_pb2.FINISHED)
        running = cue.add_job("all-running", waiting=0)
        fresh = cue.add_job("no-estimate", avg_frame_s=0)
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 0, out.err
        touched = {jid for jid, _ in cue.set_calls}
        assert not touched & {paused, other, done, running, fresh} and len(touched) == 3
        assert "skipped no-estimate: no estimate" in out.out and "4 pending jobs ranked" in out.out


def test_without_cuebot_the_address_comes_from_cuebot_hosts(conf, monkeypatch, capsys):
    with FakeCuebot() as cue:
        for i in range(3):
            cue.add_job(f"b{i}", waiting=5 + i, avg_frame_s=10, start_time=int(NOW))
        monkeypatch.setenv("CUEBOT_HOSTS", cue.address)
        code = cli.main(["--config", conf, "opencue", "sync", "--show", "film", "--now", str(NOW)])
        assert code == 0 and "3 pending jobs ranked" in capsys.readouterr().out
        assert len(cue.set_calls) == 2


def test_a_sched_comment_overrides_the_mapping_and_a_bad_one_skips_its_job(conf, tmp_path, capsys):
    with FakeCuebot() as cue:
        a = cue.add_job("shot-a", waiting=10, avg_frame_s=60, start_time=int(NOW))
        b = cue.add_job("shot-b", waiting=10, avg_frame_s=60, start_time=int(NOW))
        bad = cue.add_job("shot-c", waiting=10, avg_frame_s=60, start_time=int(NOW))
        (tmp_path / "map.csv").write_text("job,weight,due_after_h\nshot-a,1,10\nshot-*,1,1\n")
        cue.add_comment(a, "sched", "weight: 50\ndue: 2027-01-15T09:00:00Z", timestamp=2)
        cue.add_comment(a, "sched", "weight: 0.1", timestamp=1)  # older: not read
        cue.add_comment(b, "notes", "weight: 99")  # another subject: not read
        cue.add_comment(bad, "sched", "weight: heavy")
        code, out = sync(conf, cue, mapping_file=tmp_path / "map.csv", capsys=capsys)
        assert code == 0, out.err
        assert "skipped shot-c: job shot-c: comment 'sched': weight: expected a number" in out.out
        due_a = mapping.posix_seconds("2027-01-15T09:00:00Z", "test")
        tasks = [
            {"id": "shot-a", "estimate_s": 600, "weight": 50, "due": due_a},
            {"id": "shot-b", "estimate_s": 600, "weight": 1, "due": NOW + 3600},
        ]
        assert by_priority(cue)[0][:2] == rank(tasks, now=NOW, config=conf) == ["shot-a", "shot-b"]
        assert bad not in {j for j, _ in cue.set_calls}


@pytest.mark.parametrize(
    "text, message",
    [
        ("name,weight\nx,1\n", "column job: missing"),
        ("job,colour\nx,red\n", "column 'colour': unknown"),
        ("job,weight\nx,-1\n", "line 2: weight: expected a finite number > 0"),
        ("job,due\nx,tomorrow\n", "line 2: due: expected an ISO 8601 datetime"),
        ("job,weight,priority\nx,1,high\n", "line 2: weight and priority: give one of them"),
        ("job,weight\nx,1,2\n", "line 2: more fields than columns"),
        ("job,weight\n,1\n", "line 2: column job: empty"),
    ],
)
def test_a_bad_mapping_csv_is_refused_naming_the_line_and_column(tmp_path, text, message):
    f = tmp_path / "map.csv"
    f.write_text(text)
    with pytest.raises(mapping.MappingError, match=message):
        mapping.read_mapping(f)


def test_a_job_without_frame_times_uses_the_duration_model_through_its_kind():
    values = mapping.comment_values("kind: render\npixels: 2073600", "job j")
    task, how = mapping.job_task("j", 12, 0.0, NOW, values, 24)
    assert task == {
        "id": "j",
        "weight": 1.0,
        "due": NOW + 86400,
        "kind": "render",
        "pixels": 2073600.0,
        "frames": 12,
    }
    assert "duration model" in how and "estimate_s" not in task


def test_a_cuebot_that_is_down_is_one_line_and_exit_status_2(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = run_cli("opencue", "sync", "--show", "film", "--cuebot", f"127.0.0.1:{port}", cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and lines[0].startswith("sched opencue: error: Cuebot at 127.0.0.1:")
        and "cannot connect" in lines[0]
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=0, max_size=7), st.integers(1, 3), st.integers(10, 14))
def test_new_priorities_decrease_along_the_order_and_keep_the_most_they_can(current, lo, hi):
    out = new_priorities(current, lo, hi)
    assert all(a > b for a, b in zip(out, out[1:])) and all(lo <= p <= hi for p in out)
    kept = sum(a == b for a, b in zip(out, current))
    assert kept == kept_most(current, lo, hi)
