"""The one top-k: the K largest of a list of values, largest first, ties by index.

Its order is the rules' tie rule (``core.pick``: the first strict maximum in queue order):
the first K of a stable sort by decreasing value, an equal value behind those before it.
:func:`offer` keeps a running top K while a caller scans its values (the learned policy's
candidates, ``sched.learn.policy.kernel``, read the queue once for their aggregates too);
:func:`top` is the whole selection (the planner's candidates, ``sched.learn.search.plan``;
the Gymnasium environment's visible rows, ``sched.learn.env.gym_env``).
"""

import numba as nb
import numpy as np
from numba.extending import register_jitable


@register_jitable
def offer(idx, val, m, K, i, a):
    """Offer item ``i`` of value ``a`` to the running top ``K`` held in ``idx[:m]`` and
    ``val[:m]`` (largest first; ``K`` >= 1); returns the new ``m``. An equal value stays behind those
    offered before it, so items offered in index order end in the stable order."""
    if m < K:
        j = m
        m += 1
    elif a > val[K - 1]:
        j = K - 1
    else:
        return m
    while j > 0 and a > val[j - 1]:  # strict: an equal value stays behind (index order)
        idx[j] = idx[j - 1]
        val[j] = val[j - 1]
        j -= 1
    idx[j] = i
    val[j] = a
    return m


@nb.njit(cache=True)
def top(values, n, first=-1):
    """Indices of the ``n`` largest ``values`` above -inf (NaN is never one), largest first,
    ties by index; ``first`` (>= 0) is put first whatever its value."""
    K = min(n, values.shape[0])
    out = np.empty(K, dtype=np.int64)
    val = np.empty(K)
    i = 1 if first >= 0 and K > 0 else 0
    if i:
        out[0] = first
    rest_idx, rest_val = out[i:], val[i:]
    m = 0
    for q in range(values.shape[0] if K > i else 0):  # offer needs a K of at least 1
        if q != first and values[q] > -np.inf:
            m = offer(rest_idx, rest_val, m, K - i, q, values[q])
    return out[: i + m]
