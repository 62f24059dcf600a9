"""Concurrent ``rank()`` calls give the serial answers, with every policy (issue 23, item 3).

16 random 40-task queues are ranked serially, then again from a ThreadPoolExecutor(8)
several times, with every policy: the rules, ``atc-tuned`` (a tuned.json), ``ppo`` (two
policy files of random weights) and ``plan`` on a rule and on a learned base (a fixed
sample count: ``budget_ms=None``, deterministic). Before each concurrent round the
caches on the rank path are emptied, so that threads fill them at the same time: the
settings, the verdict files, the policy files and their compiled networks, the planners
and their pools of futures. Every answer must equal the serial one exactly.
"""

import json
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from sched import rank
from sched.learn.policy import networks as N
from sched.learn.policy import policy_file as PF

from .test_policy_file import small_meta

QUEUES = 16
TASKS = 40
ROUNDS = 3
PLAN = dict(candidates=3, samples=6, horizon=12, z=1.0, seed=3, futures=40, budget_ms=None, rollout="base")


def _policy(path, seed):
    """A policy file of random weights (a scorer whose choices are not ATC's)."""
    meta = small_meta(hidden=8)
    meta["arch"]["top_k"] = 8
    torch.manual_seed(seed)
    net = N.build(meta["arch"])
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0.0, 0.5)
    PF.save(path, net, meta)
    return str(path)


def _queues():
    rng = np.random.default_rng(23)
    out = []
    for q in range(QUEUES):
        est = rng.lognormal(np.log(300.0), 1.0, TASKS)
        w = rng.choice([1.0, 2.0, 4.0, 8.0], TASKS)
        due = rng.uniform(-600.0, 4 * 3600.0, TASKS)
        arr = -rng.uniform(0.0, 1800.0, TASKS)
        out.append(
            [
                dict(id=f"q{q}t{i}", estimate_s=float(est[i]), weight=float(w[i]), due=float(due[i]),
                     arrival=float(arr[i]))
                for i in range(TASKS)
            ]
        )  # fmt: skip
    return out


def _clear_caches():
    """Empty every cache the rank path fills, so that the threads fill them together."""
    from sched.learn.search import planner
    from sched.ranking import plan_rank, ranker, verdicts

    caches = (ranker._settings_cache, verdicts._json_cache, PF._CACHE, plan_rank._planners, planner._pools)
    for cache in caches:
        cache.clear()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("conc")
    (d / "tuned.json").write_text(
        json.dumps(
            {"atc_k": 0.7, "grid": [0.5, 0.7, 1.0], "setting": {"machines": 2, "speeds": None, "load": 0.85}}
        )
    )
    ppo_a, ppo_b = _policy(d / "a.pt", 1), _policy(d / "b.pt", 2)
    rank_files = {"winner": str(d / "w.json"), "tuned": str(d / "tuned.json"), "settings": str(d / "rob")}

    def config(base="atc"):
        return {"scenario": {"estimate_noise_sigma": 0.4}, "rank": rank_files, "plan": dict(PLAN, base=base)}

    calls = []  # (policy, policy_file, config)
    for name in ("fifo", "atc", "wmdd", "atc-tuned"):
        calls.append((name, None, config()))
    calls.append(("ppo", ppo_a, config()))
    calls.append(("plan", None, config("atc")))
    calls.append(("plan", None, config(ppo_b)))  # a learned base, another policy file than ppo's
    return calls


def _one(call, tasks):
    name, pfile, cfg = call
    return rank(tasks, now=0.0, policy=name, policy_file=pfile, machines=2, config=cfg)


def test_concurrent_calls_give_the_serial_answers(setup):
    queues = _queues()
    jobs = [(c, q) for c in range(len(setup)) for q in range(QUEUES)]
    serial = {(c, q): _one(setup[c], queues[q]) for c, q in jobs}
    # the policies differ: the test compares answers that depend on the policy
    assert len({tuple(serial[c, 0]) for c in range(len(setup))}) >= 5
    rng = np.random.default_rng(0)
    wrong = []
    for _ in range(ROUNDS):
        _clear_caches()
        order = [jobs[i] for i in rng.permutation(len(jobs))]  # policies interleaved
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda j: _one(setup[j[0]], queues[j[1]]), order))
        wrong += [(setup[c][0], q) for (c, q), g in zip(order, got) if g != serial[c, q]]
    assert not wrong, f"{len(wrong)} of {ROUNDS * len(jobs)} concurrent answers differ: {wrong[:8]}"


class _Switching(dict):
    """A cache that lets other threads run right after each fill and clear: as an interpreter
    may at any point (a free-threaded one, or another switch interval)."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        time.sleep(0.0005)

    def clear(self):
        super().clear()
        time.sleep(0.0005)


def test_caches_filled_by_threads_at_once_return_what_was_asked(tmp_path, monkeypatch, calibrated):
    """Policy files, pools of futures and calibration files asked for by many threads at once:
    each call gets what it asked for, never another key's value nor a KeyError (a cache emptied
    by one thread between another's fill and its read)."""
    import shutil

    from sched.config import validate_config
    from sched.data.bench import calibration
    from sched.learn.search import planner

    files = [_policy(tmp_path / f"p{i}.pt", i) for i in range(3)]
    cals = [str(calibrated.calibration), str(shutil.copy(calibrated.calibration, tmp_path / "c2.json"))]
    cfgs = [validate_config({"scenario": {"estimate_noise_sigma": 0.4}}, "test") for _ in range(2)]
    want = {f: PF.load(f).net.state_dict()["linear.weight"] for f in files}
    for cache in (PF._CACHE, planner._pools, calibration._cache):  # sched.cache.Cache
        monkeypatch.setattr(cache, "_values", _Switching())

    def one(i):
        f = files[i % len(files)]
        got = PF.load_cached(f).net.state_dict()["linear.weight"]
        pool = planner.futures(cfgs[i % 2], 5 + i % 7, 20)  # 7 keys: the pool cache is emptied
        cal = calibration.load_calibration(cals[i % 2])
        return torch.equal(got, want[f]) and pool.arr.shape == (20, 5 + i % 7) and "kinds" in cal

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(one, range(96)))
