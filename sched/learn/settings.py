"""A training's settings, by stage, built from the config section ``train``.

One frozen class a stage: what the learned policy is (:class:`NetworkSettings`), PPO
(:class:`PPOSettings`), the gated teacher of the warm start (:class:`TeacherSettings`), the rounds
of expert iteration (:class:`RoundSettings`) and the distillation (:class:`DistillSettings`).
:class:`Training` holds the five with what every stage shares: the seed, the threads, the
scenarios' tasks and the validation scenarios. A function takes the stage it reads
(``distill(net, labels, settings.distill, gen)``); PPO's loop takes the whole :class:`Training`.

Each field is one key of ``train`` (its ``key``, the field's name less the stage's prefix:
``settings.teacher.samples`` is ``train.teacher_samples``), and its one description is the
schema's (``workflow/schemas/config.schema.yaml``; ``tests/test_settings_by_stage.py`` holds every
field to a described key and no docstring here). Tests and benchmarks speak the config's flat
names: ``Training.of(seed=3, iterations=6)``, ``settings.replace(patience=0)``.
"""

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

from sched.config import schema_defaults
from sched.errors import SchedError


class TrainSettingsError(SchedError):
    """Training settings that cannot go together, or a key that is not a training setting; the
    message names the field."""


def key(name):
    """A field holding the setting ``train.<name>``."""
    return dataclasses.field(metadata={"key": name})


class _Stage:
    """What a stage's settings class shares: it is built from flat ``train`` values."""

    @classmethod
    def keys(cls):
        """``{field name: train key}``."""
        return {f.name: f.metadata["key"] for f in dataclasses.fields(cls)}

    @classmethod
    def from_flat(cls, values):
        return cls(**{name: values[k] for name, k in cls.keys().items()})

    @classmethod
    def from_config(cls, cfg):
        """This stage's settings of ``cfg``'s ``train`` section."""
        return cls.from_flat(config_values(cfg))


@dataclass(frozen=True)
class NetworkSettings(_Stage):
    """What the learned policy is: its network, its candidates and its ATC k."""

    architecture: str = key("architecture")
    hidden: int = key("hidden")
    atc_prior: bool = key("atc_prior")
    prior_scale: float = key("prior_scale")
    prior_rule: str = key("prior_rule")
    top_k: int = key("top_k")
    atc_k: float | None = key("atc_k")
    wait: bool = key("wait")


@dataclass(frozen=True)
class PPOSettings(_Stage):
    """PPO: the rollouts, the update, the validation's rhythm and the checkpoints."""

    iterations: int = key("iterations")
    num_envs: int = key("num_envs")
    num_steps: int = key("num_steps")
    learning_rate: float = key("learning_rate")
    linear_lr_mult: float = key("linear_lr_mult")
    anneal_lr: bool = key("anneal_lr")
    gamma: float = key("gamma")
    gae_lambda: float = key("gae_lambda")
    num_minibatches: int = key("num_minibatches")
    update_epochs: int = key("update_epochs")
    norm_adv: bool = key("norm_adv")
    clip_coef: float = key("clip_coef")
    clip_vloss: bool = key("clip_vloss")
    ent_coef: float = key("ent_coef")
    vf_coef: float = key("vf_coef")
    max_grad_norm: float = key("max_grad_norm")
    target_kl: float | None = key("target_kl")
    reward_scale: float = key("reward_scale")
    privileged_critic: bool = key("privileged_critic")
    group_size: int = key("group_size")
    loads: list | None = key("loads")
    eval_every: int = key("eval_every")
    patience: int = key("patience")
    checkpoint_every: int = key("checkpoint_every")

    @property
    def batch_size(self):
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self):
        return self.batch_size // self.num_minibatches


