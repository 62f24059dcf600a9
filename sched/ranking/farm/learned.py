"""``rank()`` of jobs of frames under the learned farm policy a farm verdict ships (issue 60, point 2).

**The record.** A ``farm_verdict.json`` whose ``policy`` is :data:`NAME` (``sched farm-learned``
writes it only when the learned policy's candidacy ships it: significantly better than the
incumbent atc-tuned on the selection seeds, the lowest mean of those) has ``rule`` null, ``atc_k``
its prior's k, ``cap`` null, and ``policy_file``: ``path`` (relative to the project root, else to
the verdict's folder), ``sha256`` of its bytes, and the ``arch``, ``task_features`` and
``global_features`` of its meta (``sched.learn.farm.policy_file``). :func:`check` reads that field
(a malformed one is a RankInputError naming it); :func:`bind`, when a call follows the verdict,
checks the file itself: its bytes' sha256, then the file loaded (cached per file version) with its
meta's architecture and features against the record. A disagreement is a VerdictRefused: ``rank()``
does not follow the verdict, and says why.

**The plan** (:func:`plan`): the compiled farm decision (``sched.learn.farm.decide``: the
candidates, their observation, the scores, the greedy choice) at each free GPU of the chunked model
(:mod:`sched.sim.chunks`), started from the running chunks as the rule's plan is
(:func:`sched.ranking.farm.plan.rollout`: they hold their GPUs and count against their job's limit),
recording the order in which each job first starts a chunk: the ranking.
"""

import os
import re

import numpy as np

from sched.errors import shorten
from sched.learn.farm.decide import choose, observe, score
from sched.ranking.tasks import RankInputError, RankSetupError
from sched.ranking.verdict_files import VerdictRefused
from sched.sim import rules
from sched.sim.chunks import _free_gpu, _start, admit, hold, next_event, reset
from sched.sim.state import core_jit

#: The learned farm policy's name, in a farm verdict and in the benchmark's tables.
NAME = "farm-learned"
#: The fields of ``policy_file`` the verdict records and the file's meta must equal.
META = ("arch", "task_features", "global_features")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_loaded = {}


def check(data, path, root="."):
    """The policy file path a learned farm verdict names (resolved), and its record: RankInputError
    naming the field when ``policy_file`` is malformed."""
    rec = data.get("policy_file")
    if not isinstance(rec, dict):
        raise RankInputError(f"{path}: field policy_file: expected an object (path, sha256, arch, "
                             f"task_features, global_features), got {shorten(rec)}")  # fmt: skip
    p = rec.get("path")
    if not isinstance(p, str) or not p or "\0" in p:
        raise RankInputError(f"{path}: field policy_file.path: expected a path, got {shorten(p)}")
    sha = rec.get("sha256")
    if not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
        raise RankInputError(
            f"{path}: field policy_file.sha256: expected 64 hexadecimal digits, got {shorten(sha)}"
        )
    for field in META:
        want = dict if field == "arch" else list
        if not isinstance(rec.get(field), want):
            raise RankInputError(
                f"{path}: field policy_file.{field}: expected {'an object' if want is dict else 'a list'}, "
                f"got {shorten(rec.get(field))}"
            )
    file = p if os.path.isabs(p) or root == "." else os.path.join(root, p)
    if not os.path.lexists(file) and os.path.lexists(os.path.join(os.path.dirname(path), p)):
        file = os.path.join(os.path.dirname(path), p)  # a copied results folder: beside the verdict
    return file, rec


def bind(choice, rec, path, where):
    """``choice`` once its policy file is the one the verdict ``path`` records (sha256, then its
    meta's arch and features); VerdictRefused naming what differs otherwise."""
    from sched.ranking.verdicts import _file_sha256

    file = choice.policy_file
    if _file_sha256(file) != rec["sha256"]:
        raise VerdictRefused(
            f"{path}: field policy_file: {shorten(file)} is missing or does not match its sha256; "
            "the farm verdict is not followed",
            where,
        )
    policy = load(file, rec["sha256"])
    for field in META:
        if policy.meta.get(field) != rec[field]:
            raise VerdictRefused(
                f"{path}: field policy_file.{field}: the file's is {shorten(policy.meta.get(field))}; "
                "the farm verdict is not followed",
                where,
            )
    return choice


def load(file, sha):
    """The farm policy file ``file`` of bytes ``sha`` (loaded once per version); a file that does not
    load is a RankSetupError naming it (``sched.learn.farm.policy_file``'s message)."""
    from sched.learn.farm import policy_file

    key = (os.path.abspath(file), sha)
    if key not in _loaded:
        try:
            policy = policy_file.load(file)
        except policy_file.FarmPolicyError as exc:
            raise RankSetupError(str(exc)) from exc
        if len(_loaded) > 8:
            _loaded.clear()
        _loaded[key] = policy
    return _loaded[key]


@core_jit
def rollout(s, net, ws, run_gpu, order, full, empty):
    """The greedy learned policy ``net`` on the farm ``s`` from the running chunks (``run_gpu[m]``:
    the job whose chunk holds GPU m until ``s.mfree0[m]``; -1: none), recording in ``order`` the
    jobs in the order they first start a chunk; stops once every job has started unless ``full``.
    ``empty``: a float array of length 0 (the greedy choice's uniforms). Returns the jobs started."""
    N, M = s.arr.shape[0], s.mfree.shape[0]
    reset(s, rules.ATC)
    hold(s, run_gpu)
    order[:] = -1
    t, nxt, ql, c = -np.inf, 0, 0, 0
    while True:
        nxt, ql = admit(s, t, nxt, ql, N)
        m = _free_gpu(s, t)
        if m >= 0 and ql > 0:
            k = observe(s, ql, t, m, net, ws, False)
            if k > 0:
                score(net, ws, k)
                best, _lp = choose(ws.v, k, empty)
                q = ws.cand[best]
                j = s.queue[q]
                if s.nextc[j] == 0:
                    order[c] = j
                    c += 1
                    if c == N and not full:
                        return c
                ql = _start(s, q, ql, m, t, rules.ATC)
                continue
        tn = next_event(s, t, nxt, N, M)
        if tn == np.inf:
            return c
        t = tn


def runner(choice):
    """``(farm, run_gpu, order, full) -> jobs started`` of the learned policy ``choice`` names (its
    file loaded as :func:`bind` checked it): what :func:`sched.ranking.farm.plan.plan` runs."""
    from sched.learn.farm import decide
    from sched.learn.policy import kernel
    from sched.ranking.times import WEEK_START_S

    net = kernel.at_week(load(choice.policy_file, choice.sha256).knet, WEEK_START_S)

    def run(farm, run_gpu, order, full):
        n = farm.arr.shape[0]
        ws = decide.workspace(net.top_k if net.top_k > 0 else n, net)
        return rollout(farm, net, ws, run_gpu, order, full, np.zeros(0))

    return run
