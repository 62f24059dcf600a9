"""The learned policy on the chunked farm (issue 60, points 2 and 4).

* ``decide``: its decision at a free GPU of the chunked loop, compiled (candidates by ATC on
  remaining work, the jobs' and the farm's features, the scorer's forward, greedy or sampled),
  and its run at sync 0;
* ``synced``: its run at the adapters' sync interval, a ranking a sync (the ``top_k`` candidates
  ranked by score, greedy or Plackett-Luce sampled; the others after them in ATC order);
* ``scorer``: the network of the farm's sizes, its compiled form and its runs from Python;
* ``policy_file``: the farm policy file (validated on reading, no code executed);
* ``train``: PPO on a farm setting's own training seeds, from the ATC prior, grouped baseline and
  the patience rule on validation (``sched farm-train``), at ``train.sync_s``;
* ``teach``: the gated teacher's warm start (``plan_chunks``' choices as labels on the scorer's
  observations, distilled by cross-entropy; ``sched farm-teach``, ``sched farm-train --init``);
* ``rank_ppo``: its rollouts and update at a sync interval (the ranking's log-probability in torch).
"""
