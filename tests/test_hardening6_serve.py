"""Issue 58, hardening round 6, the service's classes (docs/reliability.md, docs/serve.md):

2. what the service opens and writes cannot block it: a client that never reads its answers
   is closed after the send deadline (counted), SIGTERM ends within its grace period, a FIFO at
   the decision-log path is refused (at start: exit 2 naming it; while serving: logged,
   its records counted lost, /healthz and calls answered);
3. memory bounded by what is used: a body of millions of tiny values is refused before it is
   built, and a call at the limit stays within the documented bound;
8. input errors are a 400 naming the field, any other error a 500 with a log line;
14. a key given twice is refused, both ways in (``sched rank`` and the POST body);
16. records lost per outage, no server path in an answer, an unknown ``ppo-N`` a client error.
"""

import argparse
import io
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
import tracemalloc

import pytest

pytest.importorskip("starlette", reason="optional extra serve not installed (pip install -e '.[serve]')")
pytest.importorskip("uvicorn", reason="optional extra serve not installed (pip install -e '.[serve]')")
pytest.importorskip("httptools", reason="optional extra serve not installed")
httpx = pytest.importorskip("httpx", reason="httpx (extra test) not installed")

from sched import cli  # noqa: E402
from sched.limits import MAX_RANK_BYTES, MAX_RANK_JSON_VALUES, MAX_RANK_TASKS, MAX_SEED_DIGITS  # noqa: E402
from sched.ranking import request  # noqa: E402
from sched.ranking.ranker import rank  # noqa: E402
from sched.ranking.tasks import RankInputError  # noqa: E402
from sched.serve import answers, decision_log  # noqa: E402
from sched.serve.connections import Limits  # noqa: E402
from sched.serve.decision_log import DecisionLog, DecisionLogError  # noqa: E402
from sched.serve.http import ServiceSettings  # noqa: E402

from .conftest import ROOT  # noqa: E402
from .serve_helpers import live, metric, queue, rule_winner, write_config  # noqa: E402

#: The bound docs/serve.md gives for the values one call builds (MAX_RANK_JSON_VALUES of them).
VALUES_BOUND_BYTES = 128 * 1024**2


@pytest.fixture
def conf(tmp_path):
    return str(write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7}))


def post(client, body, **kw):
    return client.post("/v1/rank", content=body if isinstance(body, bytes) else json.dumps(body), **kw)


def port_of(url):
    return int(url.rsplit(":", 1)[1])


def one_line(text):
    return "\n" not in text.strip() and len(text) < 400


# --------------------------------------------------------------------------- class 2: sends


def big_body(n=MAX_RANK_TASKS, id_chars=280):
    """A valid call whose answer is several MB (long ids), decided by a rule."""
    tasks = [
        {"id": f"{i:08d}" + "x" * id_chars, "estimate_s": 1 + i % 7, "weight": 1, "due": i} for i in range(n)
    ]
    return json.dumps({"now": 0, "tasks": tasks, "policy": "edd"}).encode()


