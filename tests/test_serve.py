"""sched serve: POST /v1/rank answers as rank() does; auth, limits, hostile clients, fallback,
verdict reload, metrics and the decision log (docs/serve.md)."""

import hashlib
import json
import random
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("starlette", reason="optional extra serve not installed (pip install -e '.[serve]')")
pytest.importorskip("uvicorn", reason="optional extra serve not installed (pip install -e '.[serve]')")
pytest.importorskip("prometheus_client", reason="optional extra serve not installed")
httpx = pytest.importorskip("httpx", reason="httpx (extra test) not installed")

from sched import cli  # noqa: E402
from sched.limits import MAX_RANK_BYTES, MAX_RANK_TASKS  # noqa: E402
from sched.ranking.explain import EXPLAIN_COLUMNS  # noqa: E402
from sched.ranking.ranker import decide, rank  # noqa: E402
from sched.serve.decision_log import DecisionLog  # noqa: E402
from sched.serve.http import ServiceSettings  # noqa: E402

from .serve_helpers import (  # noqa: E402
    live,
    metric,
    queue,
    raw_request,
    read_status,
    rule_winner,
    write_config,
    write_verdict,
)


@pytest.fixture
def conf(tmp_path):
    """A config whose winner is EDD and whose tuned ATC k is 0.7."""
    return str(write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7}))


def post(client, body, **kw):
    return client.post("/v1/rank", content=json.dumps(body), **kw)


def test_post_rank_answers_the_in_process_order_policy_and_why(conf):
    tasks = queue(seed=3, n=60)
    want = decide(tasks, now=0, config=conf)
    assert want.policy == "edd" and want.ids != rank(tasks, now=0, policy="wspt", config=conf)
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url) as c:
        r = post(c, {"now": 0, "tasks": tasks})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["order"] == want.ids and out["policy"] == "edd" and out["why"] == want.why
        assert (
            re.fullmatch(r"[0-9a-f]{32}", out["decision_id"]) and "plan" not in out and "fallback" not in out
        )
        again = post(c, {"now": 0, "tasks": tasks, "policy": "wspt", "explain": True}).json()
        assert again["order"] == rank(tasks, now=0, policy="wspt", config=conf)
        assert [row["id"] for row in again["plan"]] == again["order"]
        assert set(EXPLAIN_COLUMNS) <= set(again["plan"][0]) and again["decision_id"] != out["decision_id"]
        two = post(c, {"now": 0, "tasks": tasks[:5], "machines": [0, 600]}).json()
        assert two["order"] == rank(tasks[:5], now=0, machines=[0, 600], config=conf)


BAD_TASKS = [
    [{"id": "a", "estimate_s": 0, "weight": 1, "due": 60}],
    [
        {"id": "a", "estimate_s": 5, "weight": 1, "due": 60},
        {"id": "a ", "estimate_s": 5, "weight": 1, "due": 9},
    ],
    [{"id": "a", "estimate_s": 5, "weight": "heavy", "due": 60}],
    [{"id": "a", "estimate_s": 5, "weight": 1}],
]


def test_bad_input_gets_400_with_the_message_of_sched_rank_and_the_service_keeps_serving(
    conf, tmp_path, capsys
):
    good = {"now": 0, "tasks": queue(seed=1, n=8)}
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url) as c:
        for tasks in BAD_TASKS:
            f = tmp_path / "bad.json"
            f.write_text(json.dumps(tasks))
            assert cli.main(["--config", conf, "rank", str(f), "--now", "0"]) == 2
            line = capsys.readouterr().err.strip()
            r = post(c, {"now": 0, "tasks": tasks})
            assert r.status_code == 400 and f"sched rank: error: {r.json()['error']}" == line
            assert post(c, good).status_code == 200
        many = [{"id": i, "estimate_s": 1, "weight": 1, "due": 1} for i in range(MAX_RANK_TASKS + 1)]
        r = post(c, {"tasks": many})
        assert r.status_code == 400 and str(MAX_RANK_TASKS) in r.json()["error"]
        for body, field in [
            (b"{not json", "not valid JSON"),
            (b'{"tasks": [], "extra": 1}', "unknown field 'extra'"),
            (b'{"now": 0}', "field tasks: missing"),
            (b'[{"id": "a"}]', "expected a JSON object"),
            (b'{"tasks": [], "policy": "/etc/passwd"}', "runs no policy file"),
            (b'{"tasks": [], "machines": "gpus.csv"}', "reads no machines CSV"),
            (b'{"tasks": [], "explain": "yes"}', "field explain"),
            (b'{"tasks": [], "budget_ms": NaN}', "NaN is not JSON"),
            (b'{"tasks": [], "budget_ms": 50}', "only used with policy 'plan'"),
        ]:
            r = c.post("/v1/rank", content=body)
            assert r.status_code == 400 and field in r.json()["error"], (body, r.text)
        assert post(c, good).json()["order"] == rank(good["tasks"], now=0, config=conf)


