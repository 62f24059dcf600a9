"""The results layout: every path the pipeline writes, defined once.

Used by the package (command defaults, ``rank()``'s policy lookup, the report)
and by the workflow (``workflow/rules/*.smk``), so a path cannot drift between
them. Functions take a ``root`` so that a robustness setting, whose files live
under ``results/robustness/<name>/``, reuses the same names; pass a Snakemake
wildcard such as ``"{seed}"`` to get a rule's pattern.

The file names ``rapport.md``, ``resume.csv`` and ``politique.pt`` are part of
the project's contract and stay as they are; the code calls them the report,
the summary and the policy file.
"""

RESULTS = "results"

# ---------------------------------------------------------------- file names
POLICY_FILE = "politique.pt"
WARM_POLICY_FILE = "warm_start.pt"
TRAIN_LOG = "train_log.csv"
#: The training log's run record: each iteration's wall time and throughput (not a result).
TRAIN_RUN_LOG = "train_log.run.csv"
LEARNING_CURVE = "learning_curve.png"
PER_SCENARIO = "per_scenario.csv"
SUMMARY = "resume.csv"
WINNER = "winner.json"
TUNED = "tuned.json"
#: A chunked setting's farm benchmark (``sched farm-bench``, sched.evaluate.farm.bench), beside its
#: tuned.json and per_scenario.csv under results/farm/<name>/ (:func:`farm_root`): the selection table
#: the shipped rule is chosen on, the paired comparisons and the shipped decision (not a winner.json:
#: rank() reads none yet).
FARM_SELECTION = "selection.csv"
FARM_TABLE = "farm.csv"
FARM_VERDICT = "farm_verdict.json"
FARM_CLAIRVOYANT = "clairvoyant.csv"
FARM_PLAN = "plan_candidacy.json"
#: The learned farm policy of a setting with a `train` block (the longer run's): `sched farm-train`'s
#: policy file and learning curve, `sched farm-learned`'s candidacy, rows of farm.csv's columns and
#: per-scenario rows (sched.learn.farm, sched.evaluate.farm.learned).
FARM_POLICY = "farm_policy.pt"
FARM_CURVE = "farm_learning_curve.csv"
FARM_LEARNED = "farm_learned.json"
FARM_LEARNED_TABLE = "farm_learned.csv"
FARM_LEARNED_SCENARIOS = "farm_learned_scenarios.csv"
#: In such a setting the benchmark's own verdict (the rules' choice) is this file, and farm_verdict.json
#: is `sched farm-learned`'s: the learned policy when its candidacy ships it, else the rules' verdict.
FARM_RULES_VERDICT = "farm_verdict_rules.json"
#: A setting with `train: {teacher: true}`: `sched farm-teach`'s folder (its warm start, FARM_POLICY,
#: and its label counts with the warm start's validation score), `sched farm-train --init`'s start.
FARM_TEACH = "teach"
FARM_TEACHER_LABELS = "teacher_labels.json"
CLAIRVOYANT = "clairvoyant.csv"
DEMO_TABLE = "demo.csv"
DEMO_GANTT = "demo_gantt.png"
REPORT = "rapport.md"

