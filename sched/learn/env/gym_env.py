"""A Gymnasium environment over one render-queue scenario, for other RL libraries.

Importing this module registers the environment as ``sched/RenderQueue-v0``
(:data:`ENV_ID`)::

    import gymnasium
    import sched.learn.env.gym_env  # registers the id

    env = gymnasium.make("sched/RenderQueue-v0", cfg=cfg, max_queue=64)

or, without the explicit import, ``gymnasium.make("sched.learn.env.gym_env:sched/RenderQueue-v0")``.
:func:`make_gym_env` builds one directly. The environment exposes
``action_masks()`` (the convention of sb3-contrib's ``MaskablePPO``) and
refuses an invalid action with :class:`InvalidActionError`.

It shares the observation encoding (``sched.learn.policy.features``) and the reward
(``sched.learn.env.vec_env.reward``) with the PPO trainer's ``VecQueue``, but
shows every decision, including those with a single waiting task.

Gymnasium is an optional extra (``pip install 'render-queue-sched[gym]'``);
the project's own training does not use it. Without it, importing this
module raises :class:`sched.errors.MissingExtraError` (an ``ImportError``)
naming the extra.
"""

import operator

import numpy as np

from sched.config import load_config, seed_range
from sched.data.scenario import draw, scenario_model
from sched.errors import MissingExtraError, SchedError

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError:
    raise MissingExtraError(
        "sched.learn.env.gym_env needs gymnasium, an optional extra: pip install 'render-queue-sched[gym]'"
    ) from None
from sched.learn.env.vec_env import p_ref_of, reward
from sched.learn.policy import features as F
from sched.sim import core
from sched.sim.top import top

#: The id ``gymnasium.make`` knows the environment by, once this module is imported.
ENV_ID = "sched/RenderQueue-v0"


class InvalidActionError(SchedError):
    """An action that is not the row of a visible waiting task (see ``RenderQueueEnv.action_masks``)."""


