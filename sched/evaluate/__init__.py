"""Evaluation: the benchmark of named policies on unseen scenarios, and its report.

Steps (each a ``sched`` command, so the workflow can run them as separate jobs):

* ``tune``: ATC's look-ahead k chosen on validation seeds
  (:func:`sched.evaluate.tuning.tune_atc_k`);
* ``benchmark``: per-scenario results of each policy on a range of test seeds,
  a shard or the whole test set (:func:`sched.evaluate.runs.run_policies`);
* ``benchmark --split selection``: the policies that may win on the selection
  (validation) seeds, :func:`sched.evaluate.seeds.selection_seeds`;
* ``gather``: shards concatenated and checked (:func:`sched.evaluate.per_scenario.gather`);
  the winner is chosen on the selection table and confirmed on the test set;
* the summary (``resume.csv``) and the winner (``winner.json``) are computed
  from the per-scenario table alone (:func:`sched.evaluate.summary.summarise`),
  so a full run and the gathering of its shards give the same files.

Where each part lives: :mod:`~sched.evaluate.seeds` (the seeds of each split,
shards), :mod:`~sched.evaluate.policies` (policy names and specs),
:mod:`~sched.evaluate.runs` (running them), :mod:`~sched.evaluate.per_scenario`
(the per-scenario table), :mod:`~sched.evaluate.statistics` (paired bootstrap),
:mod:`~sched.evaluate.summary` (summary and winner).

Also here: ``tuning`` (ATC's k, the delayed rules' alpha), ``gate`` (the gates of a verdict: plan's candidacy,
its settings tried on the winner and the rule that picks one; the validation days';
the held-out days'), ``demo`` (the demonstration scenario), ``headroom`` (the clairvoyant
reference run), ``errors`` (the package's error classes) and ``progress`` (its progress
bar). The subpackage ``report`` writes ``rapport.md`` and its figures; the subpackage ``farm``
benchmarks the chunked farm settings (``sched farm-bench``) and renders their report rows.
"""
