"""Documented limits on what the project accepts, in one place.

Inputs beyond these are refused with a one-line error naming the field,
before any memory is allocated for them (see docs/reliability.md).

Products of settings, each within its range, bounded too (:func:`check_products`, called by
sched.config's checks, and :func:`refuse_product`).
Settings each within the schema's range can still multiply into an allocation no machine
holds: ``plan.futures: 100000`` with ``plan.horizon: 10000`` make a pool of a billion sampled
arrivals (about 90 GB once drawn), built by any plan call and by ``sched serve`` at start.
:func:`check_products` refuses such a config before anything is allocated, naming both keys,
their values and the product, against a documented limit here:

* the planner's pool, ``plan.futures`` x ``plan.horizon`` (and each ``plan.grid`` setting's
  horizon), and the teacher's pool, its ``FUTURES`` sampled futures x ``train.teacher_horizon``
  (``train.round_horizon``): ``MAX_FUTURE_VALUES``;
* the rollouts of one decision, ``candidates`` x ``samples`` x ``horizon`` (plan's, each grid
  setting's, the teacher's and a round's): ``MAX_DECISION_ROLLOUT_STEPS``;
* the training scenarios stepped in lockstep, ``train.num_envs`` x the tasks of a training
  scenario (``train.tasks``, else ``scenario.tasks``): ``MAX_TRAIN_TASKS``;
* PPO's rollout buffer, ``train.num_envs`` x ``train.num_steps`` x ``train.top_k`` candidates
  (0: every task of the scenario): ``MAX_ROLLOUT_CANDIDATES``;
* the clairvoyant reference's work, ``benchmark.clairvoyant.evaluations`` x ``scenario.tasks``:
  ``MAX_CLAIRVOYANT_WORK``.

The training settings are checked as each training runs them: the main ``train``, each
robustness setting's that trains (its ``train`` over the main one, on its ``tasks``) and the
studio's.
"""

