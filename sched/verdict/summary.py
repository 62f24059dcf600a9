"""The benchmark's summary (``resume.csv``) and its winner, from complete per-scenario tables.

Both are computed from complete per-scenario tables alone, so a full run and
the gathering of its shards give the same files: the summary from the test
table, the winner chosen on the selection table (the competing policies on
validation seeds, :func:`sched.evaluate.seeds.selection_seeds`) and confirmed
on the test table (:mod:`~sched.verdict.winner`). Statistics: see
:mod:`sched.evaluate.statistics`.
"""

import numpy as np
import pandas as pd

from sched.evaluate.errors import BenchmarkError
from sched.evaluate.per_scenario import check_complete, matrix
from sched.evaluate.policies import best_heuristic, policy_key
from sched.evaluate.statistics import bootstrap_counts, interval, paired_difference, win_tie_loss
from sched.verdict.winner import choose_on_selection, choose_winner

SUMMARY_COLUMNS = (
    "policy",
    "rank",
    "scenarios",
    "atc_k",
    "mean_twt_k",
    "mean_twt_ci_lo_k",
    "mean_twt_ci_hi_k",
    "p90_twt_k",
    "gain_vs_fifo_pct",
    "diff_vs_atc_pct",
    "diff_vs_atc_ci_lo_pct",
    "diff_vs_atc_ci_hi_pct",
    "wins_vs_atc",
    "ties_vs_atc",
    "losses_vs_atc",
    "best_heuristic",
    "diff_vs_best_heuristic_pct",
    "diff_vs_best_heuristic_ci_lo_pct",
    "diff_vs_best_heuristic_ci_hi_pct",
    "wins_vs_best_heuristic",
    "ties_vs_best_heuristic",
    "losses_vs_best_heuristic",
)
#: Weighted seconds per reporting unit ("k" columns: thousands of weighted seconds).
UNIT = 1000.0


def summarise(frame, cfg, specs, selection=None):
    """The summary table (``resume.csv``) and the winner record from a complete per-scenario table.

    ``selection``: the per-scenario table of the competing policies on the selection seeds; the
    winner is chosen on it and confirmed on ``frame`` (the record then ends with ``selection``).
    None: the winner is chosen on ``frame`` itself, as before (no ``selection`` key).
    """
    check_complete(frame)
    b = cfg.benchmark
    seeds, twt = matrix(frame)
    for ref in ("fifo", "atc"):
        if ref not in twt:
            raise BenchmarkError(
                f"the summary needs policy {ref} (a reference); it is not among {', '.join(twt)}"
            )
    counts = bootstrap_counts(len(seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    bh = best_heuristic(twt)
    means = {p: v.mean() for p, v in twt.items()}
    order = sorted(twt, key=lambda p: (means[p], policy_key(p)))
    rank = {p: i + 1 for i, p in enumerate(order)}
    rows = []
    for p, v in twt.items():
        spec = specs.get(p) or {}
        rows.append(
            {
                "policy": p,
                "rank": rank[p],
                "scenarios": len(seeds),
                "atc_k": spec.get("atc_k") if spec.get("rule") == "atc" else None,
                **_summary_numbers(v, twt, bh, counts, b),
            }
        )
    summary = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    if selection is None:
        winner = choose_winner(twt, specs, counts, b["ci_level"])
    else:
        winner = choose_on_selection(selection, twt, specs, counts, b)
    return summary, winner


def _summary_numbers(v, twt, bh, counts, b):
    """The summary's numeric columns of one policy (``v``: its total per scenario)."""
    level = b["ci_level"]
    rel, abs_s = b["tie_relative"], b["tie_absolute_s"]
    boot_means = counts @ v / len(v) / UNIT
    lo_m, hi_m = interval(boot_means, level)
    d_atc = paired_difference(v, twt["atc"], counts, level)
    d_bh = paired_difference(v, twt[bh], counts, level)
    fifo = twt["fifo"].mean()
    return {
        "mean_twt_k": v.mean() / UNIT,
        "mean_twt_ci_lo_k": lo_m,
        "mean_twt_ci_hi_k": hi_m,
        "p90_twt_k": float(np.percentile(v, 90)) / UNIT,
        "gain_vs_fifo_pct": (fifo - v.mean()) / fifo * 100.0 if fifo > 0 else float("nan"),
        "diff_vs_atc_pct": d_atc[0],
        "diff_vs_atc_ci_lo_pct": d_atc[1],
        "diff_vs_atc_ci_hi_pct": d_atc[2],
        **dict(zip(("wins_vs_atc", "ties_vs_atc", "losses_vs_atc"), win_tie_loss(v, twt["atc"], rel, abs_s))),
        "best_heuristic": bh,
        "diff_vs_best_heuristic_pct": d_bh[0],
        "diff_vs_best_heuristic_ci_lo_pct": d_bh[1],
        "diff_vs_best_heuristic_ci_hi_pct": d_bh[2],
        **dict(
            zip(
                ("wins_vs_best_heuristic", "ties_vs_best_heuristic", "losses_vs_best_heuristic"),
                win_tie_loss(v, twt[bh], rel, abs_s),
            )
        ),
    }
