"""A Monte Carlo rollout teacher, to warm-start the policy before PPO.

At each decision of a training scenario the teacher compares the ``top_k``
candidates by ATC index: for each, it starts that task now, then lets ATC
take every later decision, on ``samples`` futures drawn from the scenario
model (the same futures for every candidate: common random numbers), up to
``horizon`` future arrivals. The mean weighted tardiness of each candidate,
minus that of ATC's own choice, is the label (negative = better than ATC).
The teacher then starts its best candidate and moves on, so the labelled
states are those a better-than-ATC policy visits.

It is not clairvoyant: the futures are samples from the model, not the
scenario's real arrivals. It does use the true durations of the tasks
already in the queue, which a scheduler only knows as estimates: a teacher
may know more than the student; the student (the policy) only ever sees the
features of ``sched.learn.features``. It is about a thousand times slower than a
policy (several rollouts per candidate per decision), which is why it only
labels training data.

The student learns by minimising the expected label of its own softmax over
the candidates (``sched.learn.distill.distill``): a cost-sensitive imitation that
weighs each mistake by what it costs, not a plain classification.
"""

import json

import numba as nb
import numpy as np

from sched.config import ConfigError, config_hash
from sched.data.scenario import draw, scenario_model
from sched.errors import SchedError
from sched.files import atomic_path
from sched.learn import features as F
from sched.learn.vec_env import p_ref_of
from sched.sim import core as S
from sched.sim import rules

LABEL_FORMAT = "render-queue-sched/teacher-labels/1"

#: Sampled futures in the teacher's pool: the scenario model's first arrivals for
#: that many seeds at the end of the training range (scenarios come from its start).
FUTURES = 2000
#: Stride between the first futures of consecutive scenario seeds in the pool
#: (a prime, so that neighbouring scenarios do not reuse the same futures).
FUTURE_STRIDE = 7919


class TeacherLabelError(SchedError):
    """A teacher label file is unreadable or does not match the others."""


@nb.njit(cache=True)
def _with_future(s, b, dst, fa, fd, fe, fw, fdue, horizon):
    """Slot 0 of ``dst`` := slot b's waiting tasks and machines + a sampled future after t.

    Only what a rollout from now needs is copied: the waiting tasks (queue
    order kept, so the tie rule is unchanged), when each machine frees, the
    weighted tardiness already fixed, and the sampled arrivals.
    """
    t = s.t[b]
    ql = s.qlen[b]
    for q in range(ql):
        j = s.queue[b, q]
        dst.arr[0, q] = s.arr[b, j]
        dst.dur[0, q] = s.dur[b, j]
        dst.est[0, q] = s.est[b, j]
        dst.w[0, q] = s.w[b, j]
        dst.due[0, q] = s.due[b, j]
        dst.static[0, q] = s.static[b, j]
        dst.queue[0, q] = q
    for i in range(horizon):
        j = ql + i
        dst.arr[0, j] = t + fa[i]
        dst.dur[0, j] = fd[i]
        dst.est[0, j] = fe[i]
        dst.w[0, j] = fw[i]
        dst.due[0, j] = t + fdue[i]
        dst.static[0, j] = rules.static_part(rules.ATC, fe[i], fw[i])
    dst.n[0] = ql + horizon
    dst.qlen[0] = ql
    for m in range(s.mfree.shape[1]):
        dst.mfree[0, m] = s.mfree[b, m]
        dst.speed[0, m] = s.speed[b, m]
        dst.mtask[0, m] = -1
    dst.t[0] = t
    dst.nxt[0] = ql
    dst.nstarted[0] = 0
    dst.pending[0] = s.pending[b]
    dst.done[0] = False
    dst.wt_started[0] = 0.0


