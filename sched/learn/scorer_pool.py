"""The queue context of the scorer at one decision, fast, with an error bound.

The scorer (``sched.learn.scorer``) reads, at every decision, the mean and
the maximum of each per-task feature over the whole waiting queue
(``sched.learn.features``). Computed as ``features._encode_slot`` does it,
that is five libm transcendentals (log, asinh) per waiting task and a full
sort per decision: the slow part of ``rank()`` with a learned policy.

The features move with the clock and the mean estimate at every decision,
so no value can be kept from one decision to the next, and a mean of
``asinh`` values summed in queue order cannot be reproduced bit for bit
without evaluating every one. This module computes instead, per decision,
in a few vectorised passes over a copy of the queue (:class:`Mirror`):

* exactly (the same floating-point operations as ``_encode_slot``): the
  mean estimate ``pbar``, every task's ATC log index, the ``top_k``
  candidates in ATC order (ties in queue order, as the stable sort), the
  count of late tasks;
* approximately, with a bound on the distance to the value ``_encode_slot``
  and the pooling loop give: the means and maxima of the features. A sum of
  logs is the log of a product (one multiplication per task, one libm log
  per decision), ``asinh(x) = log(|x| + sqrt(x*x + 1))`` with the sign of
  ``x``, the ATC rank's mean is (n - 1) / (2n).

Every bound is a sum of per-task errors (a few units in the last place of
each value: libm's accuracy, one rounding per operation) and of the
summation error of n terms in any order (gamma_n times the sum of
magnitudes), for both computations, times a safety factor of 4. They are
checked against the exact values on random queues in
``tests/test_rank_scaling.py``.
"""

import math

import numba as nb
import numpy as np

from sched.learn import features as F

U = 2.0**-53  # unit roundoff of float64
FLOOR = -F.ATC_FLOOR  # 30: the features' floor and cap
BIG = 2.0**14  # |x| beyond this: evaluated one by one with libm
BLOCK = 32  # 32 values in [2**-15, 2**15]: a block within 2**480, times the running product (kept
# within 2**500 by exact powers of two) within 2**980: float64 never overflows
_HI, _LO = 2.0**500, 2.0**-500
LN2 = math.log(2.0)
SAFETY = 4.0
# Reassociation (vectorised sums), contraction and reciprocals; no "nnan", "ninf"
# (infinities and NaN stay defined) and no "afn" (sqrt stays correctly rounded).
FASTMATH = {"reassoc", "nsz", "contract", "arcp"}

# Rows of the mirror's static values, in queue order.
R_P, R_D, R_ARR, R_L, R_C, R_LOGW, R_LOGP, R_RW = range(8)
N_ROWS = 8
# Per-decision rows.
W_A, W_A3, W_A5, W_A6, W_A8 = range(5)
# Slots of the accumulator array.
S_LOGW, S_ABS_LOGW, S_LOGP, S_ABS_LOGP, S_X4, S_X7, S_X9, N_BIG = range(8)
PROD = 8  # six (mantissa, exponent) pairs: asinh3 >= 0, < 0, asinh5 >= 0, < 0, asinh6, log A8
MAX_P, MAX_A3, MAX_A5, MAX_A6, MAX_A8, MIN_A8, MAX_LOGW, MAX_L = range(PROD + 12, PROD + 20)
ARG_MIN_A8, N_NEAR_A8 = PROD + 20, PROD + 21  # the entry of MIN_A8; live entries near it
MAX_D = PROD + 22
N_ACC = PROD + 23


@nb.njit(cache=True)
def gamma(n):
    """Bound on the relative error of a sum of n terms in any order (Higham's gamma_n)."""
    return n * U / (1.0 - n * U)


def mirror(n):
    """Empty mirror arrays for up to n tasks: (idx, live, rows, state).

    The mirror is the waiting queue of slot 0 as contiguous arrays, in queue
    order: ``idx[:len]`` task numbers (increasing), ``live`` 1.0 while the
    task waits, ``rows[:, :len]`` static values (``R_*``); ``state`` = [len,
    live count, next task to append]. Started tasks stay as dead entries
    until a fifth are dead (then the live ones move up, in order):
    the passes stay contiguous and a removal costs no shift.
    """
    n = max(n, 1)
    return np.zeros(n, np.int64), np.zeros(n), np.zeros((N_ROWS, n)), np.zeros(3, np.int64)


