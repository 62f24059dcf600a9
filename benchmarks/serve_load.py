"""Load on ``sched serve``: latency and errors from concurrent clients over loopback (docs/serve.md).

Starts ``sched serve`` on 127.0.0.1 (a free port), then, for each queue size, sends a
bounded run of ``POST /v1/rank`` requests from ``--clients`` client processes, each on
its own kept-alive connection, and reports p50 and p99 latency, the error count and whether every
answer's order is the in-process ``rank()``'s for the same queue. The reference, in the
same run: the in-process call's median time. The target (issue 26): p50 at 24 tasks at
most 2x the in-process call plus 5 ms, no error, identical orders.

    python benchmarks/serve_load.py [--config FILE] [--clients 8] [--requests 200] [--out FILE]
    python benchmarks/serve_load.py --policy plan --budget-ms 20 [--sizes 24]

With ``--policy plan --budget-ms B`` every call runs the planner under its anytime budget
(issue 46: the service's p99 with plan at most B + 10 ms at 8 clients); its order then depends
on how many samples fit in B, so orders differing from the in-process call are counted, not
an error.

The queues are generated from the config's scenario model with ``--seed``; the service
uses the same config (its verdicts: ``policy`` auto).
"""

import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def queue(cfg, seed, n):
    from sched.data.scenario import generate, scenario_model

    f = generate(scenario_model(cfg), seed, tasks=n).frame
    return [
        {"id": f"t{i}", "estimate_s": float(e), "weight": float(w), "due": float(d - a) - 900.0}
        for i, (e, w, d, a) in enumerate(zip(f.estimate_s, f.weight, f.due_s, f.arrival_s))
    ]


def in_process(tasks, config, repeat, **call):
    """(median seconds of one rank() call, its order); ``call``: rank()'s policy, budget_ms."""
    from sched.ranking.ranker import rank

    order = rank(tasks, now=0, config=config, **call)  # warm-up: config, verdicts, compiled code
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        rank(tasks, now=0, config=config, **call)
        times.append(time.perf_counter() - t)
    return statistics.median(times), order


def start_service(config, deadline_ms=60000, workers=None):
    cmd = [sys.executable, "-m", "sched"] + (["--config", config] if config else [])
    cmd += ["serve", "--port", "0", "--deadline-ms", str(deadline_ms)]
    cmd += ["--workers", str(workers)] if workers else []
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    for _ in range(50):  # the warm-up's warnings (a verdict missing) come before it
        line = proc.stderr.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m or not line:
            break
    if not m:
        proc.kill()
        raise SystemExit(
            f"serve_load: sched serve did not start: {line.strip() or proc.stderr.read()[-500:]}"
        )
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # drain it
    return proc, f"http://127.0.0.1:{m.group(1)}"


