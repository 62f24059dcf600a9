"""The scenario model: everything a generated scenario depends on, read from the config once.

:func:`scenario_model` turns a validated config into a :class:`ScenarioModel`
(frozen; its arrays are read-only and its mappings immutable): the task kinds
and their duration distributions (from ``scenario.kinds`` or the calibration
file ``scenario.calibration`` names), the estimate noise, the priority classes,
the deadline rule, the workload file (``scenario.workload``), the farm
(``scenario.machines``), the load and the task count. It is the only place
that reads those files for generation: :func:`sched.data.scenario.draw` and
:func:`~sched.data.scenario.generate`, the rollouts and the teacher take the
model and read nothing. Build it once at the top of a command or a run, not
per seed.
"""

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from sched.config import thawed
from sched.data.distributions import mean_duration
from sched.data.machines import speeds as parse_speeds
from sched.errors import SchedError


class ModelError(SchedError):
    """A value given to the scenario model is invalid; the message names the field and value."""


def _frozen(value):
    """A read-only copy: mappings as MappingProxyType, lists as tuples, arrays read-only."""
    if isinstance(value, dict | MappingProxyType):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        return _readonly(value)
    return value


def _readonly(array, dtype=np.float64):
    out = np.array(array, dtype=dtype)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class ScenarioModel:
    """What :func:`sched.data.scenario.draw` draws from (build it with :func:`scenario_model`).

    Fields: ``specs`` {kind: spec} in the order of the config or calibration
    file (a spec: ``share``, ``distribution`` and its parameters), ``kinds``
    (sorted: the kind indices of a draw), ``shares`` (normalised, in ``kinds``
    order), ``mean_duration`` (E[duration] over the mix: the load's and the
    features' reference duration), ``sigma`` (the estimate noise),
    ``classes`` / ``class_weights`` / ``class_probs`` (the priority classes of
    ``scenario.priorities``, lightest first), ``flow_factor`` and ``slack_s``
    (the deadline rule's ranges), ``workload`` (the workload file's content,
    read-only, or None) and ``workload_scale``, ``duration_scale`` (the factor
    on drawn durations and estimates: 1, or with a workload the history's mean
    measured duration over the calibration's, so that generated scenarios
    offer the history's load; ``mean_duration`` is then the scaled mean), ``tasks``, ``load``,
    ``machines`` (the config's value) and ``speeds`` (one per GPU), and
    ``calibration`` / ``workload_file`` (the files' paths, for reports).
    """

    specs: MappingProxyType
    kinds: tuple
    shares: np.ndarray
    mean_duration: float
    sigma: float
    classes: tuple
    class_weights: np.ndarray
    class_probs: np.ndarray
    flow_factor: tuple
    slack_s: tuple
    workload: MappingProxyType | None
    workload_scale: float
    duration_scale: float
    tasks: int
    load: float
    machines: object
    speeds: np.ndarray
    calibration: str | None = None
    workload_file: str | None = None
    #: ``scenario.warm_up_days`` in seconds, and the tasks drawn for it beyond ``tasks``.
    warm_up_s: float = 0.0
    warm_up_tasks: int = 0
    #: ``scenario.workload_model``: which of issue 50's elements a workload's scenarios draw
    #: (class_durations, heavy_tails, day_intensity; :func:`workload_switches`).
    switches: MappingProxyType = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    #: ``scenario.chunks``: jobs of frames (:func:`sched.data.jobs.chunk_spec`); None: whole tasks.
    chunks: MappingProxyType | None = None

    def history_durations(self):
        """Whether durations come from the history's measured ones (not the bench calibration)."""
        return self.workload is not None and history_durations(self.switches)

    @property
    def capacity(self):
        """The farm's capacity in speed-1 GPUs: the sum of the speeds (M for identical GPUs)."""
        return float(self.speeds.sum())

    def load_profile(self):
        """The expected offered load of each hour of the week, (168,) float64, Monday 00:00 UTC
        first: with a workload, workload_scale x its hourly arrival rate x mean_duration / the
        capacity; without one, the constant ``load`` (the learned policy's ``ahead_*`` features)."""
        if self.workload is None:
            return np.full(168, self.load)
        rate = np.asarray(self.workload["arrivals"]["rate_per_hour"], dtype=np.float64) / 3600.0
        return self.workload_scale * rate * float(self.mean_duration) / self.capacity

    def kind_specs(self):
        """{kind: spec} as plain, mutable dicts (a fresh copy)."""
        return thawed(self.specs)

    def replace(self, tasks=None, load=None, machines=None):
        """This model with another task count, load or farm (any form of sched.data.machines)."""
        changes = {}
        if tasks is not None:
            changes["tasks"] = _tasks(tasks)
        if load is not None:
            changes["load"] = _load(load)
        if machines is not None:
            changes["machines"] = machines
            changes["speeds"] = _readonly(parse_speeds(machines, "machines"))
        return dataclasses.replace(self, **changes) if changes else self


