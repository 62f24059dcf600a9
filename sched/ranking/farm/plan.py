"""``rank()`` of a call holding jobs of frames (:mod:`sched.ranking.farm.frames`): the rule's forward
plan on the chunked model, and the policy such a call runs.

**The plan** is :mod:`sched.sim.chunks`'s model, run with the estimates from the call's ``now``:
whenever a GPU is free and a job has a waiting chunk while it runs fewer chunks than its
``max_gpus``, the rule picks the job whose next chunk starts there (free GPUs lowest index first;
ties to the earlier arrival, then the earlier task). The jobs' running chunks hold their GPUs and
count against their limits until their assumed end (:func:`sched.ranking.farm.frames.read`). The
compiled loop is :func:`sched.sim.chunks.run_farm`'s, on its own helpers (``_free_gpu``,
``_pick``, ``_start``), started from the running chunks, and it records the order in which each
job *first* starts a chunk: that is the ranking. A farm hands each freed host to the waiting job
of the highest priority, so the priorities the adapters set from that order make the farm start
the jobs in the plan's order, and keep handing hosts to the jobs the plan runs first. Without
``explain`` the loop stops once every job has started; with it, it runs to the last chunk, and
each job's planned finish (``end_s``) is its last chunk's end (or its running chunks', if later),
its ``machine`` and ``start_s`` its first chunk's. With one chunk a job the order and the table
are the whole-task plan's (:func:`sched.sim.one_queue.rollout_order`), by the chunked model's
construction (tests/test_chunks_equivalence.py).

**The policy.** A rule, or ``atc-tuned``, runs as asked. ``auto`` follows first the **farm
verdict** (``farm_verdict.json`` of a chunked farm setting, ``sched farm-bench``) measured on the
call's GPUs (count and speeds): of the folders under config ``rank.farm_settings`` (default
``results/farm``), the one config ``rank.farm_setting`` names, else the one whose per-GPU load is
closest to config ``scenario.load`` (then by name): its rule with its tuned k (farm-32's for a call
on 32 identical GPUs, heavy-tails-chunked's for one GPU), or the learned farm policy it ships, run
greedily from the running chunks (:mod:`sched.ranking.farm.learned`). A farm verdict whose fields disagree is
not followed, and ``why`` says so. Without one, ``auto`` follows the benchmark's verdict for whole
tasks when it is a rule; a verdict of a learned policy or of ``plan`` (both plan whole tasks)
falls back to ATC with the k tuned for the call's GPUs (else config ``rules.atc_k``), saying why.
A call that names ``plan``, ``ppo``, ``ppo-<seed>`` or a policy file is refused in one line.
"""

import math
import os

import numpy as np

from sched import layout, setting
from sched.config import shorten
from sched.limits import MAX_MACHINES
from sched.ranking.farm import learned
from sched.ranking.tasks import RankInputError, RankSetupError
from sched.ranking.verdict_files import VerdictRefused
from sched.ranking.verdicts import Choice, _json_file, tuned_k
from sched.sim import chunks, farm_limits, rules
from sched.sim.chunks import _free_gpu, _pick, _start, admit, hold, next_event, reset
from sched.sim.state import core_jit

#: The policies a call of jobs of frames may name (``auto`` aside).
ALLOWED = (*rules.RULES, "atc-tuned")


def choose(policy, make, st, farm):
    """The Choice of a call holding jobs of frames: ``make()`` (rank's own choice of ``policy``)
    when a rule runs it; for ``auto``'s verdict of a policy that plans whole tasks, ATC with the
    k tuned for ``farm`` (config ``rules.atc_k`` without one), saying why. A call naming such a
    policy (``plan``, a learned one) is refused in one line, before any file is read."""
    name = os.fspath(policy) if isinstance(policy, (str, os.PathLike)) else None
    if name != "auto" and name not in ALLOWED:
        if name is None:
            return make()  # rank's own refusal of a policy that is no name
        raise RankInputError(
            f"policy: {shorten(name)} plans whole tasks, and these tasks hold jobs of frames "
            f"(frame_s, chunk_frames, max_gpus, setup_s or running): use auto, {', '.join(ALLOWED)}"
        )
    told = ""
    if name == "auto":
        try:
            found, told = farm_choice(st, farm)
        except RankSetupError:
            raise
        except RankInputError as exc:  # a malformed farm_verdict.json: a fault of the files read
            raise RankSetupError(str(exc)) from exc
        if found is not None:
            return found
    chosen = make()
    chosen = chosen._replace(why=f"{chosen.why}{told}")
    if chosen.rule is not None and chosen.name != "plan" and chosen.wait is None:  # delayed: whole tasks
        return chosen
    note = f"; jobs of frames: {chosen.name} plans whole tasks, so"
    try:
        k, v = tuned_k(st, farm)
        why = f"{chosen.why}{note} ATC with the k tuned in {v.source} for these GPUs"
        return Choice("atc-tuned", rules.ATC, k, None, why)
    except RankInputError:  # no tuned k for these GPUs, or tuned.json unreadable
        return Choice("atc", rules.ATC, st.atc_k, None, f"{chosen.why}{note} ATC with config rules.atc_k")


