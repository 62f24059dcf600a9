"""Environments over the compiled simulator.

* :class:`VecQueue`: many scenarios stepped in lockstep inside the compiled
  core; one compiled sampling call per step serves all of them
  (``sched.learn.ppo.sampler``). Used by the PPO trainer.

A policy's greedy rollout over given scenarios (the benchmark, ``sched
simulate``, ``rank()``) is ``sched.learn.policy.kernel.run``.

The Gymnasium environment over one scenario (for users who want to plug in
another RL library) is ``sched.learn.env.gym_env.RenderQueueEnv``; it shares
:func:`reward` with :class:`VecQueue`.

A decision happens when a machine is free and at least one task waits; the
action picks one waiting task (a queue position). In training and greedy
rollouts, decisions with a single waiting task have no choice and are taken
inside the simulator; the Gymnasium environment shows every decision (a step
with one valid action), so that every episode has at least one step.

Reward (one definition, :func:`reward`): minus ``reward_scale`` (by default
0.001: one unit = 1,000 weighted seconds, as in the original card) times the weighted
tardiness accrued by all tasks since the previous decision. Tardiness accrues
at rate w for every task past its due date and not yet complete; a started
task is charged up to its completion. The rewards of an episode sum to
-reward_scale x the schedule's total weighted tardiness (what accrues before the
first decision is paid with the first reward), and each action is charged
soon after it is taken (a dense signal instead of one number at the end). A
training scenario with no choice at all (never more than one task waiting)
yields no step and is skipped.

With ``max_wait`` (a policy with a wait output, ``train.wait``) an action may be
``wait_head.WAIT``: the free GPU idles until the next arrival, at most ``max_wait``
seconds after it freed; a lone waiting task is then a decision too (it may wait). The
reward is the same: tardiness accrues while the GPU idles.
"""

import numpy as np

from sched.data.machines import speeds
from sched.data.model import scenario_model
from sched.data.scenario import draw
from sched.learn.policy import features as F
from sched.learn.policy import wait_head
from sched.sim import core


def reward(accrued, reward_scale):
    """The reward of a step: minus the scaled weighted tardiness accrued since the last one."""
    return -reward_scale * accrued


def p_ref_of(model):
    """Reference duration (mean of the scenario model, a ``ScenarioModel``) that normalises
    global features."""
    return float(model.mean_duration)


