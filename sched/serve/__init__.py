"""Serving: ``rank(tasks)``, the entry point a render queue calls.

``ranker``: ``rank()`` and the policy choice; ``tasks``: reading and checking
the tasks and machines; ``times``: the clock (numbers, dates, time zones);
``explain``: the plan as a table.
"""
