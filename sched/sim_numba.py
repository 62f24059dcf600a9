"""The compiled simulator core, at the path the project's contract names.

The code lives in :mod:`sched.sim.core` (event loop, rule picks, rollouts) and
:mod:`sched.sim.state` (the state arrays), all compiled with numba; this
module re-exports their public API so that
``from sched.sim_numba import simulate_batch`` keeps working.
"""

from sched.sim.core import (  # noqa: F401  (re-exports)
    State,
    advance_batch,
    apply_batch,
    arrival_order,
    cost_to_go_batch,
    empty_state,
    load_slot,
    pack,
    reset_slot,
    rollout_batch,
    simulate,
    simulate_batch,
)

__all__ = [
    "State",
    "advance_batch",
    "apply_batch",
    "arrival_order",
    "cost_to_go_batch",
    "empty_state",
    "load_slot",
    "pack",
    "reset_slot",
    "rollout_batch",
    "simulate",
    "simulate_batch",
]