#: GPUs in one farm (``scenario.machines``, ``--machines``, ``rank(machines=...)``).
MAX_MACHINES = 10_000
#: Slowest and fastest GPU speed (a task of duration p takes p / speed): a speed
#: of 1 is the reference GPU. Bounded so that p / speed stays within MAX_SECONDS
#: scale and a typo (0.0, 1e9) is refused rather than simulated.
MIN_SPEED = 1e-3
MAX_SPEED = 1e3
#: Tasks in one scenario: generated (``scenario.tasks``, ``train.tasks``, ``--tasks``)
#: or read from a file (its rows).
MAX_SCENARIO_TASKS = 1_000_000
#: Frames of one job (a scenario's ``frames`` and ``chunk_frames``; issue 59: jobs of 1 to
#: 10,000 frames on farms of 1 to 1,000 GPUs, within MAX_MACHINES).
MAX_FRAMES = 10_000
#: Chunks in one scenario (the sum over its jobs of ceil(frames / chunk_frames)): the schedule
#: holds a row per chunk. A farm day is about 300,000.
MAX_SCENARIO_CHUNKS = 10_000_000
#: Values in a YAML document once its aliases are expanded (config files).
MAX_YAML_NODES = 100_000
#: Nesting levels of a YAML document (a config nests a few levels, the schema about ten).
MAX_YAML_DEPTH = 64
#: Bytes in a config file.
MAX_YAML_BYTES = 1_000_000
#: Characters of an offending value quoted in an error message.
SHOWN_CHARS = 40
#: Largest time in seconds a scenario or bench file may hold, in absolute value
#: (``arrival_s``, ``duration_s``, ``due_s``, ``estimate_s``; about 31,700 years):
#: sums over a million such tasks stay finite, so output JSON never holds Infinity.
MAX_SECONDS = 1e12
#: Seconds between two syncs of the farm's priorities (``sched simulate --sync-s``, a setting's
#: ``sync_s``; sched.sim.sync): 0 means the policy decides at each free GPU; else from a second
#: (the finest a timer runs a sync at) to MAX_SECONDS (in effect: one sync, at time 0).
MIN_SYNC_S = 1.0
MAX_SYNC_S = MAX_SECONDS
#: Largest task weight in a scenario file.
MAX_WEIGHT = 1e6
#: Bytes in a scenario file (``sched simulate --scenario``).
MAX_SCENARIO_BYTES = 1024**3
#: Tasks in one ``rank()`` call or ``sched rank`` input. A render queue holds
#: far fewer; the greedy plan's work grows faster than linearly with the queue
#: (benchmarks/test_rank_speed.py), so the bound also bounds the time of a call.
MAX_RANK_TASKS = 20_000
#: Chunks in one ``rank()`` call holding jobs of frames (``sched.ranking.farm.frames``: the sum over
#: its jobs of ceil(frames / chunk_frames)): the plan holds a start and an end a chunk, and its
#: time grows with the chunks times the jobs waiting (benchmarks/test_rank_speed.py).
MAX_RANK_CHUNKS = 1_000_000
#: Bytes of JSON ``sched rank`` reads (a file or standard input). ``rank()`` also
#: bounds its times and estimates by MAX_SECONDS (and the plan's reach: latest
#: time + total estimated work) and its weights by MAX_WEIGHT.
MAX_RANK_BYTES = 32 * 1024**2
#: JSON values (objects, arrays, strings, numbers...) in one ``rank()`` input (``sched rank``'s
#: file or standard input, a ``POST /v1/rank`` body): MAX_RANK_TASKS tasks of up to 30 fields
#: each (the 8 rank reads, the rest features of the duration model), plus the call's own few.
#: Counted before the document is built (sched.formats.json_input), so a body of millions of tiny
#: values in a field rank ignores is refused at C speed: the values a call builds stay below
#: about 100 MB (tests/test_hardening6_serve.py measures it; docs/serve.md).
MAX_RANK_JSON_VALUES = MAX_RANK_TASKS * 32 + 1024
#: Digits of a training seed in a learned policy's name (``ppo-<seed>``): a longer number names
#: no policy this project trains, and is refused before it becomes an integer or a path.
MAX_SEED_DIGITS = 9
#: Hidden width of a policy file's network (the training default: 32).
MAX_POLICY_HIDDEN = 1024
#: Bytes of a policy file, and of its contents once unpacked.
MAX_POLICY_BYTES = 64 * 1024**2
#: Largest magnitude of a weight in a policy file (trained ones stay orders of magnitude below).
MAX_POLICY_WEIGHT = 1e6
#: Largest magnitude of a duration model's coefficient of a log feature (its exponent:
#: duration ~ pixels^c; fitted ones are near 1). With the intercept's bound (the median
#: duration it predicts for features of 1 at most MAX_SECONDS), a calibration file's model
#: cannot overflow; a prediction beyond MAX_SECONDS for a task's features is refused.
MAX_MODEL_EXPONENT = 10.0
#: Bytes in a calibration file (``sched calibrate`` writes a few kilobytes).
MAX_CALIBRATION_BYTES = 64 * 1024**2
#: Bytes of one line of a queue history (CSV or JSON Lines); a record is a few hundred
#: bytes. A longer line is refused at its line, before it is held in memory.
MAX_HISTORY_LINE = 65_536
#: Bytes of one queue history file, once decompressed for a ``.gz`` (about ten million
#: records of the example's width); a larger file is refused, naming the file.
MAX_HISTORY_BYTES = 1024**3
#: Times a queue history may hold (``submitted_at``, ``due``, ``started_at``,
#: ``finished_at``), in seconds since 1970-01-01 UTC: from 1970-01-01 to before
#: 2262-01-01 (the range of the nanosecond timestamps most tools share). A time outside
#: makes its record malformed.
HISTORY_FIRST_TIME = 0.0
HISTORY_END_TIME = 9_214_646_400.0  # 2262-01-01T00:00:00Z
#: The shortest history span a workload is fitted on: a week, so that each of the 168
#: hours of the week is observed at least once.
MIN_HISTORY_SPAN_S = 7 * 86400.0
#: Bytes of a verdict file (``winner.json``, ``tuned.json``: a few kilobytes as written).
MAX_VERDICT_BYTES = 1024**2
#: Bytes of one teacher label file (``sched teach``'s .npz: a few megabytes per hundred scenarios).
MAX_LABEL_BYTES = 4 * 1024**3
#: Nesting levels of a JSON document the project reads (files, request bodies, API answers;
#: sched.formats.json_input): a verdict, a calibration or a call nests a few levels.
MAX_JSON_DEPTH = 64
#: Largest count (tasks, frames) or priority, in absolute value, a render farm's answer or a
#: file kept for it may hold: the 32-bit integers of OpenCue's and Deadline Cloud's models. A
#: job whose answer holds a larger one is skipped, named (sched.farms.answers).
MAX_FARM_COUNT = 2**31 - 1
#: The times of a ``rank()`` call on a datetime clock (when it gives datetimes), in POSIX
#: seconds: from 0001-01-02 to 9999-12-31 UTC, the dates a datetime can show with a day to
#: spare for a time zone's offset. ``now`` and the plan's reach (latest time + total estimated
#: work) must lie within, so that its explain table can show every start and end as a datetime.
DATETIME_FIRST_S = -62_135_510_400.0  # 0001-01-02T00:00:00Z
DATETIME_END_S = 253_402_214_400.0  # 9999-12-31T00:00:00Z
#: Products of settings, each within its range, that size an allocation or a run's work
#: (check_products, refused naming both keys): sampled arrivals in a pool of sampled
#: futures (futures x horizon: the planner's, the teacher's; five float64 values each, 400 MB).
MAX_FUTURE_VALUES = 10_000_000
#: Rollout steps of one planned decision (candidates x samples x horizon: plan's, the teacher's).
MAX_DECISION_ROLLOUT_STEPS = 10_000_000
#: Tasks of the training scenarios stepped in lockstep (train.num_envs x a scenario's tasks).
MAX_TRAIN_TASKS = 10_000_000
#: Candidates in PPO's rollout buffer (train.num_envs x train.num_steps x train.top_k).
MAX_ROLLOUT_CANDIDATES = 20_000_000
#: Task moves of the clairvoyant reference on one scenario (its evaluations x scenario.tasks).
MAX_CLAIRVOYANT_WORK = 100_000_000_000