def check_farm_verdict(data, path, root="."):
    """A farm_verdict.json (docs/file-contract.md) as (Choice, setting): a malformed field is a
    RankInputError naming the file and field, fields that disagree a VerdictRefused."""
    if not isinstance(data, dict):
        raise RankInputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    try:
        where = setting.read(data.get("setting"), "field setting")
    except setting.SettingError as exc:
        raise RankInputError(f"{path}: {exc}") from None
    name, rule, k, sync, cap = (data.get(f) for f in ("policy", "rule", "atc_k", "sync_s", "cap"))
    if name == learned.NAME:
        return _learned_verdict(data, path, root, where)
    if name not in (*rules.ALL_RULES, "atc-tuned", *farm_limits.CAPPED_RULES):
        raise RankInputError(
            f"{path}: field policy: expected a rule, farm-fifo, farm-balanced, atc-tuned, "
            f"{' or '.join(farm_limits.CAPPED_RULES)}, got {shorten(name)}"
        )
    if rule not in rules.ALL_RULES:
        raise RankInputError(
            f"{path}: field rule: expected one of {', '.join(rules.ALL_RULES)}, got {shorten(rule)}"
        )
    if k is not None and not _positive(k):
        raise RankInputError(f"{path}: field atc_k: expected a number > 0 or null, got {shorten(k)}")
    if not (_positive(sync) or sync == 0) or isinstance(sync, bool):
        raise RankInputError(f"{path}: field sync_s: expected a number >= 0, got {shorten(sync)}")
    offered = data["setting"].get("offered_gpus")
    if offered is not None and not _positive(offered):
        raise RankInputError(
            f"{path}: field setting.offered_gpus: expected a number > 0, got {shorten(offered)}"
        )
    if cap is not None and (
        isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_MACHINES
    ):
        raise RankInputError(
            f"{path}: field cap: expected a whole number from 1 to {MAX_MACHINES} or null, got {shorten(cap)}"
        )
    capped = name in farm_limits.CAPPED_RULES
    want = farm_limits.CAPPED_RULES.get(name, "atc" if name == "atc-tuned" else name)
    tuned = name in ("atc-tuned", farm_limits.CAPPED)
    if rule != want or tuned != (k is not None) or capped != (cap is not None):
        raise VerdictRefused(
            f"{path}: fields disagree: policy {name} runs rule {want}"
            f"{' with its tuned atc_k' if tuned else ' with no atc_k'}"
            f"{' and a cap' if capped else ' and no cap'}, but rule is "
            f"{shorten(rule)}, atc_k {shorten(k)} and cap {shorten(cap)}; the farm verdict is not followed",
            where,
        )
    reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
    why = f", sync {float(sync):g} s: {shorten(reason, 300)}" if reason else f", sync {float(sync):g} s"
    k = None if k is None else float(k)
    return Choice(name, rules.rule_id(rule), k, None, why, cap=cap), where


def _learned_verdict(data, path, root, where):
    """(Choice, setting) of a farm verdict that ships the learned farm policy
    (:mod:`sched.ranking.farm.learned`: rule and cap null, atc_k its prior's k, policy_file)."""
    rule, k, sync, cap = (data.get(f) for f in ("rule", "atc_k", "sync_s", "cap"))
    if not (_positive(sync) or sync == 0) or isinstance(sync, bool):
        raise RankInputError(f"{path}: field sync_s: expected a number >= 0, got {shorten(sync)}")
    if k is not None and not _positive(k):
        raise RankInputError(f"{path}: field atc_k: expected a number > 0 or null, got {shorten(k)}")
    file, rec = learned.check(data, path, root)
    if rule is not None or cap is not None:
        raise VerdictRefused(
            f"{path}: fields disagree: policy {learned.NAME} runs its policy file, with no rule and no "
            f"cap, but rule is {shorten(rule)} and cap {shorten(cap)}; the farm verdict is not followed",
            where,
        )
    reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
    why = f", sync {float(sync):g} s: {shorten(reason, 300)}" if reason else f", sync {float(sync):g} s"
    k = None if k is None else float(k)
    return Choice(learned.NAME, None, k, file, why, rec["sha256"], farm_policy=rec), where


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def farm_choice(st, farm):
    """(the Choice of the farm verdict ``auto`` follows for a call of jobs of frames on ``farm``, or
    None; the words ``why`` adds about farm verdicts not followed). Module docstring: which one."""
    cfg_rank = st.config.rank if st.config is not None else {}
    folder, pinned = cfg_rank.get("farm_settings"), cfg_rank.get("farm_setting")
    if folder is None or not os.path.isdir(folder):
        return None, ""
    found, notes = [], []
    for name in sorted(os.listdir(folder)):
        if pinned is not None and name != pinned:
            continue
        path = os.path.join(folder, name, layout.FARM_VERDICT)
        got = _json_file(path, check_farm_verdict, st.root)
        if got is not None and not isinstance(got, VerdictRefused) and got[0].farm_policy is not None:
            try:  # a learned farm verdict: its policy file, checked at each call (cached per version)
                got = (learned.bind(got[0], got[0].farm_policy, path, got[1]), got[1])
            except VerdictRefused as exc:
                got = exc
        if isinstance(got, VerdictRefused):
            if got.where is not None and setting.same_farm(got.where, farm):
                notes.append(f"; {got}")
            continue
        if got is not None and setting.same_farm(got[1], farm):
            found.append((abs(got[1]["load"] - st.farm["load"]), name, path, *got))
    told = "".join(notes)
    if not found:
        if pinned is not None:
            told += (
                f"; config rank.farm_setting {pinned}: no farm verdict of it for these GPUs under {folder}"
            )
        return None, told
    _, name, path, choice, where = min(found, key=lambda f: f[:2])
    if choice.k is None and choice.rule == rules.ATC:
        choice = choice._replace(k=st.atc_k)
    how = f"config rank.farm_setting {name}" if pinned else "jobs of frames on these GPUs"
    more = ", the one whose load is closest to config scenario.load" if len(found) > 1 else ""
    k = f" (k = {choice.k:g})" if choice.rule == rules.ATC else ""
    k += f" (its policy file {choice.policy_file})" if choice.farm_policy is not None else ""
    if choice.cap is not None:
        k += f", each job at most {choice.cap} chunks at once (its limit: min with its max_gpus)"
    why = (
        f"auto: {how}: the farm verdict of farm setting {name} ({path}){more}, measured on "
        f"{setting.describe(where)}: {choice.name}{k}{choice.why}{told}"
    )
    return choice._replace(why=why), ""