@nb.njit(cache=True)
def _atc_candidates(s, b, k, K):
    """Queue positions of the K waiting tasks with the highest ATC index, best first."""
    ql = s.qlen[b]
    t = s.t[b]
    pbar = 0.0
    for q in range(ql):
        pbar += s.est[b, s.queue[b, q]]
    pbar /= ql
    speed = s.speed[b, s.pending[b]]  # the deciding GPU's: ATC as the rules see it there
    v = np.empty(ql)
    for q in range(ql):
        j = s.queue[b, q]
        p, w = s.est[b, j], s.w[b, j]
        static = rules.static_part(rules.ATC, p, w)
        v[q] = rules.priority(rules.ATC, t, s.arr[b, j], p, w, s.due[b, j], k, pbar, static, speed)
    return np.argsort(-v, kind="mergesort")[: min(K, ql)]  # the features' atc_rank order


@nb.njit(cache=True)
def label_scenario(
    s,
    b,
    scratch,
    k,
    K,
    FA,
    FD,
    FE,
    FW,
    FDUE,
    horizon,
    samples,
    first_future,
    p_ref,
    load,
    X,
    G,
    C,
    Q,
    L,
    nrows,
    ndec,
):
    """Run the teacher on slot b, appending its decisions; returns (nrows, ndec).

    X: feature rows of every waiting task, G: globals, C: candidate queue
    positions (-1 padding), Q: label of each candidate (0 for ATC's choice),
    L: queue length (rows of X) of each decision.
    """
    S.reset_slot(s, b)
    S.set_rule(s, b, rules.ATC)
    xb = np.empty((s.queue.shape[1], F.N_TASK))
    gb = np.empty(F.N_GLOBAL)
    nf = FA.shape[0]
    dec = 0
    while S._advance(s, b, True):
        ql = s.qlen[b]
        cands = _atc_candidates(s, b, k, K)
        F._encode_slot(s, b, k, p_ref, load, xb, gb)
        cost = np.zeros(K)
        for r in range(samples):
            f = (first_future + dec * samples + r) % nf
            for ci in range(len(cands)):
                _with_future(s, b, scratch, FA[f], FD[f], FE[f], FW[f], FDUE[f], horizon)
                S._start(scratch, 0, cands[ci], scratch.pending[0])
                while S._advance(scratch, 0, True):
                    S._start(scratch, 0, S.pick(scratch, 0, rules.ATC, k), scratch.pending[0])
                cost[ci] += scratch.wt_started[0]
        best = 0
        for i in range(K):
            if i < len(cands):
                C[ndec, i] = cands[i]
                Q[ndec, i] = (cost[i] - cost[0]) / samples
                if cost[i] < cost[best] - 1e-9:
                    best = i
            else:
                C[ndec, i] = -1
                Q[ndec, i] = 0.0
        for q in range(ql):
            for f2 in range(F.N_TASK):
                X[nrows + q, f2] = xb[q, f2]
        for f2 in range(F.N_GLOBAL):
            G[ndec, f2] = gb[f2]
        L[ndec] = ql
        nrows += ql
        ndec += 1
        dec += 1
        S._start(s, b, cands[best], s.pending[b])
    return nrows, ndec


def first_future(seed, train_start):
    """Index of the first sampled future a scenario's decisions use.

    A function of the scenario's own seed, so that the labels do not depend on
    how the teacher's seeds are split into jobs (``train.teacher_shards``).
    """
    return (int(seed) - int(train_start)) * FUTURE_STRIDE


def future_pool(cfg, seeds, horizon, futures=FUTURES):
    """The sampled futures: (arrival, duration, estimate, weight, due) arrays of ``futures`` x ``horizon``.

    Each is the scenario model's first ``horizon`` arrivals for a seed taken
    from the end of the training range (the labelled scenarios ``seeds`` come
    from its start: ConfigError when the two would overlap).
    """
    tr = cfg["seeds"]["train"]
    fut_seeds = range(tr["start"] + tr["count"] - futures, tr["start"] + tr["count"])
    clash = [s for s in seeds if not tr["start"] <= s < fut_seeds.start]
    if clash:
        raise ConfigError(
            f"seeds.train.count: {tr['count']} leaves no room for the teacher's "
            f"{futures} sampled futures after its scenarios (seed {clash[0]} is outside "
            f"{tr['start']}-{fut_seeds.start - 1}); use a larger training range"
        )
    model = scenario_model(cfg)
    pool = [draw(model, s, tasks=horizon) for s in fut_seeds]
    return tuple(
        np.ascontiguousarray([p[key] for p in pool], dtype=np.float64)
        for key in ("arrival", "duration", "estimate", "weight", "due")
    )


