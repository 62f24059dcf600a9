"""Learning: the state features, the policy networks and their file format, the compiled
scorer, the vectorised and Gymnasium environments, PPO and the rollout teacher."""