#: The teacher's sampled futures (``sched.learn.search.teacher.FUTURES``: that module imports torch
#: and numba, so the number is restated here; tests/test_hardening6_config.py checks they agree).
TEACHER_FUTURES = 2000


def refuse_product(source, error, terms, limit, name, what):
    """Raise ``error`` unless the product of ``terms`` ((key, value) pairs) is within ``limit``
    (``name``: its name in sched.limits; ``what``: what the product counts)."""
    product = 1
    for _, value in terms:
        product *= value
    if product > limit:
        keys = " x ".join(f"{key} ({value:,})" for key, value in terms)
        raise error(
            f"{source}: {keys} = {product:,} {what}, more than {limit:,} (sched.limits.{name}); "
            "lower one of them"
        )


def _tasks(value):
    """A scenario's tasks as a count (None: ``day``, sized by the workload)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_products(cfg, source, error):
    """Refuse the config ``cfg`` (a validated mapping) when a product of its settings is beyond
    its limit (see the module), with ``error`` (sched.config's ConfigError) naming the keys,
    their values and the product."""
    plan = cfg.get("plan") or {}
    horizons = [("plan.horizon", plan.get("horizon"), "plan", plan)]
    for i, g in enumerate(plan.get("grid") or []):
        if "horizon" in g or "samples" in g:
            hkey = f"plan.grid[{i}].horizon" if "horizon" in g else "plan.horizon"
            horizons.append((hkey, g.get("horizon", plan.get("horizon")), f"plan.grid[{i}]", g))
    for hkey, horizon, where, entry in horizons:
        if horizon is None:
            continue
        refuse_product(
            source,
            error,
            [("plan.futures", plan["futures"]), (hkey, horizon)],
            MAX_FUTURE_VALUES,
            "MAX_FUTURE_VALUES",
            "sampled arrivals in the planner's pool",
        )
        samples = entry.get("samples", plan.get("samples"))
        candidates = entry.get("candidates", plan.get("candidates"))
        skey = f"{where}.samples" if "samples" in entry and where != "plan" else "plan.samples"
        ckey = f"{where}.candidates" if "candidates" in entry and where != "plan" else "plan.candidates"
        refuse_product(
            source,
            error,
            [(ckey, candidates), (skey, samples), (hkey, horizon)],
            MAX_DECISION_ROLLOUT_STEPS,
            "MAX_DECISION_ROLLOUT_STEPS",
            "rollout steps a decision",
        )
    scenario_tasks = _tasks((cfg.get("scenario") or {}).get("tasks"))
    main_train = dict(cfg.get("train") or {})
    trainings = [("train", main_train, scenario_tasks, "scenario.tasks")]
    for i, st in enumerate((cfg.get("robustness") or {}).get("settings") or []):
        over = dict(st.get("train") or {})
        tasks, tkey = (
            (_tasks(st["tasks"]), f"robustness.settings[{i}].tasks")
            if "tasks" in st
            else (scenario_tasks, "scenario.tasks")
        )
        if over:  # a setting trains only with a train of its own
            trainings.append((f"robustness.settings[{i}].train", {**main_train, **over}, tasks, tkey))
    studio = cfg.get("studio") or {}
    if studio.get("train"):
        trainings.append(
            (
                "studio.train",
                {**main_train, **dict(studio["train"])},
                _tasks(studio.get("tasks")),
                "studio.tasks",
            )
        )
    for prefix, train, tasks, tkey in trainings:
        _check_training(source, error, prefix, train, tasks, tkey)
    bench = cfg.get("benchmark") or {}
    evaluations = (bench.get("clairvoyant") or {}).get("evaluations")
    if evaluations is not None and scenario_tasks is not None:
        refuse_product(
            source,
            error,
            [("benchmark.clairvoyant.evaluations", evaluations), ("scenario.tasks", scenario_tasks)],
            MAX_CLAIRVOYANT_WORK,
            "MAX_CLAIRVOYANT_WORK",
            "task moves a scenario",
        )


def _check_training(source, error, prefix, train, tasks, tkey):
    """One training's products (``train``: its settings, the main ones under a setting's own)."""
    if train.get("tasks") is not None:
        tasks, tkey = train["tasks"], f"{prefix}.tasks"
    envs = train.get("num_envs")
    if envs is None:
        return
    if tasks is not None:
        refuse_product(
            source,
            error,
            [(f"{prefix}.num_envs", envs), (tkey, tasks)],
            MAX_TRAIN_TASKS,
            "MAX_TRAIN_TASKS",
            "tasks stepped in lockstep",
        )
    top_k, steps = train.get("top_k"), train.get("num_steps")
    if steps is not None and top_k is not None and (top_k or tasks is not None):
        width, wkey = (top_k, f"{prefix}.top_k") if top_k else (tasks, f"{tkey} (top_k 0: every task)")
        refuse_product(
            source,
            error,
            [(f"{prefix}.num_envs", envs), (f"{prefix}.num_steps", steps), (wkey, width)],
            MAX_ROLLOUT_CANDIDATES,
            "MAX_ROLLOUT_CANDIDATES",
            "candidates in PPO's rollout buffer",
        )
    for hkey, skey in (("teacher_horizon", "teacher_samples"), ("round_horizon", "round_samples")):
        horizon = train.get(hkey)
        if horizon is None:
            continue
        refuse_product(
            source,
            error,
            [("the teacher's futures", TEACHER_FUTURES), (f"{prefix}.{hkey}", horizon)],
            MAX_FUTURE_VALUES,
            "MAX_FUTURE_VALUES",
            "sampled arrivals in the teacher's pool",
        )
        if train.get("teacher_candidates") is not None and train.get(skey) is not None:
            refuse_product(
                source,
                error,
                [
                    (f"{prefix}.teacher_candidates", train["teacher_candidates"]),
                    (f"{prefix}.{skey}", train[skey]),
                    (f"{prefix}.{hkey}", horizon),
                ],
                MAX_DECISION_ROLLOUT_STEPS,
                "MAX_DECISION_ROLLOUT_STEPS",
                "rollout steps a decision",
            )
