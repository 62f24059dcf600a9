"""Scenarios: generate them from a seed, read and validate them, write them.

A scenario is a table of tasks, one row each. File contract (CSV):

    id,kind,arrival_s,duration_s,weight,due_s[,estimate_s][,extra columns...]

``duration_s`` is the true duration, ``estimate_s`` what the scheduler sees (the duration
when the column is absent). Extra columns are carried through to schedules unchanged; the
columns a schedule adds (``SCHEDULE_COLUMNS``) are refused, and so is a column name given
twice. The file's records follow ``sched.formats.csv_input`` (one line each; ids stripped, then
distinct; formula-like text cells quoted when written). Times are finite and at most
``sched.limits.MAX_SECONDS`` in absolute value, weights at most ``sched.limits.MAX_WEIGHT``; a
file has at most ``sched.limits.MAX_SCENARIO_TASKS`` rows and ``MAX_SCENARIO_BYTES`` bytes. Jobs of frames add
four optional columns, ``frames``, ``chunk_frames``, ``max_gpus`` and ``setup_s``
(:mod:`sched.data.chunked`: their contract and the per-chunk schedule).

Generated scenarios follow the config's ``scenario`` section (documented in
``workflow/schemas/config.schema.yaml``), read once into a :class:`~sched.data.model.ScenarioModel`
(:func:`scenario_model`) that :func:`draw` and :func:`generate` take (they read no file): Poisson
arrivals at the rate that gives the configured load, kinds and durations from the config or from a
calibration file, priority classes, estimate noise, the deadline model, and jobs of frames
(``scenario.chunks``, :mod:`sched.data.jobs`). Each random quantity has its own stream spawned
from the seed, so changing one setting (the load, say) leaves the other draws of a seed
unchanged: scenarios stay comparable across settings (common random numbers).
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sched import files
from sched.config import shorten
from sched.data import chunked, jobs
from sched.data.distributions import sample_durations
from sched.data.machines import total as total_speed
from sched.data.model import ScenarioModel, scenario_model  # noqa: F401  (scenario_model: also from here)
from sched.data.workload.workload import (
    class_table,
    draw_allowance,
    draw_arrivals,
    draw_durations,
    draw_priorities,
)
from sched.errors import SchedError
from sched.formats.csv_input import normal_id
from sched.limits import MAX_MACHINES, MAX_SCENARIO_BYTES, MAX_SCENARIO_TASKS, MAX_SECONDS, MAX_WEIGHT

REQUIRED = ("id", "kind", "arrival_s", "duration_s", "weight", "due_s")
NUMERIC = ("arrival_s", "duration_s", "weight", "due_s", "estimate_s")
POSITIVE = ("duration_s", "estimate_s", "weight")
#: Columns the schedule table adds (sched.data.schedule.schedule_frame): a scenario may not hold them.
SCHEDULE_COLUMNS = ("machine", "start_s", "end_s", "tardiness_s", "weighted_tardiness_s")
#: Largest absolute value of each numeric column.
BOUNDS = {c: (MAX_WEIGHT if c == "weight" else MAX_SECONDS) for c in NUMERIC}


class ScenarioError(SchedError):
    """A scenario file or table is invalid; the message names file, row and field."""


class SizeError(SchedError):
    """More tasks or machines than sched.limits allows; the message names the field."""


@dataclass
class Scenario:
    """One scenario: a name (file stem or ``seed-N``) and its task table; ``week_start_s``: its
    time 0 in seconds since Monday 00:00 UTC (drawn from a workload, a replayed window's start;
    0 otherwise), the learned policy's time of week."""

    name: str
    frame: pd.DataFrame
    week_start_s: float = 0.0
    #: Tasks arriving before this time (s) are a warm-up: scheduled, counted toward no metric
    #: (``scenario.warm_up_days``; 0: every task counts).
    counted_from_s: float = 0.0

    def __len__(self):
        return len(self.frame)

    @property
    def arrays(self):
        """(arrival, duration, estimate, weight, due) float64 arrays in row order."""
        f = self.frame
        est = f["estimate_s"] if "estimate_s" in f else f["duration_s"]
        return tuple(
            np.ascontiguousarray(c, dtype=np.float64)
            for c in (f["arrival_s"], f["duration_s"], est, f["weight"], f["due_s"])
        )

    @property
    def chunked(self):
        """Whether the table holds a chunk column (``sched.data.chunked``: one schedule row a chunk)."""
        return chunked.is_chunked(self.frame)

    @property
    def chunks(self):
        """(frames, chunk_frames, max_gpus, setup_s) arrays in row order (:func:`chunked.chunk_arrays`)."""
        return chunked.chunk_arrays(self.frame)


