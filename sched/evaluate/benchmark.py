"""The benchmark: every policy on the same unseen test scenarios, and its statistics.

Steps (each a ``sched`` command, so the workflow can run them as separate jobs):

* ``tune``: ATC's look-ahead k chosen on validation seeds
  (:func:`sched.evaluate.tuning.tune_atc_k`);
* ``benchmark``: per-scenario results of each policy on a range of test seeds,
  a shard or the whole test set (:func:`sched.evaluate.runs.run_policies`);
* ``gather``: shards concatenated and checked (:func:`sched.evaluate.per_scenario.gather`);
* the summary (``resume.csv``) and the winner (``winner.json``) are computed
  from the per-scenario table alone (:func:`sched.evaluate.summary.summarise`),
  so a full run and the gathering of its shards give the same files.

Where each part lives: :mod:`~sched.evaluate.seeds` (the seeds of each split,
shards), :mod:`~sched.evaluate.policies` (policy names and specs),
:mod:`~sched.evaluate.runs` (running them), :mod:`~sched.evaluate.per_scenario`
(the per-scenario table), :mod:`~sched.evaluate.statistics` (paired bootstrap),
:mod:`~sched.evaluate.summary` (summary and winner).

This module re-exports the names the workflow (``workflow/rules/common.smk``),
``sched teach`` and the workflow tests import from it.
"""

from sched.evaluate.policies import default_policies
from sched.evaluate.seeds import check_within, parse_seed_range, range_text, shard_ranges
from sched.evaluate.summary import WINNER_KEYS

__all__ = [
    "WINNER_KEYS",
    "check_within",
    "default_policies",
    "parse_seed_range",
    "range_text",
    "shard_ranges",
]
