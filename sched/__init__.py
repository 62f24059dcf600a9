"""Render-queue scheduler: calibrated simulator, dispatching rules and PPO.

``from sched import rank`` is the entry point a render queue calls; the other
modules are listed in the README.
"""
__version__ = "0.1.0"
