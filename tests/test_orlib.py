"""External check against the OR-Library weighted-tardiness instances (1||sum wT).

All jobs are released at 0: a static instance. The simulator's totals must
equal a direct evaluation of the same job sequence, and no rule may ever beat
the published optimum or best-known value (that would reveal a simulator
bug). The full sets are read from ../shared/orlib (skipped when it is absent); three
instances are copied here, so that a fresh clone runs the check too: the rules
on them, and the clairvoyant search within 1 % of their optimum.
"""

import numpy as np
import pytest

from sched.evaluate.headroom import best_rule_starts, start_candidates
from sched.sim import clairvoyant, core, rules

FILES = {
    40: ("wt40.txt", "wtopt40.txt"),
    50: ("wt50.txt", "wtopt50.txt"),
    100: ("wt100.txt", "wtbest100b.txt"),
}

#: Instances 1, 14 and 43 of wt40.txt with their optima from wtopt40.txt (OR-Library, J. E.
#: Beasley, MIT licence): p, then w, then d, 40 numbers each, as in the file.
EMBEDDED_WT40 = {
    1: (
        """
          26   24   79   46   32   35   73   74   14   67   86   46   78   40   29   94   64   27   90   55
          35   52   36   69   85   95   14   78   37   86   44   28   39   12   30   68   70    9   49   50
           1   10    9   10   10    4    3    2   10    3    7    3    1    3   10    4    7    7    4    7
           5    3    5    4    9    5    2    8   10    4    7    4    9    5    7    7    5   10    1    3
        1588 1620 1731 1773 1694 1487 1566 1844 1727 1636 1599 1539 1855 1645 1709 1660 1582 1836 1484 1559
        1772 1510 1512 1795 1522 1509 1598 1658 1826 1628 1650 1833 1627 1528 1541 1497 1481 1446 1579 1814
        """,
        913,
    ),
    14: (
        """
          82   33   79   67   96    3   16   33   40    6   82   46    7   19   22   48   18   76   59   84
          24   59   96    5    2    9   10   61   59   15   59    8   28   23   80    5   71   29   85   12
           3    8    6    8    7    6    1    1    6    4    7    6    3    6    1    7    1    3    7    7
           9   10    1    3    8   10    2    1    4    1    3    7    4    6   10    9    1    5    3    8
         756  774  770  620  720  667  808  562  728  743  794  657  817  611  562  599  799  748  517  673
         567  749  691  590  554  724  634  790  716  540  780  627  664  556  691  660  622  541  752  503
        """,
        14377,
    ),
    43: (
        """
          66   26    8   14   75   40   99    7   27   18   11   96   49   48   75   81   99   70   98   68
          58   79   65   66   41   22   41   85   88    1   67   40   65   67   63   50   72   29   28   33
           5    6    5    7    7    3    7    2    4   10    4    5    1    6    9    9   10    4    2    4
           1    1    2    4    5    4    6    3    9    3    1    7    9    4    9   10    9   10    5    1
         259  201  384  841  310  629  132  431  815  125  254  707  381  705  201  296  405  481  414  469
         722  251  748  425  813  273  177  672  570   21  348   17  650   81  159  661  683  206  166   59
        """,
        65134,
    ),
}


def embedded(number):
    text, opt = EMBEDDED_WT40[number]
    p, w, d = np.array(text.split(), dtype=np.float64).reshape(3, 40)
    return p, w, d, float(opt)


def read_orlib(folder, n):
    data, best = FILES[n]
    tokens = np.array((folder / data).read_text().split(), dtype=np.int64)
    assert tokens.size == 125 * 3 * n
    inst = tokens.reshape(125, 3, n).astype(np.float64)  # p, w, d per instance
    opt = np.array((folder / best).read_text().split(), dtype=np.float64)
    assert opt.size == 125
    return inst, opt


def direct_twt(order, p, w, d):
    c = np.cumsum(p[order])
    return float((w[order] * np.maximum(c - d[order], 0)).sum())