def _client(url, body, want, requests, barrier):
    """One client process: (latencies in s, errors, orders differing) of ``requests`` calls on one
    kept-alive connection (http.client: a body is sent with its headers in one write)."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    headers = {"Content-Type": "application/json"}

    def call():
        conn.request("POST", "/v1/rank", body=body, headers=headers)
        r = conn.getresponse()
        return r.status, r.read()

    call()  # opens the connection
    barrier.wait()
    lat, bad, wrong = [], 0, 0
    for _ in range(requests):
        t = time.perf_counter()
        try:
            status, data = call()
            ok = status == 200
            same = ok and json.loads(data)["order"] == want
        except (OSError, http.client.HTTPException, ValueError):
            ok = same = False
            conn.close()
        lat.append(time.perf_counter() - t)
        bad += not ok
        wrong += ok and not same
    conn.close()
    return lat, bad, wrong


def load(url, tasks, want, clients, requests, **call):
    """Latencies (s), errors and orders differing of ``clients`` processes x ``requests`` calls;
    ``call``: the request's policy and budget_ms."""
    import multiprocessing as mp

    body = json.dumps({"now": 0, "tasks": tasks, **call}).encode()
    ctx = mp.get_context("spawn")  # clients of their own, as separate programs would be
    with ctx.Manager() as manager:
        barrier = manager.Barrier(clients)
        with ctx.Pool(clients) as pool:
            parts = pool.starmap(_client, [(url, body, want, requests, barrier)] * clients)
    lat = [x for p in parts for x in p[0]]
    return lat, sum(p[1] for p in parts), sum(p[2] for p in parts)


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main(argv=None):
    from sched.cli import ScriptParser, float_in, int_in

    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", help="config file (default: as sched: $SCHED_CONFIG, else ./config.yaml)")
    ap.add_argument("--clients", type=int_in(1), default=8, help="concurrent clients (default 8)")
    ap.add_argument(
        "--requests", type=int_in(1), default=200, help="requests per client at 24 tasks (default 200)"
    )
    ap.add_argument(
        "--big-requests", type=int_in(1), default=10, help="requests per client at 1,000 tasks (default 10)"
    )
    ap.add_argument("--seed", type=int_in(0), default=2026, help="seed of the generated queues")
    ap.add_argument("--policy", default="auto", help="the requests' policy (default auto: the verdict)")
    ap.add_argument(
        "--budget-ms", type=float_in(0, above=True), help="the requests' budget_ms (with --policy plan)"
    )
    ap.add_argument("--sizes", default="24,1000", help="queue sizes (default 24,1000)")
    ap.add_argument("--workers", type=int_in(1), help="the service's --workers (default: its own, 4)")
    ap.add_argument("--out", help="also write the results as JSON to this file")
    a = ap.parse_args(argv)
    call = {"policy": a.policy, **({"budget_ms": a.budget_ms} if a.budget_ms is not None else {})}
    anytime = a.budget_ms is not None
    from sched.config import config_path, load_config

    config = os.path.abspath(a.config) if a.config else None
    path = config_path(config)
    cfg = load_config(path)
    rows = []
    proc, url = start_service(config, workers=a.workers)
    try:
        import httpx

        for _ in range(600):
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        ready = httpx.get(url + "/readyz").json()
        for n in (int(x) for x in a.sizes.split(",")):
            reqs = a.requests if n <= 24 else a.big_requests
            tasks = queue(cfg, a.seed + n, n)
            ref, want = in_process(tasks, path, repeat=max(20, reqs), **call)
            lat, errors, wrong = load(url, tasks, want, a.clients, reqs, **call)
            p50, p99 = pct(lat, 0.5), pct(lat, 0.99)
            row = {
                "tasks": n,
                "requests": len(lat),
                "in_process_ms": ref * 1000,
                "p50_ms": p50 * 1000,
                "p99_ms": p99 * 1000,
                "errors": errors,
                "orders_differing": wrong,
            }
            if n == 24 and not anytime:
                row["p50_target_ms"] = 2 * ref * 1000 + 5
                row["p50_met"] = p50 * 1000 <= row["p50_target_ms"]
            if anytime:
                row["p99_target_ms"] = a.budget_ms + 10
                row["p99_met"] = p99 * 1000 <= row["p99_target_ms"]
            rows.append(row)
    finally:
        proc.terminate()
        proc.wait(30)
    budget = f", budget_ms {a.budget_ms:g}" if anytime else ""
    print(
        f"sched serve under load: {a.clients} clients over loopback, policy {a.policy}{budget} "
        f"(the verdict: {ready.get('policy')})"
    )
    print("| tasks | requests | in-process ms | p50 ms | p99 ms | errors | orders differing | target |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        target = (
            f"p50 <= {r['p50_target_ms']:.2f} ms: {'met' if r['p50_met'] else 'NOT met'}"
            if "p50_met" in r
            else f"p99 <= {r['p99_target_ms']:.2f} ms: {'met' if r['p99_met'] else 'NOT met'}"
            if "p99_met" in r
            else ""
        )
        print(
            f"| {r['tasks']} | {r['requests']} | {r['in_process_ms']:.3f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['errors']} | {r['orders_differing']} | {target} |"
        )
    if a.out:
        from sched.files import write_json

        write_json(a.out, {"clients": a.clients, "call": call, "ready": ready, "rows": rows})
    ok = all(
        r["errors"] == 0 and (anytime or r["orders_differing"] == 0) and r.get("p50_met", True)
        and r.get("p99_met", True)
        for r in rows
    )  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/serve_load.py"))