def test_a_token_is_needed_everywhere_but_healthz_and_compared_whole(conf, tmp_path):
    token = b"s3cret-token-0123456789"
    body = {"now": 0, "tasks": queue(seed=2, n=6)}
    with live(ServiceSettings(config=conf, token=token)) as url, httpx.Client(base_url=url) as c:
        assert c.get("/healthz").status_code == 200
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": "Bearer s3cret-token"},
            {"Authorization": "Basic " + token.decode()},
        ):
            assert post(c, body, headers=headers).status_code == 401
            assert c.get("/metrics", headers=headers).status_code == 401
            assert c.get("/readyz", headers=headers).status_code == 401
        ok = {"Authorization": "Bearer " + token.decode()}
        assert post(c, body, headers=ok).json()["order"] == rank(body["tasks"], now=0, config=conf)
        assert (
            metric(
                c.get("/metrics", headers=ok).text, "sched_http_requests_total", path="/v1/rank", status="401"
            )
            == 4
        )


def test_oversized_bodies_slow_clients_and_garbage_get_4xx_and_leave_the_service_answering(conf):
    good = {"now": 0, "tasks": queue(seed=4, n=10)}
    want = rank(good["tasks"], now=0, config=conf)
    settings = ServiceSettings(config=conf, read_timeout_s=1.5)
    with live(settings) as url, httpx.Client(base_url=url, timeout=60) as c:
        port = int(url.rsplit(":", 1)[1])
        head = b"POST /v1/rank HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        # a 100 MB body, declared: refused before it is read
        assert raw_request(port, head + b"Content-Length: 100000000\r\n\r\n" + b"[" * 65536) == 413

        # the same, undeclared (chunked): refused once past the limit
        def chunks():
            for _ in range(100):
                yield b" " * 1_000_000

        try:
            r = c.post("/v1/rank", content=chunks())
            assert r.status_code == 413 and str(MAX_RANK_BYTES) in r.json()["error"]
        except httpx.TransportError:
            pass  # the service answered 413 and closed while the client was still sending
        # a slow client, one byte a second: cut after the read timeout, others served meanwhile
        slow = socket.create_connection(("127.0.0.1", port), timeout=60)
        slow.sendall(head + b"Content-Length: 100\r\n\r\n")
        started = time.monotonic()
        stop = threading.Event()

        def trickle():
            while not stop.wait(1.0):
                try:
                    slow.sendall(b" ")
                except OSError:
                    break

        t = threading.Thread(target=trickle)
        t.start()
        assert post(c, good).json()["order"] == want
        status = read_status(slow)  # the answer to the slow body
        cut = time.monotonic() - started
        stop.set()
        t.join(20)
        slow.close()
        assert status == 408 and cut >= 1.5, (status, cut)  # not before its read timeout
        # a client slow in its headers: the others are still answered
        stuck = socket.create_connection(("127.0.0.1", port), timeout=10)
        stuck.sendall(b"POST /v1/rank HTTP/1.1\r\nHo")
        assert post(c, good).json()["order"] == want
        stuck.close()
        # 1,000 bodies of random bytes: every one a 4xx
        rng = random.Random(26)
        codes = {post_raw(c, rng.randbytes(rng.randint(0, 300))) for _ in range(1000)}
        assert codes <= {400}, codes
        # garbage that is not even HTTP: answered 400 or closed
        for _ in range(20):
            got = raw_request(port, rng.randbytes(200) + b"\r\n\r\n", read_timeout=5)
            assert got in (400, None)
        assert post(c, good).json()["order"] == want
        assert c.get("/healthz").status_code == 200


