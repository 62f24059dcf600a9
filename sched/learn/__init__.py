"""Learning a dispatching policy, and searching on top of one.

* ``policy``: what a learned policy is (its features, its compiled decision, its networks,
  its file);
* ``env``: the environments over the compiled simulator (the vectorised one PPO and the
  benchmark step, and the Gymnasium one for other RL libraries);
* ``settings``: a training's settings, one frozen class a stage (PPO, the gated teacher, the
  rounds, the distillation), built from the config section ``train``;
* ``validation``: the greedy policy against ATC on fixed validation scenarios (PPO keeps its
  best weights by it, a distillation its result only when it wins);
* ``ppo``: training by PPO, written by hand (the loop, the rollout, the update, checkpoints and
  the training log);
* ``search``: decision-time search, the candidate evaluator ``lookahead``, ``plan``, the
  gated teacher, distillation and expert iteration;
* ``farm``: the learned policy on the chunked farm (its compiled decision, its file, PPO on a
  farm setting's scenarios);
* ``chain``: the warm start then PPO in one process (``ppo`` imports nothing of ``search``).

docs/architecture.md gives the files to open, in order, for one PPO update and one round of
expert iteration.
"""
