"""One decision of the scorer's greedy rollout, certified: the fast path of ``rank()``.

``sched.learn.scorer._decide`` is the decision as the policy defines it:
encode every waiting task (``features._encode_slot``), pool the features
into the context, score the ``top_k`` candidates, take the first strict
maximum. :func:`decide` takes the same decision in time linear in the queue
with a small constant, or answers -1 and leaves it to ``_decide``:

1. what ``_decide`` computes exactly and cheaply is computed with the same
   floating-point operations (``sched.learn.scorer_pool``): the mean
   estimate, every ATC index, the candidates and their ranks, the
   candidates' own features, the global features;
2. the context (means and maxima over the queue) is computed
   approximately, with a bound ``dc`` on its distance to ``_decide``'s;
3. the candidates are scored by the same network with a vectorised tanh;
4. a bound ``E`` on ``|score here - score in _decide|`` is derived from
   ``dc``, the weights' magnitudes, the rounding of both evaluations and
   both tanh's accuracy. When the best score leads every other candidate
   by more than ``2 E``, ``_decide`` picks the same task: it is returned.
   Otherwise (near-ties, a non-finite value) the answer is -1.

So the order of tasks is the one the exact computation gives, for every
input; ``tests/test_rank_scaling.py`` compares both on random queues.
"""

import math

import numba as nb
import numpy as np

from sched.learn import features as F
from sched.learn import scorer_pool as P
from sched.sim import rules

N_TASK = F.N_TASK
N_CTX = 2 * F.N_TASK + F.N_GLOBAL
EPS_TANH_LIBM = 2.0**-48  # glibc's tanh is within 2 ulp (< 2**-52 for |tanh| < 1); 16x margin
EPS_TANH_FAST = 1e-13  # tanh_fast's error: < 4e-15 on a dense grid (tests); 25x margin
FLOOR_MARGIN = 29.0  # WMDD ratios beyond e**29 of the smallest: checked one by one for the floor (e**30)
MAX_TOP_K = 64  # larger candidate sets: the exact decision (the insertion of select grows with it)


def prepare(weights):
    """The arrays :func:`decide` needs from the scorer's weights (``scorer.weights_of``)."""
    W0, b0, W1, b1, W2, b2, lin = weights
    aW0, aW1, aW2 = np.abs(W0), np.abs(W1), np.abs(W2[0])
    Q = aW2 @ aW1  # |d score / d h0| bound, per hidden unit of the first layer
    G = Q @ aW0  # |d score / d input| bound (tanh is 1-Lipschitz)
    const = np.array(
        [
            Q @ np.abs(b0),
            Q.sum() + aW2.sum(),
            aW2 @ (np.abs(b1) + aW1.sum(1)),
            abs(b2[0]) + aW2.sum(),
        ]
    )
    c = np.ascontiguousarray
    return (c(W0.T), b0, c(W1.T), b1, c(W2[0]), float(b2[0]), lin, c(G), np.abs(lin), const)


_EXP_TAYLOR = np.array([1.0 / math.factorial(i) for i in range(10)])