def make_labels(cfg, seeds, horizon, samples, top_k, futures=FUTURES, progress=False, atc_k=None):
    """Teacher labels for the training scenarios ``seeds`` (dict of arrays).

    ``atc_k``: ATC's k for the candidates, the continuation and the features
    (default: the config's rules.atc_k).
    """
    k = float(atc_k if atc_k is not None else cfg["rules"]["atc_k"])
    model = scenario_model(cfg)
    p_ref = p_ref_of(model)
    seeds = list(seeds)
    pool = future_pool(cfg, seeds, horizon, futures)
    n = int(cfg["train"].get("tasks") or cfg["scenario"]["tasks"])
    parts = []
    it = seeds
    if progress:
        from tqdm import tqdm

        it = tqdm(seeds, desc="teacher", unit="scenario", dynamic_ncols=True)
    scratch = S.empty_state(1, n + horizon, cfg["scenario"]["machines"])  # queue + future
    for seed in it:
        parts.append(_label_one(cfg, model, seed, n, scratch, k, p_ref, top_k, pool, horizon, samples))
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def _label_one(cfg, model, seed, n, scratch, k, p_ref, top_k, pool, horizon, samples):
    """The labels of training scenario ``seed`` (``n`` tasks), as :func:`make_labels` returns them."""
    d = draw(model, seed, tasks=n)
    state, _ = S.pack(
        [(d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])], cfg["scenario"]["machines"]
    )
    x = np.empty((n * n // 2 + n, F.N_TASK))
    g = np.empty((n, F.N_GLOBAL))
    c = np.empty((n, top_k), dtype=np.int64)
    q = np.empty((n, top_k))
    ql = np.empty(n, dtype=np.int64)
    load = float(cfg["scenario"]["load"])
    future = first_future(seed, cfg["seeds"]["train"]["start"])
    nr, nd = label_scenario(
        state, 0, scratch, k, top_k, *pool, horizon, samples, future, p_ref, load, x, g, c, q, ql, 0, 0
    )
    return {
        "x": x[:nr].astype(np.float32),
        "g": g[:nd].astype(np.float32),
        "cand": c[:nd],
        "label": q[:nd].astype(np.float32),
        "counts": ql[:nd],
        "scenario_seed": np.full(nd, seed, dtype=np.int64),
    }


def label_settings(cfg, args):
    """The settings a label file was made with, which a training run must share to use it."""
    return {
        "config_hash": config_hash(cfg, ["scenario", "rules", "seeds"]),
        "samples": args.teacher_samples,
        "horizon": args.teacher_horizon,
        "top_k": args.top_k,
        "tasks": args.tasks,
        "atc_k": args.atc_k,
    }


def save_labels(path, labels, meta):
    """Write teacher labels and their ``meta`` (settings, seeds) as one .npz file, atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, meta=np.array(json.dumps(meta)), **labels)


def load_labels(paths):
    """Concatenate label files (numpy only, no pickle); checks they agree."""
    parts, meta = [], None
    for p in paths:
        try:
            with np.load(p, allow_pickle=False) as z:
                m = json.loads(str(z["meta"]))
                parts.append({k: z[k] for k in z.files if k != "meta"})
        except (OSError, ValueError, KeyError) as exc:
            raise TeacherLabelError(f"{p}: not a teacher label file ({exc})") from None
        if m.get("format") != LABEL_FORMAT:
            raise TeacherLabelError(f"{p}: not a teacher label file (format {m.get('format')!r})")
        same = {k: v for k, v in m.items() if k != "seeds"}
        if meta is not None and same != meta:
            raise TeacherLabelError(f"{p}: made with other settings than {paths[0]}")
        meta = same
    if not parts:
        raise TeacherLabelError("no teacher label file given")
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, meta
