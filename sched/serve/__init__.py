"""Serving: ``rank(tasks)``, the entry point a render queue calls, in process, over HTTP and
into a render farm.

In process: ``ranker`` (``rank()``, ``decide()`` and the policy choice), ``tasks`` (reading
and checking the tasks and machines), ``times`` (the clock: numbers, dates, time zones),
``request`` (the bytes of a call), ``verdicts`` and ``verdict_files`` (the benchmark verdict
``auto`` follows, and the checks of its files), ``explain`` (the plan as a table),
``plan_rank`` (policy ``plan``).

Over HTTP (``sched serve``, optional extra ``serve``): ``http`` (the application and a
request's path), ``connections`` (the connection guard: timeouts, header bounds, slots),
``metrics`` (Prometheus), ``decision_log`` (one JSON line per call).

Into a farm (``sched opencue sync``, optional extra ``opencue``): ``opencue`` and
``opencue_mapping``.
"""
