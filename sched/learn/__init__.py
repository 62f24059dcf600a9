"""Learning a dispatching policy.

* ``features``: the state encoding (what a policy sees), compiled;
* ``networks``: the actor-critics and :class:`~sched.learn.networks.Policy`;
  ``policy_file``: the file a trained policy is saved in;
* ``scorer``: the scorer's greedy rollout of one queue, compiled (``rank()``);
* ``vec_env``: training scenarios stepped in lockstep, greedy rollouts;
  ``gym_env``: the Gymnasium environment (``sched/RenderQueue-v0``);
* ``ppo``: the settings (``Args``) and the training loop, made of ``rollout``,
  ``update`` (GAE and the PPO update), ``validation``, ``checkpoint`` and
  ``train_log``;
* ``teacher``: the Monte Carlo rollout teacher; ``distill``: the warm start
  that imitates it.
"""
