"""The benchmark's statistics on cases small enough to compute by hand: the bootstrap's
resamples, its percentile interval at a given level, the paired difference, wins/ties/losses,
and the winner rule: the incumbent (atc-tuned, else atc) is kept unless the evidence says otherwise."""

import itertools
import re

import numpy as np
import pytest

from sched.evaluate.statistics import bootstrap_counts, interval, paired_difference, win_tie_loss
from sched.verdict.winner import choose_winner


def every_resample(n):
    """Every way of drawing n scenarios out of n with replacement, as counts: (C(2n-1, n), n)."""
    rows = [c for c in itertools.product(range(n + 1), repeat=n) if sum(c) == n]
    return np.array(rows, dtype=np.int64)


# --------------------------------------------------------------------------- the resamples


def test_bootstrap_counts_draw_n_scenarios_uniformly_with_replacement():
    counts = bootstrap_counts(5, 300, seed=7)
    assert counts.shape == (300, 5) and counts.dtype.kind == "i"
    assert (counts >= 0).all() and (counts.sum(1) == 5).all()
    np.testing.assert_array_equal(counts, bootstrap_counts(5, 300, seed=7))  # seeded
    assert not np.array_equal(counts, bootstrap_counts(5, 300, seed=8))
    # two scenarios: the resamples (2, 0), (1, 1), (0, 2) have probabilities 1/4, 1/2, 1/4
    two = bootstrap_counts(2, 40_000, seed=1)
    share = [np.mean(two[:, 0] == k) for k in (2, 1, 0)]
    np.testing.assert_allclose(share, [0.25, 0.5, 0.25], atol=0.01)


# --------------------------------------------------------------------------- the interval


@pytest.mark.parametrize(
    "level, lo, hi",
    [(0.9, 5.0, 95.0), (0.95, 2.5, 97.5), (0.5, 25.0, 75.0)],
)
def test_interval_is_the_central_percentile_interval_of_the_level(level, lo, hi):
    """Samples 0, 1, ..., 100: the q-quantile is 100 q exactly, so a level-L interval is
    [50 (1 - L), 100 - 50 (1 - L)]."""
    samples = np.arange(101.0)[::-1]  # order does not matter
    got = interval(samples, level)
    assert got == pytest.approx((lo, hi), abs=1e-9)


def test_interval_leaves_out_undefined_resamples_and_gives_none_when_most_are():
    samples = np.array([np.nan, 0.0, np.inf, 10.0, -np.inf, 20.0])  # 3 finite of 6: kept
    assert interval(samples, 0.9) == pytest.approx(np.percentile([0.0, 10.0, 20.0], [5, 95]))
    lo, hi = interval(np.array([np.nan, np.nan, 1.0, np.inf, 2.0]), 0.9)  # 2 of 5: none
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = interval(np.array([np.nan, np.nan]), 0.9)
    assert np.isnan(lo) and np.isnan(hi)


# --------------------------------------------------------------------------- the paired difference


def test_paired_difference_over_every_resample_by_hand():
    """Three scenarios, reference 20 each, policy 20, 17, 14: on the resample with counts
    (a, b, c) the difference is (17 b + 14 c - 20 (b + c)) / 60 * 100 = -5 b - 10 c %.
    Over the 10 resamples, sorted: -30, -25, -20, -20, -15, -15, -10, -10, -5, 0. Linear
    interpolation between order statistics (numpy's default): the 5 % quantile sits at
    position 0.45, -30 + 0.45 * 5 = -27.75; the 95 % at 8.55, -5 + 0.55 * 5 = -2.25; the
    2.5 % at 0.225, -28.875; the 97.5 % at 8.775, -1.125."""
    ref = np.array([20.0, 20.0, 20.0])
    x = np.array([20.0, 17.0, 14.0])
    counts = every_resample(3)
    assert len(counts) == 10
    samples = np.sort(-5.0 * counts[:, 1] - 10.0 * counts[:, 2])
    assert samples.tolist() == [-30, -25, -20, -20, -15, -15, -10, -10, -5, 0]
    assert paired_difference(x, ref, counts, 0.9) == pytest.approx((-15.0, -27.75, -2.25))
    assert paired_difference(x, ref, counts, 0.95) == pytest.approx((-15.0, -28.875, -1.125))
    # the same as numpy.percentile of the resampled differences, at (1 - level) / 2 and 1 - that
    for level in (0.9, 0.95):
        a = (1 - level) / 2 * 100
        want = np.percentile(samples, [a, 100 - a])
        assert paired_difference(x, ref, counts, level)[1:] == pytest.approx(tuple(want))