def _tasks(value):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ModelError(f"tasks: must be a whole number >= 1, got {value!r}")
    return int(value)


def _load(value):
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ModelError(f"load: must be a number > 0, got {value!r}")
    if not 0 < float(value) < np.inf:
        raise ModelError(f"load: must be a finite number > 0, got {value!r}")
    return float(value)


#: ``scenario.tasks: day`` (with a workload): as many tasks as the busiest 24 hours of the
#: fitted week are expected to bring, and DAY_MARGIN more, so that a scenario spans a whole
#: day wherever in the week it starts.
DAY = "day"
DAY_MARGIN = 1.1


def day_tasks(workload, scale=1.0):
    """The task count of ``scenario.tasks: day``: DAY_MARGIN x the most arrivals any 24 hours
    of the workload's week are expected to bring (its hourly rates x ``scale``), rounded up."""
    if workload is None:
        raise ModelError("scenario.tasks: 'day' needs a workload (scenario.workload is null)")
    rate = np.asarray(workload["arrivals"]["rate_per_hour"], dtype=np.float64) * scale
    busiest = max(float(np.roll(rate, -h)[:24].sum()) for h in range(len(rate)))
    return max(1, int(np.ceil(DAY_MARGIN * busiest)))


def duration_scale(workload, mean):
    """The factor on generated durations that gives a workload's scenarios the history's load:
    the history's mean measured duration (else its mean estimate) over the durations' mean
    ``mean`` (from the calibration or scenario.kinds); 1 without a workload or either mean."""
    if workload is None:
        return 1.0
    load = workload.get("load") or {}
    target = load.get("mean_measured_duration_s") or load.get("mean_estimate_s")
    if not target or not np.isfinite(mean) or mean <= 0:
        return 1.0
    return float(target) / float(mean)


#: The elements of issue 50's workload model, each switched on in config scenario.workload_model,
#: and the section of the workload file it needs.
SWITCHES = {
    "class_durations": "durations",
    "heavy_tails": "durations",
    "day_intensity": "arrivals.day_factors",
}


def history_durations(switches):
    """Whether the switches draw durations from the history's measured ones (either switch of
    :data:`SWITCHES` that reads ``durations``)."""
    return any(switches.get(k, False) for k, section in SWITCHES.items() if section == "durations")


def workload_switches(options, workload, path):
    """The switches of config ``scenario.workload_model`` (``options``), checked against the
    workload file (``workload``, read from ``path``): a switch on needs its fitted section."""
    on = {k: bool((options or {}).get(k, False)) for k in SWITCHES}
    if workload is None:
        return on
    have = {
        "durations": workload.get("durations") is not None,
        "arrivals.day_factors": workload["arrivals"].get("day_factors") is not None,
    }
    for k, section in SWITCHES.items():
        if on[k] and not have[section]:
            raise ModelError(
                f"scenario.workload_model.{k}: true, but the workload file {path} has no {section} "
                "(fit it again with `sched calibrate-workload`; durations need the history's "
                "started_at and finished_at)"
            )
    if on["class_durations"] and workload["deadlines"].get("share_without_by_class") is None:
        raise ModelError(
            f"scenario.workload_model.class_durations: true, but the workload file {path} has no "
            "deadlines.share_without_by_class (fit it again with `sched calibrate-workload`)"
        )
    return on


