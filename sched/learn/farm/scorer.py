"""The farm scorer from Python: its network, its compiled form, and its runs on chunked scenarios.

The network is ``sched.learn.policy.networks.TaskScorer`` with the farm's feature counts
(``decide.N_TASK``, ``decide.N_GLOBAL``): the ATC prior puts ``prior_scale`` on the ``atc``
feature, the same column as the scorer's. Its compiled form is ``sched.learn.policy.kernel.Net``
(the same fields; the sizes read from the weights' shapes). A scenario is run from its
:class:`Farm` (the arrays read once): :func:`ends` (greedy, at sync 0 or at the adapters' sync
interval), :func:`sampled` (a recorded run on the caller's uniforms; :func:`sampled_synced` at a
sync interval, one ranking a sync).
"""

from typing import NamedTuple

import numpy as np

from sched.data.objective import weighted_tardiness
from sched.learn.farm import decide, synced
from sched.learn.policy import kernel
from sched.learn.policy.networks import TaskScorer
from sched.sim import chunks, sync


class Farm(NamedTuple):
    """One chunked scenario as the runs read it."""

    arrays: tuple  #: (arrival, duration, estimate, weight, due) in row order
    cols: tuple  #: (frames, chunk_frames, max_gpus, setup) in row order (``chunks.check_chunks``)
    counted_from_s: float  #: jobs arriving earlier are a warm-up (no metric counts them)
    week_start_s: float  #: the scenario's time 0 in seconds since Monday 00:00 UTC


def of_scenario(sc):
    """The :class:`Farm` of a ``sched.data.scenario.Scenario`` with chunk columns."""
    arrays = sc.arrays
    cols = chunks.check_chunks(len(arrays[0]), *sc.chunks, what=sc.name)
    return Farm(arrays, cols, float(sc.counted_from_s), float(sc.week_start_s))


def network(hidden, top_k, prior_scale=1.0, atc_prior=True):
    """An untrained farm scorer: with the ATC prior, ATC on remaining work plus a near-zero correction."""
    return TaskScorer(
        n_task=decide.N_TASK, n_global=decide.N_GLOBAL, hidden=int(hidden), atc_prior=bool(atc_prior),
        prior_scale=float(prior_scale), top_k=int(top_k),
    )  # fmt: skip


def compiled(net, atc_k, p_ref, profile):
    """The compiled form (``kernel.Net``) of the farm scorer ``net``'s current weights."""
    return kernel.of_network(net, atc_k, p_ref, profile)


def _load(farm, machines):
    state, order = chunks.load(farm.arrays, farm.cols, machines)
    return state, order


def ends(knet, farm, machines, sync_s=0.0):
    """Each job's completion (row order) of ``farm`` under the greedy policy ``knet`` (``sync_s``:
    0, it decides at each free GPU; > 0, it ranks at syncs and the farm dispatches between)."""
    state, order = _load(farm, machines)
    net = kernel.at_week(knet, farm.week_start_s)
    n = len(order)
    if sync_s > 0:
        y = sync.Synced(np.zeros(n), np.zeros(n), np.zeros(n, np.int64))
        ws = decide.workspace(n, net)
        greedy, none = np.zeros((0, 1)), synced.record(0, 1)
        synced.run_ranked(state, y, net, ws, float(sync.check_sync(sync_s)), greedy, none, synced.scratch(n))
    else:
        ws = decide.workspace(net.top_k if net.top_k > 0 else n, net)
        decide.run_policy(state, net, ws, np.zeros((0, 1)), decide.no_record())
    job, _chunk, _start, end, _m = chunks.unload(state, order)
    return chunks.job_ends(job, end, n)


def cost(farm, job_end):
    """The total weighted tardiness of the counted jobs (those arriving at or after the warm-up)."""
    arr, _dur, _est, w, due = farm.arrays
    counted = arr >= farm.counted_from_s
    return float(weighted_tardiness(job_end[counted], due[counted], w[counted]))


def chunk_count(farm):
    """The chunks of ``farm``: the decisions of a run at sync 0."""
    return int(chunks.counts(farm.cols[0], farm.cols[1]).sum())


def sampled(knet, farm, machines, u):
    """A run of the sampling policy ``knet`` on ``farm`` with uniforms ``u`` ((chunks, K) in (0, 1)):
    (its :class:`decide.Record`, each decision's reward: minus the weighted tardiness of the job
    whose last chunk it started, counted jobs only, 0 for the other decisions; each job's
    completion in row order)."""
    state, order = _load(farm, machines)
    net = kernel.at_week(knet, farm.week_start_s)
    D, K = u.shape
    rec = decide.Record(
        np.zeros((D, K, decide.N_TASK), np.float32), np.zeros((D, decide.N_CTX), np.float32),
        np.zeros(D, np.int64), np.zeros(D, np.int64), np.zeros(D), np.zeros(D), np.zeros(D, np.int64),
    )  # fmt: skip
    taken = decide.run_policy(state, net, decide.workspace(K, net), u, rec)
    assert taken == D, (taken, D)
    job, _chunk, _start, end, _m = chunks.unload(state, order)
    job_end = chunks.job_ends(job, end, len(order))
    done = job_end[order]  # arrival order, as rec.job
    arr, w, due = state.arr, state.w, state.due
    late = np.where(arr >= farm.counted_from_s, w * np.maximum(done - due, 0.0), 0.0)
    last = np.zeros(D, bool)  # a job's last decision: the start of its last chunk
    first_from_end = np.unique(rec.job[::-1], return_index=True)[1]
    last[D - 1 - first_from_end] = True
    reward = np.where(last, -late[rec.job], 0.0)
    return rec, reward, job_end


def sampled_synced(knet, farm, machines, sync_s, u):
    """A run of the sampling policy ``knet`` ranking at syncs every ``sync_s`` > 0 seconds, with
    uniforms ``u`` ((``synced.max_syncs``, K) in (0, 1), K >= ``top_k``): (its
    :class:`synced.RankRecord` of the syncs taken, each job's weighted tardiness (counted jobs
    only) and the start of its last chunk, in row order; each job's completion in row order)."""
    state, order = _load(farm, machines)
    net = kernel.at_week(knet, farm.week_start_s)
    n = len(order)
    D, K = u.shape
    rec = synced.record(D, K)
    y = sync.Synced(np.zeros(n), np.zeros(n), np.zeros(n, np.int64))
    ws, sc = decide.workspace(n, net), synced.scratch(n)
    _taken, d = synced.run_ranked(state, y, net, ws, float(sync.check_sync(sync_s)), u, rec, sc)
    rec = synced.RankRecord(*(a[:d] for a in rec))
    job, _chunk, start, end, _m = chunks.unload(state, order)
    job_end = chunks.job_ends(job, end, n)
    last_start = np.full(n, -np.inf)
    np.maximum.at(last_start, job, start)
    arr, _dur, _est, w, due = farm.arrays
    late = np.where(arr >= farm.counted_from_s, w * np.maximum(job_end - due, 0.0), 0.0)
    return rec, late, last_start, job_end
