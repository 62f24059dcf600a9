"""Why tuned ATC at frame boundaries loses to the same jobs run whole on a chunked farm, and what a
parallelism limit is worth there (issue 60, goal 2; sched.sim.farm_limits).

    python benchmarks/farm_limit_diagnosis.py \\
        --config results/farm/farm-32/config/farm.yaml --tuned results/farm/farm-32/tuned.json \\
        [--scenarios 100]

On the first ``--scenarios`` validation seeds of the setting (those ATC's k and the limit are tuned
on; no test seed), it prints:

* tuned ATC at frame level and run whole: mean, median, the share of the total the 3 costliest
  scenarios carry, and the scenarios each one wins;
* the share of frame-level ATC's weighted tardiness carried by jobs that arrived while one job ran
  chunks on at least half of the GPUs (spreading), by weight class and by job size;
* every limit of the grid at sync 0 and 60 s against tuned ATC at the same interval (paired, the
  benchmark's bootstrap interval, W/T/L);
* the share of the limited policy's tardiness at 60 s carried by jobs whose slack (due - arrival -
  estimate) is under the interval: the sync's latency, which no ranking removes.
"""

import json
import sys

import numpy as np

from sched.config import load_config
from sched.evaluate.farm import bench as farm
from sched.evaluate.seeds import validation_seeds
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.sim import chunks, farm_limits, sync


def _run(sc, k, cap, sync_s, machines, whole=False):
    """(job ends, job, start, end) of tuned ATC with the limit ``cap`` on scenario ``sc``."""
    frames, per, limit, setup = sc.chunks
    per = np.zeros_like(per) if whole else per
    limit = farm_limits.capped(limit, cap)
    job, _c, st, en, _m = sync.simulate(
        *sc.arrays, "atc", machines, k, None, frames, per, limit, setup, None, sync_s
    )  # fmt: skip
    return chunks.job_ends(job, en, len(sc)), job, st, en


def _wt(sc, ends):
    """Each job's weighted tardiness, counted from the scenario's counted_from_s."""
    arr, _d, _e, w, due = (np.asarray(a, float) for a in sc.arrays)
    return np.where(arr >= sc.counted_from_s, w * np.maximum(ends - due, 0.0), 0.0)


def _spread_at_arrival(sc, job, st, en):
    """For each job, the most chunks any one job ran when it arrived."""
    arr = np.asarray(sc.arrays[0], float)
    out = np.zeros(len(arr), np.int64)
    for j, a in enumerate(arr):
        on = job[(st <= a) & (en > a)]
        out[j] = np.bincount(on).max() if len(on) else 0
    return out


def main(argv=None):
    from sched.cli import ScriptParser, int_in

    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="the farm setting's config (the workflow's step config)")
    ap.add_argument("--tuned", required=True, help="the setting's tuned.json (ATC's k)")
    ap.add_argument("--scenarios", type=int_in(1), default=100, help="validation seeds (default 100)")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    with open(args.tuned, encoding="utf-8") as fh:
        k = float(json.load(fh)["atc_k"])
    M = cfg.scenario.machines
    seeds = validation_seeds(cfg)[: args.scenarios]
    scs = farm.scenarios(cfg, seeds)
    b = cfg.benchmark
    counts = bootstrap_counts(len(scs), b["bootstrap_resamples"], b["bootstrap_seed"])
    frame, whole, blocked, by_w, by_size = [], [], 0.0, {}, {}
    sizes = (0, 30, 600, np.inf)
    for sc in scs:
        ends, job, st, en = _run(sc, k, 0, 0.0, M)
        wt = _wt(sc, ends)
        frame.append(wt.sum())
        whole.append(_wt(sc, _run(sc, k, 0, 0.0, M, whole=True)[0]).sum())
        tardy = wt > 0
        if tardy.any():
            spread = _spread_at_arrival(sc, job, st, en)
            blocked += wt[tardy & (spread >= M / 2)].sum()
        w, dur = np.asarray(sc.arrays[3]), np.asarray(sc.arrays[1])
        for v in np.unique(w):
            by_w[v] = by_w.get(v, 0.0) + wt[w == v].sum()
        for lo, hi in zip(sizes, sizes[1:]):
            by_size[(lo, hi)] = by_size.get((lo, hi), 0.0) + wt[(dur >= lo) & (dur < hi)].sum()
    frame, whole = np.array(frame), np.array(whole)
    total = frame.sum()
    print(f"{len(scs)} validation scenarios ({seeds[0]}-{seeds[-1]}), {M} GPUs, tuned ATC k = {k:g}")
    for name, x in (("frame level", frame), ("run whole", whole)):
        top = np.sort(x)[-3:].sum() / max(x.sum(), 1e-300) * 100
        print(
            f"| atc-tuned, {name} | mean {x.mean():,.0f} w.s, median {np.median(x):,.0f}, "
            f"top 3 carry {top:.0f} % |"
        )
    print(
        "| scenarios frame level wins / loses against whole | "
        f"{(frame < whole).sum()} / {(frame > whole).sum()} |"
    )
    print(
        f"| frame level: tardiness of jobs arriving while one job ran >= {M // 2} chunks | "
        f"{blocked / total:.1%} |"
    )
    print(
        "| frame level: by weight | " + ", ".join(f"w {v:g}: {s / total:.1%}" for v, s in by_w.items()) + " |"
    )
    print(
        "| frame level: by job size (s) | "
        + ", ".join(f"{lo:g}-{hi:g}: {s / total:.1%}" for (lo, hi), s in by_size.items())
        + " |"
    )
    for sync_s in (0.0, 60.0):
        base = np.array([_wt(sc, _run(sc, k, 0, sync_s, M)[0]).sum() for sc in scs])
        print(f"sync {sync_s:g} s: atc-tuned mean {base.mean():,.0f} w.s")
        for cap in farm_limits.cap_grid(M):
            x = np.array([_wt(sc, _run(sc, k, cap, sync_s, M)[0]).sum() for sc in scs])
            d, lo, hi = paired_difference(x, base, counts, b["ci_level"])
            wtl = "/".join(map(str, win_tie_loss(x, base, b["tie_relative"], b["tie_absolute_s"])))
            print(f"| cap {cap} | mean {x.mean():,.1f} | {d:+.1f} % [{lo:+.1f}, {hi:+.1f}], {wtl} |")
    with open(args.tuned, encoding="utf-8") as fh:
        tuned_cap = json.load(fh).get("cap") or 2
    late, slack_late = 0.0, 0.0
    for sc in scs:
        wt = _wt(sc, _run(sc, k, tuned_cap, 60.0, M)[0])
        arr, _d, est, _w, due = (np.asarray(a, float) for a in sc.arrays)
        late += wt.sum()
        slack_late += wt[due - arr - est < 60.0].sum()
    print(
        f"| cap {tuned_cap} at sync 60 s: tardiness of jobs with slack < 60 s | "
        f"{slack_late / max(late, 1e-300):.1%} |"
    )


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/farm_limit_diagnosis.py"))
