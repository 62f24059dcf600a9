"""A Monte Carlo rollout teacher, to warm-start the policy before PPO.

At each decision of a training scenario the teacher compares the policy's
``top_k`` candidates (the highest ATC indices, ``sched.learn.kernel``): for
each, it starts that task now, then lets ATC take every later decision, on
``samples`` futures drawn from the scenario model (the same futures for
every candidate: common random numbers), up to ``horizon`` future arrivals:
the candidate evaluator ``sched.learn.lookahead``, which ``plan`` shares.
The mean weighted tardiness of each candidate, minus that of ATC's own
choice, is the label (negative = better than ATC).
The teacher then starts its best candidate and moves on, so the labelled
states are those a better-than-ATC policy visits.

It is not clairvoyant: the futures are samples from the model, not the
scenario's real arrivals. It does use the true durations of the tasks
already in the queue, which a scheduler only knows as estimates: a teacher
may know more than the student; the student (the policy) only ever sees the
features of its own observation, which the labels store with them. It is about a thousand times slower than a
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
from sched.learn import kernel
from sched.learn import lookahead as L
from sched.learn.vec_env import p_ref_of
from sched.sim import core as S
from sched.sim import rules

#: /2: the policy's compact observation per decision (candidates' rows and context);
#: /3: its context holds the time-of-week features (ahead_1h, ahead_4h, week_sin, week_cos).
LABEL_FORMAT = "render-queue-sched/teacher-labels/3"

#: Sampled futures in the teacher's pool: the scenario model's first arrivals for
#: that many seeds at the end of the training range (scenarios come from its start).
FUTURES = 2000
#: Stride between the first futures of consecutive scenario seeds in the pool
#: (a prime, so that neighbouring scenarios do not reuse the same futures).
FUTURE_STRIDE = 7919


class TeacherLabelError(SchedError):
    """A teacher label file is unreadable or does not match the others."""


@nb.njit(cache=True)
def label_scenario(s, scratch, fut, la, samples, first, obs, ws, X, C, M, Q):
    """Run the teacher on slot 0 of ``s`` from its start, writing one row per decision;
    returns the number of decisions.

    The candidates are the policy's (``kernel.observe`` with ``obs``'s settings: the
    ``top_k`` highest ATC indices), each evaluated by ``lookahead.sample_costs`` on
    ``samples`` futures continued by ATC (``la``), the futures of decision ``dec`` from
    pool index ``first + dec * samples``. Row i: ``X[i, :m]`` the candidates' features,
    ``C[i]`` the context (the observation PPO's update reads), ``M[i] = m``, ``Q[i, c]``
    candidate c's mean cost minus candidate 0's (ATC's choice). The teacher then starts the
    cheapest candidate.
    """
    S.reset_slot(s, 0)
    S.set_rule(s, 0, rules.ATC)
    K = X.shape[1]
    costs = np.empty((K, samples))
    cands = np.empty(K, dtype=np.int64)
    dec = 0
    while S._advance(s, 0, True):
        m = kernel.observe(s, 0, obs, ws)
        for i in range(m):
            cands[i] = ws.cand[i]
            for f in range(kernel.N_TASK):
                X[dec, i, f] = ws.X[i, f]
        for f in range(kernel.N_CTX):
            C[dec, f] = ws.ctx[f]
        M[dec] = m
        L.sample_costs(s, scratch, cands[:m], 0, samples, costs, fut, la, obs, ws, first + dec * samples, 0)
        best = 0
        c0 = costs[0].sum()
        for i in range(K):
            Q[dec, i] = 0.0
        for i in range(m):
            Q[dec, i] = (costs[i].sum() - c0) / samples
            if costs[i].sum() < costs[best].sum() - 1e-9:
                best = i
        S._start(s, 0, cands[best], s.pending[0])
        dec += 1
    return dec


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
    seeds = list(seeds)
    pool = L.Futures(*future_pool(cfg, seeds, horizon, futures))
    n = int(cfg["train"].get("tasks") or model.tasks)
    obs = kernel.no_net(top_k, k, p_ref_of(model), model.load_profile())
    la = L.Lookahead(int(horizon), 0.0, False, rules.ATC, k)  # true durations, ATC continues
    it = seeds
    if progress:
        from tqdm import tqdm

        it = tqdm(seeds, desc="teacher", unit="scenario", dynamic_ncols=True)
    scratch = S.empty_state(1, n + horizon, cfg["scenario"]["machines"])  # queue + future
    ws = kernel.workspace(n + horizon, obs)
    parts = [_label_one(cfg, model, seed, n, scratch, pool, la, samples, obs, ws) for seed in it]
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def _label_one(cfg, model, seed, n, scratch, pool, la, samples, obs, ws):
    """The labels of training scenario ``seed`` (``n`` tasks), as :func:`make_labels` returns them."""
    d = draw(model, seed, tasks=n)
    obs = kernel.at_week(obs, d["week_start_s"])  # the scenario's time of week
    state, _ = S.pack(
        [(d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])], cfg["scenario"]["machines"]
    )
    K = obs.top_k
    x = np.zeros((n, K, kernel.N_TASK))
    c = np.zeros((n, kernel.N_CTX))
    m = np.zeros(n, dtype=np.int64)
    q = np.zeros((n, K))
    first = first_future(seed, cfg["seeds"]["train"]["start"])
    nd = label_scenario(state, scratch, pool, la, samples, first, obs, ws, x, c, m, q)
    return {
        "x": x[:nd].astype(np.float32),
        "ctx": c[:nd].astype(np.float32),
        "count": m[:nd],
        "label": q[:nd].astype(np.float32),
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
