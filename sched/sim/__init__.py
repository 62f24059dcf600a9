"""Simulation: the queue itself, with no learning in it.

* ``state``: the simulator's state, a batch of scenarios as plain NumPy arrays;
* ``rules``: the dispatching rules, their names and priority formulas, defined once;
* ``core``: the compiled event loop, the rule picks and batched rollouts;
* ``waiting``: waiting as an action (issue 60): a free GPU held idle until the next arrival or a
  wake time; the delayed rules' decision (``rules.WAIT_RULES``) and rollouts;
* ``chunks``: jobs of frames on a render farm (issue 59): the chunk formulas and their compiled
  event loop (a job's chunks spread over GPUs up to its limit; one-chunk jobs run on ``core``);
* ``sync``: the farm as the adapters drive it: the rule ranks the jobs at syncs every ``sync_s``
  seconds, the farm dispatches by those ranks between them (``simulate(..., sync_s)``);
* ``farm_limits``: a parallelism limit as a decision: every job at most ``cap`` chunks at once
  (issue 60), read by the loops as ``max_gpus``;
* ``one_queue``: the compiled path of ``rank()`` (one queue, one rule, one call);
* ``top``: the one top-k selection (largest first, ties by index: the rules' tie rule);
* ``reference``: the plain-Python reference simulator the compiled one is checked against;
* ``clairvoyant``: the best schedule a local search finds knowing the future;
* ``farm_clairvoyant``: the same on the chunked farm: the best job priority list a search finds;
* ``errors``: the package's error classes.
"""
