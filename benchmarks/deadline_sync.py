"""`sched deadline sync` at farm scale (issue 47): a queue of 2,000 waiting jobs on a local
endpoint (tests/fake_deadline.py's server, in its own process), synced by ``deadline.sync`` with
the per-job calls one at a time and ``--calls`` at a time, then again with the task times kept
from the first sync (nothing changed in between). Wall times of the sync alone (imports and the
client's creation outside), each the median of ``--repeat`` runs, and their ratios in the same run.

    python benchmarks/deadline_sync.py [--jobs 2000] [--done 725] [--calls 8] [--repeat 3] [--latency-ms 20]

``--done`` jobs have succeeded tasks (a SearchTasks call each when their times are not known);
``--latency-ms``: each answer's delay, a network's round trip (0: a local endpoint that answers
at once, where the client's and server's CPU bound the sync, not the calls' latency).
Optional extra ``deadline`` (boto3). The figures: docs/deadline.md, "At farm scale".
"""

import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOW = 1_800_000_000.0


def _serve(n, done, latency_s, conn):
    """The endpoint, in this (child) process: ``n`` jobs, ``done`` of them with succeeded tasks,
    each answer ``latency_s`` late (a network's round trip; requests are served side by side)."""
    from tests.fake_deadline import DeadlineServer, Queue

    queue = Queue()
    for i in range(n):
        queue.add(f"shot-{i:05d}", waiting=1 + i % 9, done_s=[30 + i % 50, 45] if i < done else [])
    with DeadlineServer(queue) as server:
        answer = server.answer

        def late(*a):
            time.sleep(latency_s)
            return answer(*a)

        server.answer = late
        conn.send(server.url)
        conn.recv()  # until the parent is done


def _client(url):
    from sched.farms import deadline_client

    return deadline_client.connect(region="us-west-2", endpoint_url=url)  # the CLI's client


def _timed(url, conf, **kw):
    from sched.farms import deadline
    from tests.fake_deadline import FARM, QUEUE

    client = _client(url)
    t0 = time.perf_counter()
    report = deadline.sync(FARM, QUEUE, now=NOW, client=client, config=conf, dry_run=True, **kw)
    return time.perf_counter() - t0, report


def main(argv=None):
    from sched.cli import ScriptParser, float_in, int_in

    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int_in(1), default=2000)
    ap.add_argument("--done", type=int_in(0), default=725)
    ap.add_argument("--calls", type=int_in(1), default=8)
    ap.add_argument("--repeat", type=int_in(1), default=3)
    ap.add_argument(
        "--latency-ms", type=float_in(0), default=20.0, help="each answer's delay (default 20 ms)"
    )
    args = ap.parse_args(argv)
    for k, v in {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        os.environ.setdefault(k, v)
    parent, child = mp.Pipe()
    server = mp.get_context("spawn").Process(
        target=_serve, args=(args.jobs, args.done, args.latency_ms / 1000, child), daemon=True
    )
    server.start()
    url = parent.recv()
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "config.yaml"  # rank() falls back to ATC: no benchmark files here
        conf.write_text('{"rank": {"winner": "none.json", "tuned": "none.json", "settings": "none"}}')
        times = Path(tmp) / "task-times.json"
        rows = {}
        for name, kw in (
            ("first sync, calls one at a time", {"calls": 1}),
            (f"first sync, {args.calls} calls at once", {"calls": args.calls}),
        ):
            rows[name] = [_timed(url, conf, **kw)[0] for _ in range(args.repeat)]
        _timed(url, conf, calls=args.calls, task_times=times)  # keeps the task times
        second = f"second sync, task times kept, {args.calls} calls at once"
        rows[second] = [_timed(url, conf, calls=args.calls, task_times=times)[0] for _ in range(args.repeat)]
    parent.send("done")
    server.join(timeout=10)
    base = statistics.median(next(iter(rows.values())))
    print(
        f"{args.jobs} waiting jobs, {args.done} with succeeded tasks, local endpoint answering "
        f"{args.latency_ms:g} ms late (dry runs: no update)"
    )
    print("| sync | median wall time (s) | against the first row |")
    print("|---|---:|---:|")
    for name, ts in rows.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.2f} | {m / base:.2f} |")


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/deadline_sync.py"))
