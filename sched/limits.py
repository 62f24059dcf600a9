"""Documented limits on what the project accepts, in one place.

Inputs beyond these are refused with a one-line error naming the field,
before any memory is allocated for them (see docs/reliability.md).
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
#: Values in a YAML document once its aliases are expanded (config files).
MAX_YAML_NODES = 100_000
#: Bytes in a config file.
MAX_YAML_BYTES = 1_000_000
#: Characters of an offending value quoted in an error message.
SHOWN_CHARS = 40
#: Largest time in seconds a scenario or bench file may hold, in absolute value
#: (``arrival_s``, ``duration_s``, ``due_s``, ``estimate_s``; about 31,700 years):
#: sums over a million such tasks stay finite, so output JSON never holds Infinity.
MAX_SECONDS = 1e12
#: Largest task weight in a scenario file.
MAX_WEIGHT = 1e6
#: Bytes in a scenario file (``sched simulate --scenario``).
MAX_SCENARIO_BYTES = 1024**3
#: Tasks in one ``rank()`` call or ``sched rank`` input. A render queue holds
#: far fewer; the greedy plan's work grows faster than linearly with the queue
#: (benchmarks/test_rank_speed.py), so the bound also bounds the time of a call.
MAX_RANK_TASKS = 20_000
#: Bytes of JSON ``sched rank`` reads (a file or standard input). ``rank()`` also
#: bounds its times and estimates by MAX_SECONDS (and the plan's reach: latest
#: time + total estimated work) and its weights by MAX_WEIGHT.
MAX_RANK_BYTES = 32 * 1024**2
#: Hidden width of a policy file's network (the training default: 32).
MAX_POLICY_HIDDEN = 1024
#: Bytes of a policy file, and of its contents once unpacked.
MAX_POLICY_BYTES = 64 * 1024**2
#: Largest magnitude of a weight in a policy file (trained ones stay orders of magnitude below).
MAX_POLICY_WEIGHT = 1e6
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
#: sched.json_input): a verdict, a calibration or a call nests a few levels.
MAX_JSON_DEPTH = 64
