"""The report: ``rapport.md`` and its figures, written from the benchmark's files alone.

* ``document``: the report itself, :func:`~sched.report.document.build`;
* ``shipped``: the first table, what ``rank()`` runs in each setting and its evidence;
* ``inputs``: the benchmark's files, read and checked against each other;
* ``sections``: the sections that describe the setup and the results;
* ``conclusion``: the verdicts, the conclusion and the other settings (robustness);
* ``training``: PPO's vital signs, the training throughput, the stages of learning;
* ``rounds``: each seed's warm start and rounds of expert iteration;
* ``plan``: the "Lookahead (plan)" section;
* ``studio``: the "Studio" section (the studio setting);
* ``workload``: the queue's own history (the workload line, "Replayed history");
* ``format``: number and text formats (``n/a`` for a missing or undefined number);
* ``figures``: the figures of the report and of the demonstration (PNG, matplotlib Agg).

The chunked farm settings' rows come from :mod:`sched.evaluate.farm.report`.
"""