def test_paired_difference_is_the_ratio_of_totals_and_pairs_scenarios():
    # scenario totals 1 vs 2 and 30 vs 10: (31 - 12) / 12, not the mean of -50 % and +200 %
    d, _, _ = paired_difference([1.0, 30.0], [2.0, 10.0], every_resample(2), 0.9)
    assert d == pytest.approx(19 / 12 * 100)
    # paired: the same resample for both. Resample (2, 0): (2 - 4) / 4 = -50 %; (1, 1): the
    # point; (0, 2): +200 %. Unpaired draws would give other values.
    x, ref = np.array([1.0, 30.0]), np.array([2.0, 10.0])
    counts = every_resample(2)  # (2, 0), (1, 1), (0, 2) in some order
    samples = (counts @ x - counts @ ref) / (counts @ ref) * 100
    assert sorted(samples) == pytest.approx([-50.0, 19 / 12 * 100, 200.0])
    assert paired_difference(x, ref, counts, 0.5)[1:] == pytest.approx(
        tuple(np.percentile(samples, [25, 75]))
    )


def test_paired_difference_with_zero_reference_totals():
    """Resample (2, 0) draws only the scenario whose reference is 0: undefined, left out.
    The others: (1, 1), (5 + 10 - 10) / 10 = +50 %; (0, 2), 0 %."""
    counts = every_resample(2)
    d, lo, hi = paired_difference([5.0, 10.0], [0.0, 10.0], counts, 0.9)
    assert d == pytest.approx(50.0)
    assert (lo, hi) == pytest.approx((2.5, 47.5))  # the 5 % and 95 % points between 0 and 50
    # a reference that is 0 everywhere: no difference at all
    assert all(np.isnan(v) for v in paired_difference([1.0, 2.0], [0.0, 0.0], counts, 0.9))


# --------------------------------------------------------------------------- wins, ties, losses


def test_win_tie_loss_relative_and_absolute_tolerance():
    """A tie is |x - ref| <= abs + rel * max(|x|, |ref|); otherwise lower is a win."""
    rel, abs_s = 0.1, 1.0
    cases = [
        (10.0, 10.5, "tie"),  # 0.5 <= 1 + 1.05
        (100.0, 111.0, "tie"),  # 11 <= 1 + 11.1: a tie by the relative part only
        (100.0, 113.0, "win"),  # 13 > 1 + 11.3
        (0.0, 1.0, "tie"),  # 1 <= 1 + 0.1: the absolute part at 0
        (0.0, 1.2, "win"),  # 1.2 > 1 + 0.12
        (5.0, 3.0, "loss"),  # 2 > 1 + 0.5
        (3.0, 5.0, "win"),
    ]
    for x, ref, want in cases:
        got = win_tie_loss([x], [ref], rel, abs_s)
        assert got == {"win": (1, 0, 0), "tie": (0, 1, 0), "loss": (0, 0, 1)}[want], (x, ref)
    xs, refs, _ = zip(*cases)
    assert win_tie_loss(xs, refs, rel, abs_s) == (3, 3, 1)


def test_win_tie_loss_boundaries():
    # the bound itself is a tie
    assert win_tie_loss([2.0], [0.0], 0.0, 2.0) == (0, 1, 0)
    assert win_tie_loss([2.0], [0.0], 0.0, 1.999) == (0, 0, 1)
    # the relative part is of the larger of the two: 10 <= 0.095 * 110, though > 0.095 * 100
    assert win_tie_loss([110.0], [100.0], 0.095, 0.0) == (0, 1, 0)
    assert win_tie_loss([100.0], [110.0], 0.095, 0.0) == (0, 1, 0)
    assert win_tie_loss([110.0], [100.0], 0.09, 0.0) == (0, 0, 1)
    # no tolerance: only equal totals tie
    assert win_tie_loss([1.0, 1.0, 2.0], [1.0, 2.0, 1.0], 0.0, 0.0) == (1, 1, 1)


