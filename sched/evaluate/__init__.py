"""Evaluation: the benchmark of named policies on unseen scenarios, and its report.

Modules: ``seeds`` (the seeds of each split, shards), ``policies`` (policy
names and how to run each), ``runs`` (running them over scenarios),
``per_scenario`` (the per-scenario table), ``statistics`` (paired bootstrap),
``summary`` (``resume.csv`` and ``winner.json``), ``tuning`` (ATC's k),
``demo`` (the demonstration scenario), ``headroom`` (the clairvoyant reference
run), ``report`` with ``report_inputs``, ``report_sections``,
``report_conclusion`` and ``report_format`` (``rapport.md``), ``figures``;
``benchmark`` gives the overview. ``errors`` holds the package's error classes
and ``progress`` its progress bar."""