def post_raw(client, data):
    return client.post("/v1/rank", content=data).status_code


def test_concurrent_clients_get_the_in_process_order(conf):
    queues = [queue(seed=s, n=n) for s, n in ((5, 24), (6, 200), (7, 60))]
    want = [rank(q, now=0, config=conf) for q in queues]
    with live(ServiceSettings(config=conf)) as url:

        def client(k):
            with httpx.Client(base_url=url) as c:
                return [post(c, {"now": 0, "tasks": queues[(k + i) % 3]}).json()["order"] for i in range(9)]

        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(client, range(8)))
    for k, orders in enumerate(got):
        assert orders == [want[(k + i) % 3] for i in range(9)]


@pytest.mark.parametrize("n", [30, 100])  # decided on the event loop, and on a worker thread
def test_a_call_past_its_budget_is_answered_by_the_tuned_rule_and_says_so(conf, n):
    from sched.ranking import ranker

    release, finished = threading.Event(), threading.Event()

    def slow_run(call):
        if call.q.n == n and call.choice.name not in ("atc", "atc-tuned"):  # (not the warm-up)
            # on the event loop nothing can answer meanwhile: it ends by itself, replaced once done
            release.wait(timeout=1.0 if n <= 64 else 60.0)
            finished.set()
        return ranker.run(call)

    tasks = queue(seed=8, n=n)
    with (
        live(ServiceSettings(config=conf, deadline_ms=50), run=slow_run) as url,
        httpx.Client(base_url=url, timeout=60) as c,
    ):
        out = post(c, {"now": 0, "tasks": tasks}).json()
        if n > 64:  # on a worker thread, the answer did not wait for the slow decision
            assert not finished.is_set()
        release.set()
        assert out["fallback"] is True and out["policy"] == "atc-tuned"
        assert "past its time budget of 50 ms" in out["why"]
        assert out["order"] == rank(tasks, now=0, policy="atc-tuned", config=conf)
        assert out["order"] != rank(tasks, now=0, config=conf)
        fast = post(c, {"now": 0, "tasks": tasks, "policy": "atc"}).json()
        assert "fallback" not in fast
        assert metric(c.get("/metrics").text, "sched_rank_fallbacks_total") == 1


def test_a_new_winner_json_is_followed_without_a_restart_and_metrics_show_the_switch(conf, tmp_path):
    tasks = queue(seed=9, n=40)
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url) as c:
        assert post(c, {"now": 0, "tasks": tasks}).json()["policy"] == "edd"
        assert c.get("/readyz").json() == {
            "ready": True,
            "policy": "edd",
            "why": decide(tasks, config=conf).why,
        }
        write_verdict(tmp_path / "winner.json", rule_winner("wspt"))
        out = post(c, {"now": 0, "tasks": tasks}).json()
        assert out["policy"] == "wspt" and out["order"] == rank(tasks, now=0, policy="wspt", config=conf)
        text = c.get("/metrics").text
        assert metric(text, "sched_rank_policy_switches_total") == 1
        assert metric(text, "sched_rank_policy_in_use", policy="wspt") == 1
        assert metric(text, "sched_rank_policy_in_use", policy="edd") == 0
        assert metric(text, "sched_rank_calls_total", policy="edd") == 1
        assert metric(text, "sched_rank_latency_seconds_count") == 2


def test_readyz_is_503_with_the_reason_until_the_verdicts_exist(tmp_path):
    conf = str(write_config(tmp_path))
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url) as c:
        r = c.get("/readyz")
        assert r.status_code == 503 and not r.json()["ready"] and "winner.json" in r.json()["reason"]
        assert c.get("/healthz").status_code == 200
        write_verdict(tmp_path / "winner.json", rule_winner("edd"))
        write_verdict(tmp_path / "tuned.json", {"atc_k": 0.7})
        assert c.get("/readyz").json()["ready"] is True
        (tmp_path / "winner.json").write_text("{broken")
        r = c.get("/readyz")
        assert r.status_code == 503 and "winner.json" in r.json()["reason"] and "JSON" in r.json()["reason"]


