"""A learned policy: what it sees, how it decides, and the file it is saved in.

* ``features``: the state encoding (what a policy sees at a decision), compiled;
* ``kernel``: a learned policy's decision, compiled (its one definition: the benchmark,
  ``rank()``, validation, PPO's sampler, the teacher and ``plan`` run it);
* ``wait_head``: a learned policy's wait output, compiled (``train.wait``: hold the free GPU);
* ``networks``: the actor-critics, the ragged batches they read, and
  :class:`~sched.learn.policy.networks.Policy`;
* ``policy_file``: the policy file (a trained network and what is needed to use it).
"""
