"""Serving: ``rank(tasks)``, the entry point a render queue calls.

``ranker``: ``rank()`` and the policy choice; ``tasks``: reading the tasks,
times and machines; ``explain``: the plan as a table.
"""
