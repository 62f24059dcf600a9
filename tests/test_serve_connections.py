"""sched serve's connection guard (sched/serve/connections.py): silent, slow and endless
clients cannot hold the service's slots or its memory; each bound is answered as nginx and
gunicorn answer it (docs/serve.md)."""

import json
import socket
import time

import pytest

pytest.importorskip("uvicorn", reason="optional extra serve not installed (pip install -e '.[serve]')")
pytest.importorskip("httptools", reason="optional extra serve not installed")
httpx = pytest.importorskip("httpx", reason="httpx (extra test) not installed")

from sched.ranking.ranker import rank  # noqa: E402
from sched.serve.connections import Limits  # noqa: E402
from sched.serve.http import ServiceSettings  # noqa: E402

from .serve_helpers import live, metric, queue, rule_winner, write_config  # noqa: E402

TOKEN = b"tok-0123456789"
AUTH = {"Authorization": "Bearer " + TOKEN.decode()}


@pytest.fixture
def conf(tmp_path):
    return str(write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7}))


def port_of(url):
    return int(url.rsplit(":", 1)[1])


def hold(port, n, first=b""):
    """``n`` connections to the service, each having sent ``first`` (nothing: silent)."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        if first:
            s.sendall(first)
        out.append(s)
    return out


def alive(s):
    """Whether the server has not closed ``s`` (nothing is expected on it yet)."""
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)
        s.settimeout(30)


def closed_by_server(s, timeout=30.0):
    """Read until the server closes ``s``; what it sent before (bytes)."""
    s.settimeout(timeout)
    got = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return got
        if not chunk:
            return got
        got += chunk


def test_silent_connections_do_not_shut_out_other_clients(conf):
    # the reproduction: max-connections minus one silent sockets, then everyone got 503
    tasks = queue(seed=1, n=8)
    body = {"now": 0, "tasks": tasks}
    settings = ServiceSettings(config=conf, token=TOKEN)
    with live(settings, limits=Limits(max_connections=100, idle_s=600)) as url:
        silent = hold(port_of(url), 99)
        try:
            with httpx.Client(base_url=url, timeout=60) as c:
                for _ in range(5):
                    assert c.get("/healthz").status_code == 200
                    r = c.post("/v1/rank", content=json.dumps(body), headers=AUTH)
                    assert r.status_code == 200 and r.json()["order"] == rank(tasks, now=0, config=conf)
        finally:
            for s in silent:
                s.close()


def test_healthz_and_authenticated_calls_are_answered_beside_1000_idle_and_100_slow_header_connections(conf):
    tasks = queue(seed=2, n=12)
    want = rank(tasks, now=0, config=conf)
    settings = ServiceSettings(config=conf, token=TOKEN)
    with live(settings, limits=Limits(max_connections=100, idle_s=600, header_s=600)) as url:
        port = port_of(url)
        held = hold(port, 1000) + hold(port, 100, b"POST /v1/rank HTTP/1.1\r\nHost: x\r\nX-Slow: a")
        try:
            with httpx.Client(base_url=url, timeout=60) as c:
                for i in range(10):
                    assert c.get("/healthz").status_code == 200
                    r = c.post("/v1/rank", content=json.dumps({"now": 0, "tasks": tasks}), headers=AUTH)
                    assert r.status_code == 200 and r.json()["order"] == want, i
                # the connections given up were the waiting ones, silent first
                text = c.get("/metrics", headers=AUTH).text
                assert metric(text, "sched_http_connections_closed_total", reason="shed") >= 1000
                assert metric(text, "sched_http_connections_closed_total", reason="full") is None
        finally:
            for s in held:
                s.close()


def test_a_connection_busy_with_a_request_is_never_shed_and_a_full_service_answers_503(conf):
    # Two slots, both taken by requests whose body has not arrived: the third client gets 503
    # (no request in progress is shed); once one is answered, new clients are served again.
    tasks = queue(seed=3, n=2)
    body = json.dumps({"now": 0, "tasks": tasks}).encode()
    settings = ServiceSettings(config=conf, read_timeout_s=600)
    with live(settings, limits=Limits(max_connections=2, idle_s=600)) as url:
        port = port_of(url)
        head = b"POST /v1/rank HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(
            body
        )
        busy = hold(port, 2, head)
        probe = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        for attempt in range(100):
            # A connection whose head the server has not read yet looks silent and may give way
            # to the probe: open it again, let the server read it, until both are read (then 503).
            if not all(alive(b) for b in busy):
                busy = [b if alive(b) else hold(port, 1, head)[0] for b in busy]
                time.sleep(0.01 * attempt)
            answer = closed_by_server(hold(port, 1, probe)[0])
            if answer.startswith(b"HTTP/1.1 503 ") and all(alive(b) for b in busy):
                break
        assert answer.startswith(b"HTTP/1.1 503 ") and b"as many connections" in answer, answer[:80]
        busy[0].sendall(body)
        answer = closed_by_server(busy[0])
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["order"] == rank(tasks, now=0, config=conf)
        busy[0].close()
        with httpx.Client(base_url=url, timeout=60) as c:
            assert c.get("/healthz").status_code == 200
        busy[1].close()


def test_an_endless_header_gets_431_before_it_is_buffered(conf):
    with live(ServiceSettings(config=conf), limits=Limits(header_bytes=32 * 1024)) as url:
        s = socket.create_connection(("127.0.0.1", port_of(url)), timeout=30)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Endless: ")
        sent = 0
        try:
            while sent < 10 * 1024 * 1024:  # the server closes long before: 32 KiB
                s.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = closed_by_server(s)
        assert answer.startswith(b"HTTP/1.1 431 ") and b"32768 bytes" in answer, answer[:200]
        assert sent < 10 * 1024 * 1024
        with httpx.Client(base_url=url, timeout=60) as c:
            assert c.get("/healthz").status_code == 200
            text = c.get("/metrics").text
            assert metric(text, "sched_http_connections_closed_total", reason="header_bytes") == 1


def test_too_many_header_fields_get_431_and_a_hundred_pass(conf):
    with live(ServiceSettings(config=conf), limits=Limits(header_fields=100)) as url:
        port = port_of(url)
        for fields, status in ((100, b"200"), (101, b"431")):  # Host and Connection among them
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            extra = b"".join(b"X-F%d: v\r\n" % i for i in range(fields - 2))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + extra + b"\r\n")
            answer = closed_by_server(s)
            assert answer.startswith(b"HTTP/1.1 " + status), (fields, answer[:120])
            s.close()


def test_a_silent_connection_is_closed_after_the_idle_timeout_and_slow_headers_get_408(conf):
    with live(ServiceSettings(config=conf), limits=Limits(idle_s=0.3, header_s=0.5)) as url:
        port = port_of(url)
        silent = socket.create_connection(("127.0.0.1", port), timeout=30)
        assert closed_by_server(silent) == b""  # closed without a word (nginx does the same)
        slow = socket.create_connection(("127.0.0.1", port), timeout=30)
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHo")
        answer = closed_by_server(slow)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"not received within 0.5 s" in answer
        # a kept-alive connection that goes quiet after its answer is closed too
        kept = socket.create_connection(("127.0.0.1", port), timeout=30)
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = closed_by_server(kept)
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"alive":true}')
        with httpx.Client(base_url=url, timeout=60) as c:
            text = c.get("/metrics").text
            assert metric(text, "sched_http_connections_closed_total", reason="idle_timeout") >= 1
            assert metric(text, "sched_http_connections_closed_total", reason="header_timeout") == 1


def test_a_trailing_slash_is_not_redirected_to_the_clients_host(conf):
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/v1/rank/", content=b"{}", headers={"Host": "evil.example"})
        assert r.status_code == 404 and "location" not in r.headers