class RenderQueueEnv(gym.Env):
    """One render-queue scenario as a Gymnasium environment.

    An episode is one scenario of the config's scenario model (``cfg``; None
    reads ``./config.yaml`` as the command line does, or the defaults when
    there is none). A step happens at every decision: a machine is free and
    at least one task waits.

    Observation space, a ``Dict``:

    * ``tasks``: ``Box(-1e4, 1e4, (max_queue, N_TASK), float32)``, the
      features ``sched.learn.policy.features.TASK_FEATURES`` of each visible waiting
      task, one row each; rows past the visible tasks are zero. When more than
      ``max_queue`` tasks wait, the ``max_queue`` with the highest ATC index
      are visible, best first; otherwise all are, in queue (arrival) order.
    * ``globals``: ``Box(-1e4, 1e4, (N_GLOBAL,), float32)``, the features
      ``sched.learn.policy.features.GLOBAL_FEATURES`` of the queue and machines.
    * ``action_mask``: ``Box(0, 1, (max_queue,), int8)``, 1 for the row of a
      visible task.

    Action space: ``Discrete(max_queue)``, the row of the task to start now.
    Only the rows of visible tasks are valid (:meth:`action_masks`); any other
    action raises :class:`InvalidActionError`.

    Reward: minus ``reward_scale`` times the weighted tardiness accrued since
    the previous decision (what accrued before the first decision is paid
    with the first reward), so an episode's rewards sum to minus
    ``reward_scale`` times the schedule's total weighted tardiness, which the
    last step's info reports as ``total_weighted_tardiness_s``. An episode
    terminates when every task has started; it is never truncated.

    ``reset(seed=...)`` draws the scenario seed from the config's training
    range; ``options={"scenario_seed": N}`` picks one. The info of ``reset``
    and ``step`` holds ``action_mask``; that of ``reset`` the ``scenario_seed``.
    """

    metadata = {"render_modes": []}

    def __init__(self, cfg=None, max_queue=64, reward_scale=0.001):
        self.cfg = load_config(None) if cfg is None else cfg
        self.max_queue = int(max_queue)
        self.reward_scale = float(reward_scale)
        self.seeds = seed_range(self.cfg, "train")
        sc = self.cfg.scenario
        self.model = scenario_model(self.cfg)  # built once: reset() reads no file
        self.encoder = F.Encoder(
            "tasks", self.cfg.rules.atc_k, p_ref_of(self.model), self.model.load_profile()
        )
        self.week_start_s = 0.0  # the scenario's (draw()'s week_start_s): the week features
        self.observation_space = spaces.Dict(
            {
                "tasks": spaces.Box(-1e4, 1e4, (self.max_queue, F.N_TASK), np.float32),
                "globals": spaces.Box(-1e4, 1e4, (F.N_GLOBAL,), np.float32),
                "action_mask": spaces.Box(0, 1, (self.max_queue,), np.int8),
            }
        )
        self.action_space = spaces.Discrete(self.max_queue)
        self.state = core.empty_state(1, self.model.tasks + self.model.warm_up_tasks, sc["machines"])
        self._rows = np.zeros(0, dtype=np.int64)  # queue position of each visible row
        self._before_first = 0.0

    def action_masks(self):
        """Boolean array of ``max_queue`` values, True where the action is valid."""
        return np.arange(self.max_queue) < len(self._rows)

    def _obs(self):
        obs = self.encoder(self.state, weeks=self.week_start_s)
        ql = int(self.state.qlen[0]) if self.state.pending[0] >= 0 else 0
        if ql > self.max_queue:
            rows = top(-obs.x[0, :ql, F.ATC_RANK_INDEX].astype(np.float64), self.max_queue)  # best rank first
        else:
            rows = np.arange(ql)
        self._rows = rows
        tasks = np.zeros((self.max_queue, F.N_TASK), np.float32)
        tasks[: len(rows)] = obs.x[0, rows]
        am = np.zeros(self.max_queue, np.int8)
        am[: len(rows)] = 1
        return {"tasks": tasks, "globals": obs.globals_[0].astype(np.float32), "action_mask": am}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        options = options or {}
        if "scenario_seed" in options:
            self.scenario_seed = int(options["scenario_seed"])
        else:
            self.scenario_seed = int(self.np_random.integers(self.seeds.start, self.seeds.stop))
        d = draw(self.model, self.scenario_seed, warm_up=True)
        self.week_start_s = d["week_start_s"]
        core.load_slot(self.state, 0, d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])
        core.advance_slot(self.state, 0, False)
        self._before_first = float(self.state.accrued[0])
        obs = self._obs()
        return obs, {"action_mask": obs["action_mask"], "scenario_seed": self.scenario_seed}

    def step(self, action):
        qpos = int(self._rows[self._checked_row(action)])
        core.apply_batch(self.state, np.array([qpos], dtype=np.int64))
        core.advance_batch(self.state, False)
        r = float(reward(self.state.accrued[0] + self._before_first, self.reward_scale))
        self._before_first = 0.0
        terminated = bool(self.state.done[0])
        obs = self._obs()
        info = {"action_mask": obs["action_mask"]}
        if terminated:
            info["total_weighted_tardiness_s"] = float(self.state.wt_started[0])
        return obs, r, terminated, False, info

    def _checked_row(self, action):
        """``action`` as a row index; InvalidActionError unless it is a visible task's row."""
        n = len(self._rows)
        try:
            row = operator.index(action)
        except TypeError:
            row = None
        if row is None or not 0 <= row < n:
            valid = f"rows 0-{n - 1}" if n else "none: reset() the environment"
            raise InvalidActionError(
                f"action {action!r}: not the row of a waiting task; {n} valid actions ({valid})"
            )
        return row


def make_gym_env(cfg=None, max_queue=64, reward_scale=0.001):
    """A :class:`RenderQueueEnv` (``cfg`` None: ``./config.yaml``, as the command line reads it)."""
    return RenderQueueEnv(cfg, max_queue=max_queue, reward_scale=reward_scale)


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="sched.learn.env.gym_env:RenderQueueEnv")
