"""The gated rollout teacher: ``plan`` run on training states, labelling them for the student.

One teacher, one definition (``sched.learn.search.plan``, issue 25). At each decision
of a training scenario it takes its base policy's ``teacher_candidates`` best
tasks (the base's own choice first), starts each on sampled futures and lets
the base policy take every later decision (``sched.learn.search.lookahead``,
estimates only: the waiting tasks' durations are drawn around their
estimates, as ``plan`` draws them; the teacher never reads a true duration).
It deviates from the base's choice only on the paired test of ``plan``
(:func:`sched.learn.search.plan.choose`: mean + z standard errors of the paired
difference below zero), and it stops sampling a decision once every
candidate is clearly better or clearly worse than the base's choice
(:func:`sched.learn.search.plan.sample_gated`, the paired stopping rule): samples are
spent where candidates are close.

Its base is a setting: a rule (``train.teacher_base``: atc, with the
training's k, or wmdd) for the warm start, or a policy file for a round of
expert iteration (round r: the policy of round r - 1, which then also
continues the rollouts). Run as a policy (``sched.evaluate.policies``:
``teacher``), it is the :class:`sched.learn.search.planner.Planner` with these
settings, the same compiled decision.

A label row is one decision as the student sees it (``sched.learn.policy.kernel.observe``:
its ``top_k`` candidates' features and the context): each candidate's label is
the teacher's pessimistic bound against the base's choice (mean + z se of the
paired cost difference, weighted seconds; 0 for the base's choice), with its
mean paired difference beside it (``mean``); a candidate the teacher did not
evaluate gets the worst evaluated value (no evidence that it is better than
anything). A decision whose base choice is not among the student's candidates
is not labelled. The student learns by minimising the expected regret of its
softmax over one of the two (``train.distill_target``, ``sched.learn.search.distill``).

Whose states: in ``follow`` "teacher" scenarios the teacher starts its own
choice (the states a better policy visits), in "base" ones the base's
(the states the current policy visits: expert iteration, as in DAgger).
"""

import json
from typing import NamedTuple

import numba as nb
import numpy as np

from sched import files
from sched.config import ConfigError, training_hash
from sched.data.scenario import draw, scenario_model
from sched.errors import SchedError
from sched.learn.env.vec_env import p_ref_of
from sched.learn.policy import kernel
from sched.learn.search import lookahead as L
from sched.learn.search import plan as P
from sched.sim import core as S
from sched.sim import rules

#: /2: the policy's compact observation per decision (candidates' rows and context);
#: /3: its context holds the time-of-week features (ahead_1h, ahead_4h, week_sin, week_cos);
#: /4: the gated teacher's labels (pessimistic bounds against its base's choice).
LABEL_FORMAT = "render-queue-sched/teacher-labels/4"

#: Sampled futures in the teacher's pool: the scenario model's first arrivals for
#: that many seeds at the end of the training range (scenarios come from its start).
FUTURES = 2000
#: Stride between the first futures of consecutive scenario seeds in the pool
#: (a prime, so that neighbouring scenarios do not reuse the same futures).
FUTURE_STRIDE = 7919


class TeacherLabelError(SchedError):
    """A teacher label file is unreadable or does not match the others."""


class Rows(NamedTuple):
    """The student's rows the teacher writes (row i: one labelled decision), and how the
    student observes a decision."""

    obs: kernel.Net  #: the student's observation settings (``kernel.observe``)
    X: np.ndarray  #: (n, K, N_TASK) ``X[i, :m]`` the student's candidates' features
    C: np.ndarray  #: (n, N_CTX) the context
    M: np.ndarray  #: (n,) m, the candidates
    Q: np.ndarray  #: (n, K) ``Q[i, c]`` candidate c's label
    QM: np.ndarray  #: (n, K) its mean paired difference (the bound at z = 0)