# --------------------------------------------------------------------------- the winner and the incumbent

SPECS = {
    "fifo": {"kind": "rule", "rule": "fifo", "atc_k": None, "policy_file": None},
    "atc": {"kind": "rule", "rule": "atc", "atc_k": 2.0, "policy_file": None},
    "edd": {"kind": "rule", "rule": "edd", "atc_k": None, "policy_file": None},
    "wmdd": {"kind": "rule", "rule": "wmdd", "atc_k": None, "policy_file": None},
    "atc-tuned": {"kind": "rule", "rule": "atc", "atc_k": 1.0, "policy_file": None},
    "ppo-1": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "p1.pt"},
    "ppo-2": {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": "p2.pt"},
}


def test_a_learned_policy_best_but_not_significant_leaves_the_rule_champion():
    """ppo-1 has the lowest mean (95) but wins on scenarios 1 and 3 only: its paired interval
    against the runner-up, wmdd (mean 98), crosses zero. ppo-2 (96) is the second-lowest mean
    but another seed of the same method: not the runner-up. The run has no atc-tuned, so the
    incumbent is atc (mean 100); wmdd is below it on every scenario, so wmdd replaces it (the
    champion of the rules), and ppo-1 does not replace wmdd."""
    twt = {
        "fifo": np.array([300.0, 300.0, 300.0, 300.0]),
        "atc": np.array([100.0, 100.0, 100.0, 100.0]),
        "wmdd": np.array([98.0, 98.0, 98.0, 98.0]),
        "ppo-1": np.array([50.0, 150.0, 60.0, 120.0]),
        "ppo-2": np.array([96.0, 96.0, 96.0, 96.0]),
    }
    counts = every_resample(4)
    d, lo, hi = paired_difference(twt["ppo-1"], twt["wmdd"], counts, 0.95)
    assert d == pytest.approx((95 - 98) / 98 * 100) and lo < 0 < hi  # the premise
    w = choose_winner(twt, SPECS, counts, 0.95)
    assert (w["policy"], w["rule"], w["atc_k"], w["policy_file"]) == ("wmdd", "wmdd", None, None)
    assert w["significant"] is True and w["runner_up"] == "atc"
    # the difference reported is the champion's against the incumbent it replaced
    assert (w["mean_difference_pct"], *w["ci95_pct"]) == pytest.approx(
        paired_difference(twt["wmdd"], twt["atc"], counts, 0.95)
    )
    assert w["reason"].startswith("wmdd replaces the incumbent, atc: significantly better than it.")
    assert (
        f"ppo-1 against wmdd: {d:+.2f} % (paired bootstrap 95 % interval [{lo:+.2f} %, {hi:+.2f} %], "
        "which does not lie entirely below zero)"
    ) in w["reason"]
    # without wmdd, the incumbent atc is kept against ppo-1's lower mean within the noise
    no_wmdd = {p: v for p, v in twt.items() if p != "wmdd"}
    w = choose_winner(no_wmdd, SPECS, counts, 0.95)
    assert (w["policy"], w["significant"], w["runner_up"]) == ("atc", False, "ppo-1")
    back = paired_difference(twt["atc"], twt["ppo-1"], counts, 0.95)
    assert (w["mean_difference_pct"], *w["ci95_pct"]) == pytest.approx(back)
    assert w["reason"].startswith("The incumbent, atc, is kept: no policy is significantly better than it.")
    # the same table with ppo-1 better on every scenario: it wins, significantly
    twt["ppo-1"] = np.array([50.0, 90.0, 60.0, 80.0])
    w = choose_winner(twt, SPECS, counts, 0.95)
    assert (w["policy"], w["significant"], w["runner_up"]) == ("ppo-1", True, "wmdd")
    assert w["policy_file"] == "p1.pt" and w["ci95_pct"][1] < 0
    assert "ppo-1 replaces wmdd, which replaced the incumbent atc" in w["reason"]