@nb.njit(cache=True)
def sync(s, idx, live, rows, state):
    """Bring the mirror up to slot 0's queue: append arrivals, and rebuild the live
    flags if a task was started elsewhere (a forced start of a lone task)."""
    ln, nl, nxt = state[0], state[1], state[2]
    while nxt < s.nxt[0]:
        j = nxt
        nxt += 1
        if not math.isnan(s.start[0, j]):
            continue
        p, w, d = s.est[0, j], s.w[0, j], s.due[0, j]
        idx[ln] = j
        live[ln] = 1.0
        rows[R_P, ln], rows[R_D, ln], rows[R_ARR, ln] = p, d, s.arr[0, j]
        rows[R_L, ln] = math.log(w / p)  # rules.static_part(ATC, p, w)
        rows[R_C, ln] = d - p
        rows[R_LOGW, ln], rows[R_LOGP, ln], rows[R_RW, ln] = math.log(w), math.log(p), 1.0 / w
        ln += 1
        nl += 1
    if nl != s.qlen[0]:
        nl = 0
        for i in range(ln):
            live[i] = 1.0 if math.isnan(s.start[0, idx[i]]) else 0.0
            nl += live[i] > 0.0
    if 4 * (ln - nl) > max(128, nl):
        k = 0
        for i in range(ln):
            if live[i] > 0.0:
                idx[k] = idx[i]
                live[k] = 1.0
                for r in range(N_ROWS):
                    rows[r, k] = rows[r, i]
                k += 1
        ln = k
    state[0], state[1], state[2] = ln, nl, nxt


