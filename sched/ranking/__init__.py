"""``rank(tasks)``, the in-process decision a render queue calls (docs/rank.md).

* ``ranker``: ``rank()`` and ``decide()``, the policy a call runs and its order;
* ``tasks``: reading and checking the tasks of a call, on one clock;
* ``gpus``: a call's machines: when each GPU is free, and how fast;
* ``farm``: a call of jobs of frames (issue 59): their fields and the rule's plan on the chunked model;
* ``hold``: a delayed rule's plan (issue 60): a held task starts later than now, and why;
* ``times``: the clock, numbers, dates and time zones;
* ``request``: the bytes of a call (``sched rank``'s input, a request body);
* ``verdicts``: the benchmark verdict ``policy="auto"`` follows for a call's GPUs;
* ``verdict_files``: what a ``winner.json`` and a ``tuned.json`` must hold;
* ``studio_sources``: the history files the studio's verdict was measured on, against the config's;
* ``explain``: ``explain=True``, the plan as a table and as records;
* ``plan_rank``: ``policy="plan"``, the planner's order of the queue waiting now.
"""