class Labelling(NamedTuple):
    """How the gated teacher decides while it labels (``sched.learn.search.teacher.make_labels``):
    the warm start's (:meth:`TeacherSettings.labelling`) or a round's
    (:meth:`RoundSettings.labelling`)."""

    candidates: int  #: the base policy's best tasks it compares (its own choice first)
    samples: int  #: at most this many sampled futures per decision
    chunk: int  #: samples drawn between two checks of the paired stopping rule
    horizon: int  #: future arrivals per sampled future
    z: float  #: deviate when the mean paired difference + z standard errors < 0


@dataclass(frozen=True)
class TeacherSettings(_Stage):
    """The gated teacher of the warm start (``plan`` on training states)."""

    scenarios: int = key("teacher_scenarios")
    base: str = key("teacher_base")
    candidates: int = key("teacher_candidates")
    samples: int = key("teacher_samples")
    chunk: int = key("teacher_chunk")
    horizon: int = key("teacher_horizon")
    z: float = key("teacher_z")

    def labelling(self):
        return Labelling(self.candidates, self.samples, self.chunk, self.horizon, self.z)


@dataclass(frozen=True)
class RoundSettings(_Stage):
    """The rounds of expert iteration: the gated teacher on the policy of the round before."""

    count: int = key("rounds")
    scenarios: int = key("round_scenarios")
    teacher_share: float = key("round_teacher_share")
    samples: int = key("round_samples")
    chunk: int = key("round_chunk")
    horizon: int = key("round_horizon")
    continuation: str = key("round_continuation")
    target: str = key("round_target")

    def labelling(self, teacher):
        """A round's teacher: the warm start's ``teacher``'s candidates and z, the round's samples."""
        return Labelling(teacher.candidates, self.samples, self.chunk, self.horizon, teacher.z)


@dataclass(frozen=True)
class DistillSettings(_Stage):
    """The distillation of the teacher's labels into the student (the warm start's, or a round's
    with ``target`` the round's: :meth:`Training.for_stage`)."""

    target: str = key("distill_target")
    improve: float = key("distill_improve")
    epochs: int = key("distill_epochs")
    lr: float = key("distill_lr")
    batch: int = key("distill_batch")
    scale: float = key("distill_scale")
    max_grad_norm: float = key("max_grad_norm")


#: The stages of a :class:`Training`, by attribute.
STAGES = {
    "network": NetworkSettings,
    "ppo": PPOSettings,
    "teacher": TeacherSettings,
    "rounds": RoundSettings,
    "distill": DistillSettings,
}
#: The settings every stage shares, by attribute (``seed``: one of ``train.seeds``).
SHARED = ("seed", "threads", "tasks", "validation_scenarios")
#: The order a policy file records the settings in (its ``train_args``, whose bytes the file's
#: sha256 binds): the order of the one class they once were. Do not reorder.
RECORD_ORDER = (
    "seed", "iterations", "num_envs", "num_steps", "learning_rate", "linear_lr_mult", "anneal_lr", "gamma",
    "gae_lambda", "num_minibatches", "update_epochs", "norm_adv", "clip_coef", "clip_vloss", "ent_coef",
    "vf_coef", "max_grad_norm", "target_kl", "reward_scale", "architecture", "hidden", "atc_prior",
    "prior_scale", "prior_rule", "top_k", "atc_k", "privileged_critic", "teacher_scenarios", "teacher_base",
    "teacher_candidates", "teacher_samples", "teacher_chunk", "teacher_horizon", "teacher_z", "rounds",
    "round_scenarios", "round_teacher_share", "round_samples", "round_chunk", "round_horizon",
    "round_continuation", "group_size", "distill_target", "round_target", "distill_improve",
    "distill_epochs", "distill_lr", "distill_batch", "distill_scale", "tasks", "loads", "eval_every",
    "patience", "validation_scenarios", "checkpoint_every", "threads",
)  # fmt: skip
#: Settings added after the record's order was fixed, with their off value (the schema gives them
#: no default, so no config or step config names them): a record holds one only when it is on, so
#: that every file of a training without it keeps its bytes.
OPTIONAL = {"wait": False}
#: ``train`` keys read beside the stages by the farm's trainer only (``sched.learn.farm.train.sync_of``):
#: no stage of the one-queue learner has them.
FARM_ONLY = ("sync_s",)


