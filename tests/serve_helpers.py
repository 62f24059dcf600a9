"""A live ``sched serve`` application for the tests: uvicorn on a thread, on a free loopback port."""

import asyncio
import contextlib
import json
import socket
import threading
import time

from sched.data.scenario import generate, scenario_model


def write_config(folder, winner=None, tuned=None):
    """config.yaml in ``folder`` whose verdict files are ``folder``'s winner.json and tuned.json
    (written when given); returns its path."""
    cfg = {"rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"}}
    path = folder / "config.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    if winner is not None:
        write_verdict(folder / "winner.json", winner)
    if tuned is not None:
        write_verdict(folder / "tuned.json", tuned)
    return path


def rule_winner(rule, atc_k=None):
    """A winner.json naming a rule (the fields the benchmark writes)."""
    return {
        "policy": rule,
        "rule": rule,
        "atc_k": atc_k,
        "policy_file": None,
        "significant": True,
        "runner_up": "atc",
        "mean_difference_pct": -3.0,
        "ci95_pct": [-4.0, -2.0],
        "reason": "test",
    }


def write_verdict(path, data):
    """Replace a verdict file as the benchmark does (temporary file, then rename)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def queue(seed, n, now=0.0):
    """``n`` generated tasks all waiting at ``now``, some already late."""
    from sched.config import validate_config

    f = generate(scenario_model(validate_config({})), seed, tasks=n).frame
    return [
        {"id": f"t{i}", "estimate_s": float(e), "weight": float(w), "due": now + float(d - a) - 900.0}
        for i, (e, w, d, a) in enumerate(zip(f.estimate_s, f.weight, f.due_s, f.arrival_s))
    ]


@contextlib.contextmanager
def live(settings, run=None, limits=None):
    """The service on 127.0.0.1:<free port>, as ``sched serve`` builds it (``limits``: the
    connection guard's, default its defaults); yields its base URL."""
    import uvicorn

    from sched.serve.connections import Limits
    from sched.serve.http import create_app, uvicorn_config

    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    config = uvicorn_config(create_app(settings, run), limits or Limits(), log_level="critical")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 300  # a cold numba cache compiles the warm-up first, on a busy machine
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def raw_request(port, data, read_timeout=10.0):
    """Send ``data`` on a new connection; the status code of the answer, or None if closed unanswered."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        return read_status(s)


def read_status(s):
    try:
        head = s.recv(64)
    except (ConnectionResetError, TimeoutError, OSError):
        return None
    if not head.startswith(b"HTTP/1.1 "):
        return None
    return int(head[9:12])


def metric(text, name, **labels):
    """The value of one sample of the Prometheus text ``text`` (None if absent)."""
    want = "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else ""
    for line in text.splitlines():
        if line.startswith(name + want + " "):
            return float(line.rsplit(" ", 1)[1])
    return None
