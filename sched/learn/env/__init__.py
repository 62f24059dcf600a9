"""Environments over the compiled simulator.

* ``vec_env``: training scenarios stepped in lockstep, and greedy rollouts;
* ``gym_env``: the Gymnasium environment ``sched/RenderQueue-v0`` (optional extra ``gym``).
"""
