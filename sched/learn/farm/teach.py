"""The gated teacher's warm start on the chunked farm (issue 60, point 2; ``sched farm-teach``).

1. **Labels.** The chunked loop of ``plan`` on tuned ATC (:mod:`sched.learn.search.plan_chunks`:
   its candidates, sampled futures, rollouts and paired test, called as they are) runs each of the
   first ``train.teacher_scenarios`` training seeds, taking the teacher's choice at every free GPU
   (the base's where the test does not deviate): the schedule is ``plan_chunks.simulate``'s, bit for
   bit. At each decision with >= 2 scorer candidates (``decide.observe``: the top_k by ATC on
   remaining work), the label is the index of the teacher's choice among them, kept with that
   observation; a decision whose choice is not among them is skipped and counted (``missed``).
   The teacher: :func:`teacher_plan`.
2. **Distillation.** The farm scorer from the ATC prior with a zero correction (atc-tuned), then
   ``train.distill_epochs`` passes of the cross-entropy of its softmax over each decision's
   candidates onto the labels (``distill.cross_entropy``; ``distill_lr``, ``distill_batch``,
   ``max_grad_norm``). ``sched farm-train --init`` starts PPO from it.
"""

import numba as nb
import numpy as np
import torch

from sched.config import seed_range
from sched.learn.farm import decide, scorer
from sched.learn.policy import kernel
from sched.learn.search import plan_chunks as pc
from sched.learn.search.distill import cross_entropy
from sched.learn.settings import TrainSettingsError
from sched.sim import chunks, rules
from sched.sim.chunks import _free_gpu, _pick, _start, admit, next_event