def non_reader(port, body, calls=2):
    """A connection that sends ``calls`` pipelined calls and never reads an answer."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # small: the answer stays on the server
    s.connect(("127.0.0.1", port))
    head = b"POST /v1/rank HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    try:
        for _ in range(calls):
            s.sendall(head + body)
    except (ConnectionResetError, BrokenPipeError):
        pass  # closed by the server already (its deadline passed while the next call was sent)
    return s


def reset_by_server(s, timeout):
    """Whether the server closed (aborted) ``s`` within ``timeout`` seconds, read nothing of it."""
    p = select.poll()
    p.register(s, select.POLLERR | select.POLLHUP | select.POLLRDHUP)
    return bool(p.poll(timeout * 1000))


def test_a_client_that_never_reads_big_answers_is_closed_after_the_send_deadline(conf):
    body = big_body()
    settings = ServiceSettings(config=conf, deadline_ms=60_000, workers=2)
    limits = Limits(max_connections=3, idle_s=600, send_s=1.0)
    with live(settings, limits=limits) as url:
        port = port_of(url)
        started = time.monotonic()
        stalled = [non_reader(port, body) for _ in range(3)]  # every slot, each with answers unread
        try:
            for s in stalled:  # closed once its answer waited send_s unread (not held until idle_s)
                assert reset_by_server(s, 60), "a connection that never reads was held"
            elapsed = time.monotonic() - started
            with httpx.Client(base_url=url, timeout=60) as c:  # the slots are free again
                assert c.get("/healthz").status_code == 200
                small = queue(seed=1, n=8)
                r = post(c, {"now": 0, "tasks": small})
                assert r.status_code == 200 and r.json()["order"] == rank(small, now=0, config=conf)
                text = c.get("/metrics").text
            assert metric(text, "sched_http_connections_closed_total", reason="send_timeout") >= 3
            assert elapsed < 600  # the idle timeout never came into it
        finally:
            for s in stalled:
                s.close()


def test_healthz_answers_while_non_readers_hold_slots_and_new_clients_are_served(conf):
    body = big_body()  # an answer of 6 MB: more than the kernel's socket buffers hold
    settings = ServiceSettings(config=conf, deadline_ms=60_000, workers=2)
    with live(settings, limits=Limits(max_connections=8, idle_s=600, send_s=2.0)) as url:
        port = port_of(url)
        stalled = [non_reader(port, body, calls=1) for _ in range(2)]
        try:
            with httpx.Client(base_url=url, timeout=60) as c:
                for _ in range(5):
                    assert c.get("/healthz").status_code == 200
                small = queue(seed=2, n=6)
                assert post(c, {"now": 0, "tasks": small}).json()["order"] == rank(small, now=0, config=conf)
            for s in stalled:
                assert reset_by_server(s, 60)
        finally:
            for s in stalled:
                s.close()


def test_sigterm_ends_the_service_within_its_grace_period_beside_a_non_reading_client(conf, tmp_path):
    from sched.commands.serve import grace_s

    args = ["--read-timeout-s", "1", "--deadline-ms", "20000", "--send-timeout-s", "1"]
    cmd = [sys.executable, "-m", "sched", "--config", conf, "serve", "--port", "0", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    stalled = None
    try:
        line = proc.stderr.readline()
        assert line.startswith("sched serve: listening on http://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        stalled = non_reader(port, big_body(), calls=2)
        time.sleep(1.5)  # its first answer is being sent, the second waits
        proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        grace = grace_s(argparse.Namespace(read_timeout_s=1, deadline_ms=20000, send_timeout_s=1))
        assert proc.wait(grace + 10) in (0, -signal.SIGTERM)
        assert time.monotonic() - stopped < grace + 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if stalled is not None:
            stalled.close()
    assert "Traceback" not in proc.stderr.read()


def make_fifo(path):
    if path.exists():
        path.unlink()
    os.mkfifo(path)


def test_a_fifo_at_the_decision_log_path_at_start_is_refused_naming_it(tmp_path, conf):
    fifo = tmp_path / "decisions.jsonl"
    make_fifo(fifo)
    cmd = [
        sys.executable,
        "-m",
        "sched",
        "--config",
        conf,
        "serve",
        "--port",
        "0",
        "--decision-log",
        str(fifo),
    ]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(fifo) in lines[0] and "FIFO" in lines[0], out.stderr
    with pytest.raises(DecisionLogError, match="not a regular file: a FIFO"):
        DecisionLog(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(DecisionLogError, match="folder"):
        DecisionLog(folder)


@pytest.mark.parametrize("how", ["moved", "sighup", "rotation"])
def test_a_fifo_swapped_in_while_serving_hangs_nothing_and_its_records_are_counted_lost(
    tmp_path, conf, how, monkeypatch, caplog
):
    path = tmp_path / "d.jsonl"
    dlog = DecisionLog(path, max_bytes=10**9 if how != "rotation" else 600)
    if how == "rotation":  # the FIFO appears as the log rotates: FILE moved to FILE.1, then FILE opened
        replace = os.replace

        def swapped(src, dst):
            replace(src, dst)
            if os.fspath(src) == str(path):
                make_fifo(path)

        monkeypatch.setattr(decision_log.os, "replace", swapped)
    small = queue(seed=3, n=5)
    settings = ServiceSettings(config=conf, decision_log=dlog)
    with caplog.at_level(logging.WARNING, logger="sched.serve"):
        with live(settings) as url, httpx.Client(base_url=url, timeout=20) as c:
            assert post(c, {"now": 0, "tasks": small}).status_code == 200
            if how != "rotation":
                path.rename(tmp_path / "old.jsonl")
                make_fifo(path)
                if how == "sighup":
                    dlog.reopen()
            for _ in range(4):
                assert c.get("/healthz").status_code == 200
                r = post(c, {"now": 0, "tasks": small})
                assert r.status_code == 200 and r.json()["order"] == rank(small, now=0, config=conf)
            lost = metric(c.get("/metrics").text, "sched_decision_log_failures_total")
    assert lost >= 3
    refused = [r.getMessage() for r in caplog.records if "cannot write" in r.getMessage()]
    assert len(refused) == 1 and str(path) in refused[0] and "FIFO" in refused[0], refused
    dlog.close()


def test_records_lost_are_counted_per_outage(tmp_path, caplog):
    folder = tmp_path / "logs"
    folder.mkdir()
    log = DecisionLog(folder / "d.jsonl")
    with caplog.at_level(logging.WARNING, logger="sched.serve"):
        for outage, lost in enumerate((3, 2)):
            os.replace(folder, tmp_path / f"gone{outage}")  # the folder goes away: an outage
            log._retry_at = 0.0
            assert [log.write({"i": i}) for i in range(lost)] == [False] * lost
            folder.mkdir()
            log._retry_at = 0.0  # (the retry interval, skipped)
            assert log.write({"i": "back"})
    again = [r.getMessage() for r in caplog.records if "writing again" in r.getMessage()]
    assert len(again) == 2
    assert "3 records lost during this outage, 3 since the start" in again[0]
    assert "2 records lost during this outage, 5 since the start" in again[1]
    assert log.failures == 5
    log.close()


def test_a_policy_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    from sched.learn.policy.policy_file import PolicyFileError, load

    fifo = tmp_path / "policy.pt"
    make_fifo(fifo)
    started = time.monotonic()
    with pytest.raises(PolicyFileError, match="not a regular file"):
        load(fifo)
    assert time.monotonic() - started < 10


# --------------------------------------------------------------------------- class 3: parse cost


def tiny_values_body(values, shape="{}"):
    """A valid call of one task whose ignored field holds tiny JSON values: about ``values``
    of them as sched.formats.json_input counts (a comma, and a bracket for an object or a list)."""
    each = 1 + shape.count("{") + shape.count("[") + shape.count(",")
    items = ",".join([shape] * max(1, values // each))
    return (
        '{"tasks": [{"id": "a", "estimate_s": 1, "weight": 1, "due": 0, "junk": [' + items + "]}]}"
    ).encode()


def peak_bytes(fn, *args):
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("shape", ["{}", '{"k": 0.5}', "[0.5]"])
def test_a_call_at_the_value_limit_stays_within_the_documented_memory(shape):
    body = tiny_values_body(MAX_RANK_JSON_VALUES - 100, shape)
    assert peak_bytes(request.rank_body, body) < VALUES_BOUND_BYTES


def test_a_body_of_millions_of_tiny_objects_is_refused_before_it_is_built():
    body = tiny_values_body(10**8)[: MAX_RANK_BYTES - 10] + b"]}]}"  # 32 MiB of {} (ends valid)
    assert len(body) <= MAX_RANK_BYTES
    started = time.monotonic()
    peak = peak_bytes(lambda: pytest.raises(RankInputError, request.rank_body, body))
    assert time.monotonic() - started < 10
    assert peak < 2 * len(body)  # the text, not the ~11 million objects it holds (~800 MB)
    with pytest.raises(RankInputError, match=f"more than {MAX_RANK_JSON_VALUES} JSON values"):
        request.rank_body(body)


def test_tiny_object_bodies_are_refused_by_both_ways_in_and_the_service_stays_up(tmp_path, conf, capsys):
    body = tiny_values_body(10**8)[: MAX_RANK_BYTES - 10] + b"]}]}"
    tasks = body[len(b'{"tasks": ') : -1]  # the task list itself, for sched rank
    f = tmp_path / "tiny.json"
    f.write_bytes(tasks)
    assert cli.main(["--config", conf, "rank", str(f), "--now", "0"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "JSON values" in err and str(f) in err
    settings = ServiceSettings(config=conf, workers=2)
    with live(settings) as url, httpx.Client(base_url=url, timeout=60) as c:
        from concurrent.futures import ThreadPoolExecutor

        started = time.monotonic()
        with ThreadPoolExecutor(6) as pool:  # six at once: each refused, none past the deadline
            answers_ = list(pool.map(lambda _: post(c, body), range(6)))
        assert all(r.status_code == 400 and "JSON values" in r.json()["error"] for r in answers_)
        assert time.monotonic() - started < 60
        assert c.get("/healthz").status_code == 200


# --------------------------------------------------------------------------- class 14: duplicate keys


DUPLICATES = [
    '{"tasks": [], "policy": "edd", "policy": "/etc/passwd"}',
    '{"tasks": [{"id": "a", "estimate_s": 1, "estimate_s": 2, "weight": 1, "due": 0}]}',
    '{"now": 0, "tasks": [{"id": "a", "estimate_s": 1, "weight": 1, "due": 0}], "now": 5}',
    '{"tasks": [{"id": "a", "id": "b", "estimate_s": 1, "weight": 1, "due": 0}]}',
]


def test_a_key_given_twice_is_refused_both_ways_in(tmp_path, conf, capsys, monkeypatch):
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url, timeout=60) as c:
        for body in DUPLICATES:
            r = post(c, body.encode())
            assert r.status_code == 400 and "appears twice" in r.json()["error"], r.text
    for tasks in (
        '[{"id": "a", "estimate_s": 1, "estimate_s": 2, "weight": 1, "due": 0}]',
        '[{"id": "a", "id": "b", "estimate_s": 1, "weight": 1, "due": 0}]',
    ):
        f = tmp_path / "dup.json"
        f.write_text(tasks)
        assert cli.main(["--config", conf, "rank", str(f), "--now", "0"]) == 2
        err = capsys.readouterr().err
        assert one_line(err) and "appears twice" in err and str(f) in err, err
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(tasks.encode())))
        assert cli.main(["--config", conf, "rank", "-", "--now", "0"]) == 2
        err = capsys.readouterr().err
        assert one_line(err) and "standard input: not valid JSON" in err and "appears twice" in err, err


# --------------------------------------------------------------------------- class 8: 400 or 500


def test_a_policy_of_thousands_of_digits_is_a_400_naming_the_field_everywhere(tmp_path, conf, capsys):
    from sched.evaluate import policies

    long_name = "ppo-" + "7" * 5000
    too_long = "ppo-" + "1" * (MAX_SEED_DIGITS + 1)
    for name in (long_name, too_long):
        with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url, timeout=60) as c:
            r = post(c, {"tasks": [], "policy": name})
        assert r.status_code == 400 and r.json()["error"].startswith("policy: unknown policy"), r.text
        assert one_line(r.json()["error"])
        with pytest.raises(RankInputError, match="^policy: (unknown policy|the seed of ppo-)") as exc:
            rank([{"id": "a", "estimate_s": 1, "weight": 1, "due": 0}], policy=name, config=conf)
        assert one_line(str(exc.value))
        f = tmp_path / "q.json"
        f.write_text('[{"id": "a", "estimate_s": 1, "weight": 1, "due": 0}]')
        assert cli.main(["--config", conf, "rank", str(f), "--policy", name]) == 2
        err = capsys.readouterr().err
        assert one_line(err) and "policy" in err
        assert not policies.is_learned(name) and not policies.is_ppo(name)
    assert request.is_seed_name("ppo-" + "9" * MAX_SEED_DIGITS) and policies.is_ppo("ppo-123456789")


def test_explain_past_2262_with_a_fraction_of_a_second_is_a_400(conf):
    task = {"id": "a", "estimate_s": 1.5, "weight": 1, "due": 9_300_000_000.5}
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url, timeout=60) as c:
        for body in (
            {"now": 9_300_000_000.5, "tasks": [task], "explain": True},
            {
                "now": "2263-01-01T00:00:00.5+00:00",
                "tasks": [{**task, "due": "2263-01-01T01:00:00.5+00:00"}],
                "explain": True,
            },
        ):
            r = post(c, body)
            assert r.status_code in (200, 400), r.text  # never a 500: refused as input, or answered
            if r.status_code == 400:
                assert one_line(r.json()["error"])
        assert c.get("/healthz").status_code == 200


def test_a_calibration_intercept_of_800_is_a_400_naming_the_field(tmp_path):
    cal = {
        "format": "sched-calibration/1",
        "kinds": {
            "image": {
                "spec": {"share": 1, "distribution": "lognormal", "median_s": 60, "sigma": 0.5},
                "duration_model": {
                    "features": ["frames"],
                    "coefficients": {"intercept": 800, "log_frames": 1.0},
                    "residual_sigma": 0.1,
                },
            }
        },
    }
    (tmp_path / "cal.json").write_text(json.dumps(cal))
    conf = write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7})
    cfg = json.loads(conf.read_text())
    conf.write_text(json.dumps({**cfg, "scenario": {"calibration": "cal.json"}}))
    task = {"id": "a", "kind": "image", "frames": 10, "weight": 1, "due": 0}
    with live(ServiceSettings(config=str(conf))) as url, httpx.Client(base_url=url, timeout=60) as c:
        r = post(c, {"now": 0, "tasks": [task]})
    assert r.status_code == 400, r.text
    assert one_line(r.json()["error"]) and "estimate_s" in r.json()["error"] and str(tmp_path) not in r.text


@pytest.mark.parametrize(
    "fault, status",
    [(RuntimeError("a bug"), 500), (ZeroDivisionError("a bug"), 500), (ValueError("bad value"), 400)],
)
def test_an_unexpected_error_is_a_500_with_a_log_line(conf, caplog, fault, status):
    from sched.ranking import ranker

    def broken(call):
        if call.q.n > 2:  # not the warm-up
            raise fault
        return ranker.run(call)

    small = queue(seed=4, n=5)
    with caplog.at_level(logging.WARNING, logger="sched.serve"):
        with (
            live(ServiceSettings(config=conf), run=broken) as url,
            httpx.Client(base_url=url, timeout=60) as c,
        ):
            r = post(c, {"now": 0, "tasks": small})
            assert c.get("/healthz").status_code == 200
    assert r.status_code == status and one_line(r.json()["error"])
    if status == 500:
        assert r.json()["error"] == answers.INTERNAL and "a bug" not in r.text
    else:
        assert "bad value" in r.json()["error"]
    logged = [x for x in caplog.records if x.name == "sched.serve" and type(fault).__name__ in x.getMessage()]
    assert len(logged) == 1 and (status == 400 or logged[0].exc_info is not None)


# --------------------------------------------------------------------------- class 16


def test_an_unknown_ppo_seed_is_a_client_error_and_a_configured_one_missing_a_setup_fault(conf):
    small = queue(seed=5, n=5)
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url, timeout=60) as c:
        r = post(c, {"now": 0, "tasks": small, "policy": "ppo-77"})  # config train.seeds: 1, 2, 3
        assert r.status_code == 400 and "ppo-77" in r.json()["error"] and "train.seeds" in r.json()["error"]
        assert one_line(r.json()["error"]) and "/" not in r.json()["error"]
        text = c.get("/metrics").text
        assert metric(text, "sched_rank_setup_faults_total") == 0
        assert metric(text, "sched_http_requests_total", path="/v1/rank", status="400") == 1
        r = post(c, {"now": 0, "tasks": small, "policy": "ppo-1"})  # trained by the config, file missing
        assert r.status_code == 200 and r.json()["fallback"] is True
        assert metric(c.get("/metrics").text, "sched_rank_setup_faults_total") == 1


def test_no_absolute_server_path_reaches_a_client(tmp_path):
    conf = str(write_config(tmp_path))  # no verdict files: why names them, not found
    small = queue(seed=6, n=5)
    log = tmp_path / "d.jsonl"
    settings = ServiceSettings(config=conf, decision_log=DecisionLog(log))
    with live(settings) as url, httpx.Client(base_url=url, timeout=60) as c:
        for body in (
            {"now": 0, "tasks": small},
            {"now": 0, "tasks": small, "policy": "atc-tuned"},
            {"now": 0, "tasks": small, "explain": True},
        ):
            r = post(c, body)
            assert str(tmp_path) not in r.text and os.getcwd() not in r.text, r.text
        ok = post(c, {"now": 0, "tasks": small}).json()
        assert "winner.json" in ok["why"]  # named, relative to the config's folder
        ready = c.get("/readyz")
        assert str(tmp_path) not in ready.text
    assert str(tmp_path) in log.read_text()  # the operator's log keeps them whole


def test_public_shows_paths_relative_to_the_service_folders_or_by_file_name():
    folders = ["/srv/sched/conf", "/srv/sched"]
    text = "config rank.winner /srv/sched/conf/results/winner.json not found; policy /opt/x/p.pt: bad."
    got = answers.public(text, folders)
    assert got == "config rank.winner results/winner.json not found; policy p.pt: bad."
    assert answers.public("docs/serve.md, 3/4 and k/s stay", folders) == "docs/serve.md, 3/4 and k/s stay"
    assert answers.public("'/etc/passwd'", folders) == "'passwd'"
