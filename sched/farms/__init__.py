"""Render-farm adapters: a farm's pending work ordered by ``rank()``.

* ``opencue``: ``sched opencue sync``, a show's pending OpenCue jobs as job priorities
  (optional extra ``opencue``, docs/opencue.md);
* ``opencue_mapping``: how an OpenCue job becomes a task (weight, due time, estimate).
"""
