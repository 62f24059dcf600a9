"""The clairvoyant reference run: the local search of :mod:`sched.sim.clairvoyant`
on the benchmark's clairvoyant scenarios, started from the best dispatching rule.

Not a contestant: it shows the headroom below the best policy (see the report).
"""

import numpy as np
import pandas as pd

from sched.data.objective import weighted_tardiness
from sched.errors import InternalError
from sched.evaluate.progress import bar
from sched.evaluate.runs import generate_scenarios
from sched.sim import rules as rules_mod
from sched.sim.clairvoyant import search, sequence_cost, start_sequence
from sched.sim.core import simulate_batch

CLAIRVOYANT_COLUMNS = (
    "scenario_seed",
    "tasks",
    "machines",
    "start_rule",
    "start_atc_k",
    "start_twt_s",
    "clairvoyant_twt_s",
    "improvement_vs_start_pct",
    "evaluations",
    "budget_evaluations",
    "window",
    "search_seed",
)


def scenario_search_seed(search_seed, scenario_seed):
    """The search's random stream for one scenario: depends on nothing else (shards agree)."""
    return int(
        np.random.SeedSequence([int(search_seed), int(scenario_seed)]).generate_state(1, dtype=np.uint64)[0]
    )


def start_candidates(cfg):
    """(rule, k) pairs whose schedules seed the search: every rule, and ATC at each grid k."""
    k0 = float(cfg.rules.atc_k)
    cands = [(r, k0 if r == "atc" else None) for r in rules_mod.RULES]
    cands += [("atc", float(k)) for k in cfg.benchmark.atc_k_grid if float(k) != k0]
    return cands


def best_rule_starts(arrays, machines, candidates):
    """Per scenario: (rule, k, its total weighted tardiness, its start sequence) of the best candidate."""
    best = [None] * len(arrays)
    for rule, k in candidates:
        res = simulate_batch(
            arrays, rule, machines=machines, k=k if k is not None else rules_mod.ATC_K_DEFAULT
        )
        for b, ((_, _, _, w, due), (start, end, _)) in enumerate(zip(arrays, res)):
            twt = weighted_tardiness(end, due, w)
            if best[b] is None or twt < best[b][2]:
                best[b] = (rule, k, twt, start_sequence(start, end))
    return best


def run_reference(cfg, seeds, progress=False):
    """The clairvoyant table (CLAIRVOYANT_COLUMNS) for the scenarios of ``seeds``."""
    c = cfg.benchmark.clairvoyant
    machines = cfg.scenario.machines
    seeds = list(seeds)
    arrays = [s.arrays for s in generate_scenarios(cfg, seeds, progress)]
    starts = best_rule_starts(arrays, machines, start_candidates(cfg))
    for (a, d, _e, w, due), (rule, _k, twt, seq) in zip(arrays, starts):
        # the decoder must give back the rule's schedule from its start order:
        # this is what makes the search never worse than its start
        again = sequence_cost(seq, a, d, w, due, machines)
        if not abs(again - twt) <= 1e-9 * max(twt, 1.0):
            raise InternalError(f"clairvoyant: decoding {rule}'s start order gives {again}, not its {twt}")
    sseeds = [scenario_search_seed(c["seed"], s) for s in seeds]
    results = []
    # in chunks, so the progress bar moves; each chunk is one parallel compiled call
    chunk = 8
    for lo in bar(range(0, len(seeds), chunk), "clairvoyant search", progress, total=-(-len(seeds) // chunk)):
        hi = lo + chunk
        results += search(
            arrays[lo:hi],
            [s[3] for s in starts[lo:hi]],
            machines=machines,
            window=c["window"],
            evaluations=c["evaluations"],
            seeds=sseeds[lo:hi],
        )
    rows = []
    for seed, arr, (rule, k, twt, _), res, ss in zip(seeds, arrays, starts, results, sseeds):
        a, d, _e, w, due = arr
        cost = sequence_cost(res["sequence"], a, d, w, due, machines)
        rows.append(
            {
                "scenario_seed": seed,
                "tasks": len(a),
                "machines": machines,
                "start_rule": rule,
                "start_atc_k": k,
                "start_twt_s": twt,
                "clairvoyant_twt_s": cost,
                "improvement_vs_start_pct": (twt - cost) / twt * 100.0 if twt > 0 else 0.0,
                "evaluations": res["evaluations"],
                "budget_evaluations": c["evaluations"],
                "window": c["window"],
                "search_seed": ss,
            }
        )
    return pd.DataFrame(rows, columns=list(CLAIRVOYANT_COLUMNS))
