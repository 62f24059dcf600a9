"""The clairvoyant reference on the chunked farm (sched.sim.farm_clairvoyant): a priority list
dispatched as the reference simulator dispatches farm-fifo, a search never worse than its start,
whose incremental evaluation equals a fresh one, deterministic; the farm benchmark's rows."""

import numpy as np
import pandas as pd
import pytest

from sched.data.objective import weighted_tardiness
from sched.evaluate.farm import headroom
from sched.sim import chunks, reference
from sched.sim.errors import SearchError
from sched.sim.farm_clairvoyant import search as cc

from .random_farms import random_farm


def reference_ends(arrays, cols, speed, rows):
    """Each job's end in the reference simulator running farm-fifo with weights from the list
    (the first job the highest)."""
    a, d, _e, _w, due = arrays
    n = len(a)
    place = np.empty(n)
    place[np.asarray(rows)] = np.arange(n)
    job, _c, _s, end, _m = reference.simulate_chunked(a, d, d, n - place, due, *cols, "farm-fifo", speed)
    return chunks.job_ends(np.asarray(job, np.int64), np.asarray(end), n)


def test_a_list_is_the_reference_simulators_farm_fifo_on_its_places():
    rng = np.random.default_rng(59)
    for _ in range(20):
        arrays, cols, speed, _free = random_farm(rng)
        rows = rng.permutation(len(arrays[0]))
        ends, total = cc.list_ends(arrays, cols, speed, rows)
        want = reference_ends(arrays, cols, speed, rows)
        assert np.array_equal(ends, want)
        ref = weighted_tardiness(want, arrays[4], arrays[3])
        assert total == pytest.approx(ref, rel=1e-12, abs=1e-9)


def test_the_search_never_does_worse_than_its_start_and_its_totals_are_exact():
    rng = np.random.default_rng(60)
    improved = 0
    for _ in range(20):
        arrays, cols, speed, _free = random_farm(rng, max_jobs=40, arrivals=(0, 60))
        rows = rng.permutation(len(arrays[0]))
        start = cc.list_ends(arrays, cols, speed, rows)[1]
        res = cc.search(arrays, cols, speed, rows, window=6, evaluations=300)
        assert res["start_cost"] == pytest.approx(start, rel=1e-12, abs=1e-9)
        assert res["cost"] <= start + 1e-9
        # the incremental evaluation (resumed from saved states, stopped where they agree) is exact
        assert res["search_cost"] == pytest.approx(res["cost"], rel=1e-9, abs=1e-9)
        again = cc.list_ends(arrays, cols, speed, res["rows"])
        assert np.array_equal(again[0], res["ends"])
        assert np.array_equal(reference_ends(arrays, cols, speed, res["rows"]), res["ends"])
        assert res["evaluations"] <= 300
        improved += res["cost"] < start - 1e-9
    assert improved >= 8  # random lists leave room: the search finds some (on most of them)


def test_the_search_moves_a_late_job_ahead_and_is_deterministic():
    # one GPU: a long job of 10 chunks listed first, then a short urgent one (late by 10 s)
    arrays = (np.zeros(2), np.array([10.0, 1.0]), np.array([10.0, 1.0]), np.ones(2), np.array([100.0, 1.0]))
    cols = (np.array([10, 1]), np.array([1, 0]), np.zeros(2, np.int64), np.zeros(2))
    assert cc.list_ends(arrays, cols, 1, [0, 1])[1] == 10.0
    res = cc.search(arrays, cols, 1, [0, 1], window=1, evaluations=10)
    assert res["cost"] == 0.0 and list(res["rows"]) == [1, 0]
    assert res["ends"].tolist() == [11.0, 1.0]  # the long job resumes at frame boundaries after it
    rng = np.random.default_rng(3)
    arrays, cols, speed, _ = random_farm(rng, max_jobs=40)
    rows = rng.permutation(len(arrays[0]))
    a = cc.search(arrays, cols, speed, rows, window=8, evaluations=200)
    b = cc.search(arrays, cols, speed, rows, window=8, evaluations=200)
    assert np.array_equal(a["rows"], b["rows"]) and a["cost"] == b["cost"]


def test_the_warm_up_is_not_counted_and_bad_lists_are_refused():
    arrays = (
        np.array([0.0, 5.0]),
        np.array([4.0, 4.0]),
        np.array([4.0, 4.0]),
        np.ones(2),
        np.array([1.0, 6.0]),
    )
    cols = (np.ones(2, np.int64), np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros(2))
    assert cc.list_ends(arrays, cols, 1, [0, 1])[1] == 3.0 + 3.0
    assert cc.list_ends(arrays, cols, 1, [0, 1], counted_from=1.0)[1] == 3.0  # job 0 arrived before
    with pytest.raises(SearchError, match="not a permutation"):
        cc.search(arrays, cols, 1, [0, 0])
    with pytest.raises(SearchError, match="window"):
        cc.search(arrays, cols, 1, [0, 1], window=0)


def test_the_farm_rows_pair_the_reference_with_the_shipped_rule():
    seeds = [7, 8, 9]
    frame = pd.DataFrame(
        [
            {"scenario_seed": s, "policy": p, "total_weighted_tardiness_s": v}
            for p, vals in (("atc-tuned", (10.0, 20.0, 30.0)), ("farm-fifo", (50.0, 60.0, 70.0)))
            for s, v in zip(seeds + [10], vals + (40.0,))
        ]
    )
    for col in headroom.PER_SCENARIO_COLUMNS:
        if col not in frame:
            frame[col] = 0.0
    table = pd.DataFrame({"scenario_seed": seeds, "clairvoyant_twt_s": [5.0, 20.0, 15.0]})

    class Cfg:
        benchmark = {
            "bootstrap_resamples": 200, "bootstrap_seed": 1, "ci_level": 0.95,
            "tie_relative": 1e-9, "tie_absolute_s": 1e-6,
        }  # fmt: skip

    rows = headroom.comparisons(table, frame, Cfg, "atc-tuned").set_index("reference")
    assert set(rows.index) == {"shipped", "atc-tuned", "farm-fifo"}
    assert (rows["policy"] == "clairvoyant").all() and (rows["scenarios"] == 3).all()
    assert rows.loc["shipped", "diff_pct"] == pytest.approx((40.0 / 60.0 - 1) * 100)
    assert (rows.loc["shipped", ["wins", "ties", "losses"]].tolist()) == [2, 1, 0]
