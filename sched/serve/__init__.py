"""``sched serve``: ``rank()`` over HTTP (optional extra ``serve``, docs/serve.md).

* ``http``: the Starlette application and a request's path;
* ``connections``: the connection guard (timeouts, header bounds, slots);
* ``metrics``: the Prometheus metrics;
* ``decision_log``: one JSON line per call, rotated by size.
"""