def defaults():
    """The schema's default of every training setting, flat (``seed``: the first of ``train.seeds``;
    an :data:`OPTIONAL` one: off)."""
    train = schema_defaults("train")
    return {**{k: (train["seeds"][0] if k == "seed" else train[k]) for k in RECORD_ORDER}, **OPTIONAL}


def config_values(cfg):
    """The flat training settings of ``cfg``: the schema's defaults, then ``cfg.train``'s values
    (``seed`` stays the schema's first: a command passes its own)."""
    values = defaults()
    values.update({k: v for k, v in cfg.train.to_dict().items() if k in values})  # lists stay lists
    return values


@dataclass(frozen=True)
class Training:
    """A training run's settings: what every stage shares, then one settings object a stage."""

    seed: int
    threads: int
    tasks: int | None
    validation_scenarios: int
    network: NetworkSettings
    ppo: PPOSettings
    teacher: TeacherSettings
    rounds: RoundSettings
    distill: DistillSettings

    @classmethod
    def from_flat(cls, values):
        """From every setting, flat; TrainSettingsError on a key that is not one."""
        unknown = sorted(set(values) - set(RECORD_ORDER) - set(OPTIONAL))
        if unknown:
            raise TrainSettingsError(f"train.{unknown[0]}: not a training setting")
        missing = sorted(set(RECORD_ORDER) - set(values))
        if missing:
            raise TrainSettingsError(f"train.{missing[0]}: missing")
        values = {**OPTIONAL, **values}
        stages = {name: stage.from_flat(values) for name, stage in STAGES.items()}
        return cls(**{k: values[k] for k in SHARED}, **stages)

    @classmethod
    def of(cls, **values):
        """The schema's defaults, with ``values`` (flat ``train`` keys, ``seed``) in their place."""
        return cls.from_flat({**defaults(), **values})

    @classmethod
    def from_config(cls, cfg, **overrides):
        """The config's ``train`` settings, then the ``overrides`` that are not None."""
        values = config_values(cfg)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_flat(values)

    def replace(self, **values):
        """These settings with ``values`` (flat keys) in place."""
        return Training.from_flat({**self.as_dict(), **values})

    def as_dict(self):
        """Every setting, flat, in :data:`RECORD_ORDER`, then the :data:`OPTIONAL` ones that are on
        (a checkpoint's fingerprint; a policy file's ``train_args`` less the threads)."""
        flat = {k: getattr(self, k) for k in SHARED}
        for name in STAGES:
            stage = getattr(self, name)
            flat.update({k: getattr(stage, f) for f, k in stage.keys().items()})
        on = {k: flat[k] for k, off in OPTIONAL.items() if flat[k] != off}
        return {**{k: flat[k] for k in RECORD_ORDER}, **on}

    def for_stage(self, stage):
        """The settings a distillation ``stage`` runs with: "warm" these, a round's ("round-<r>")
        with ``distill_target`` the round's (``train.round_target``)."""
        return self if stage == "warm" else self.replace(distill_target=self.rounds.target)


def check(settings):
    """TrainSettingsError on settings that cannot go together."""
    net, ppo = settings.network, settings.ppo
    if net.architecture != "scorer":
        raise TrainSettingsError(
            f"train.architecture: expected scorer, got {net.architecture!r} (the card's flat MLP is "
            f"retired: a learned policy's decision has one, compiled definition)"
        )
    if ppo.group_size >= 2 and ppo.num_envs % ppo.group_size:
        raise TrainSettingsError(
            f"train.group_size: {ppo.group_size} does not divide train.num_envs ({ppo.num_envs})"
        )
    if settings.teacher.scenarios > 0 and net.top_k <= 0:
        raise TrainSettingsError(
            f"train.teacher_scenarios: the teacher warm start labels the top_k "
            f"candidates of the scorer; got top_k {net.top_k} (set teacher_scenarios: 0 "
            f"to train without it)"
        )