@core_jit
def rollout(s, rule, k, run_gpu, order, full):
    """:func:`sched.sim.chunks.run_farm` from the running chunks (``run_gpu[m]``: the job, in
    ``s``'s order, whose chunk holds GPU m until ``s.mfree0[m]``; -1: none), recording in
    ``order`` the jobs in the order they first start a chunk. Stops once every job has started
    unless ``full``. Returns the jobs started."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    reset(s, rule)
    hold(s, run_gpu)
    order[:] = -1
    t, nxt, ql, c = -np.inf, 0, 0, 0
    while True:
        nxt, ql = admit(s, t, nxt, ql, N)
        m = _free_gpu(s, t)
        if m >= 0 and ql > 0:
            q = _pick(s, ql, rule, k, t, m)
            if q >= 0:
                j = s.queue[q]
                if s.nextc[j] == 0:
                    order[c] = j
                    c += 1
                    if c == N and not full:
                        return c
                ql = _start(s, q, ql, m, t, rule)
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return c
        t = tn


def limits(q, choice):
    """Each job's limit (chunks at once, row order; 0: none) under ``choice``: its own ``max_gpus``,
    with a farm verdict's cap :func:`sched.sim.farm_limits.capped` (the rule's one home)."""
    return q.chunks.maxg if choice.cap is None else farm_limits.capped(q.chunks.maxg, choice.cap)


def limits_of(q, choice):
    """{id: limit} of a call's jobs under a farm verdict's cap (``Decision.limits``), else None."""
    if q.chunks is None or choice.cap is None:
        return None
    return {q.ids[r]: int(v) for r, v in enumerate(limits(q, choice).tolist())}


def plan(q, choice, full):
    """(rows in rank order, first chunk's start, planned finish, first chunk's GPU), the last
    three in row order (NaN, -1 where not planned: only without ``full``); each job runs at most
    its limit's chunks at once (:func:`limits`)."""
    ch = q.chunks
    arrays = (q.arrival, q.estimate, q.estimate, q.weight, q.due)
    cols = (ch.frames, ch.per, limits(q, choice), ch.setup)
    farm, rows = chunks.load(arrays, cols, q.speed, machine_free=ch.run_free)
    inv = np.empty_like(rows)
    inv[rows] = np.arange(q.n)
    run_gpu = np.where(ch.run_gpu >= 0, inv[np.maximum(ch.run_gpu, 0)], -1)
    order = np.empty(q.n, np.int64)
    if choice.farm_policy is not None:  # the learned farm policy a farm verdict ships
        started = learned.runner(choice)(farm, run_gpu, order, full)
    else:
        k = rules.ATC_K_DEFAULT if choice.k is None else float(choice.k)  # a rule's k: ATC's alone reads it
        started = rollout(farm, choice.rule, k, run_gpu, order, full)
    ranked = rows[order[:started]]
    first = farm.first[inv]  # each row's chunk 0
    start, mach = farm.start[first], farm.mach[first]
    end = np.full(q.n, np.nan)
    if full:
        job, _c, _s, e, _m = chunks.unload(farm, rows)
        end = chunks.job_ends(job, e, q.n)
        held = ch.run_gpu >= 0  # running chunks end when they end, if after the job's last
        np.maximum.at(end, ch.run_gpu[held], ch.run_free[held])
    return ranked, start, end, mach
