"""Validation: the greedy policy against ATC on fixed validation scenarios.

Validation seeds never overlap training or test seeds. PPO keeps the weights with the best
validation score (``sched.learn.ppo.checkpoint.RunProgress``); a distillation is kept only when it
beats its start here (``sched.learn.search.iterate.distill_stage``).
"""

import numpy as np

from sched.config import seed_range
from sched.data.objective import weighted_tardiness
from sched.data.scenario import draw, scenario_model
from sched.learn.policy import kernel, wait_head
from sched.sim import core


class Validator:
    """Greedy policy vs ATC on the first ``scenarios`` validation seeds (common random numbers),
    of ``tasks`` tasks each (None: the config's scenario.tasks).

    ``atc``: ATC's mean total weighted tardiness on them (with the config's
    rules.atc_k); calling the validator returns the policy's.
    """

    def __init__(self, cfg, scenarios, tasks=None):
        seeds = list(seed_range(cfg, "validation"))[:scenarios]
        self.scenarios, self.weeks = [], []  # the task arrays, the week starts
        self.counted = []  # the tasks after the warm-up (scenario.warm_up_days), the only ones counted
        model = scenario_model(cfg)
        for s in seeds:
            d = draw(model, s, tasks=tasks, warm_up=True)
            self.scenarios.append((d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"]))
            self.weeks.append(d["week_start_s"])
            self.counted.append(d["arrival"] >= d["counted_from_s"])
        self.M = cfg.scenario.machines
        atc = core.simulate_batch(self.scenarios, "atc", machines=self.M, k=cfg.rules.atc_k)
        self.atc = self._mean_twt(atc)

    def _mean_twt(self, results):
        costs = [
            weighted_tardiness(end[m], sc[4][m], sc[3][m])
            for sc, m, (_, end, _) in zip(self.scenarios, self.counted, results)
        ]
        return float(np.mean(costs))

    def __call__(self, net, meta):
        """Mean total weighted tardiness of ``net``'s greedy policy (the compiled decision)."""
        args = (net, meta["atc_k"], meta["p_ref"], meta["profile"])
        if getattr(net, "waits", False):  # with its wait output (sched.learn.policy.wait_head)
            knet = wait_head.of_network(*args, meta["max_wait_s"])
        else:
            knet = kernel.of_network(*args)
        return self._mean_twt(kernel.run(knet, self.scenarios, self.M, week_start_s=self.weeks))
