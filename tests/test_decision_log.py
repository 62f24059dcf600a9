"""sched serve's decision log (sched/serve/decision_log.py) when its file system fails: a
missing folder, a full disk, a folder that refuses renames. The call is still answered, the
failure is counted and logged once, no half line stays, the log resumes when it can, and no
byte of it ever reaches a client's socket."""

import json
import logging
import shutil
import socket
import subprocess
import sys
import time

import pytest

from sched.serve import decision_log
from sched.serve.decision_log import DecisionLog

from .conftest import ROOT


def lines_of(path):
    """The records of a log file: every line whole JSON (else the test fails)."""
    text = path.read_text()
    assert text == "" or text.endswith("\n"), text[-80:]
    return [json.loads(line) for line in text.splitlines()]


FULL_DISK = """
import json, resource, sys
from sched.serve.decision_log import DecisionLog
log = DecisionLog(sys.argv[1], max_bytes=10**9)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (5000, hard))  # the disk is full at 5,000 bytes
full = [log.write({"i": i, "pad": "x" * 300}) for i in range(40)]
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # room again
room = [log.write({"i": i, "pad": "x" * 300}) for i in range(40, 45)]
print(json.dumps({"full": full, "room": room, "failures": log.failures}))
"""


def test_a_full_disk_loses_whole_records_only_and_the_log_resumes(tmp_path):
    # A real short write: past RLIMIT_FSIZE the kernel writes what fits, then refuses (EFBIG),
    # as a full disk does (ENOSPC). Python ignores SIGXFSZ, so the write returns the error.
    path = tmp_path / "d.jsonl"
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got["full"][0] is True and got["full"][-1] is False  # it filled up
    assert got["room"] == [True] * 5 and got["failures"] == got["full"].count(False)
    recs = lines_of(path)  # no torn line: the half record was cut back
    written = [i for i, ok in enumerate(got["full"]) if ok] + list(range(40, 45))
    assert [r["i"] for r in recs] == written
    assert out.stderr.count("cannot write") == 1 and out.stderr.count("writing again") == 1  # logged once


def test_a_folder_that_refuses_renames_keeps_every_record_in_the_current_file(tmp_path, monkeypatch, caplog):
    path = tmp_path / "d.jsonl"
    log = DecisionLog(path, max_bytes=600, backups=2)

    def refuse(src, dst):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(decision_log.os, "replace", refuse)
    with caplog.at_level(logging.ERROR, logger="sched.serve"):
        assert all(log.write({"i": i, "pad": "y" * 100}) for i in range(20))
    assert [r["i"] for r in lines_of(path)] == list(range(20))  # past its size, nothing lost
    assert [r.getMessage() for r in caplog.records].count(
        f"decision log {path}: cannot rotate (Read-only file system); writing on past its size"
    ) == 1
    monkeypatch.undo()
    assert log.write({"i": 20})  # renames work again: rotated
    assert [r["i"] for r in lines_of(path)] == [20] and len(lines_of(tmp_path / "d.jsonl.1")) == 20
    log.close()


def test_a_file_moved_away_or_deleted_is_begun_again_and_reopen_begins_a_new_one(tmp_path):
    path = tmp_path / "d.jsonl"
    log = DecisionLog(path)
    assert log.write({"i": 0})
    path.rename(tmp_path / "old.jsonl")  # what logrotate does before it signals
    assert log.write({"i": 1})
    assert [r["i"] for r in lines_of(path)] == [1] and lines_of(tmp_path / "old.jsonl") == [{"i": 0}]
    path.unlink()
    assert log.write({"i": 2}) and lines_of(path) == [{"i": 2}]
    (tmp_path / "d.jsonl").rename(tmp_path / "moved.jsonl")  # logrotate's create mode: a new
    path.write_text("")  # empty file at the path, then SIGHUP: reopen()
    log.reopen()
    assert log.write({"i": 3}) and lines_of(path) == [{"i": 3}]
    assert lines_of(tmp_path / "moved.jsonl") == [{"i": 2}]
    log.close()


def test_after_its_folder_is_removed_the_log_never_writes_into_a_client_socket(tmp_path):
    # The reproduction: rotation fails because the folder is gone; the log's old descriptor
    # number was reused by the next accepted socket, and records reached clients.
    pytest.importorskip("uvicorn", reason="optional extra serve not installed")
    httpx = pytest.importorskip("httpx", reason="httpx (extra test) not installed")
    from sched.serve.connections import Limits
    from sched.serve.http import ServiceSettings

    from .serve_helpers import live, metric, queue, rule_winner, write_config

    conf = str(write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7}))
    logs = tmp_path / "logs"
    logs.mkdir()
    body = json.dumps({"now": 0, "tasks": queue(seed=1, n=6)})
    settings = ServiceSettings(config=conf, decision_log=DecisionLog(logs / "d.jsonl", max_bytes=3000))
    with live(settings, limits=Limits(idle_s=3600.0)) as url:  # idle sockets stay open, however slow
        port = int(url.rsplit(":", 1)[1])
        with httpx.Client(base_url=url, timeout=60) as c:
            for _ in range(3):
                assert c.post("/v1/rank", content=body).status_code == 200
        shutil.rmtree(logs)
        idle = []
        for _ in range(40):  # new connections each time: their descriptors are the ones freed
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=30))
            with httpx.Client(base_url=url, timeout=60) as c:
                r = c.post("/v1/rank", content=body)
                assert r.status_code == 200 and r.json()["policy"] == "edd"
        for s in idle:  # nothing was sent to a connection that asked nothing
            s.setblocking(False)
            with pytest.raises(BlockingIOError):
                s.recv(1, socket.MSG_PEEK)
            s.close()
        with httpx.Client(base_url=url, timeout=60) as c:
            text = c.get("/metrics").text
            assert metric(text, "sched_decision_log_failures_total") >= 40
            logs.mkdir()  # the folder is back: the log resumes (after its retry interval)
            for _ in range(100):
                assert c.post("/v1/rank", content=body).status_code == 200
                if (logs / "d.jsonl").exists():
                    break
                time.sleep(decision_log.RETRY_S / 10)
        recs = lines_of(logs / "d.jsonl")
        assert recs and recs[-1]["policy"] == "edd"


def test_refused_bodies_are_logged_with_their_status(tmp_path):
    pytest.importorskip("uvicorn", reason="optional extra serve not installed")
    pytest.importorskip("httpx", reason="httpx (extra test) not installed")
    from sched.serve.http import ServiceSettings

    from .serve_helpers import live, raw_request, read_status, rule_winner, write_config

    conf = str(write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7}))
    path = tmp_path / "d.jsonl"
    settings = ServiceSettings(config=conf, decision_log=DecisionLog(path), read_timeout_s=0.5)
    with live(settings) as url:
        port = int(url.rsplit(":", 1)[1])
        head = b"POST /v1/rank HTTP/1.1\r\nHost: x\r\n"
        assert raw_request(port, head + b"Content-Length: 100000000\r\n\r\n") == 413
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(head + b"Content-Length: 100\r\n\r\n{")
            assert read_status(s) == 408
    recs = lines_of(path)
    assert [r["status"] for r in recs] == [413, 408]
    assert "more than the limit" in recs[0]["error"] and "not received within 0.5 s" in recs[1]["error"]
    assert all(r["decision_id"] is None and "time" in r for r in recs)