# ---------------------------------------------------------------- folders and files
CALIBRATION = f"{RESULTS}/calibration.json"
CALIBRATION_FIGURE = f"{RESULTS}/calibration.png"
#: `sched calibrate-frames --out`: frames per job and time per frame from the bench logs' frames column,
#: and from the queue history's (its optional frames column; only when it has one)
FRAMES_FIT = f"{RESULTS}/calibration_frames.json"
WORKLOAD_FRAMES_FIT = f"{RESULTS}/workload_frames.json"
#: `sched calibrate-workload --out`: the workload fitted to the queue history (+ .png)
WORKLOAD = f"{RESULTS}/workload.json"
WORKLOAD_FIGURE = f"{RESULTS}/workload.png"
#: The trace-like synthetic history (resources/history/make_trace_history.py) and its fit: the
#: workload a robustness setting draws heavy-tailed, class-dependent durations from (issue 50).
TRACE_HISTORY = f"{RESULTS}/trace/history.csv"
TRACE_WORKLOAD = f"{RESULTS}/trace/workload.json"
TRACE_WORKLOAD_FIGURE = f"{RESULTS}/trace/workload.png"
#: The trace-like history with frames by its documented rule (make_trace_history.py --frames), a file
#: of its own so that TRACE_HISTORY and its fit keep their bytes, and its frames fit.
TRACE_FRAMES_HISTORY = f"{RESULTS}/trace/history_frames.csv"
TRACE_FRAMES_FIT = f"{RESULTS}/trace/frames.json"
#: `sched replay`: every policy on the queue history cut into windows (per_scenario, resume, windows)
REPLAY_DIR = f"{RESULTS}/replay"
REPLAY_WINDOWS = "windows.csv"
CONFIG_DIR = f"{RESULTS}/config"
LOG_DIR = f"{RESULTS}/logs"
BENCH_DIR = f"{RESULTS}/benchmark"
DEMO_DIR = f"{RESULTS}/demo"
FIGURES_DIR = f"{RESULTS}/figures"
ROBUST_DIR = f"{RESULTS}/robustness"
#: The chunked farm settings' folders (config farm.settings; ``sched farm-bench``).
FARM_DIR = f"{RESULTS}/farm"
REPORT_PATH = f"{RESULTS}/{REPORT}"
TUNED_PATH = f"{BENCH_DIR}/{TUNED}"
#: plan's runs: its candidacy's validation runs (validation/<setting>/), and plan at the setting
#: the candidacy picks (with the teacher in the longer run) on the test seeds (per_scenario.csv).
PLAN_BENCH_DIR = f"{BENCH_DIR}/plan"


def plan_candidacy_dir(setting, robust=None):
    """The validation run of plan's candidacy at the setting ``setting`` of config plan.grid (under
    the robustness setting ``robust``: :func:`robust_plan_dir`'s)."""
    return f"{PLAN_BENCH_DIR if robust is None else robust_plan_dir(robust)}/validation/{setting}"


#: plan's folder under a robustness setting's (:func:`robust_plan_dir`).
ROBUST_PLAN = "plan"


def robust_plan_dir(name, robust_dir=None):
    """plan's runs under one robustness setting (config plan.elsewhere): its candidacy's validation
    runs and the planners' table on the test seeds (``robust_dir``: the settings' folder, default
    :data:`ROBUST_DIR`)."""
    return f"{robust_root(name) if robust_dir is None else f'{robust_dir}/{name}'}/{ROBUST_PLAN}"


#: The winner's selection: every policy that may win on the selection (validation) seeds
#: (`sched benchmark --split selection`); `sched gather --selection` chooses the winner on it.
SELECTION_DIR = f"{BENCH_DIR}/selection"
SELECTION_TABLE = f"{SELECTION_DIR}/{PER_SCENARIO}"
#: `sched train --out` and `sched teach --out` when run by hand, outside the workflow
DEFAULT_POLICY = f"{RESULTS}/{POLICY_FILE}"
DEFAULT_TEACHER_LABELS = f"{RESULTS}/teacher/labels.npz"


def train_dir(root=RESULTS):
    """The folder holding one subfolder per training seed."""
    return f"{root}/train"


def seed_subdir(seed):
    """The name of one training seed's folder inside a training folder."""
    return f"seed-{seed}"


def seed_dir(seed, root=RESULTS):
    """The training outputs of one seed: policy file, training log, learning curve."""
    return f"{train_dir(root)}/{seed_subdir(seed)}"


def policy_file(seed, root=RESULTS):
    """The trained policy of training seed ``seed``."""
    return f"{seed_dir(seed, root)}/{POLICY_FILE}"


def warm_policy_file(seed, root=RESULTS):
    """The warm start of training seed ``seed`` (the distilled weights, before PPO), written by
    ``sched train`` beside the policy file when the run has a teacher; benchmarked as
    ``ppo-<seed>-warm``."""
    return f"{seed_dir(seed, root)}/{WARM_POLICY_FILE}"


def round_policy_file(seed, r, root=RESULTS):
    """Training seed ``seed``'s policy after round ``r`` of expert iteration (``sched distill``);
    benchmarked as ``ppo-<seed>-r<r>``."""
    return f"{seed_dir(seed, root)}/round-{r}.pt"