@nb.njit(cache=True, fastmath=P.FASTMATH, error_model="numpy")
def tanh_fast(x):
    """tanh of every element of the 2-D array ``x``, in place: (1 - e) / (1 + e) with
    e = exp(-2|x|), e from a Taylor polynomial of exp(-|x| / 32) squared six times.

    The polynomial's truncation, |y|**10 / 10! relative for y = -|x| / 32, grows
    to 2**-6 relative after the squarings, where e < 1e-17: below 1e-16 in tanh;
    the roundings (64 squaring steps of e) stay below 4e-15 (tests)."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            xi = x[i, k]
            y = min(abs(xi), 20.0) * (-1.0 / 32.0)  # tanh(20) is 1.0 in float64
            e = _EXP_TAYLOR[9]
            for d in range(8, -1, -1):
                e = e * y + _EXP_TAYLOR[d]
            for _ in range(6):
                e = e * e
            t = (1.0 - e) / (1.0 + e)
            x[i, k] = t if xi >= 0.0 else -t


@nb.njit(cache=True)
def near_min(amin):
    """Approximate WMDD ratios above this cannot hold the smallest key (libm's log is
    within 2 ulp, the approximate ratios within 3 ulp of ``_encode_slot``'s)."""
    return amin * (1.0 + 64.0 * P.U * (2.0 + abs(math.log(amin))))


@nb.njit(cache=True)
def wmdd_min(s, ln, live, idx, t, A8, acc):
    """The queue's smallest WMDD key, as ``_encode_slot`` computes it: the exact key of
    every task whose approximate ratio is near the smallest (usually the smallest alone)."""
    if acc[P.N_NEAR_A8] == 1.0:
        return _wmdd_key(s, idx[int(acc[P.ARG_MIN_A8])], t)
    thr = near_min(acc[P.MIN_A8])
    kmin = np.inf
    for i in range(ln):
        if A8[i] <= thr and live[i] > 0.0:
            kmin = min(kmin, _wmdd_key(s, idx[i], t))
    return kmin


@nb.njit(cache=True)
def _wmdd_key(s, j, t):
    p, w, d = s.est[0, j], s.w[0, j], s.due[0, j]
    return math.log(max(p, d - t) / w)


@nb.njit(cache=True)
def candidate_features(s, idx, ql, t, k, pbar, pos, m, atc_max, kmin, L_max, X):
    """Rows of ``_encode_slot`` for the candidates (mirror entries ``pos[:m]``, ATC rank i
    for row i)."""
    fl = F.ATC_FLOOR
    for i in range(m):
        j = idx[pos[i]]
        p, w, d = s.est[0, j], s.w[0, j], s.due[0, j]
        log_wp = rules.static_part(rules.ATC, p, w)
        a = rules.atc_log_index(log_wp, p, d, t, k, pbar)
        key = math.log(max(p, d - t) / w)
        X[i, 0] = p / pbar
        X[i, 1] = math.log(p / pbar)
        X[i, 2] = math.log(w)
        X[i, 3] = math.asinh((d - t - p) / pbar)
        X[i, 4] = min(max(d - t - p, 0.0) / pbar, -fl)
        X[i, 5] = math.asinh((d - t) / pbar)
        X[i, 6] = math.asinh((t - s.arr[0, j]) / pbar)
        X[i, 7] = max(a - atc_max, fl)
        X[i, 8] = max(-(key - kmin), fl)
        X[i, 9] = max(log_wp - L_max, fl)
        X[i, 10] = 1.0 if d < t + p else 0.0
        X[i, 11] = i / ql


@nb.njit(cache=True)
def score(X, m, cin, fw, H0, H1, v):
    """Scores of the m candidates (rows of X) given the context ``cin``: the
    scorer's network, BLAS products (any summation order), :func:`tanh_fast`."""
    W0T, b0, W1T, b1, w2, b2, lin = fw[0], fw[1], fw[2], fw[3], fw[4], fw[5], fw[6]
    ctx = np.dot(cin, W0T[N_TASK:]) + b0
    h0, h1, x = H0[:m], H1[:m], X[:m]
    np.dot(x, W0T[:N_TASK], h0)
    h0 += ctx
    tanh_fast(h0)
    np.dot(h0, W1T, h1)
    h1 += b1
    tanh_fast(h1)
    v[:m] = np.dot(h1, w2) + np.dot(x, lin) + b2


@nb.njit(cache=True)
def error_bound(X, m, cin, dcin, fw):
    """Bound on |score here - score in ``_decide``| for every candidate (module doc).

    Rounding: a sum of n products is within gamma(n + 1) times the sum of their
    magnitudes whatever the order; tanh is 1-Lipschitz, within EPS of tanh; inputs
    within dcin of ``_decide``'s move a score by at most G . dcin.
    """
    G, alin, const = fw[7], fw[8], fw[9]
    Q_b0, Q_eps, W2_b1, top = const[0], const[1], const[2], const[3]
    big = 0.0  # G . max |input|
    lin_mag = 0.0
    for f in range(N_TASK):
        mx = 0.0
        for i in range(m):
            mx = max(mx, abs(X[i, f]))
        big += G[f] * mx
        lin_mag += alin[f] * mx
    drift = 0.0
    for f in range(N_CTX):
        big += G[N_TASK + f] * (abs(cin[f]) + dcin[f])  # either evaluation's inputs
        drift += G[N_TASK + f] * dcin[f]
    one = P.gamma(64) * (Q_b0 + big) + P.gamma(80) * W2_b1 + P.gamma(96) * (top + lin_mag)
    return 2.0 * (2.0 * one + Q_eps * (EPS_TANH_LIBM + EPS_TANH_FAST) + drift) + 1e-300


def workspace(n, top_k, hidden):
    """The arrays :func:`decide` works in, for queues of up to n tasks."""
    n = max(n, 1)
    return P.mirror(n) + (
        np.empty((5, n)),  # per entry: ATC index, A3, A5, A6, A8 (scorer_pool.W_*)
        np.empty(top_k, np.int64),  # candidates' entries, best ATC first
        np.empty(P.N_ACC),
        np.empty(8),  # scorer_pool.fixups
        np.empty(N_CTX),  # context
        np.zeros(N_CTX),  # its bound (the globals' stays 0: they are exact)
        np.empty((top_k, N_TASK)),
        np.empty((top_k, hidden)),
        np.empty((top_k, hidden)),
        np.empty(top_k),
    )


@nb.njit(cache=True)
def decide(s, k, p_ref, load, top_k, fw, ws):
    """Queue position of the task ``_decide`` starts now, or -1 when not certain."""
    idx, live, rows, mstate, wk, pos, acc, fix, cin, dcin, X, H0, H1, v = ws
    P.sync(s, idx, live, rows, mstate)
    ql, t, ln = s.qlen[0], s.t[0], mstate[0]
    work = P.queue_sum(ln, live, rows, acc)
    pbar = work / ql
    rP = 1.0 / pbar
    K = k * pbar
    if not (0.0 < K < np.inf and 0.0 < rP < np.inf and math.isfinite(t)):
        return -1
    # every waiting task arrived at once (rank's default): one waiting time
    with6 = s.arr[0, s.queue[0, 0]] != s.arr[0, s.queue[0, ql - 1]]
    late = P.exact_args(ln, live, rows, t, K, rP, with6, wk)
    m = P.select(ln, live, rows, wk, top_k, pos, acc)
    acc[P.MAX_A6] = (t - s.arr[0, s.queue[0, 0]]) * rP  # the earliest arrival waits longest
    acc[P.MAX_A5] = (acc[P.MAX_D] - t) * rP  # exact_args' operations, monotone in d
    atc_max = wk[P.W_A, pos[0]]
    P.sums(ln, live, rows, wk, atc_max, acc[P.MAX_L], acc)
    P.products(ln, live, wk, near_min(acc[P.MIN_A8]), acc)
    fix[:] = 0.0
    if with6:
        P.products6(ln, live, wk, acc)
    else:
        fix[4] = fix[5] = ql * math.asinh(acc[P.MAX_A6])
    for i in range(P.N_ACC):
        if not math.isfinite(acc[i]):
            return -1
    kmin = wmdd_min(s, ln, live, idx, t, wk[P.W_A8], acc)
    thr8 = acc[P.MIN_A8] * math.exp(FLOOR_MARGIN)
    if acc[P.N_BIG] > 0.0 or acc[P.MAX_A8] > thr8:
        P.fixups(ln, live, wk, kmin, thr8, with6, fix)
    P.context(ql, work, pbar, rP, late, kmin, acc, fix, cin, dcin)
    _globals(s, ql, t, work, pbar, p_ref, load, late, cin)
    for f in range(N_CTX):
        if not (math.isfinite(cin[f]) and math.isfinite(dcin[f])):
            return -1
    candidate_features(s, idx, ql, t, k, pbar, pos, m, atc_max, kmin, acc[P.MAX_L], X)
    score(X, m, cin, fw, H0, H1, v)
    E = error_bound(X, m, cin, dcin, fw)
    best = 0
    for i in range(1, m):
        if v[i] > v[best]:
            best = i
    for i in range(m):
        if not math.isfinite(v[i]) or (i != best and not v[best] - v[i] > 2.0 * E):
            return -1
    return queue_position(s, ql, idx[pos[best]])


@nb.njit(cache=True)
def queue_position(s, ql, j):
    """Where task j waits in slot 0's queue (the queue is in increasing task order)."""
    lo, hi = 0, ql - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if s.queue[0, mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


@nb.njit(cache=True)
def _globals(s, ql, t, work, pbar, p_ref, load, late, cin):
    """The global features (their one definition: ``features.global_features``)."""
    F.global_features(
        s.mfree[0], s.speed[0], s.pending[0], t, ql, work, pbar, p_ref, late, load, cin[2 * N_TASK :]
    )
