"""The studio setting, in one place: the queue's own fitted workload as a robustness setting.

When the config names a queue history (``workload.history``), the workflow builds one more
robustness setting, named :data:`NAME`, under results/robustness/studio/ (docs/workload.md,
"The studio setting"): its policies train on scenarios drawn from the fit (results/workload.json);
its verdict is chosen on generated validation scenarios and the validation days, and confirmed on
test scenarios from the fit and on the days the fit held out. Its settings are the config's
``studio`` section; the defaults below are the schema's (workflow/schemas/config.schema.yaml).
"""

from sched import layout

#: The setting's name, and its folder under results/robustness/.
NAME = layout.STUDIO
#: What the studio trains with when ``studio.train`` is empty: ATC's k tuned for it.
DEFAULT_TRAIN = {"atc_k": "tuned"}


def section(config):
    """The config's ``studio`` section (a dict or the frozen config's record; {} when absent)."""
    return config.get("studio") or {}


def scenario(studio, workload=layout.WORKLOAD):
    """The scenario settings the studio overrides (``studio``: the config's studio section): its
    scenarios are drawn from the fit ``workload``, ``studio.tasks`` tasks a scenario after
    ``studio.warm_up_days`` days of warm-up. `sched fidelity` generates the same scenarios."""
    return {"workload": str(workload), "tasks": studio.get("tasks", "day"),
            "warm_up_days": int(studio.get("warm_up_days", 1))}  # fmt: skip


def setting(config):
    """The studio as an entry of ``robustness.settings`` (a name, scenario overrides, a ``train``)."""
    studio = section(config)
    return {"name": NAME, **scenario(studio), "train": dict(studio.get("train") or DEFAULT_TRAIN)}


def selection_scenarios(config):
    """How many validation seeds choose the studio's winner (``studio.selection_scenarios``)."""
    return int(section(config).get("selection_scenarios", 300))


def fidelity_options(config):
    """``(streams, scenarios, tau)`` of the fidelity check (``studio.fidelity_*``)."""
    studio = section(config)
    return (studio.get("fidelity_streams", 16), studio.get("fidelity_scenarios", 128),
            studio.get("fidelity_tau", 0.8))  # fmt: skip


#: The files of a replay (held-out or validation days).
REPLAY_FILES = (layout.PER_SCENARIO, layout.SUMMARY, layout.REPLAY_WINDOWS)


def _files(folder, names):
    return [f"{folder}/{name}" for name in names]


def held_out_files():
    """Its replay of the held-out days (`sched replay --held-out`): table, summary, windows."""
    return _files(layout.studio_replay_dir(), REPLAY_FILES)


def validation_day_files():
    """Its replay of the validation days (`sched replay --validation`): table, summary, windows."""
    return _files(layout.studio_validation_dir(), REPLAY_FILES)


def fidelity_files():
    """Its fidelity check (`sched fidelity`): table, record, figure."""
    names = (layout.FIDELITY_TABLE, layout.FIDELITY_RECORD, layout.FIDELITY_FIGURE)
    return _files(layout.fidelity_dir(), names)


def winner_file():
    """Its winner.json."""
    return f"{layout.robust_root(NAME)}/{layout.WINNER}"