@pytest.mark.parametrize("n", [40, 50, 100])
def test_rules_on_orlib(orlib_dir, n):
    inst, opt = read_orlib(orlib_dir, n)
    zeros = np.zeros(n)
    scenarios = [(zeros, p, p, w, d) for p, w, d in inst]
    ratios = {}
    for rule in rules.RULES:
        res = core.simulate_batch(scenarios, rule)
        twt = np.empty(125)
        for i, ((start, end, _mach), (p, w, d)) in enumerate(zip(res, inst)):
            order = np.argsort(start, kind="stable")
            assert np.array_equal(end[order], np.cumsum(p[order]))  # no idle, no overlap
            twt[i] = direct_twt(order, p, w, d)
            assert np.isclose(twt[i], float((w * np.maximum(end - d, 0)).sum()))
        assert np.all(twt >= opt - 1e-9), rule
        ratios[rule] = twt.sum() / opt.sum()
    # the classic picture on these instances: the look-ahead rules (ATC, WMDD)
    # come within a few per cent of the optimum in total (measured: 1.1-2.8 %),
    # far ahead of the simple rules (measured: at least 29 % above)
    assert ratios["atc"] < 1.05 and ratios["wmdd"] < 1.05
    assert max(ratios["atc"], ratios["wmdd"]) * 1.2 < min(ratios[r] for r in ("fifo", "spt", "edd", "wspt"))


def test_static_edd_on_orlib_equals_sorted_due_dates(orlib_dir):
    inst, _ = read_orlib(orlib_dir, 40)
    for p, w, d in inst[:20]:
        start, _, _ = core.simulate(np.zeros(40), p, p, w, d, "edd")
        assert list(np.argsort(start, kind="stable")) == list(np.argsort(d, kind="stable"))


def test_rules_on_the_embedded_instances():
    """No rule beats the published optimum; ATC and WMDD come within 25 % of it, FIFO and SPT
    not within 40 % (measured on these three: ATC 0.7-16 %, WMDD 0.8-22.5 %, FIFO and SPT at
    least 73 % above)."""
    for number in EMBEDDED_WT40:
        p, w, d, opt = embedded(number)
        twt = {}
        for rule in rules.RULES:
            start, end, _ = core.simulate(np.zeros(40), p, p, w, d, rule)
            order = np.argsort(start, kind="stable")
            assert np.array_equal(end[order], np.cumsum(p[order]))  # no idle, no overlap
            twt[rule] = direct_twt(order, p, w, d)
            assert twt[rule] == float((w * np.maximum(end - d, 0)).sum())
            assert twt[rule] >= opt, (number, rule)
        assert twt["atc"] <= 1.25 * opt and twt["wmdd"] <= 1.25 * opt, number
        assert min(twt["fifo"], twt["spt"]) > 1.4 * opt, number


def test_embedded_instances_are_those_of_the_files(orlib_dir):
    inst, opt = read_orlib(orlib_dir, 40)
    for number in EMBEDDED_WT40:
        p, w, d, o = embedded(number)
        np.testing.assert_array_equal(inst[number - 1], [p, w, d])
        assert opt[number - 1] == o


def test_clairvoyant_search_is_within_one_percent_of_the_embedded_optima(cfg):
    """The clairvoyant search with the default window and budget comes within 1 % of each
    embedded instance's optimum, from the start `sched clairvoyant` uses (the best of the rules
    and of ATC over benchmark.atc_k_grid) and from the best of the six rules alone. Measured,
    window 30, 8 search seeds: all three optima from either start at 1,000,000 evaluations (the
    default is 3,000,000); on instance 1 the grid's start (ATC, k = 0.25) is already optimal,
    the six rules' start is 16 % above it."""
    c = cfg["benchmark"]["clairvoyant"]
    insts = [embedded(number) for number in EMBEDDED_WT40]
    scs = [(np.zeros(40), p, p, w, d) for p, w, d, _ in insts]
    six_rules = [(r, cfg["rules"]["atc_k"] if r == "atc" else None) for r in rules.RULES]
    for candidates in (start_candidates(cfg), six_rules):
        starts = best_rule_starts(scs, 1, candidates)
        out = clairvoyant.search(
            scs, [s[3] for s in starts], window=c["window"], evaluations=c["evaluations"], seeds=c["seed"]
        )
        for number, (*_, opt), res in zip(EMBEDDED_WT40, insts, out):
            assert res["cost"] >= opt, (number, "below a proven optimum: the evaluation is wrong")
            assert res["cost"] <= 1.01 * opt, (number, len(candidates), res["cost"], opt)