class VecQueue:
    """``num_envs`` training scenarios stepped in lockstep.

    Each slot plays whole scenarios; when one ends, the slot is reloaded with
    the next scenario, whose seed is drawn from ``seeds`` (a range, e.g. the
    config's training range) by ``rng``. ``loads`` lists the loads episodes
    are drawn from (a curriculum when several). Each slot keeps its
    scenario's load profile (``slot_profile``, (B, 168): its model's
    ``load_profile``) and week start (``slot_week``): the learned policy's
    ``ahead_*`` and ``week_*`` features.
    """

    def __init__(
        self,
        cfg,
        num_envs,
        rng,
        seeds,
        encoding,
        atc_k,
        tasks=None,
        loads=None,
        machines=None,
        reward_scale=0.001,
        privileged=False,
        action_rng=None,
        model=None,
        max_wait=None,
    ):
        self.cfg = cfg
        #: None: no wait action (a lone waiting task is started in the simulator); else its bound (s)
        self.max_wait = None if max_wait is None else float(max_wait)
        self.skip_forced = self.max_wait is None
        #: the scenario model (sched.data.model), built once: drawing a scenario reads no file
        self.model = model if model is not None else scenario_model(cfg)
        #: the uniforms of the compiled sampler's Gumbel-max draws (``sched.learn.ppo.sampler``);
        #: kept here so that a checkpoint restores it with the scenarios' stream
        self.action_rng = action_rng
        self.B = int(num_envs)
        self.rng = rng
        self.seeds = seeds
        #: the state's tasks a scenario: its count and the warm-up's (``scenario.warm_up_days``)
        self.tasks = int(tasks or self.model.tasks) + self.model.warm_up_tasks
        #: the GPUs' speeds (any form of sched.data.machines: a count, a spec)
        self.speeds = speeds(machines if machines is not None else cfg.scenario.machines)
        self.M = len(self.speeds)
        self.loads = [float(x) for x in (loads or [cfg.scenario.load])]
        self.reward_scale = float(reward_scale)
        #: the load profile of each load, on these GPUs (the workload's, or constant)
        self.profiles = {
            x: self.model.replace(load=x, machines=self.speeds).load_profile() for x in self.loads
        }
        self.encoder = F.Encoder(encoding, atc_k, p_ref_of(self.model), self.profiles[self.loads[0]])
        self.state = core.empty_state(self.B, self.tasks, self.speeds)
        self.slot_load = np.zeros(self.B)
        self.slot_profile = np.zeros((self.B, 168))
        self.slot_week = np.zeros(self.B)
        self.slot_seed = np.zeros(self.B, dtype=np.int64)
        self.finished = []  # (seed, load, total weighted tardiness) of episodes that ended
        self.atc_k = float(atc_k)
        self.scratch = core.empty_state(self.B, self.tasks, self.speeds) if privileged else None
        # the hint of the current states, and what lets the next step's reuse it
        # (core.cost_to_go_cached): valid, the action taken, ATC's choice
        self._ctg = np.zeros(self.B)
        self._hint_valid = np.zeros(self.B, dtype=np.bool_)
        self._taken = np.full(self.B, -1, dtype=np.int64)
        self._atc_choice = np.full(self.B, -1, dtype=np.int64)
        self._hint_stale = True
        # tardiness accrued between a slot's reload and its first decision: no
        # action caused it, but it is part of the episode's total, so it is
        # paid with the episode's first reward (the rewards then sum exactly)
        self._before_first = np.zeros(self.B)

    def kernel_net(self, net):
        """The compiled policy (``sched.learn.policy.kernel.Net``) of ``net``'s current weights, with
        this environment's ATC k, reference duration and (first) load profile (the sampler sets
        each slot's own)."""
        from sched.learn.policy import kernel

        if self.max_wait is not None:  # with the wait output (``wait_head.Waiting``)
            enc = self.encoder
            return wait_head.of_network(net, self.atc_k, enc.p_ref, enc.profile, self.max_wait)
        return kernel.of_network(net, self.atc_k, self.encoder.p_ref, self.encoder.profile)

    def value_hint(self):
        """Privileged value estimate of every slot, for the critic only: minus the
        scaled weighted tardiness still to accrue if ATC took every decision from
        now on, with the slot's true future arrivals (hindsight). Zero when the
        environment was built without ``privileged``.

        A slot whose last action was ATC's own choice keeps its ATC rollout
        (``core.cost_to_go_cached``): the hint costs a rollout only after the
        policy departs from ATC."""
        if self.scratch is None:
            return np.zeros(self.B, dtype=np.float32)
        if self._hint_stale:
            core.cost_to_go_cached(
                self.state,
                self.scratch,
                core.rules.ATC,
                self.atc_k,
                self._ctg,
                self._hint_valid,
                self._taken,
                self._atc_choice,
            )
            self._hint_stale = False
        return reward(self._ctg, self.reward_scale).astype(np.float32)

    def _load(self, b):
        """Put a new scenario in slot b and run it to its first real decision."""
        while True:
            seed, load, d = self._draw_next()
            if self._put(b, seed, load, d):
                return
            self.finished.append((seed, load, float(self.state.wt_started[b])))

    def _draw_next(self):
        """The next training scenario: (seed, load, drawn arrays), from this environment's stream."""
        seed = int(self.rng.integers(self.seeds.start, self.seeds.stop))
        load = self.loads[int(self.rng.integers(len(self.loads)))] if len(self.loads) > 1 else self.loads[0]
        n = self.tasks - self.model.warm_up_tasks
        return seed, load, draw(self.model, seed, tasks=n, load=load, machines=self.speeds, warm_up=True)

    def _put(self, b, seed, load, d):
        """Load the drawn scenario ``d`` into slot b and run it to its first real decision; False
        when it has none (it is done already)."""
        core.load_slot(self.state, b, d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])
        core.set_rule(self.state, b, core.rules.ATC)  # the hint's ATC choices read it
        self._hint_valid[b] = False
        self._hint_stale = True
        self.slot_load[b], self.slot_seed[b] = load, seed
        self.slot_profile[b], self.slot_week[b] = self.profiles[load], d["week_start_s"]
        core.advance_slot(self.state, b, self.skip_forced)
        if self.state.done[b]:
            return False
        self._before_first[b] = self.state.accrued[b]
        return True

    def reset(self):
        for b in range(self.B):
            self._load(b)
        return self.observe()

    def observe(self):
        return self.encoder(self.state, self.slot_profile, self.slot_week)

    def step(self, actions, observe=True):
        """Apply one action per slot; returns (obs, reward, done) (obs None without ``observe``)."""
        s = self.state
        self._taken[:] = actions
        self._hint_stale = True
        self.apply(actions)
        r = reward(s.accrued + self._before_first, self.reward_scale).astype(np.float32)
        self._before_first[:] = 0.0
        done = s.done.copy()
        for b in np.flatnonzero(done):
            self.finished.append((int(self.slot_seed[b]), float(self.slot_load[b]), float(s.wt_started[b])))
            self._load(b)
        return (self.observe() if observe else None), r, done

    def apply(self, actions):
        """Take one action per pending slot (a queue position, or ``wait_head.WAIT`` with
        ``max_wait``), then run every slot to its next decision."""
        actions = np.asarray(actions, dtype=np.int64)
        if self.max_wait is None:
            core.apply_batch(self.state, actions)
        else:
            wait_head.apply_batch(self.state, actions, self.max_wait)
        core.advance_batch(self.state, self.skip_forced)

    # checkpointing: the whole simulator state and the seed stream
    def get_state(self):
        return {
            "arrays": {k: np.array(v) for k, v in self.state._asdict().items()},
            "slot_load": self.slot_load.copy(),
            "slot_seed": self.slot_seed.copy(),
            "slot_week": self.slot_week.copy(),
            "before_first": self._before_first.copy(),
            "hint": np.array([self._ctg, self._hint_valid, self._taken, self._atc_choice]),
            "hint_stale": int(self._hint_stale),
            "rng": self.rng.bit_generator.state,
            "action_rng": None if self.action_rng is None else self.action_rng.bit_generator.state,
        }

    def set_state(self, st):
        for k, v in st["arrays"].items():
            getattr(self.state, k)[...] = v
        self.slot_load[:] = st["slot_load"]
        self.slot_seed[:] = st["slot_seed"]
        self.slot_week[:] = st["slot_week"]
        for b, load in enumerate(self.slot_load):
            self.slot_profile[b] = self.profiles[float(load)]
        self._before_first[:] = st["before_first"]
        self._ctg[:], self._hint_valid[:], self._taken[:], self._atc_choice[:] = st["hint"]
        self._hint_stale = bool(st["hint_stale"])
        self.rng.bit_generator.state = st["rng"]
        if self.action_rng is not None:
            self.action_rng.bit_generator.state = st["action_rng"]
