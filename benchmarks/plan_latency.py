"""Decision time of ``rank(policy="plan")`` in process, by queue length (issue 46, goal 4).

For each size N (default 24, 100, 1,000 waiting tasks), ``--queues`` queues of N tasks drawn from
the config's scenario model (all waiting at ``now``, one GPU), each ranked once by plan and once
by its base alone, in this process on one thread; prints the median and p99 of plan's call time,
the base's median (the reference, same run) and the target of the issue.

    NUMBA_NUM_THREADS=1 python benchmarks/plan_latency.py --config config.yaml \\
        [--sizes 24,100,1000] [--queues 20] [--plan rollout=atc-tuned --plan depth=20 ...] [--out FILE]

plan runs with the config's ``plan`` settings ("today's settings": the base ``plan.base``,
auto: the benchmark's winner; its rollouts, samples, horizon, candidates and depth), each
``--plan KEY=VALUE`` over them, without a time budget, so the time measured is what those
counts cost. The numbers are a run record: wall clock on this machine, never read by the
workflow. """

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: issue 46's goal: plan's median ms a decision at 24 / 100 / 1,000 waiting tasks
TARGET_MS = {24: 2.0, 100: 5.0, 1000: 50.0}


def queue(cfg, seed, n):
    """``n`` tasks of the scenario model, all waiting at now = 0 (due times kept relative)."""
    from sched.data.scenario import generate, scenario_model

    f = generate(scenario_model(cfg), seed, tasks=n).frame
    return [
        {"id": f"t{i}", "estimate_s": float(e), "weight": float(w), "due": float(d - a)}
        for i, (e, w, d, a) in enumerate(zip(f.estimate_s, f.weight, f.due_s, f.arrival_s))
    ]


def _validated(raw):
    from sched.config import validate_config

    return validate_config(raw, "--plan")


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main(argv=None):
    from sched.cli import ScriptParser, int_in

    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", help="config file (default: as sched: $SCHED_CONFIG, else ./config.yaml)")
    ap.add_argument("--sizes", default="24,100,1000", help="waiting tasks per queue (comma-separated)")
    ap.add_argument("--queues", type=int_in(1), default=20, help="queues per size (default 20)")
    ap.add_argument("--seed", type=int_in(0), default=4600, help="seed of the first queue")
    ap.add_argument(
        "--plan", action="append", default=[], metavar="KEY=VALUE", help="a plan setting over the config's"
    )
    ap.add_argument("--out", help="also write the results as JSON to this file")
    a = ap.parse_args(argv)
    from sched import threads
    from sched.config import config_path, load_config
    from sched.ranking.ranker import decide

    threads.apply(1)
    path = config_path(os.path.abspath(a.config) if a.config else None)
    if a.plan:  # the file with plan's settings replaced, its relative paths still read from its folder
        from sched.config import load_yaml
        from sched.errors import UsageError
        from sched.formats.yaml_input import parse

        raw = (load_yaml(path) or {}) if path else {}
        for item in a.plan:
            key, _, value = item.partition("=")
            raw.setdefault("plan", {})[key] = parse(value, f"--plan {key}", UsageError)
        raw.setdefault("root", str(path.parent if path else Path.cwd()))
        path = raw
    cfg = load_config(path) if not isinstance(path, dict) else _validated(path)
    sizes = [int(s) for s in a.sizes.split(",")]
    warm = queue(cfg, a.seed - 1, 24)
    first = decide(warm, now=0, policy="plan", config=path)  # verdicts, policy file, compiled code
    print(f"plan: {first.why}", file=sys.stderr)
    rows = []
    for n in sizes:
        plan_s, base_s = [], []
        for q in range(a.queues):
            tasks = queue(cfg, a.seed + 1000 * n + q, n)
            dt, _ = timed(lambda t=tasks: decide(t, now=0, policy="plan", config=path))
            plan_s.append(dt)
            dt, _ = timed(lambda t=tasks: decide(t, now=0, policy="auto", config=path))
            base_s.append(dt)
        row = {
            "tasks": n,
            "queues": a.queues,
            "plan_p50_ms": statistics.median(plan_s) * 1000,
            "plan_p99_ms": float(np.percentile(plan_s, 99, method="nearest")) * 1000,
            "base_p50_ms": statistics.median(base_s) * 1000,
            "target_ms": TARGET_MS.get(n),
        }
        rows.append(row)
        print(f"{n} tasks: plan p50 {row['plan_p50_ms']:.2f} ms", file=sys.stderr)
    print(f"rank(policy='plan') in process, one thread; the base alone: policy auto. plan: {first.why}")
    print("| waiting tasks | queues | plan p50 ms | plan p99 ms | base alone p50 ms | target (p50) |")
    print("|---:|---:|---:|---:|---:|---|")
    for r in rows:
        t = r["target_ms"]
        verdict = "" if t is None else f"<= {t:g} ms: {'met' if r['plan_p50_ms'] <= t else 'NOT met'}"
        print(
            f"| {r['tasks']:,} | {r['queues']} | {r['plan_p50_ms']:.2f} | {r['plan_p99_ms']:.2f} | "
            f"{r['base_p50_ms']:.3f} | {verdict} |"
        )
    if a.out:
        from sched.files import write_json

        write_json(a.out, {"config": str(a.config), "plan": a.plan, "why": first.why, "rows": rows})
    return 0 if all(r["target_ms"] is None or r["plan_p50_ms"] <= r["target_ms"] for r in rows) else 1


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/plan_latency.py"))
