"""The learned farm policy beside a chunked setting's benchmark (issue 60, points 2 and 4;
``sched farm-learned``), from the benchmark's folder (``sched farm-bench``) and a farm policy file
(``sched farm-train``):

1. **Candidacy** on the selection (validation) seeds, at the setting's ``sync_s``: the learned
   policy (:data:`NAME`) joins the candidates of the shipped-decision rule
   (:func:`sched.evaluate.farm.bench.incumbent_rule`: atc-tuned is replaced only by a policy
   significantly better than it, the lowest mean of those). ``farm_learned.json`` records its
   paired difference with atc-tuned and whether it ships. When it does, :func:`shipped_verdict`
   is the farm verdict naming it and its policy file (the record ``rank()`` follows,
   :mod:`sched.ranking.farm.learned`); when it does not, the rules' verdict unchanged.
2. **Test rows**: the learned policy at the setting's ``sync_s`` and at the adapters' intervals
   (:data:`sched.evaluate.farm.bench.SYNCS`: ``farm-learned-sync-60s``, ...: at a sync it scores
   every waiting job and the farm dispatches by those frozen scores, ``sched.learn.farm.decide``),
   paired against every reference of ``farm.csv`` (:func:`sched.evaluate.farm.bench.comparisons`
   on the benchmark's rows and these): ``farm_learned.csv``, its rows only; its per-scenario rows
   in ``farm_learned_scenarios.csv``.
"""

import hashlib
from pathlib import Path

import pandas as pd

from sched.evaluate.farm import bench
from sched.evaluate.per_scenario import PER_SCENARIO_COLUMNS, schedule_metrics
from sched.evaluate.progress import bar
from sched.evaluate.statistics import bootstrap_counts, paired_difference
from sched.learn.farm import policy_file, scorer
from sched.ranking.farm import learned as learned_rank

NAME = learned_rank.NAME


def run(cfg, policy, keys, scs, syncs, progress=False):
    """The per-scenario rows of the learned ``policy`` (a loaded farm policy) on ``scs`` at each sync
    interval of ``syncs`` ({row name: sync_s})."""
    machines = cfg.scenario.machines
    rows = []
    for name, sync_s in syncs.items():
        for seed, sc in bar(list(zip(keys, scs)), name, progress):
            ends = scorer.ends(policy.knet, scorer.of_scenario(sc), machines, sync_s)
            metrics = schedule_metrics(sc.arrays, None, ends, sc.counted_from_s)
            rows.append({"scenario_seed": int(seed), "policy": name, **metrics})
    return pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS))


def test_syncs(sync_s):
    """{row name: sync_s} of the test table: the setting's interval, then the adapters' others."""
    out = {NAME: float(sync_s)}
    out.update({bench.sync_name(NAME, s): s for s in bench.SYNCS if s != sync_s})
    return out


def judge(cfg, selection, learned_sel, path, meta):
    """``farm_learned.json``: the learned policy's candidacy on the selection seeds."""
    table = pd.concat([selection, learned_sel], ignore_index=True)
    winner, _d, means = bench.incumbent_rule(cfg, table, (*bench.CANDIDATES, NAME))
    rules_only, _, _ = bench.incumbent_rule(cfg, selection, bench.CANDIDATES)
    b = cfg.benchmark
    seeds, twt = bench.totals(table)
    counts = bootstrap_counts(len(seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    d = paired_difference(twt[NAME], twt["atc-tuned"], counts, b["ci_level"])
    versus = {
        "diff_pct": float(d[0]),
        "ci_lo_pct": float(d[1]),
        "ci_hi_pct": float(d[2]),
        "seeds": len(seeds),
    }
    return {
        "policy": NAME,
        "policy_file": {"path": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()},
        "best_iteration": meta.get("best_iteration"),
        "validation": {
            "seeds": meta.get("validation_seeds"),
            "mean_twt_s": meta.get("val_weighted_tardiness_s"),
            "atc_tuned_mean_twt_s": meta.get("val_atc_tuned_weighted_tardiness_s"),
        },  # fmt: skip
        "selection": {"on": "validation", "means": {p: means[p] for p in (NAME, "atc-tuned", rules_only)}},
        "beats_atc_tuned": bool(versus["ci_hi_pct"] < 0),
        "versus_atc_tuned": versus,
        "would_ship": winner == NAME,
        "shipped_rule": rules_only,
        "reason": (
            f"{NAME} is significantly better than atc-tuned on the selection (validation) scenarios and "
            "the lowest mean of those: the shipped decision were rank() to run it"
            if winner == NAME
            else f"{NAME} is not the shipped-decision rule's choice on the selection (validation) "
            f"scenarios; {winner} is"
        ),
    }


def load(path):
    """The farm policy file ``path`` (``sched.learn.farm.policy_file.load``)."""
    return policy_file.load(path)


def shipped_verdict(rules_verdict, record, meta):
    """The farm verdict of the setting: ``rules_verdict`` (``farm_verdict.json`` of the benchmark)
    itself when the candidacy ``record`` (:func:`judge`) does not ship the learned policy, else the
    record naming it: rule and cap null, ``atc_k`` its prior's k, ``policy_file`` its path, sha256
    and ``meta``'s arch and features (``sched.ranking.farm.learned`` checks them), the rules'
    setting and sync, and the candidacy as its reason."""
    if not record["would_ship"]:
        return rules_verdict
    v = record["versus_atc_tuned"]
    return {
        "policy": NAME,
        "rule": None,
        "atc_k": float(meta["atc_k"]),
        "cap": None,
        "sync_s": rules_verdict["sync_s"],
        "reason": (
            f"{NAME} is significantly better than the incumbent atc-tuned on the selection (validation) "
            f"scenarios: {v['diff_pct']:+.2f} % [{v['ci_lo_pct']:+.2f} %, {v['ci_hi_pct']:+.2f} %]; the "
            f"lowest mean of those (the rules' choice: {rules_verdict['policy']})"
        ),
        "policy_file": {**record["policy_file"], **{f: meta[f] for f in learned_rank.META}},
        "selection": {**rules_verdict["selection"], "means": record["selection"]["means"]},
        "setting": rules_verdict["setting"],
    }