def scenario_model(cfg):
    """The :class:`ScenarioModel` of a validated config (``sched.config.load_config``).

    Reads the calibration and workload files the config names, once. Raises
    the files' errors (``CalibrationFileError``, ``WorkloadFileError``) or a
    ``MachinesError``, each naming the file or field.
    """
    from sched.data.bench.calibration import load_calibration
    from sched.data.jobs import chunk_spec
    from sched.data.workload.workload import load_workload

    sc = cfg.scenario
    calibration = sc.get("calibration") or None
    sigma = sc.get("estimate_noise_sigma")
    if calibration:
        cal = load_calibration(calibration)
        specs = {k: e["spec"] for k, e in cal["kinds"].items()}
        if sigma is None:
            sigma = cal.get("estimate_noise_sigma")
    else:
        specs = {k: dict(v) for k, v in sc["kinds"].items()}
    kinds = tuple(sorted(specs))
    shares = np.array([specs[k]["share"] for k in kinds], dtype=np.float64)
    shares = shares / shares.sum()
    classes = tuple(sorted(sc["priorities"], key=lambda c: sc["priorities"][c]["weight"]))
    probs = np.array([sc["priorities"][c]["prob"] for c in classes], dtype=np.float64)
    workload_file = sc.get("workload") or None
    workload = load_workload(workload_file) if workload_file else None
    with np.errstate(over="ignore"):  # a huge sigma: an infinite mean, refused by draw() in one line
        mean = np.float64(mean_duration(specs))  # numpy: an infinite mean divides without raising
    switches = workload_switches(sc.get("workload_model"), workload, workload_file)
    scale = duration_scale(workload, mean)
    if workload is not None and history_durations(switches):
        from sched.data.workload.workload import shape_mean

        # the history's own durations: their load is the history's, nothing to scale
        mean, scale = (
            np.float64(shape_mean(workload, switches["class_durations"], switches["heavy_tails"])),
            1.0,
        )
    tasks = sc["tasks"]
    if tasks == DAY:
        tasks = day_tasks(workload, float(sc.get("workload_scale", 1.0)))
    warm_days = int(sc.get("warm_up_days", 0) or 0)
    if warm_days and workload is None:
        raise ModelError(f"scenario.warm_up_days: {warm_days} needs a workload (scenario.workload is null)")
    # enough arrivals to cover the warm-up days wherever in the week they start
    warm_tasks = warm_days * day_tasks(workload, float(sc.get("workload_scale", 1.0))) if warm_days else 0
    return ScenarioModel(
        specs=_frozen(specs),
        kinds=kinds,
        shares=_readonly(shares),
        mean_duration=mean * scale,
        sigma=float(sigma) if sigma is not None else 0.0,
        classes=classes,
        class_weights=_readonly([sc["priorities"][c]["weight"] for c in classes]),
        class_probs=_readonly(probs / probs.sum()),
        flow_factor=tuple(float(x) for x in sc["due"]["flow_factor"]),
        slack_s=tuple(float(x) for x in sc["due"]["slack_s"]),
        workload=_frozen(workload) if workload is not None else None,
        workload_scale=float(sc.get("workload_scale", 1.0)),
        duration_scale=scale,
        tasks=_tasks(tasks),
        load=_load(sc["load"]),
        machines=sc["machines"],
        speeds=_readonly(parse_speeds(sc["machines"], "scenario.machines")),
        calibration=calibration,
        workload_file=workload_file,
        warm_up_s=warm_days * 86400.0,
        warm_up_tasks=int(warm_tasks),
        switches=MappingProxyType(switches),
        chunks=chunk_spec(sc.get("chunks"), kinds),
    )
