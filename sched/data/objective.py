"""The objective: tardiness and total weighted tardiness of a schedule, defined once.

A task that ends at ``end`` with due date ``due`` is late by ``max(end - due, 0)``
(its tardiness); the schedule's cost is the sum of weight x tardiness. The
compiled code (the event loop's running cost, the clairvoyant search) charges
the same quantity task by task inside numba; this is the one definition the
Python side uses.
"""

import numpy as np


def tardiness(end, due):
    """Per-task tardiness ``max(end - due, 0)`` (an array)."""
    return np.maximum(np.asarray(end) - np.asarray(due), 0.0)


def weighted_tardiness(end, due, weight):
    """Total weighted tardiness ``sum(weight * max(end - due, 0))`` (a float)."""
    return float((np.asarray(weight) * tardiness(end, due)).sum())
