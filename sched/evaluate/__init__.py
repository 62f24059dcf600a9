"""Evaluation: the benchmark of named policies on unseen scenarios.

Steps (each a ``sched`` command, so the workflow can run them as separate jobs):

* ``tune``: ATC's look-ahead k chosen on validation seeds
  (:func:`sched.evaluate.tuning.tune_atc_k`);
* ``benchmark``: per-scenario results of each policy on a range of test seeds,
  a shard or the whole test set (:func:`sched.evaluate.runs.run_policies`);
* ``benchmark --split selection``: the policies that may win on the selection
  (validation) seeds, :func:`sched.evaluate.seeds.selection_seeds`;
* ``gather``: shards concatenated and checked (:func:`sched.evaluate.per_scenario.gather`).

What the tables conclude (``resume.csv``, ``winner.json``) is the verdict's, in
:mod:`sched.verdict`; ``rapport.md`` is written by :mod:`sched.report`.

Where each part lives: :mod:`~sched.evaluate.seeds` (the seeds of each split,
shards), :mod:`~sched.evaluate.policies` (policy names and specs),
:mod:`~sched.evaluate.runs` (running them), :mod:`~sched.evaluate.per_scenario`
(the per-scenario table), :mod:`~sched.evaluate.statistics` (paired bootstrap).

Also here: ``tuning`` (ATC's k, the delayed rules'
alpha), ``demo`` (the demonstration scenario), ``headroom`` (the
clairvoyant reference run), ``errors`` (the error classes of the benchmark, the verdict and
the report) and ``progress`` (its progress bar). The subpackage ``farm`` benchmarks the chunked
farm settings (``sched farm-bench``) and renders their report rows.
"""
