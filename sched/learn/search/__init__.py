"""Decision-time search and what learns from it (docs/plan.md, docs/learning.md).

* ``lookahead``: the candidate evaluator, what starting each candidate now costs on sampled
  futures;
* ``plan``: ``plan``, decision-time lookahead on top of a base policy, compiled;
* ``planner``: the planner's settings, its base policy and its runs;
* ``plan_chunks``: ``plan`` on the chunked farm, compiled (the chunked loop with a lookahead);
* ``teacher``: the gated rollout teacher, ``plan`` run on training states to label them;
* ``distill``: the warm start, the teacher's labels imitated;
* ``iterate``: expert iteration, the gated teacher on the current policy distilled into the
  next one.
"""