# --------------------------------------------------------------------------- reading


def validate_frame(frame, source="scenario", lines=None):
    """Check a task table; return it with numeric columns as float64 and ids stripped.

    Rows are numbered from 1 (the first task) and the file line is given too
    (the first line of the file is line 1): ``lines[i]`` for row ``i + 1``
    when given (see :func:`sched.files.read_csv_lines`), else ``i + 2``.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ScenarioError(f"{source}: expected a table of tasks")
    taken = [c for c in SCHEDULE_COLUMNS if c in frame.columns]
    if taken:
        raise ScenarioError(
            f"{source}: column {taken[0]!r} is one a schedule adds (a schedule file, not a scenario?); "
            f"a scenario may not hold {', '.join(SCHEDULE_COLUMNS)}"
        )
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ScenarioError(
            f"{source}: missing column(s) {', '.join(missing)} (required: {', '.join(REQUIRED)})"
        )
    if len(frame) == 0:
        raise ScenarioError(f"{source}: no rows (a scenario needs at least one task)")
    out = frame.copy()
    for col in ("id", "kind"):
        text = out[col].astype("string")
        if col == "id":  # "a " and "a" are the same task (as in rank(), histories, mappings)
            text = text.map(normal_id, na_action="ignore").astype("string")
        empty = text.isna() | (text.str.strip() == "")
        if empty.any():
            raise ScenarioError(f"{source}: {_where(empty, lines)} field {col}: missing value")
        out[col] = text.astype(str)
    for col in NUMERIC:
        if col not in out.columns:
            continue
        raw = out[col]
        values = pd.to_numeric(raw, errors="coerce").astype(np.float64)
        bad = ~np.isfinite(values.to_numpy())
        if bad.any():
            i = int(np.argmax(bad))
            shown = raw.iloc[i]
            if pd.isna(shown) or str(shown).strip() == "":
                why = "missing value"
            elif np.isnan(values.iloc[i]) and str(shown).strip().lower() not in ("nan", "-nan", "+nan"):
                why = f"{shorten(shown)} is not a number"
            else:
                why = f"{shorten(shown)} is not finite"
            raise ScenarioError(f"{source}: {_where(bad, lines)} field {col}: {why}")
        if col in POSITIVE and (values <= 0).any():
            mask = (values <= 0).to_numpy()
            raise ScenarioError(
                f"{source}: {_where(mask, lines)} field {col}: must be > 0, got {values[mask].iloc[0]:g}"
            )
        big = (values.abs() > BOUNDS[col]).to_numpy()
        if big.any():
            raise ScenarioError(
                f"{source}: {_where(big, lines)} field {col}: {shorten(raw.iloc[int(np.argmax(big))])} "
                f"is out of range (|value| <= {BOUNDS[col]:g})"
            )
        out[col] = values
    chunked.validate(out, source, lambda mask: _where(mask, lines), ScenarioError)
    dup = out["id"].duplicated()
    if dup.any():
        i = int(np.argmax(dup.to_numpy()))
        first = int(np.flatnonzero((out["id"] == out["id"].iloc[i]).to_numpy())[0])
        raise ScenarioError(
            f"{source}: {_where(dup.to_numpy(), lines)} field id: duplicate id {shorten(out['id'].iloc[i])} "
            f"(first at row {first + 1})"
        )
    return out.reset_index(drop=True)


def _where(mask, lines):
    """ "row R (line L)" of the first row where ``mask`` holds (see validate_frame)."""
    i = int(np.argmax(np.asarray(mask)))
    line = lines[i] if lines is not None else i + 2
    return f"row {i + 1} (line {line})"


def read_scenario(path):
    """Read and validate a scenario CSV file (see the module's file contract)."""
    path = Path(path)
    frame, lines = files.read_csv_lines(
        path,
        ScenarioError,
        limit=MAX_SCENARIO_BYTES,
        max_rows=MAX_SCENARIO_TASKS,
        dtype=str,
        keep_default_na=False,
        skipinitialspace=True,
    )
    frame.columns = [c.strip() for c in frame.columns]
    return Scenario(path.stem, validate_frame(frame, str(path), lines))


def write_scenario(path, scenario):
    files.write_csv(path, scenario.frame)


# --------------------------------------------------------------------------- generation


def _model(model, what="draw"):
    if not isinstance(model, ScenarioModel):
        raise ScenarioError(
            f"{what}: model: expected a ScenarioModel (sched.data.model.scenario_model(cfg), built once), "
            f"got {type(model).__name__}"
        )
    return model


def check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ScenarioError(f"seed: must be a non-negative integer, got {seed!r}")
    return int(seed)


def check_size(tasks, machines, names=("tasks", "machines")):
    """Refuse more than MAX_SCENARIO_TASKS tasks or MAX_MACHINES machines, naming the field."""
    for name, value, limit in zip(names, (tasks, machines), (MAX_SCENARIO_TASKS, MAX_MACHINES)):
        if value is not None and value > limit:
            raise SizeError(f"{name}: must be at most {limit} (sched.limits), got {value}")


def _check_drawn(seed, **times):
    """Refuse a drawn time beyond MAX_SECONDS (or not finite), as a scenario file's would be."""
    for name, values in times.items():
        if not np.all(np.abs(values) <= MAX_SECONDS):  # NaN fails the test too
            worst = values[~(np.abs(values) <= MAX_SECONDS)][0]
            raise SizeError(
                f"scenario seed {seed}: a drawn {name} of {worst:g} is beyond the {MAX_SECONDS:g} s a "
                "scenario may hold (sched.limits.MAX_SECONDS): the durations, estimate noise or due "
                "settings (config scenario section or calibration file) are too large"
            )


def draw(model, seed, tasks=None, load=None, machines=None, week_start_s=None, warm_up=False):
    """The random part of :func:`generate`: a dict of task arrays, no table.

    ``model``: the config's :class:`~sched.data.model.ScenarioModel` (built once); ``tasks``, ``load``
    and ``machines`` override its own (``machines``: any form of :mod:`sched.data.machines`; an
    array of speeds reads no file). Reads no file. Keys: arrival, duration, estimate, weight, due
    (float64), kind and priority (int indices into ``kinds`` and ``classes``, also returned),
    week_start_s (the time of week of time 0 in seconds; 0.0 without a workload), counted_from_s,
    and with ``scenario.chunks`` frames (int64). With ``warm_up`` (the scenarios that tune, train,
    validate and test), the model's ``scenario.warm_up_days`` come first: ``model.warm_up_tasks``
    more tasks are drawn, and those arriving before ``counted_from_s`` (the warm-up in seconds)
    count toward no metric; without it (futures of the lookahead, `sched scenario`),
    counted_from_s is 0. With a workload, ``week_start_s`` fixes that time of week instead of
    drawing it (the fidelity check's streams over the hours of the real days,
    ``sched.data.workload.fidelity``). Training draws thousands of scenarios through this, so it
    avoids pandas.
    """
    model = _model(model)
    seed = check_seed(seed)
    n = int(tasks if tasks is not None else model.tasks) + (model.warm_up_tasks if warm_up else 0)
    rho = float(load if load is not None else model.load)
    # the farm's capacity in speed-1 GPUs: the sum of the speeds (M for identical GPUs)
    capacity = total_speed(machines) if machines is not None else model.capacity
    if n < 1 or not 0 < rho < np.inf:
        raise ScenarioError(f"tasks, load: must be >= 1, finite > 0; got {n}, {rho}")
    check_size(n, None)
    # an overflow (a huge sigma, say) is refused below in one line, without warnings
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        d = _draw(model, seed, n, rho, capacity, week_start_s)
    d["counted_from_s"] = float(model.warm_up_s) if warm_up else 0.0
    _check_drawn(
        seed, arrival_s=d["arrival"], duration_s=d["duration"], estimate_s=d["estimate"], due_s=d["due"]
    )
    return d


def _draw(model, seed, n, rho, capacity, week_start_s=None):
    specs, kinds = model.specs, list(model.kinds)
    r_arrival, r_kind, r_duration, r_priority, r_due, r_noise = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(6)
    )
    workload = model.workload
    if workload is not None:
        # the queue history's weekly profile (scenario.workload), from a seeded time of the week
        start = None if week_start_s is None else week_start_s / 3600.0
        by_day = model.switches.get("day_intensity", False)
        arrival, how, start_hour = draw_arrivals(workload, r_arrival, n, model.workload_scale, start, by_day)
    else:
        # Poisson arrivals: rate lambda such that rho = lambda * E[p] / (sum of the speeds)
        rate = rho * capacity / model.mean_duration
        arrival = np.cumsum(r_arrival.exponential(1.0 / rate, n))
        start_hour = 0.0

    kind_idx = r_kind.choice(len(kinds), size=n, p=model.shares)
    if workload is not None:  # the class first: with the history's durations, they depend on it
        classes, weights, _ = class_table(workload)
        cls_idx = draw_priorities(workload, r_priority, how % 24)
        weight = weights[cls_idx]
    if model.history_durations():  # scenario.workload_model (issue 50): the history's own durations
        sw = model.switches
        duration = draw_durations(workload, r_duration, weight, sw["class_durations"], sw["heavy_tails"])
    else:
        duration = np.empty(n)
        for i, k in enumerate(kinds):
            # a full stream per kind keeps each kind's draws fixed when shares change
            draws = sample_durations(specs[k], np.random.default_rng(r_duration.integers(2**63)), n)
            duration[kind_idx == i] = draws[kind_idx == i]

    duration *= model.duration_scale  # with a workload: the history's load (sched.data.model)
    if model.chunks is not None:  # jobs of frames: frames x time per frame (sched.data.jobs)
        duration, frames = jobs.apply(model.chunks, seed, duration, kind_idx, kinds)
    sigma = model.sigma
    z = r_noise.standard_normal(n)
    estimate = duration * np.exp(sigma * z) if sigma > 0 else duration.copy()

    if workload is not None:
        # deadline from the estimate, as the history's allowance / estimate (or none: each
        # class's share without one when the durations are the classes')
        by_class = cls_idx if model.switches.get("class_durations", False) else None
        due = arrival + draw_allowance(workload, r_due, estimate, by_class)
    else:
        classes = list(model.classes)
        cls_idx = r_priority.choice(len(classes), size=n, p=model.class_probs)
        weight = model.class_weights[cls_idx]

        # deadline set at submission from what is known then: the estimate
        ff_lo, ff_hi = model.flow_factor
        sl_lo, sl_hi = model.slack_s
        due = arrival + r_due.uniform(ff_lo, ff_hi, n) * estimate + r_due.uniform(sl_lo, sl_hi, n)
    return {
        "arrival": arrival,
        "duration": duration,
        "estimate": estimate,
        "weight": weight,
        "due": due,
        "kind": kind_idx,
        "priority": cls_idx,
        "kinds": kinds,
        "classes": classes,
        "week_start_s": float(start_hour) * 3600.0,
        **({"frames": frames} if model.chunks is not None else {}),
    }


def generate(model, seed, tasks=None, load=None, machines=None, week_start_s=None, warm_up=False):
    """Generate the scenario of ``seed`` from ``model`` (a :class:`~sched.data.model.ScenarioModel`;
    ``week_start_s``, ``warm_up``: as :func:`draw`'s)."""
    d = draw(
        _model(model, "generate"), seed, tasks=tasks, load=load, machines=machines,
        week_start_s=week_start_s, warm_up=warm_up,
    )  # fmt: skip
    frame = pd.DataFrame(
        {
            "id": [str(i) for i in range(len(d["arrival"]))],
            "kind": np.array(d["kinds"], dtype=object)[d["kind"]],
            "arrival_s": d["arrival"],
            "duration_s": d["duration"],
            "weight": d["weight"],
            "due_s": d["due"],
            "estimate_s": d["estimate"],
            "priority": np.array(d["classes"], dtype=object)[d["priority"]],
            **(jobs.columns(model.chunks, d["frames"], d["kind"], d["kinds"]) if "frames" in d else {}),
        }
    )
    return Scenario(f"seed-{int(seed)}", frame, d["week_start_s"], d["counted_from_s"])