def test_the_decision_log_has_one_line_per_call(conf, tmp_path):
    log_path = tmp_path / "decisions.jsonl"
    tasks = queue(seed=10, n=12)
    body = json.dumps({"now": 0, "tasks": tasks}).encode()
    with (
        live(ServiceSettings(config=conf, decision_log=DecisionLog(log_path))) as url,
        httpx.Client(base_url=url) as c,
    ):
        ids = [c.post("/v1/rank", content=body).json()["decision_id"] for _ in range(3)]
        assert c.post("/v1/rank", content=b"{bad").status_code == 400
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    assert [x["decision_id"] for x in lines[:3]] == ids and lines[3]["status"] == 400
    first = lines[0]
    assert first["input_sha256"] == hashlib.sha256(body).hexdigest() and first["policy"] == "edd"
    assert first["order"] == rank(tasks, now=0, config=conf) and first["latency_ms"] > 0
    assert {"time", "why", "fallback"} <= set(first) and "not valid JSON" in lines[3]["error"]


def test_the_decision_log_rotates_by_size_and_never_splits_a_line(tmp_path):
    path = tmp_path / "d.jsonl"
    log = DecisionLog(path, max_bytes=4000, backups=2)

    def writer(k):
        for i in range(100):
            log.write({"writer": k, "i": i, "order": [f"id-{j}" for j in range(k * 3)]})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(writer, range(4)))
    log.close()
    files = [path, tmp_path / "d.jsonl.1", tmp_path / "d.jsonl.2"]
    assert all(f.exists() for f in files) and not (tmp_path / "d.jsonl.3").exists()
    for f in files:
        text = f.read_text()
        assert f.stat().st_size <= 4000 and text.endswith("\n")
        for line in text.splitlines():
            rec = json.loads(line)  # whole lines only
            assert rec["order"] == [f"id-{j}" for j in range(rec["writer"] * 3)]
    # oldest to newest: FILE.2, FILE.1, FILE; each writer's records stay in the order written
    for k in range(4):
        seen = [
            rec["i"]
            for f in reversed(files)
            for rec in map(json.loads, f.read_text().splitlines())
            if rec["writer"] == k
        ]
        assert seen == sorted(seen), (k, seen[:5])  # (a writer done early may be rotated out)
    # the very last write, some writer's record 99, is in FILE
    assert any(rec["i"] == 99 for rec in map(json.loads, path.read_text().splitlines()))


