"""Decision time of ``plan`` on the chunked farm (issue 60, point 3), against its base rule's
decision and its base rule's whole schedule of the same queue, in the same run.

    NUMBA_NUM_THREADS=1 python benchmarks/plan_chunks_latency.py [--jobs 1000] [--gpus 100] [--repeats 5]

The state: ``--jobs`` jobs waiting at t = 0 (frames log-normal of median 48, chunks of 8 frames,
time per frame log-normal, estimates off by a log-normal factor, weights 1, 2 or 4, due dates a
few hours out), GPU 0 free and every other GPU busy until a time drawn over the next hour.
Timed (median of ``--repeats``, each after a warm-up call): one planned decision
(``plan_chunks.decide``, tuned-ATC-like k 1.0, the farm benchmark's settings), ATC's own
decision on the same state (``chunks._pick``), and ATC's whole schedule of the queue from that
state (``chunks.run_farm``). Prints the medians and the ratios; nothing is asserted.
"""

import argparse
import time

import numpy as np

from sched.learn.search import plan_chunks as pc
from sched.sim import chunks, rules


def state(jobs, gpus, plan, seed=60):
    """The farm of the docstring (its jobs admitted at 0, none started) and a planner's scratch."""
    rng = np.random.default_rng(seed)
    frames = np.clip(np.round(rng.lognormal(np.log(48), 1.0, jobs)), 1, 2000).astype(np.int64)
    work = frames * rng.lognormal(np.log(20.0), 0.8, jobs)
    est = work * rng.lognormal(0.0, 0.25, jobs)
    due = work / 8 + rng.uniform(600.0, 4 * 3600.0, jobs)
    arrays = (np.zeros(jobs), work, est, rng.choice([1.0, 2.0, 4.0], jobs), due)
    cols = chunks.check_chunks(jobs, frames, np.full(jobs, 8), None, None)
    free = np.concatenate([[0.0], rng.uniform(1.0, 3600.0, gpus - 1)])
    return chunks.load(arrays, cols, gpus, free)[0], pc.work(arrays, cols, gpus, plan, free)


def median_time(fn, repeats):
    fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return float(np.median(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--candidates", type=int, default=4)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--depth", type=int, default=2)
    a = ap.parse_args()
    plan = pc.Settings(a.candidates, a.samples, 2.0, 0, a.depth)
    s, w = state(a.jobs, a.gpus, plan)
    p = pc.params(plan, "atc", 1.0, 0.25)
    chunks.reset(s, rules.ATC)
    _nxt, ql = chunks.admit(s, 0.0, 0, 0, a.jobs)
    m = chunks._free_gpu(s, 0.0)
    w.kfree[:] = s.mfree

    def planned():
        return pc.decide(s, w, p, 0.0, m, ql, 0)

    def atc_decision():
        return chunks._pick(s, ql, rules.ATC, p.k, 0.0, m)

    def atc_schedule():
        return chunks.run_farm(w.x, rules.ATC, p.k)

    tp = median_time(planned, a.repeats)
    td = median_time(atc_decision, a.repeats)
    ts = median_time(atc_schedule, a.repeats)
    print(
        f"{a.jobs} waiting jobs, {int(chunks.counts(s.frames, s.per).sum()):,} chunks, {a.gpus} GPUs; "
        f"plan: {a.candidates} candidates x {a.samples} samples, depth {a.depth} x {a.gpus} decisions"
    )
    print(f"plan's decision        {tp * 1e3:10.3f} ms")
    print(f"ATC's decision         {td * 1e3:10.3f} ms   plan / it: {tp / td:,.0f}x")
    print(f"ATC's whole schedule   {ts * 1e3:10.3f} ms   plan / it: {tp / ts:,.2f}x")


if __name__ == "__main__":
    main()
