"""Run a named policy over scenarios: the dispatching rules (compiled core)
and, once trained, the PPO policy."""

from sched.sim import rules


def schedule_scenarios(
    scenarios, policy, machines=1, k=rules.ATC_K_DEFAULT, policy_file=None, machine_free=None, threads=1
):
    """(start, end, machine) arrays, row order, for each scenario under ``policy``.

    ``policy``: a rule name (``sched.sim.rules.RULES``) or ``"ppo"`` with
    ``policy_file``. ``machine_free``: when each machine is first free
    (default: all free from the start).
    """
    if policy in rules.RULES:
        if policy_file:
            raise ValueError(f"--policy-file is only used with --policy ppo, not {policy!r}")
        from sched.sim.core import simulate_batch

        return simulate_batch(
            [s.arrays for s in scenarios], policy, machines=machines, k=k, machine_free=machine_free
        )
    if policy == "ppo":
        if not policy_file:
            raise ValueError("policy ppo needs a policy file (--policy-file, from `sched train`)")
        from sched.learn.networks import load
        from sched.learn.vec_env import run_greedy

        return run_greedy(
            load(policy_file),
            [s.arrays for s in scenarios],
            machines=machines,
            machine_free=machine_free,
            threads=threads,
        )
    raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(rules.RULES)} or ppo")
