"""The simulation package's error classes.

Both are :class:`sched.errors.SchedError` (a ``ValueError``). The compiled
kernels raise them with constant messages, as numba allows.
"""

from sched.errors import SchedError


class SimulationError(SchedError):
    """Bad simulator input: an unknown rule, a scenario larger than its state, an action outside the queue."""


class SearchError(SimulationError):
    """Bad clairvoyant-search settings: window, budget, start sequences or seeds."""
