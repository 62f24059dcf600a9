"""The farm adapters' choice of the priorities to keep (sched.farms.adapter): the longest chain of
keepable jobs, computed in O(n log n), against the pairwise definition it replaces."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from sched.farms import adapter


def pairwise_chain(current, lowest, highest, cost):
    """The definition, every pair compared: job j keeps its priority after job i < j when
    p[i] - p[j] >= j - i, each j taking the longest chain, then the least total cost, then the
    first predecessor."""
    n = len(current)
    best, total, prev = [0] * n, [0.0] * n, [-1] * n
    for j, pj in enumerate(current):
        if not (lowest <= pj <= highest and highest - pj >= j):
            continue
        best[j], total[j] = 1, cost[j]
        before = 0.0  # the chosen predecessor's total, compared as it is (not as total - cost,
        # which rounding may move by an ulp and so turn a tie into a win)
        for i in range(j):
            if best[i] and current[i] - pj >= j - i and (best[i] + 1, -total[i]) > (best[j], -before):
                best[j], total[j], prev[j], before = best[i] + 1, total[i] + cost[j], i, total[i]
    return best, total, prev


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.integers(-3, 40), min_size=0, max_size=30),
    st.integers(0, 5),
    st.integers(20, 40),
    st.one_of(st.none(), st.integers(0, 40)),
)
def test_the_fast_chain_is_the_pairwise_one(current, lowest, highest, middle):
    """Lengths, costs and predecessors equal the pairwise definition's, ties and costs included
    (the costs: distances to an even spread around ``middle``, as new_priorities takes them)."""
    ideal = adapter._ideal(len(current), lowest, highest, middle)
    cost = [0.0] * len(current) if ideal is None else [abs(p - q) for p, q in zip(current, ideal)]
    assert adapter._longest_chain(current, lowest, highest, cost) == pairwise_chain(
        current, lowest, highest, cost
    )


def test_a_queue_of_thousands_keeps_what_the_pairwise_chain_keeps():
    """On 3,000 jobs of shuffled and repeated priorities (OpenCue's range) and on 3,000 jobs at
    Deadline Cloud's 101 levels, new_priorities keeps as many as the pairwise definition allows
    and its result decreases along the order."""
    rng = random.Random(7)
    distinct = [rng.randrange(1, 100_000) for _ in range(3000)]
    out = adapter.new_priorities(distinct, 1, 100_000)
    best, _, _ = pairwise_chain(distinct, 1, 100_000, [0.0] * 3000)
    ends = [b for j, b in enumerate(best) if b and distinct[j] - 1 >= 3000 - 1 - j]
    assert sum(a == b for a, b in zip(out, distinct)) == max(ends, default=0)
    assert all(a > b for a, b in zip(out, out[1:]))
    levels = [rng.randrange(0, 101) for _ in range(3000)]
    shared = adapter.new_priorities(levels, 0, 100, shared=True, spread=True, middle=50)
    assert all(a >= b for a, b in zip(shared, shared[1:])) and all(0 <= p <= 100 for p in shared)
    assert adapter.new_priorities(shared, 0, 100, shared=True, spread=True, middle=50) == shared