@nb.njit(cache=True)
def run_labelled(s, w, p, net, ws, rec):
    """Schedule every chunk of the farm ``s`` with the planner (``w``, ``p``: as
    ``plan_chunks.run_planned``'s) while ``rec`` (a ``decide.Record``) keeps, at each decision with
    >= 2 candidates of the scorer ``net``, their observation and the teacher's choice among them.
    Returns (decisions, labelled, missed, deviations)."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    chunks.reset(s, p.rule)
    for m in range(M):
        w.kfree[m] = s.mfree0[m]
    t, nxt, ql = -np.inf, 0, 0
    dec, lab, missed, moved = 0, 0, 0, 0
    while True:
        nxt, ql = admit(s, t, nxt, ql, N)
        m = _free_gpu(s, t)
        if m >= 0 and ql > 0:
            q, _was = pc.decide(s, w, p, t, m, ql, dec)
            if q >= 0:
                moved += q != _pick(s, ql, p.rule, p.k, t, m)
                k = decide.observe(s, ql, t, m, net, ws, False)
                if k >= 2:
                    idx = -1
                    for i in range(k):
                        if ws.cand[i] == q:
                            idx = i
                    if idx < 0:
                        missed += 1
                    else:
                        decide._keep(rec, lab, ws, k, idx, 0.0, t, s.queue[q])
                        lab += 1
                j = s.queue[q]
                f = chunks.frames_of(s.frames[j], s.per[j], s.nextc[j])
                w.kfree[m] = t + chunks.chunk_work(s.est[j], s.frames[j], f, s.setup[j]) / s.speed[m]
                ql = _start(s, q, ql, m, t, p.rule)
                dec += 1
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return dec, lab, missed, moved
        t = tn


def label_farm(knet, farm, machines, atc_k, plan, sigma):
    """The labels of one chunked scenario (``scorer.Farm``): (dict of ``x``, ``ctx``, ``count``,
    ``choice``; counts {decisions, labelled, missed, deviations}; each job's completion, row order).
    ``plan``: ``plan_chunks.Settings``; ``sigma``: the estimate noise of its sampled futures."""
    if knet.top_k <= 0:
        raise TrainSettingsError("train.top_k: the teacher labels the scorer's top_k candidates; got 0")
    state, order = chunks.load(farm.arrays, farm.cols, machines)
    net = kernel.at_week(knet, farm.week_start_s)
    D, K = scorer.chunk_count(farm), int(net.top_k)
    rec = decide.Record(
        np.zeros((D, K, decide.N_TASK), np.float32), np.zeros((D, decide.N_CTX), np.float32),
        np.zeros(D, np.int64), np.zeros(D, np.int64), np.zeros(D), np.zeros(D), np.zeros(D, np.int64),
    )  # fmt: skip
    work = pc.work(farm.arrays, farm.cols, machines, plan)
    got = run_labelled(
        state, work, pc.params(plan, rules.ATC, atc_k, sigma), net, decide.workspace(K, net), rec
    )
    n_lab = got[1]
    labels = {
        "x": rec.X[:n_lab],
        "ctx": rec.ctx[:n_lab],
        "count": rec.count[:n_lab],
        "choice": rec.choice[:n_lab],
    }
    job, _c, _s, end, _m = chunks.unload(state, order)
    counts = dict(zip(("decisions", "labelled", "missed", "deviations"), (int(x) for x in got)))
    return labels, counts, chunks.job_ends(job, end, len(order))


def teacher_plan(cfg, settings):
    """The teacher: ``train.teacher_candidates``, ``teacher_samples`` and ``teacher_z``, with the
    setting's planner's ``depth`` and ``seed`` (``chunks.plan``; else 2 and 0)."""
    t, own = settings.teacher, dict(cfg.scenario.chunks.get("plan") or {})
    return pc.Settings(
        int(t.candidates), int(t.samples), float(t.z), int(own.get("seed", 0)), int(own.get("depth", 2))
    )


def make_labels(cfg, knet, atc_k, settings, farms_of, progress=False):
    """The labels of the first ``train.teacher_scenarios`` training seeds, concatenated, and the
    summed counts. ``farms_of``: seeds -> ``scorer.Farm`` list (``train.farms``)."""
    from sched.data.model import scenario_model

    sigma = float(scenario_model(cfg).sigma)
    plan = teacher_plan(cfg, settings)
    seeds = list(seed_range(cfg, "train"))[: settings.teacher.scenarios]
    parts, counts = [], {"decisions": 0, "labelled": 0, "missed": 0, "deviations": 0}
    for seed in seeds:
        lab, c, _ends = label_farm(knet, farms_of([seed])[0], cfg.scenario.machines, atc_k, plan, sigma)
        parts.append(lab)
        counts = {k: counts[k] + c[k] for k in counts}
    K = max(int(knet.top_k), 1)
    labels = {
        "x": np.concatenate([p["x"] for p in parts])
        if parts
        else np.zeros((0, K, decide.N_TASK), np.float32),
        "ctx": np.concatenate([p["ctx"] for p in parts])
        if parts
        else np.zeros((0, decide.N_CTX), np.float32),
        "count": np.concatenate([p["count"] for p in parts]) if parts else np.zeros(0, np.int64),
        "choice": np.concatenate([p["choice"] for p in parts]) if parts else np.zeros(0, np.int64),
    }
    return labels, counts


def distil(net, labels, settings, gen):
    """``settings.epochs`` passes (a ``DistillSettings``) of the cross-entropy of ``net``'s softmax
    over each labelled decision's candidates onto its label; returns the last pass's mean loss."""
    x, ctx = torch.from_numpy(labels["x"]), torch.from_numpy(labels["ctx"])
    count, choice = torch.from_numpy(labels["count"]), torch.from_numpy(labels["choice"])
    K = x.shape[1]
    valid = torch.arange(K).unsqueeze(0) < count.unsqueeze(1)
    target = torch.nn.functional.one_hot(choice, K).to(x.dtype)
    opt = torch.optim.Adam(net.parameters(), lr=settings.lr)
    n, last = len(x), float("nan")
    for _ in range(settings.epochs if n else 0):
        perm, total = torch.randperm(n, generator=gen), 0.0
        for lo in range(0, n, settings.batch):
            idx = perm[lo : lo + settings.batch]
            logits, _ = net.forward_compact(x[idx], ctx[idx], valid[idx])
            loss = cross_entropy(logits, valid[idx], target[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), settings.max_grad_norm)
            opt.step()
            total += loss.item() * len(idx)
        last = total / n
    return last


def warm_start(cfg, atc_k, seed=1, progress=False, **overrides):
    """The distilled farm scorer of a chunked setting's config: (network, policy file ``meta`` with
    its validation score, ``teacher``: the label counts and the last pass's loss)."""
    from sched import threads
    from sched.data.model import scenario_model
    from sched.learn.env.vec_env import p_ref_of
    from sched.learn.farm import train

    s = train.settings_of(cfg, seed, **overrides)
    if s.network.top_k <= 0:
        raise TrainSettingsError("train.top_k: the teacher labels the scorer's top_k candidates; got 0")
    threads.apply(s.threads, torch=True)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = scenario_model(cfg)
    p_ref, profile = p_ref_of(model), [float(x) for x in model.load_profile()]
    net = train.start_network(s.network)
    knet = scorer.compiled(net, atc_k, p_ref, profile)
    labels, counts = make_labels(cfg, knet, atc_k, s, lambda seeds: train.farms(cfg, seeds), progress)
    loss = distil(net, labels, s.distill, gen)
    validator = train.Validator(cfg, s.validation_scenarios, atc_k, sync_s=0.0)
    best = {"score": validator(scorer.compiled(net, atc_k, p_ref, profile)), "iteration": 0}
    meta = train.meta_of(cfg, s, atc_k, p_ref, profile, validator, best)
    meta["teacher"] = {**counts, "scenarios": int(s.teacher.scenarios), "distill_loss": float(loss)}
    return net, meta