@nb.njit(cache=True)
def label_gated(s, gate, ev, f_first, base, k, follow, rows):
    """Run the gated teacher on slot 0 of ``s`` from its start, writing one row per labelled
    decision into ``rows`` (a :class:`Rows`; module doc); returns (rows, decisions,
    deviations, samples drawn).

    ``gate.candidates``: the teacher's candidates (``plan.candidates`` of ``base``, ``k``,
    ``ev.net``: a rule id and its k, or ``plan.LEARNED`` and its compiled net), evaluated by
    ``plan.sample_gated`` (``gate``: at most ``samples``, ``chunk`` at a time, ``z``) on
    futures from pool index ``f_first + dec * samples``, with the evaluator ``ev``
    (``lookahead.Evaluator``: continued by ``ev.la``). ``follow``: True starts the teacher's
    choice, False the base's.
    """
    K, samples, z = gate.candidates, gate.samples, gate.z
    bnet, ws = ev.net, ev.ws
    S.reset_slot(s, 0)
    S.set_rule(s, 0, base if base >= 0 else rules.ATC)  # the learned policy reads ATC's static parts
    costs = np.empty((K, max(samples, 2)))
    bnd = np.empty(K)
    mean = np.empty(K)
    row = 0
    dec = 0
    moved = 0
    drawn = 0
    while S._advance(s, 0, True):
        cands = P.candidates(s, K, base, k, bnet, ws)
        mt = cands.shape[0]
        c = 0
        if mt >= 2:
            f0 = f_first + dec * samples
            n = P.sample_gated(s, cands, gate, costs[:mt], ev, (f0, f0 + 1))
            drawn += n
            P.bounds(costs[:mt], n, z, bnd[:mt])
            P.bounds(costs[:mt], n, 0.0, mean[:mt])
            c = P.best_of(bnd[:mt])  # plan.choose on the bounds just computed
            if _label_row(s, cands, bnd[:mt], mean[:mt], ws, rows, row):
                row += 1
        if c != 0:
            moved += 1
        S._start(s, 0, cands[c] if follow else cands[0], s.pending[0])
        dec += 1
    return row, dec, moved, drawn


@nb.njit(cache=True)
def _label_row(s, cands, bnd, mean, ws, rows, row):
    """Write the student's observation of slot 0 and the labels ``bnd`` (and means ``mean``) of
    the teacher's candidates ``cands`` into row ``row`` of ``rows``; False (nothing written)
    when the base's choice ``cands[0]`` is not among the student's candidates."""
    X, C, Q, QM = rows.X[row], rows.C[row], rows.Q[row], rows.QM[row]
    m = kernel.observe(s, 0, rows.obs, ws)
    found = False
    for i in range(m):
        if ws.cand[i] == cands[0]:
            found = True
    if not found:
        return False
    worst = 0.0
    worst_mean = 0.0
    for j in range(cands.shape[0]):
        worst = max(worst, bnd[j])
        worst_mean = max(worst_mean, mean[j])
    for i in range(Q.shape[0]):
        Q[i] = 0.0
        QM[i] = 0.0
    for i in range(m):
        Q[i] = worst
        QM[i] = worst_mean
        for j in range(cands.shape[0]):
            if ws.cand[i] == cands[j]:
                Q[i] = bnd[j]
                QM[i] = mean[j]
        for f in range(kernel.N_TASK):
            X[i, f] = ws.X[i, f]
    for f in range(kernel.N_CTX):
        C[f] = ws.ctx[f]
    rows.M[row] = m
    return True


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
    tr = cfg.seeds.train
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


def make_labels(
    cfg, seeds, settings, base, top_k, follow=True, futures=FUTURES, progress=False, rollout=None
):
    """The gated teacher's labels on the training scenarios ``seeds`` (dict of arrays) and its
    statistics (decisions, labelled rows, deviations from the base, mean samples a decision).

    ``settings``: a ``sched.learn.settings.Labelling`` (the warm start's or a round's); ``base``:
    the teacher's base policy (``sched.learn.search.planner.rule_base`` or ``learned_base``),
    which continues its rollouts; ``top_k``: the student's candidates (a learned base's own when
    it has one); ``follow``:
    True (the teacher's states), False (the base's), or one of these per seed; ``rollout``: a
    ``rule_base`` that continues the rollouts instead of ``base`` (``train.round_continuation``
    atc: cheaper, the candidates still ``base``'s), or None.
    """
    model = scenario_model(cfg)
    seeds = list(seeds)
    follows = list(follow) if isinstance(follow, (list, tuple)) else [bool(follow)] * len(seeds)
    pool = L.Futures(*future_pool(cfg, seeds, settings.horizon, futures))
    n = int(cfg.train.get("tasks") or model.tasks)
    total = n + model.warm_up_tasks  # a training scenario's tasks, its warm-up's included
    if base.base == P.LEARNED:
        obs = base.net
    else:
        obs = kernel.no_net(top_k, base.k, p_ref_of(model), model.load_profile())
    roll = base if rollout is None else rollout
    la = L.Lookahead(int(settings.horizon), float(model.sigma), True, roll.base, roll.k)
    it = zip(seeds, follows)
    if progress:
        from tqdm import tqdm

        it = tqdm(list(it), desc="teacher", unit="scenario", dynamic_ncols=True)
    scratch = S.empty_state(1, total + settings.horizon, cfg.scenario.machines)  # queue + future
    ws = kernel.workspace(total + settings.horizon, obs)
    parts, tot = [], np.zeros(3)
    for seed, fol in it:
        part, st = _label_one(cfg, model, seed, n, scratch, pool, la, settings, base, obs, ws, fol)
        parts.append(part)
        tot += st
    labels = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    rows = int(len(labels["count"]))
    stats = {
        "scenarios": len(seeds),
        "decisions": int(tot[0]),
        "labelled": rows,
        "teacher_differs_from_base": float(tot[1] / max(tot[0], 1)),
        # the label yield: labelled decisions where the teacher's choice (the bounds) or the
        # mean paired differences' best candidate is not the base's choice (label 0)
        "yield_bound": float((labels["label"].min(1) < 0).mean()) if rows else 0.0,
        "yield_mean": float((labels["mean"].min(1) < 0).mean()) if rows else 0.0,
        "samples_per_decision": float(tot[2] / max(tot[0], 1)),
    }
    return labels, stats


