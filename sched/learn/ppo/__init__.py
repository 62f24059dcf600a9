"""Proximal Policy Optimisation, written by hand (docs/learning.md).

* ``loop``: the training loop, :func:`~sched.learn.ppo.loop.train` (its settings:
  ``sched.learn.settings``);
* ``rollout``: one iteration's rollout (``num_steps`` lockstep steps of the training
  scenarios) and its advantages: GAE on the critic, or rollouts in groups, an
  input-dependent baseline (Mao et al., ICLR 2019);
* ``sampler``: PPO's sampling policy inside the compiled simulator (the rollout without torch);
* ``update``: advantages (GAE) and the clipped-surrogate update of one rollout;
* ``checkpoint``: training checkpoints, so that an interrupted run resumes;
* ``train_log``: ``train_log.csv``, its progress bar and its plot.
"""