@nb.njit(cache=True)
def kill(j, idx, live, state):
    """Mark task j started (binary search: idx is increasing)."""
    lo, hi = 0, state[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if idx[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    if state[0] > 0 and idx[lo] == j and live[lo] > 0.0:
        live[lo] = 0.0
        state[1] -= 1


@nb.njit(cache=True)
def queue_sum(ln, live, rows, acc):
    """Sum of the waiting tasks' estimates in queue order, ``_encode_slot``'s bit for bit
    (a dead entry adds an exact 0.0); the largest static values of the live entries
    alongside (free: the sum's additions wait on each other)."""
    work = 0.0
    lo = -1e308
    mp = mlw = mL = md = lo
    for i in range(ln):
        on = live[i] > 0.0
        work += rows[R_P, i] * live[i]
        mp = max(mp, rows[R_P, i] if on else lo)
        mlw = max(mlw, rows[R_LOGW, i] if on else lo)
        mL = max(mL, rows[R_L, i] if on else lo)
        md = max(md, rows[R_D, i] if on else lo)
    acc[MAX_P], acc[MAX_LOGW], acc[MAX_L], acc[MAX_D] = mp, mlw, mL, md
    return work


@nb.njit(cache=True, error_model="numpy")
def exact_args(ln, live, rows, t, K, rP, with6, wk):
    """Per entry: the ATC log index (``rules.atc_log_index``'s operations: exact), the
    asinh arguments (times 1 / pbar; the waiting times' only ``with6``) and the WMDD
    ratio (times 1 / w). Returns the count of late waiting tasks (exact)."""
    late = 0
    if with6:
        for i in range(ln):
            wk[W_A6, i] = (t - rows[R_ARR, i]) * rP
    for i in range(ln):
        p, d = rows[R_P, i], rows[R_D, i]
        wk[W_A, i] = rows[R_L, i] - max(rows[R_C, i] - t, 0.0) / K
        dt = d - t
        wk[W_A3, i] = (dt - p) * rP
        wk[W_A5, i] = dt * rP
        wk[W_A8, i] = max(p, dt) * rows[R_RW, i]
        late += (live[i] > 0.0) & (d < t + p)
    return late


@nb.njit(cache=True)
def select(ln, live, rows, wk, top_k, pos, acc):
    """The ``top_k`` largest ATC indices among live entries, ties in queue order
    (``_encode_slot``'s stable argsort): ``pos[:m]`` their entries, best first; returns
    m. Also the largest and smallest arguments of the live entries into ``acc``."""
    a = wk[W_A]
    lo, hi = -1e308, 1e308
    m3 = m8 = lo
    n8 = hi
    i8 = 0
    m = 0
    thr = -np.inf  # the m-th best so far once m == top_k: a new entry must beat it
    for i in range(ln):
        on = live[i] > 0.0  # no branch: dead entries are frequent and scattered
        m3 = max(m3, wk[W_A3, i] if on else lo)
        m8 = max(m8, wk[W_A8, i] if on else lo)
        x8 = wk[W_A8, i] if on else hi
        i8 = i if x8 < n8 else i8
        n8 = min(n8, x8)
        v = a[i]
        if on and (m < top_k or v > thr):
            r = m if m < top_k else top_k - 1
            while r > 0 and v > a[pos[r - 1]]:  # strict: equal values keep queue order
                pos[r] = pos[r - 1]
                r -= 1
            pos[r] = i
            if m < top_k:
                m += 1
            if m == top_k:
                thr = a[pos[m - 1]]
    acc[MAX_A3] = m3
    acc[MAX_A8], acc[MIN_A8], acc[ARG_MIN_A8] = m8, n8, i8
    return m


@nb.njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def sums(ln, live, rows, wk, atc_max, L_max, acc):
    """Sums over the live entries: log w, log p (and their magnitudes), slack_pos,
    the floored atc and wspt features."""
    s_lw = s_alw = s_lp = s_alp = s4 = s7 = s9 = 0.0
    for i in range(ln):
        lv = live[i]
        lw, lp = rows[R_LOGW, i], rows[R_LOGP, i]
        s_lw += lv * lw
        s_alw += lv * abs(lw)
        s_lp += lv * lp
        s_alp += lv * abs(lp)
        s4 += lv * min(max(wk[W_A3, i], 0.0), FLOOR)
        s7 += lv * max(wk[W_A, i] - atc_max, -FLOOR)
        s9 += lv * max(rows[R_L, i] - L_max, -FLOOR)
    acc[S_LOGW], acc[S_ABS_LOGW], acc[S_LOGP], acc[S_ABS_LOGP] = s_lw, s_alw, s_lp, s_alp
    acc[S_X4], acc[S_X7], acc[S_X9] = s4, s7, s9


@nb.njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def products(ln, live, wk, near8, acc):
    """Products over the live entries of |x| + sqrt(x*x + 1) (for asinh: x >= 0 and
    x < 0 apart) and of the WMDD ratio, by blocks of BLOCK, as mantissa and exponent;
    the count of values left out (for :func:`fixups`), of WMDD ratios up to ``near8``."""
    for i in range(6):
        acc[PROD + 2 * i] = 1.0
        acc[PROD + 2 * i + 1] = 0.0
    big = near = 0.0
    for b0 in range(0, ln, BLOCK):
        p3p = p3n = p5p = p5n = p8 = 1.0
        for i in range(b0, min(b0 + BLOCK, ln)):
            on = live[i] > 0.0
            x3, x5, x8 = wk[W_A3, i], wk[W_A5, i], wk[W_A8, i]
            ok3 = on & (abs(x3) <= BIG)
            ok5 = on & (abs(x5) <= BIG)
            ok8 = on & (x8 >= 1.0 / BIG) & (x8 <= BIG)
            big += 3.0 * on - ok3 - ok5 - ok8
            near += on & (x8 <= near8)
            y3 = abs(x3) + math.sqrt(x3 * x3 + 1.0)
            y5 = abs(x5) + math.sqrt(x5 * x5 + 1.0)
            p3p *= y3 if ok3 & (x3 >= 0.0) else 1.0
            p3n *= y3 if ok3 & (x3 < 0.0) else 1.0
            p5p *= y5 if ok5 & (x5 >= 0.0) else 1.0
            p5n *= y5 if ok5 & (x5 < 0.0) else 1.0
            p8 *= x8 if ok8 else 1.0
        _fold(acc, 0, p3p)
        _fold(acc, 1, p3n)
        _fold(acc, 2, p5p)
        _fold(acc, 3, p5n)
        _fold(acc, 5, p8)
    acc[N_BIG], acc[N_NEAR_A8] = big, near


@nb.njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def products6(ln, live, wk, acc):
    """The product for asinh of the waiting times (x >= 0), when arrivals differ."""
    big = 0.0
    for b0 in range(0, ln, BLOCK):
        p6 = 1.0
        for i in range(b0, min(b0 + BLOCK, ln)):
            x6 = wk[W_A6, i]
            on = live[i] > 0.0
            big += on & (x6 > BIG)
            p6 *= x6 + math.sqrt(x6 * x6 + 1.0) if on & (x6 <= BIG) else 1.0
        _fold(acc, 4, p6)
    acc[N_BIG] += big


@nb.njit(cache=True, inline="always")
def _fold(acc, i, block):
    """Multiply product i by a block's product, kept within [2**-500, 2**500] by exact powers of two."""
    v = acc[PROD + 2 * i] * block
    if v > _HI:
        v *= _LO
        acc[PROD + 2 * i + 1] += 500.0
    elif v < _LO:
        v *= _HI
        acc[PROD + 2 * i + 1] -= 500.0
    acc[PROD + 2 * i] = v


@nb.njit(cache=True)
def log_of(acc, i):
    """log of product i (its mantissa times 2 ** its exponent)."""
    return math.log(acc[PROD + 2 * i]) + acc[PROD + 2 * i + 1] * LN2


@nb.njit(cache=True)
def fixups(ln, live, wk, kmin, thr8, with6, out):
    """Values left out of the products (|x| > BIG), and WMDD features under the floor.

    out: [sum asinh3, sum |asinh3|, the same for 5, for 6 (``with6``: when
    :func:`products6` ran), x8 correction, entries left out of the x8 product].
    """
    for i in range(ln):
        if live[i] == 0.0:
            continue
        x3, x5, x6, x8 = wk[W_A3, i], wk[W_A5, i], wk[W_A6, i], wk[W_A8, i]
        if abs(x3) > BIG:
            v = math.asinh(x3)
            out[0] += v
            out[1] += abs(v)
        if abs(x5) > BIG:
            v = math.asinh(x5)
            out[2] += v
            out[3] += abs(v)
        if with6 and x6 > BIG:
            v = math.asinh(x6)
            out[4] += v
            out[5] += v
        left_out = not (1.0 / BIG <= x8 <= BIG)
        if left_out or x8 > thr8:
            z = kmin - math.log(x8)
            if left_out:
                out[6] += max(z, -FLOOR)
                out[7] += 1.0
            elif z < -FLOOR:  # in the product as log(x8): replace by the floor
                out[6] += -FLOOR - z


@nb.njit(cache=True)
def context(ql, work, pbar, rP, late, kmin, acc, fix, c, dc):
    """Means (c[:12]) and maxima (c[12:24]) of the features, and their bounds dc (module doc)."""
    n = ql
    g = gamma(n + 16)
    l0, l1, l2, l3, l4, l5 = (
        log_of(acc, 0),
        log_of(acc, 1),
        log_of(acc, 2),
        log_of(acc, 3),
        log_of(acc, 4),
        log_of(acc, 5),
    )
    sum3, abs3 = l0 - l1 + fix[0], l0 + l1 + fix[1]
    sum5, abs5 = l2 - l3 + fix[2], l2 + l3 + fix[3]
    sum6 = l4 + fix[4]
    sum8 = (n - fix[7]) * kmin - l5 + fix[6]
    log_pbar = math.log(pbar)
    x0sum = work * rP
    # (sum, alpha, beta, sum of magnitudes): bound = SAFETY (alpha u n + (beta u + g) magnitudes) / n
    terms = (
        (x0sum, 0.0, 8.0, x0sum),
        (acc[S_LOGP] - n * log_pbar, 8.0, 16.0, acc[S_ABS_LOGP] + n * abs(log_pbar)),
        (acc[S_LOGW], 0.0, 4.0, acc[S_ABS_LOGW]),
        (sum3, 16.0, 16.0, abs3),
        (acc[S_X4], 0.0, 8.0, acc[S_X4]),
        (sum5, 16.0, 16.0, abs5),
        (sum6, 16.0, 16.0, sum6),
        (acc[S_X7], 0.0, 4.0, abs(acc[S_X7])),
        (sum8, 16.0, 16.0, n * (2.0 * abs(kmin) + 4.0 * FLOOR)),
        (acc[S_X9], 0.0, 4.0, abs(acc[S_X9])),
        (0.0, 0.0, 0.0, 0.0),
        ((n - 1) / 2.0, 4.0, 4.0, n / 2.0),
    )
    for f in range(12):
        total, alpha, beta, mag = terms[f]
        c[f] = total / n
        dc[f] = SAFETY * (alpha * U * n + (beta * U + g) * mag) / n
    c[10] = late / n  # exact: the count of late tasks is
    _maxima(n, pbar, late, acc, c, dc)


@nb.njit(cache=True)
def _maxima(n, pbar, late, acc, c, dc):
    pmax, m3 = acc[MAX_P], acc[MAX_A3]
    c[12] = pmax / pbar
    c[13] = math.log(pmax / pbar)
    c[14] = acc[MAX_LOGW]
    c[15] = math.asinh(m3)
    c[16] = min(max(m3, 0.0), FLOOR)
    c[17] = math.asinh(acc[MAX_A5])
    c[18] = math.asinh(acc[MAX_A6])
    c[19] = c[20] = c[21] = 0.0  # the best task's own: atc, wmdd, wspt are 0
    c[22] = 1.0 if late > 0 else 0.0
    c[23] = (n - 1) / n
    for f in range(12, 24):
        dc[f] = SAFETY * 8.0 * U * (1.0 + abs(c[f])) if 13 <= f <= 18 else 0.0
