"""``sched serve``: ``rank()`` over HTTP (optional extra ``serve``, docs/serve.md).

* ``http``: the Starlette application and a request's path: its body read, its answer, its log line;
* ``decide``: a call decided within its time budget, on the loop or a worker, and its fallbacks;
* ``answers``: what a client is told when a call is not decided (400 or 500), and no server path;
* ``connections``: the connection guard (timeouts, header bounds, send deadline, slots);
* ``metrics``: the Prometheus metrics;
* ``decision_log``: one JSON line per call, rotated by size.
"""