def round_labels(seed, r, root=RESULTS):
    """The gated teacher's labels of round ``r`` of training seed ``seed`` (``sched teach --round``)."""
    return f"{root}/teacher/seed-{seed}/round-{r}.npz"


def train_log(seed, root=RESULTS):
    return f"{seed_dir(seed, root)}/{TRAIN_LOG}"


def train_run_log(seed, root=RESULTS):
    return f"{seed_dir(seed, root)}/{TRAIN_RUN_LOG}"


def learning_curve(seed, root=RESULTS):
    return f"{seed_dir(seed, root)}/{LEARNING_CURVE}"


def teacher_labels(seeds, root=RESULTS):
    """The rollout teacher's labels on the training seeds ``seeds`` (text ``A-B``)."""
    return f"{root}/teacher/labels-{seeds}.npz"


def step_config(step, root=RESULTS):
    """The config file of one workflow step (the settings it depends on)."""
    return f"{root}/config/{step}.yaml"


def shard_dir(seeds):
    """One benchmark shard's folder (test seeds ``A-B``)."""
    return f"{BENCH_DIR}/shards/{seeds}"


def selection_shard_dir(seeds):
    """One shard of the selection run (validation seeds ``A-B``), run by hand."""
    return f"{SELECTION_DIR}/shards/{seeds}"


def farm_root(name):
    """The folder of one chunked farm setting (config farm.settings): its config and farm benchmark."""
    return f"{FARM_DIR}/{name}"


def robust_root(name):
    """The folder of one robustness setting (its config, tuning, training, benchmark)."""
    return f"{ROBUST_DIR}/{name}"


#: The studio setting's name (docs/workload.md, "The studio setting"): its folder under ROBUST_DIR.
STUDIO = "studio"


def studio_replay_dir():
    """The studio's held-out replay (`sched replay --held-out`): per_scenario.csv, resume.csv, windows.csv."""
    return f"{robust_root(STUDIO)}/replay"


def studio_validation_dir():
    """The studio's validation-day replay (`sched replay --validation`): per_scenario.csv, resume.csv,
    windows.csv."""
    return f"{robust_root(STUDIO)}/replay-validation"


def fidelity_dir():
    """The studio's fidelity check (`sched fidelity`): FIDELITY_TABLE, FIDELITY_RECORD, FIDELITY_FIGURE."""
    return f"{robust_root(STUDIO)}/fidelity"


FIDELITY_TABLE = "fidelity.csv"
FIDELITY_RECORD = "fidelity.json"
FIDELITY_FIGURE = "fidelity.png"


def robust_selection_table(name):
    """One robustness setting's selection table (its winner.json is chosen on it)."""
    return f"{robust_root(name)}/selection/{PER_SCENARIO}"


def log(job):
    """The log file of a workflow job (``job`` may contain folders)."""
    return f"{LOG_DIR}/{job}.log"


def usage(job):
    """The resource-usage table Snakemake's ``benchmark:`` writes for a job."""
    return f"{LOG_DIR}/{job}.usage.tsv"


# ---------------------------------------------------------------- results and run records
#
# A result depends on the commit, the config and the input files only; a run record says how a
# run ran (wall times, throughput, threads, host, versions) and is never hashed by a later step
# nor listed in the manifest (sched/evidence/manifest.py). A run record is a file under results/logs/, a
# Snakemake usage table, or a file whose name carries RUN_MARK (train_log.run.csv).
MANIFEST = f"{RESULTS}/manifest.sha256"
#: The run's own record (versions, processor, pins), beside the manifest.
RUN_RECORD = f"{LOG_DIR}/run.json"
RUN_MARK = ".run."


def is_run_record(path):
    """Whether ``path`` (relative to the project root, or to results/) is a run record."""
    from pathlib import PurePosixPath

    p = PurePosixPath(str(path).replace("\\", "/"))
    parts = p.parts[1:] if p.parts[:1] == (RESULTS,) else p.parts
    name = p.name
    return (
        parts[:1] == (LOG_DIR.split("/")[-1],)
        or name.endswith(".usage.tsv")
        or RUN_MARK in name
        or name == "run.json"
    )


def demo_schedule(policy, folder=DEMO_DIR):
    """The demonstration scenario's schedule under one policy."""
    return f"{folder}/schedule-{policy}.csv"
