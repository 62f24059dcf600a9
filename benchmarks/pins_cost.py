"""What the pinned code paths cost (sched/evidence/determinism.py): PPO's decisions per second with the pins
and without them (``SCHED_UNPINNED=1``), in the same run, alternated.

    python benchmarks/pins_cost.py [--iterations 6] [--repeats 2] [--config config.yaml] [--out FILE.json]

Each measurement is one ``sched train`` process (a fresh interpreter: the pins are set before torch
and numba load) of ``--iterations`` PPO iterations from the ATC prior (no teacher, no validation,
the config's batch shape and network, one thread), on the config's scenario model; its decisions
per second are the median of ``steps_per_s`` over its iterations after the first (its run record,
``train_log.run.csv``). The two sides alternate ``--repeats`` times, so that a change of the
machine's load falls on both; the result is the ratio of the medians, pinned / unpinned. numba's
cache holds both targets, each compiled once in a throw-away first process, outside the timing.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def one_run(config, iterations, unpinned, workdir):
    """Median decisions per second of one training process (iterations after the first)."""
    import pandas as pd

    out = Path(workdir) / ("unpinned" if unpinned else "pinned") / "politique.pt"
    env = {k: v for k, v in os.environ.items() if k != "SCHED_UNPINNED"}
    if unpinned:
        env["SCHED_UNPINNED"] = "1"
    cmd = [
        sys.executable,
        "-m",
        "sched",
        "--config",
        str(config),
        "train",
        "--seed",
        "1",
        "--iterations",
        str(iterations),
        "--out",
        str(out),
        "--threads",
        "1",
        "--fresh",
        "--no-progress",
    ]
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"pins_cost: sched train failed:\n{r.stderr[-2000:]}")
    run = pd.read_csv(out.with_name("train_log.run.csv"))
    steps = run.loc[run["iteration"] >= 2, "steps_per_s"].dropna()
    return float(steps.median())


def main(argv=None):
    from sched.cli import ScriptParser, int_in

    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int_in(1), default=6)
    ap.add_argument("--repeats", type=int_in(1), default=2)
    ap.add_argument("--config", default=str(ROOT / "config.yaml"))
    ap.add_argument("--out", help="write the measurements as JSON")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        from sched.config import load_yaml

        cfg = load_yaml(args.config) or {}
        cfg.setdefault("train", {}).update(teacher_scenarios=0, eval_every=0, checkpoint_every=0)
        calibration = (cfg.get("scenario") or {}).get("calibration")
        if calibration:  # relative to the config's folder; absent before the workflow ran: scenario.kinds
            path = (Path(args.config).parent / calibration).resolve()
            cfg["scenario"]["calibration"] = str(path) if path.exists() else None
        cfg.setdefault("scenario", {})["workload"] = None
        cfg["root"] = str(ROOT)
        config = Path(tmp) / "config.yaml"
        config.write_text(yaml.safe_dump(cfg))
        for unpinned in (False, True):  # compile both targets into numba's cache, untimed
            one_run(config, 1, unpinned, tmp)
        sides = {"pinned": [], "unpinned": []}
        for i in range(args.repeats):
            for name in ("pinned", "unpinned") if i % 2 == 0 else ("unpinned", "pinned"):
                sides[name].append(one_run(config, args.iterations, name == "unpinned", tmp))
                print(f"{name:9} {sides[name][-1]:10,.0f} decisions/s", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in sides.items()}
    result = {
        "decisions_per_s": sides,
        "median": med,
        "ratio_pinned_over_unpinned": med["pinned"] / med["unpinned"],
    }
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/pins_cost.py"))