def test_sched_serve_refuses_a_public_address_without_a_token_and_a_bad_token_file(tmp_path, capsys):
    assert cli.main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a loopback address" in err[0] and "--token-file" in err[0]
    empty = tmp_path / "token"
    empty.write_text("\n")
    assert cli.main(["serve", "--token-file", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err
    assert cli.main(["serve", "--token-file", str(tmp_path / "nope")]) == 2
    assert "file not found" in capsys.readouterr().err
    spaced = tmp_path / "spaced"
    spaced.write_text("two words")
    assert cli.main(["serve", "--token-file", str(spaced), "--host", "0.0.0.0"]) == 2
    assert "printable ASCII without spaces" in capsys.readouterr().err


def test_the_sched_serve_command_serves_until_stopped(conf, tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from .conftest import ROOT

    token = tmp_path / "token"
    token.write_text("tok-123\n")
    log_path = tmp_path / "decisions.jsonl"
    cmd = [sys.executable, "-m", "sched", "--config", conf, "serve", "--port", "0"]
    cmd += ["--token-file", str(token), "--decision-log", str(log_path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        m = re.fullmatch(r"sched serve: listening on (http://127\.0\.0\.1:\d+)\n", line)
        assert m, line
        tasks = queue(seed=11, n=9)
        auth = {"Authorization": "Bearer tok-123"}
        with httpx.Client(base_url=m.group(1), headers=auth, timeout=60) as c:
            assert c.get("/healthz").status_code == 200
            out = post(c, {"now": 0, "tasks": tasks}).json()
            assert out["order"] == rank(tasks, now=0, config=conf)
            # log rotation: the file moved away, then SIGHUP (it used to end the service)
            log_path.rename(tmp_path / "decisions.jsonl.1")
            proc.send_signal(signal.SIGHUP)
            again = post(c, {"now": 0, "tasks": tasks}).json()
            assert proc.poll() is None and again["order"] == out["order"]
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down, then re-raises the signal it caught: killed by SIGTERM, as asked
        assert proc.wait(30) in (0, -signal.SIGTERM)
    assert "Traceback" not in proc.stderr.read()
    first = (tmp_path / "decisions.jsonl.1").read_text().splitlines()
    assert [json.loads(x)["decision_id"] for x in first] == [out["decision_id"]]
    assert [json.loads(x)["decision_id"] for x in log_path.read_text().splitlines()] == [again["decision_id"]]
    assert oct(os.stat(log_path).st_mode & 0o777) == "0o640"


def test_server_faults_are_answered_by_atc_and_never_blamed_on_the_client(tmp_path):
    # A malformed winner.json or config made every call 400 naming the server's paths.
    conf = str(write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7}))
    tasks = queue(seed=12, n=20)
    body = {"now": 0, "tasks": tasks}
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url, timeout=60) as c:
        (tmp_path / "winner.json").write_text("{broken")
        for policy in ("auto", "ppo-1"):  # a verdict unreadable; a trained policy's file the service lacks
            r = post(c, {**body, "policy": policy})
            assert r.status_code == 200, r.text
            out = r.json()
            assert out["fallback"] is True and out["policy"] == "atc"
            assert out["order"] == rank(tasks, now=0, policy="atc", config=conf)
            assert out["why"].startswith(f"fallback: policy {policy!r} cannot run: the service's own files")
            assert str(tmp_path) not in r.text
        ready = c.get("/readyz")
        assert ready.status_code == 503 and "winner.json" in ready.json()["reason"]
        text = c.get("/metrics").text
        assert metric(text, "sched_rank_setup_faults_total") == 2
        assert metric(text, "sched_rank_fallbacks_total") == 0
        # the config itself unreadable: ATC on the defaults' k, still no path in the answer
        (tmp_path / "config.yaml").write_text("rules: {atc_k: -1}\n")
        r = post(c, body)
        assert r.status_code == 200 and r.json()["fallback"] is True and str(tmp_path) not in r.text
        assert "the default rules.atc_k" in r.json()["why"]
        assert r.json()["order"] == rank(tasks, now=0, policy="atc", config={})
        # the client's own errors are still 400, naming the field
        r = post(c, {"now": 0, "tasks": [{"id": "a", "estimate_s": -1, "weight": 1, "due": 5}]})
        assert r.status_code == 400 and "field estimate_s" in r.json()["error"]


def test_a_learned_policy_past_the_deadline_is_answered_by_the_rule_computed_beside_it(tmp_path, tiny_policy):
    import shutil

    from sched import layout
    from sched.ranking import ranker

    conf = str(write_config(tmp_path, winner=rule_winner("edd"), tuned={"atc_k": 0.7}))
    pfile = tmp_path / layout.policy_file(7)
    pfile.parent.mkdir(parents=True)
    shutil.copy(tiny_policy[0], pfile)
    release, finished, fallbacks = threading.Event(), threading.Event(), []
    tuned_rule = ranker.tuned_rule

    def slow_run(call):
        if call.choice.rule is None and call.q.n > 2:  # the learned policy, not the warm-up
            release.wait(60)
            finished.set()
        return ranker.run(call)

    tasks = queue(seed=13, n=300)
    settings = ServiceSettings(config=conf, deadline_ms=100, speculate_tasks=100, workers=1)
    try:
        ranker.tuned_rule = lambda call: fallbacks.append(call.q.n) or tuned_rule(call)
        with live(settings, run=slow_run) as url, httpx.Client(base_url=url, timeout=60) as c:
            r = post(c, {"now": 0, "tasks": tasks, "policy": "ppo-7"})
            assert not finished.is_set()  # answered while the learned policy still ran
            out = r.json()
            assert out["fallback"] is True and out["policy"] == "atc-tuned", out
            assert out["why"].startswith("fallback: the call ran past its time budget of 100 ms; answered by")
            assert out["order"] == rank(tasks, now=0, policy="atc-tuned", config=conf)
            assert fallbacks == [300]  # computed once, beside the policy
            # meanwhile the event loop answers: small calls and /healthz
            assert c.get("/healthz").status_code == 200
            small = post(c, {"now": 0, "tasks": tasks[:10]}).json()
            assert small["order"] == rank(tasks[:10], now=0, config=conf) and "fallback" not in small
            # the one worker is still busy: a second big call past its deadline is told so (503)
            r = post(c, {"now": 0, "tasks": tasks, "policy": "ppo-7"})
            assert r.status_code == 503 and "no worker was free" in r.json()["error"], r.text
            release.set()
    finally:
        ranker.tuned_rule = tuned_rule
        release.set()


def test_numbers_beyond_any_float_are_refused_as_input(conf):
    from sched.ranking.tasks import RankInputError

    with pytest.raises(RankInputError, match=r"machines\[0\]\.speed: speed must be a finite number"):
        rank([{"id": "a", "estimate_s": 5, "weight": 1, "due": 9}], machines=[{"speed": 2**1024}])
    big = "1" + "0" * 400
    task = '{"id": "a", "estimate_s": 5, "weight": 1, "due": 9}'
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url, timeout=60) as c:
        for body, field in [
            (f'{{"tasks": [{task}], "machines": [{{"speed": {big}}}]}}', "machines[0].speed"),
            (f'{{"tasks": [{task}], "policy": "plan", "budget_ms": {big}}}', "budget_ms"),
            ('{"tasks": [{"id": true, "estimate_s": 5, "weight": 1, "due": 9}]}', "field id"),
        ]:
            r = c.post("/v1/rank", content=body)
            assert r.status_code == 400 and field in r.json()["error"], r.text


def test_a_token_of_4_kib_with_its_line_end_is_read_and_a_longer_one_refused(tmp_path):
    from sched.commands.serve import MAX_TOKEN_BYTES, read_token
    from sched.errors import UsageError

    f = tmp_path / "token"
    f.write_bytes(b"t" * MAX_TOKEN_BYTES + b"\r\n")
    assert read_token(f) == b"t" * MAX_TOKEN_BYTES
    f.write_bytes(b"t" * (MAX_TOKEN_BYTES + 1) + b"\n")
    with pytest.raises(UsageError, match="a token of more than 4096 bytes"):
        read_token(f)


def test_a_plan_calls_budget_counts_from_when_its_request_arrived(conf, monkeypatch):
    """Issue 46: the service gives plan's budget the request's arrival as the call's start, so a
    wait for a free worker is spent from it (what the client sees is bounded, not what the
    worker spends); a call whose budget was spent before it ran samples nothing."""
    from sched.ranking import ranker

    seen = []
    prepare = ranker.prepare

    def recording(*args, **kw):
        if kw.get("budget_ms") in (60_000, 40):  # the test's calls, not the service's warm-up
            seen.append((kw.get("started"), time.perf_counter()))
        if kw.get("budget_ms") == 40:  # as if it had waited a second for a worker
            kw["started"] -= 1.0
        return prepare(*args, **kw)

    monkeypatch.setattr(ranker, "prepare", recording)
    tasks = queue(seed=5, n=12)
    with live(ServiceSettings(config=conf)) as url, httpx.Client(base_url=url) as c:
        sent = time.perf_counter()
        fresh = post(c, {"now": 0, "tasks": tasks, "policy": "plan", "budget_ms": 60_000}).json()
        late = post(c, {"now": 0, "tasks": tasks, "policy": "plan", "budget_ms": 40}).json()
    assert len(seen) == 2, seen
    (started, ran), _ = seen
    assert started is not None and sent <= started <= ran  # the request's arrival, before the worker ran
    assert "planned: the first start" in fresh["why"] and "fallback" not in fresh
    spent = r"planned: no start, the budget was spent after 0 of \d+ samples \(two needed\); "
    assert re.search(spent + "every start by the base policy$", late["why"]), late["why"]
    assert late["order"] == rank(tasks, now=0, policy="edd", config=conf)  # plan.base auto: the verdict
