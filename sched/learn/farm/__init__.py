"""The learned policy on the chunked farm (issue 60, points 2 and 4).

* ``decide``: its decision at a free GPU of the chunked loop, compiled (candidates by ATC on
  remaining work, the jobs' and the farm's features, the scorer's forward, greedy or sampled),
  and its runs at sync 0 and at the adapters' sync interval;
* ``scorer``: the network of the farm's sizes, its compiled form and its runs from Python;
* ``policy_file``: the farm policy file (validated on reading, no code executed);
* ``train``: PPO on a farm setting's own training seeds, from the ATC prior, grouped baseline and
  the patience rule on validation (``sched farm-train``).
"""