def _label_one(cfg, model, seed, n, scratch, pool, la, st, base, obs, ws, follow):
    """The labels of training scenario ``seed`` (``n`` tasks), as :func:`make_labels` returns
    them, and (decisions, deviations, samples drawn)."""
    d = draw(model, seed, tasks=n, warm_up=True)
    n = len(d["arrival"])  # its decisions: the warm-up's too
    obs = kernel.at_week(obs, d["week_start_s"])  # the scenario's time of week
    bnet = kernel.at_week(base.net, d["week_start_s"])
    state, _ = S.pack(
        [(d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])], cfg.scenario.machines
    )
    K = obs.top_k
    x = np.zeros((n, K, kernel.N_TASK))
    c = np.zeros((n, kernel.N_CTX))
    m = np.zeros(n, dtype=np.int64)
    q = np.zeros((n, K))
    qm = np.zeros((n, K))
    first = first_future(seed, cfg.seeds.train.start)
    gate = P.Gate(int(st.candidates), int(st.samples), int(st.chunk), float(st.z))
    ev = L.evaluator(scratch, ws, pool, la, bnet)
    rows, dec, moved, drawn = label_gated(
        state, gate, ev, first, base.base, base.k, bool(follow), Rows(obs, x, c, m, q, qm)
    )
    part = {
        "x": x[:rows].astype(np.float32),
        "ctx": c[:rows].astype(np.float32),
        "count": m[:rows],
        "label": q[:rows].astype(np.float32),
        "mean": qm[:rows].astype(np.float32),
        "scenario_seed": np.full(rows, seed, dtype=np.int64),
    }
    return part, np.array([dec, moved, drawn], dtype=np.float64)


def label_settings(cfg, settings):
    """The settings a label file was made with, which a training run (``settings``, a
    ``sched.learn.settings.Training``) must share to use it."""
    return {
        "config_hash": training_hash(cfg),
        "teacher": list(settings.teacher.labelling()),
        "base": settings.teacher.base,
        "top_k": settings.network.top_k,
        "tasks": settings.tasks,
        "atc_k": settings.network.atc_k,
    }


def save_labels(path, labels, meta):
    """Write teacher labels and their ``meta`` (settings, seeds) as one .npz file, atomically."""
    files.write_npz(path, {"meta": np.array(json.dumps(meta)), **labels})


def load_labels(paths):
    """Concatenate label files (numpy only, no pickle); checks they agree."""
    import io
    import zipfile

    from sched.formats import json_input
    from sched.limits import MAX_LABEL_BYTES

    parts, meta = [], None
    for p in paths:
        data = files.read_bytes(p, TeacherLabelError, MAX_LABEL_BYTES)  # a FIFO, a device: refused
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                m = json_input.parse(str(z["meta"]), f"{p}: field meta", TeacherLabelError, nan=True)
                parts.append({k: z[k] for k in z.files if k != "meta"})
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            if isinstance(exc, TeacherLabelError):
                raise
            raise TeacherLabelError(f"{p}: not a teacher label file ({exc})") from None
        if not isinstance(m, dict) or m.get("format") != LABEL_FORMAT:
            raise TeacherLabelError(f"{p}: not a teacher label file (format {m.get('format')!r})")
        same = {k: v for k, v in m.items() if k != "seeds"}
        if meta is not None and same != meta:
            raise TeacherLabelError(f"{p}: made with other settings than {paths[0]}")
        meta = same
    if not parts:
        raise TeacherLabelError("no teacher label file given")
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, meta