def _four_gpus(edd):
    """Issue 32's 4-GPU setting in miniature: edd 1 % below atc-tuned on average (132.4 against
    133.8), a learned policy behind both; atc (k = 2) behind atc-tuned."""
    tuned = np.array([120.0, 150.0, 125.2, 140.0])
    return {
        "fifo": tuned * 3,
        "atc": tuned * 1.05,
        "atc-tuned": tuned,
        "edd": np.asarray(edd, dtype=float),
        "ppo-1": tuned * 1.02,
    }


def test_a_rule_ahead_within_the_noise_does_not_replace_the_incumbent():
    twt = _four_gpus([105.0, 170.0, 114.6, 140.0])  # ahead on two days, behind on one
    counts = every_resample(4)
    assert twt["edd"].mean() == pytest.approx(132.4) and twt["atc-tuned"].mean() == pytest.approx(133.8)
    d, lo, hi = paired_difference(twt["edd"], twt["atc-tuned"], counts, 0.95)
    assert lo < 0 < hi  # the premise: a tie
    w = choose_winner(twt, SPECS, counts, 0.95)
    # the verdict stays on the field's reference rule, with the k tuned for the setting
    assert (w["policy"], w["rule"], w["atc_k"], w["significant"]) == ("atc-tuned", "atc", 1.0, False)
    assert w["runner_up"] == "edd"
    back = paired_difference(twt["atc-tuned"], twt["edd"], counts, 0.95)
    assert (w["mean_difference_pct"], *w["ci95_pct"]) == pytest.approx(back)
    assert w["reason"].startswith("The incumbent, atc-tuned, is kept: no policy is significantly better")
    assert f"edd against atc-tuned: {d:+.2f} %" in w["reason"]
    # ahead on every scenario: significantly better than the incumbent, so edd replaces it
    twt = _four_gpus(twt["atc-tuned"] * 0.99)
    w = choose_winner(twt, SPECS, counts, 0.95)
    assert (w["policy"], w["rule"], w["significant"], w["runner_up"]) == ("edd", "edd", True, "atc-tuned")
    assert w["ci95_pct"][1] < 0 and "edd replaces the incumbent, atc-tuned" in w["reason"]


def test_a_learned_policy_must_beat_the_incumbent_too():
    """ppo-1 is below the runner-up wmdd on every scenario, but the incumbent atc-tuned (mean
    100) varies so much that ppo-1's interval against it crosses zero: atc-tuned is kept."""
    twt = {
        "fifo": np.array([300.0, 300.0, 300.0, 300.0]),
        "atc-tuned": np.array([40.0, 160.0, 50.0, 150.0]),
        "wmdd": np.array([98.0, 98.0, 98.0, 98.0]),
        "ppo-1": np.array([95.0, 95.0, 95.0, 95.0]),
    }
    counts = every_resample(4)
    assert paired_difference(twt["ppo-1"], twt["wmdd"], counts, 0.95)[2] < 0
    lo, hi = paired_difference(twt["ppo-1"], twt["atc-tuned"], counts, 0.95)[1:]
    assert lo < 0 < hi  # the premise
    w = choose_winner(twt, SPECS, counts, 0.95)
    assert (w["policy"], w["significant"], w["runner_up"]) == ("atc-tuned", False, "ppo-1")
    assert "The incumbent, atc-tuned, is kept" in w["reason"]
    assert re.search(r"ppo-1 against atc-tuned: [^;]* which does not lie entirely below zero", w["reason"])


def test_the_incumbent_is_atc_without_atc_tuned_and_needed():
    from sched.evaluate.errors import BenchmarkError

    twt = {"fifo": np.array([3.0, 3.0]), "edd": np.array([1.0, 1.0])}
    with pytest.raises(BenchmarkError, match="the winner needs the incumbent, atc-tuned or atc"):
        choose_winner(twt, SPECS, every_resample(2), 0.95)
