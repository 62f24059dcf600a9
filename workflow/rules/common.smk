# Shared definitions: the interpreter the jobs run, the policies, the shards,
# the per-step config files that make reruns precise, and the robustness
# settings. Every path comes from sched.layout (sched/layout.py), which the
# package uses too. A function taking `setting` serves the main run (None) and
# each robustness setting (its name) alike.
import copy
import json
import os
import re
import shlex
import sys

import yaml
from snakemake.exceptions import WorkflowError

from sched import layout
from sched.config import validate_config
from sched.threads import usable_cpus
from sched.evaluate.policies import HEURISTICS, default_policies, policy_key, round_name, warm_name
from sched.evaluate.gate import PLAN_RUN, PLAN_TIMES
from sched.learn.search.planner import elsewhere_names, grid_names
from sched.evaluate.report.training import trains_ppo_alone
from sched.evaluate.seeds import benchmark_seeds, plan_validation_seeds, range_text, selection_seeds, shard_ranges

# Jobs run `python -m sched`: the interpreter running Snakemake (the project's
# virtual environment, where the package is installed) comes first on their
# PATH, whether or not the environment is activated.
# (A prefix replaces Snakemake's default one, bash's strict mode: kept.)
shell.prefix(f"set -euo pipefail; export PATH={shlex.quote(os.path.dirname(sys.executable))}:\"$PATH\"; ")

TRAIN_SEEDS = [int(s) for s in config["train"]["seeds"]]
POLICIES = default_policies(CFG)   # the heuristics, then ppo-<S> per training seed (the demo's)
SHARDS = [range_text(r) for r in shard_ranges(CFG)]
TEST_SEEDS = range_text(benchmark_seeds(CFG))   # the whole test set, as `--seeds` takes it
# the validation seeds the winner is chosen on (benchmark.selection_scenarios from selection_offset)
SELECTION_SEEDS = range_text(selection_seeds(CFG))
# plan's candidacy (sched.evaluate.gate.plan_gate): the settings of plan.grid the active profile runs,
# each on the first plan.validation_scenarios selection seeds (those that chose its base)
PLAN_SETTINGS = grid_names(CFG, config.get("profile", "default"))
if not PLAN_SETTINGS:
    raise WorkflowError("config: plan.grid: every setting is `profile: full`; the default run needs one")
PLAN_SEEDS = range_text(plan_validation_seeds(CFG))
# plan's candidacy under the robustness settings and the studio (config plan.elsewhere): the
# settings of plan.grid any of them tries (each its grid: elsewhere_grid), each on the setting's
# own winner and validation seeds; none when the active profile does not build it
PLAN_ELSEWHERE = elsewhere_names(CFG, config.get("profile", "default"))
CALIBRATION = config["scenario"]["calibration"]   # None: scenarios use scenario.kinds
WORKLOAD_FILE = config["scenario"]["workload"]   # None: constant-rate arrivals (docs/workload.md)
HISTORY = config["workload"]["history"]   # the queue history: [] turns calibrate-workload and replay off

# The robustness settings (config robustness.settings) by name: each reruns the
# benchmark (and, with `train`, the teacher and the training) with
# scenario.load / scenario.machines overridden, from its own config files under
# results/robustness/<name>/config/: the same commands, the same contracts.
# Settings marked `profile: full` are built by the longer run only (config profile: full).
ROBUST = {s["name"]: s for s in config["robustness"]["settings"]
          if config.get("profile", "default") == "full" or s.get("profile", "default") == "default"}
# The studio setting (docs/workload.md): the queue's own fitted workload, when the config
# names a history. Its policies train on scenarios drawn from results/workload.json; it is
# chosen on generated validation scenarios and the validation days, confirmed on test
# scenarios from the fit and on the days the fit held out.
STUDIO = layout.STUDIO
if HISTORY:
    if STUDIO in ROBUST:
        raise WorkflowError(f"config robustness.settings: the name {STUDIO!r} is the studio setting's")
    _studio = config.get("studio") or {}
    ROBUST[STUDIO] = {"name": STUDIO, "workload": layout.WORKLOAD, "tasks": _studio.get("tasks", "day"),
                      "warm_up_days": int(_studio.get("warm_up_days", 1)),
                      "train": dict(_studio.get("train") or {"atc_k": "tuned"})}


def results_root(setting=None):
    """The folder holding the outputs of the main run (None) or of a robustness setting."""
    return layout.RESULTS if setting is None else layout.robust_root(setting)


def calibration_input(setting=None):
    """The files scenarios are drawn from: the calibration (none when scenario.calibration is
    null) and the workload file (when scenario.workload names one, results/workload.json say;
    the studio setting's is always the fit, results/workload.json)."""
    workload = ROBUST[setting].get("workload") if setting in ROBUST else None
    workload = workload or WORKLOAD_FILE
    return ([CALIBRATION] if CALIBRATION else []) + ([workload] if workload else [])


def setting_calibration(wildcards):
    """calibration_input of the robustness setting named by the rule's wildcard."""
    return calibration_input(wildcards.setting)


def replay_outputs():
    """`sched replay`'s files (the report's "Replayed history"), when the config names a history."""
    names = (layout.PER_SCENARIO, layout.SUMMARY, layout.WINNER, layout.REPLAY_WINDOWS)
    return [f"{layout.REPLAY_DIR}/{name}" for name in names] if HISTORY else []


def retrains(setting):
    """Whether a robustness setting trains its own policies (it has `train` overrides)."""
    return setting is not None and bool(ROBUST[setting].get("train"))


def has_teacher(setting=None):
    """Whether the training of the main run (None) or of a robustness setting that retrains
    has the teacher's warm start (train.teacher_scenarios > 0, the setting's over the main)."""
    if setting is not None and not retrains(setting):
        return False
    return step_settings("train", setting)["train"]["teacher_scenarios"] > 0


def train_rounds(setting=None):
    """The rounds of expert iteration of the main run (train.rounds when it has a teacher; the
    robustness settings have none: their warm start runs inside `sched train --teacher`)."""
    return int(config["train"].get("rounds", 0)) if setting is None and has_teacher() else 0


def stage_policy(seed, r):
    """Training seed ``seed``'s policy after round ``r`` (0: the warm start)."""
    return layout.warm_policy_file(seed) if int(r) == 0 else layout.round_policy_file(seed, int(r))


def round_label_files(seed, r):
    """The label files of rounds 1..r of training seed ``seed`` (aggregated, as in DAgger)."""
    return [layout.round_labels(seed, i) for i in range(1, int(r) + 1)]


def learned_policies(setting=None, warm=True):
    """[(name, policy file)]: ppo-<S> per training seed (the setting's own when it retrains,
    else the main ones), each followed, with ``warm``, by its warm start ppo-<S>-warm
    (warm_start.pt) when the training that made it had a teacher and by its rounds of expert
    iteration ppo-<S>-r<R> (round-R.pt)."""
    root = results_root(setting) if retrains(setting) else layout.RESULTS
    out = []
    for s in TRAIN_SEEDS:
        out.append((f"ppo-{s}", layout.policy_file(s, root)))
        if warm and has_teacher(setting):
            out.append((warm_name(s), layout.warm_policy_file(s, root)))
        if warm and setting is None:  # the main run's stages (a setting that does not retrain: its finals)
            out.extend((round_name(s, r), layout.round_policy_file(s, r)) for r in range(1, train_rounds() + 1))
        if warm and setting == STUDIO:  # the main setting's policies, benchmarked on the studio's queue
            out.append((f"main-ppo-{s}", layout.policy_file(s)))
    return out


def policy_files(setting=None, warm=True):
    """The policy files of learned_policies (the inputs of the jobs that run them)."""
    return [path for _, path in learned_policies(setting, warm)]


def policy_file_args(setting=None, warm=True):
    """`--policy-file NAME=PATH ...` naming each learned policy explicitly."""
    return " ".join(
        f"--policy-file {name}={shlex.quote(path)}" for name, path in learned_policies(setting, warm)
    )


def bench_policies(setting=None):
    """The benchmark's `--policies`: every heuristic and every learned policy (warm starts
    included), in table order."""
    return ",".join(sorted([*HEURISTICS, *(name for name, _ in learned_policies(setting))], key=policy_key))


def select_policies(setting=None):
    """The selection run's `--policies`: those that may win winner.json, every heuristic and
    ppo-<S> per training seed (no warm start: they are benchmarked, they do not compete)."""
    names = [*HEURISTICS, *(name for name, _ in learned_policies(setting, warm=False))]
    return ",".join(sorted(names, key=policy_key))


def _reservation():
    """How many of -j N's cores one thread of a job reserves: -j N // the machine's usable
    CPUs, at least 1 (1 without a local core count: --report, a cluster executor)."""
    try:
        given = workflow.cores
    except WorkflowError:  # --report, a cluster executor: no local core count, nothing to share
        return 1
    return max(1, (given or 1) // usable_cpus())


def cores(n=1):
    """The cores a job of n threads reserves: n x _reservation(). With -j above the CPUs
    (`snakemake -j4` on 2 cores) jobs then never outnumber the CPUs: a training job's decisions
    per second (train_log.csv, the report's throughput) are the trainer's own, not shared with
    neighbours. The job itself runs on job_threads, not on what it reserves."""
    return n * _reservation()


def job_threads(wildcards, threads, rulename):
    """A job's `--threads` (its rule's `resources.job_threads`): the threads its rule reserves
    over _reservation(), or a --set-threads value (a cluster profile's) as it is. Passing the
    reservation itself would give a one-thread job two threads under `snakemake -j4` on 2 cores,
    and two such jobs side by side four threads on two CPUs."""
    if rulename in workflow.resource_settings._parsed_overwrite_threads:
        return threads
    return max(1, threads // _reservation())


def teach_settings(teacher):
    """The robustness settings that retrain with (``teacher``) or without a teacher: a
    regular expression for the `setting` wildcard (one that matches nothing when none)."""
    names = [n for n in ROBUST if retrains(n) and has_teacher(n) == teacher]
    return "|".join(re.escape(n) for n in names) or "(?!)"


def teacher_shards(setting=None):
    """The `A-B` seed ranges of the teacher jobs: the first train.teacher_scenarios
    training seeds in train.teacher_shards parts (none without a warm start)."""
    train = step_settings("train", setting)["train"]
    n = train["teacher_scenarios"]
    if n <= 0:
        return []
    first = config["seeds"]["train"]["start"]
    k = max(1, min(train["teacher_shards"], n))
    bounds = [first + (n * i) // k for i in range(k + 1)]
    return [f"{lo}-{hi - 1}" for lo, hi in zip(bounds, bounds[1:])]


def teacher_files(setting=None):
    """The rollout teacher's label files (the policies' warm start), one per teacher job.
    `sched teach` makes them once for every training seed; labels do not depend on the
    sharding (they are keyed on the scenario's seed)."""
    return [layout.teacher_labels(r, results_root(setting)) for r in teacher_shards(setting)]


def atc_k_arg(setting, tuned_path):
    """`--atc-k K` when a robustness setting trains from a k of its own (its train.atc_k;
    `tuned`: the k tuned for it, read from ``tuned_path``); empty otherwise."""
    wanted = (ROBUST[setting].get("train") or {}).get("atc_k")
    if wanted is None:
        return ""
    if wanted == "tuned":
        with open(tuned_path) as fh:
            wanted = json.load(fh)["atc_k"]
    return f"--atc-k {float(wanted)!r}"


def studio_built():
    """Whether the studio setting is built: the config names a history and its fit held days out
    (results/workload.json's split.held_out; a history shorter than 14 days holds none, and
    `sched calibrate-workload` says so). Known once the calibrate_workload checkpoint has run."""
    if STUDIO not in ROBUST:
        return False
    from sched.data.workload.workload import held_out_days, load_workload

    return held_out_days(load_workload(checkpoints.calibrate_workload.get().output.json)) is not None


def ppo_alone_logs(wildcards=None):
    """The training logs of the robustness settings that train PPO alone on the main queue
    (sched.evaluate.report.training.trains_ppo_alone): the report's chain curves."""
    return [layout.train_log(s, layout.robust_root(name)) for name, st in ROBUST.items()
            if name != STUDIO and trains_ppo_alone(st, config["scenario"]) for s in TRAIN_SEEDS]


def robust_summaries(wildcards=None):
    """resume.csv (the summary) of every robustness setting (the studio's when it is built)."""
    return [f"{layout.robust_root(name)}/{layout.SUMMARY}" for name in ROBUST
            if name != STUDIO or studio_built()]


# ---------------------------------------------------------------- per-step configs
#
# Each job reads its settings from its own config file, results/config/<step>.yaml
# (results/robustness/<name>/config/<step>.yaml under a robustness setting),
# holding only the settings that step depends on (the commands fill in the
# schema's defaults for the rest). The rule writing it takes those settings as
# `params`, Snakemake's rerun trigger: the file is rewritten, and the steps
# reading it rerun, exactly when one of those settings changes. A training
# setting reruns training and what reads its policies, not calibration; a
# `report:` setting reruns the report (and the demo's Gantt chart for its
# resolution and window), nothing upstream.
#
# STEP_SETTINGS lists, per step and per config section, the settings the step
# reads: ALL (the whole section) or a list of keys; an entry {key: [...]} takes
# some settings of a nested section.
ALL = "all"
# plan's settings but where its candidacy runs elsewhere (plan.elsewhere, read by the workflow alone):
# what plan's own jobs and the verdicts depend on
PLAN_OWN = [k for k in config["plan"] if k != "elsewhere"]

# What a generated scenario depends on. scenario.calibration names the file;
# its contents reach the jobs as a declared input.
SCENARIO = {"scenario": ALL, "rules": ALL, "seeds": ALL}
# The benchmark's counts are checked against each other and the seed ranges
# (sched.config.check_benchmark_counts), so a step that reads any benchmark
# setting gets all of them.
BENCHMARK_COUNTS = ["scenarios", "validation_scenarios", "shards", {"clairvoyant": ["scenarios"]}]
# The winner's selection seeds (sched.evaluate.seeds.selection_seeds): the selection run and
# gather, which checks the selection table against them.
SELECTION = ["selection_scenarios", "selection_offset"]
# What the gated teacher and a round's labels depend on (`sched teach`, and `sched train --teacher`
# checks labels against them).
TEACHER = ["teacher_scenarios", "teacher_base", "teacher_candidates", "teacher_samples", "teacher_chunk",
           "teacher_horizon", "teacher_z", "round_scenarios", "round_teacher_share", "round_samples",
           "round_chunk", "round_horizon", "round_continuation", "top_k", "tasks", "atc_k"]
# What a distillation (`sched distill`) reads: the student's architecture, the imitation, the
# validation that keeps it or its start.
DISTILL = ["architecture", "hidden", "atc_prior", "prior_scale", "prior_rule", "top_k", "atc_k", "tasks",
           "teacher_scenarios", "distill_target", "round_target", "distill_improve", "distill_epochs", "distill_lr", "distill_batch", "distill_scale",
           "max_grad_norm", "validation_scenarios"]
# Every train setting but `seeds` (each training job's --seed) and `threads`
# (its --threads, the rule's threads): checked against the schema below.
TRAIN = [
    "iterations", "num_envs", "num_steps", "learning_rate", "linear_lr_mult", "anneal_lr", "gamma",
    "gae_lambda", "num_minibatches", "update_epochs", "norm_adv", "clip_coef", "clip_vloss", "ent_coef",
    "vf_coef", "max_grad_norm", "target_kl", "reward_scale", "architecture", "hidden", "atc_prior",
    "prior_scale", "prior_rule", "top_k", "atc_k", "teacher_scenarios", "teacher_shards", "teacher_base",
    "teacher_candidates", "teacher_samples", "teacher_chunk", "teacher_horizon", "teacher_z", "rounds",
    "round_scenarios", "round_teacher_share", "round_samples", "round_chunk", "round_horizon", "round_continuation",
    "distill_target", "round_target", "distill_improve", "distill_epochs", "distill_lr", "distill_batch", "distill_scale",
    "privileged_critic", "tasks", "loads", "eval_every", "patience", "validation_scenarios", "checkpoint_every", "group_size",
]
TRAIN_NOT_READ = ["seeds", "threads"]

STEP_SETTINGS = {
    "calibrate": {"calibration": ALL},
    "train": {**SCENARIO, "train": TRAIN},
    # what `sched teach` reads, and what `sched train --teacher` checks the labels against
    "teach": {**SCENARIO, "train": TEACHER},
    "distill": {**SCENARIO, "train": DISTILL},
    "tune": {**SCENARIO, "benchmark": [*BENCHMARK_COUNTS, "atc_k_grid"]},
    "benchmark": {**SCENARIO, "benchmark": BENCHMARK_COUNTS},
    # the selection run checks its seeds after those that chose the training checkpoints
    "select": {**SCENARIO, "benchmark": [*BENCHMARK_COUNTS, *SELECTION], "train": ["validation_scenarios"]},
    # gather checks the selection table's seeds as the selection run does (a robustness setting's)
    "gather": {**SCENARIO,
               "benchmark": [*BENCHMARK_COUNTS, *SELECTION, "bootstrap_resamples", "bootstrap_seed", "ci_level",
                             "tie_relative", "tie_absolute_s"],
               "train": ["validation_scenarios"]},
    # the main setting's gather also gates the winner with plan's candidacy (plan.choice_se; the
    # planners' specs: plan's settings, the teacher's)
    "verdict": {**SCENARIO,
                "benchmark": [*BENCHMARK_COUNTS, *SELECTION, "bootstrap_resamples", "bootstrap_seed", "ci_level",
                              "tie_relative", "tie_absolute_s"],
                "train": ["validation_scenarios", *TEACHER], "plan": PLAN_OWN},
    # the whole clairvoyant section (its scenarios count included)
    "clairvoyant": {**SCENARIO,
                    "benchmark": ["scenarios", "validation_scenarios", "shards", "atc_k_grid", "clairvoyant"]},
    "demo": {**SCENARIO, "benchmark": [*BENCHMARK_COUNTS, "demo_seed"],
             "report": ["figure_dpi", "gantt_hours"]},
    "report": {**SCENARIO, "benchmark": ALL, "train": ["seeds", *TEACHER], "report": ALL, "robustness": ALL,
               "plan": ALL, "workload": ALL, "studio": ALL, "profile": ALL},
    # the workload from the queue history (workflow/rules/workload.smk)
    "calibrate_workload": {"scenario": ["calibration", "machines", "priorities"], "workload": ALL},
    "replay": {**SCENARIO, "workload": ALL,
               "benchmark": [*BENCHMARK_COUNTS, "bootstrap_resamples", "bootstrap_seed", "ci_level",
                             "tie_relative", "tie_absolute_s"]},
    # the studio's replays with plan on its verdict (config plan.elsewhere): the replay's settings, with
    # the selection's (plan's base) and plan's
    "replay_plan": {**SCENARIO, "workload": ALL,
                    "benchmark": [*BENCHMARK_COUNTS, *SELECTION, "bootstrap_resamples", "bootstrap_seed",
                                  "ci_level", "tie_relative", "tie_absolute_s"],
                    "train": ["validation_scenarios"], "plan": PLAN_OWN},
    # plan's candidacy (its base: what the selection table chooses; its seeds: the selection's first)
    # and its run on the test seeds at the setting the candidacy picks, with the rule's settings
    "plan": {**SCENARIO,
             "benchmark": [*BENCHMARK_COUNTS, *SELECTION, "bootstrap_resamples", "bootstrap_seed", "ci_level",
                           "tie_relative", "tie_absolute_s"],
             "train": ["validation_scenarios", *TEACHER],   # the teacher: the planner, the teacher's settings
             "plan": PLAN_OWN},
}
# A new train setting must be listed above (or be one training does not read).
_unlisted = set(config["train"]) - set(TRAIN) - set(TRAIN_NOT_READ)
if _unlisted:
    raise WorkflowError(f"workflow/rules/common.smk: add train.{min(_unlisted)} to TRAIN or TRAIN_NOT_READ")


def _select(section, keys):
    """The settings ``keys`` (ALL, or a list as in STEP_SETTINGS) of a config section."""
    if keys == ALL:
        return section
    out = {}
    for key in keys:
        if isinstance(key, dict):
            ((name, sub),) = key.items()
            out[name] = _select(section[name], sub)
        else:
            out[key] = section[key]
    return out


# The scenario settings a robustness setting may override (the schema's robustness.settings).
SETTING_SCENARIO_KEYS = ("load", "machines", "tasks", "workload", "warm_up_days", "workload_scale", "workload_model")


def step_settings(step, setting=None):
    """The settings ``step`` depends on, taken from the validated config (defaults filled
    in), under the robustness setting named ``setting`` (None: the main run)."""
    chosen = {name: _select(config[name], keys) for name, keys in STEP_SETTINGS[step].items()}
    if setting is None:
        return chosen
    overrides = ROBUST[setting]
    chosen = copy.deepcopy(chosen)
    for key in SETTING_SCENARIO_KEYS:
        if key in overrides and "scenario" in chosen:
            chosen["scenario"][key] = overrides[key]
    if setting == STUDIO and "selection_scenarios" in chosen.get("benchmark", {}):
        chosen["benchmark"]["selection_scenarios"] = int((config.get("studio") or {}).get("selection_scenarios", 300))
    if "train" in chosen and overrides.get("train"):
        # atc_k: the setting's own k is passed on the command line (atc_k_arg), as
        # `tuned` is only known once its tuned.json is written
        chosen["train"].update({k: v for k, v in overrides["train"].items()
                                if k != "atc_k" and (step == "train" or k in chosen["train"])})
    return chosen


def step_config_text(step, setting=None):
    """The config file of ``step`` (of the main run, or under a robustness setting); as the
    params of the rule writing it, it is the rerun trigger."""
    if setting is None:
        header = (f"# Written by the workflow from its config: the settings `sched {step}` depends\n"
                  f"# on; the others take the defaults of workflow/schemas/config.schema.yaml.\n"
                  f"# Rewritten, and the step rerun, when one of them changes.\n")
    else:
        header = (f"# Written by the workflow: the settings `sched {step}` depends on, under the\n"
                  f"# robustness setting {setting!r} (see config.yaml, robustness.settings).\n")
    # root: the project root, relative to the file's folder, as the commands resolve the
    # relative paths in a config file against its folder (workflow/schemas: root)
    header += "# root: the project root, which the relative paths below are read from.\n"
    root = os.path.relpath(".", os.path.dirname(step_config(step, setting)))
    # sorted keys: reordering config.yaml changes nothing
    return header + yaml.safe_dump({"root": root, **step_settings(step, setting)}, sort_keys=True)


def step_config(step, setting=None):
    """The path of that config file (``setting`` may be the wildcard "{setting}")."""
    return layout.step_config(step, results_root(setting))


def setting_selection_seeds(setting=None):
    """The `--seeds` of a setting's selection run (the studio's: studio.selection_scenarios)."""
    chosen = validate_config(copy.deepcopy(step_settings("select", setting)), "config")  # the frozen config
    return range_text(selection_seeds(chosen))


def studio_held_out(wildcards=None):
    """The studio's held-out replay files (results/robustness/studio/replay/); none when the studio
    is not built (an input function: pass it, not its value, where the checkpoint decides)."""
    if STUDIO not in ROBUST or (wildcards is not None and not studio_built()):
        return []
    names = (layout.PER_SCENARIO, layout.SUMMARY, layout.REPLAY_WINDOWS)
    return [f"{layout.studio_replay_dir()}/{name}" for name in names]


def studio_validation_days(wildcards=None):
    """The studio's validation-day replay files (results/robustness/studio/replay-validation/)."""
    if STUDIO not in ROBUST or (wildcards is not None and not studio_built()):
        return []
    names = (layout.PER_SCENARIO, layout.SUMMARY, layout.REPLAY_WINDOWS)
    return [f"{layout.studio_validation_dir()}/{name}" for name in names]


def studio_fidelity(wildcards=None):
    """The studio's fidelity check (results/robustness/studio/fidelity/): table, record, figure."""
    if STUDIO not in ROBUST or (wildcards is not None and not studio_built()):
        return []
    names = (layout.FIDELITY_TABLE, layout.FIDELITY_RECORD, layout.FIDELITY_FIGURE)
    return [f"{layout.fidelity_dir()}/{name}" for name in names]


def studio_report_inputs(wildcards):
    """What the report reads of the studio setting: its held-out replay and its winner.json (the
    summary comes with robust_summaries); none when the studio is not built."""
    if not studio_built():
        return []
    return (studio_held_out(wildcards) + studio_validation_days(wildcards) + studio_fidelity(wildcards)
            + [f"{layout.robust_root(STUDIO)}/{layout.WINNER}"])


def plan_candidacy_dirs():
    """The folders of plan's validation runs, one per setting of the candidacy (PLAN_SETTINGS)."""
    return [layout.plan_candidacy_dir(name) for name in PLAN_SETTINGS]


def candidacy_files(dirs):
    """What a verdict reads of each validation run in ``dirs``: its per-scenario table and plan.json."""
    return [f"{d}/{name}" for d in dirs for name in (layout.PER_SCENARIO, PLAN_RUN)]


def plan_candidacy_tables():
    """What gather reads of the main setting's validation runs (candidacy_files)."""
    return candidacy_files(plan_candidacy_dirs())


def plans_elsewhere(setting):
    """Whether plan's candidacy runs under the robustness setting ``setting`` (config plan.elsewhere)."""
    return bool(PLAN_ELSEWHERE) and setting in ROBUST


def elsewhere_grid(setting):
    """The grid settings plan's candidacy tries under the robustness setting ``setting``."""
    return elsewhere_names(CFG, config.get("profile", "default"), setting) if plans_elsewhere(setting) else []


def setting_plan_seeds(setting):
    """The `--seeds` of plan's candidacy under a robustness setting: its first plan.validation_scenarios
    selection seeds, or all of them when it has fewer (the studio's: studio.selection_scenarios)."""
    chosen = validate_config(copy.deepcopy(step_settings("plan", setting)), "config")
    return range_text(selection_seeds(chosen)[: chosen.plan["validation_scenarios"]])


def robust_candidacy_dirs(setting):
    """The folders of plan's validation runs under a robustness setting (none when it has none)."""
    return [layout.plan_candidacy_dir(n, setting) for n in elsewhere_grid(setting)]


def robust_plan_inputs(setting):
    """What a robustness setting's benchmark reads of plan: its validation runs (candidacy_files)
    and the planners' table; none without a candidacy."""
    dirs = robust_candidacy_dirs(setting)
    if not dirs:
        return []
    return candidacy_files(dirs) + [f"{layout.robust_plan_dir(setting)}/{layout.PER_SCENARIO}"]


def robust_plan_args(setting):
    """A robustness setting's benchmark's `--plan-selection DIR ... --planners CSV` ("" without)."""
    dirs = robust_candidacy_dirs(setting)
    if not dirs:
        return ""
    table = f"{layout.robust_plan_dir(setting)}/{layout.PER_SCENARIO}"
    return f"--plan-selection {' '.join(map(shlex.quote, dirs))} --planners {shlex.quote(table)}"


def studio_replay_step():
    """The config step of the studio's replays: replay's, with the selection's and plan's
    (replay_plan's) when plan's candidacy runs under the studio."""
    return "replay_plan" if plans_elsewhere(STUDIO) else "replay"


def studio_replay_plan_inputs():
    """What the studio's replays read to run plan: the selection table (plan's base) and the
    candidacy's validation runs (its setting); none without a candidacy."""
    dirs = robust_candidacy_dirs(STUDIO)
    if not dirs:
        return []
    return [layout.robust_selection_table(STUDIO)] + candidacy_files(dirs)


def studio_replay_plan_args():
    """The studio's replays' `--policies` extension and `--plan-on CSV --plan-candidacy DIR ...`:
    (",plan", the options), or ("", "") without a candidacy."""
    dirs = robust_candidacy_dirs(STUDIO)
    if not dirs:
        return "", ""
    return ",plan", (f"--plan-on {shlex.quote(layout.robust_selection_table(STUDIO))}"
                     f" --plan-candidacy {' '.join(map(shlex.quote, dirs))}")


def verdict_step(setting):
    """The step whose config a robustness setting's benchmark reads: gather's, with plan's
    settings (verdict's) when its candidacy runs."""
    return "verdict" if plans_elsewhere(setting) else "gather"


def planners(setting=None):
    """benchmark_plan's `--policies`: plan, and the gated teacher run as a policy (teacher) in the
    longer run when training has one (300 test scenarios of it cost about 3.5 minutes of CPU)."""
    full = config.get("profile", "default") == "full"
    return "plan" + (",teacher" if full and has_teacher(setting) else "")


def manifest_inputs(wildcards=None):
    """Every result the workflow builds but the report's own: the manifest waits for all of them
    (an input function: the studio's files are known once its checkpoint has run)."""
    out = [*rules.calibrate.output, *expand(rules.train.output, seed=TRAIN_SEEDS),
           *expand(rules.benchmark.output, seeds=SHARDS), *rules.select.output, *rules.gather.output,
           *expand(rules.plan_candidacy.output, setting=PLAN_SETTINGS), *rules.benchmark_plan.output,
           *rules.clairvoyant.output, *rules.demo.output,
           *robust_summaries(), *replay_outputs(), *([layout.WORKLOAD] if HISTORY else [])]
    if STUDIO in ROBUST and studio_built():
        out += studio_report_inputs(wildcards)
    for name in ROBUST:   # plan's runs under the settings (config plan.elsewhere)
        if name != STUDIO or studio_built():
            out += robust_plan_inputs(name)
    return out + farm_outputs()   # the chunked farm settings (below; their rules: workflow/rules/farm.smk)


# --- the chunked farm settings (config farm.settings; their rules: workflow/rules/farm.smk) ---
# Settings marked `profile: full` are built by the longer run only, as the robustness settings.
FARM = {s["name"]: s for s in (config.get("farm") or {}).get("settings", [])
        if config.get("profile", "default") == "full" or s.get("profile", "default") == "default"}
# The scenario settings a farm setting may override (the schema's farm.settings).
FARM_SCENARIO_KEYS = ("load", "machines", "tasks", "workload", "workload_scale", "workload_model", "chunks")
# What `sched farm-bench` reads: the scenario (its chunks), the seeds, the benchmark's counts, the
# selection's offset, the k grid and the bootstrap (and the checkpoints' validation count, which the
# selection seeds are checked against).
FARM_STEP = {**SCENARIO,
             "benchmark": [*BENCHMARK_COUNTS, *SELECTION, "atc_k_grid", "bootstrap_resamples", "bootstrap_seed",
                           "ci_level", "tie_relative", "tie_absolute_s"],
             "train": ["validation_scenarios"]}
FARM_FILES = (layout.TUNED, layout.FARM_SELECTION, layout.PER_SCENARIO, layout.FARM_TABLE, layout.FARM_VERDICT,
              layout.FARM_CLAIRVOYANT, layout.FARM_PLAN)


def farm_settings(name):
    """The settings `sched farm-bench` reads under the farm setting ``name`` (the validated config's,
    the setting's scenario keys on top)."""
    chosen = copy.deepcopy({section: _select(config[section], keys) for section, keys in FARM_STEP.items()})
    for key in FARM_SCENARIO_KEYS:
        if key in FARM[name]:
            chosen["scenario"][key] = copy.deepcopy(FARM[name][key])
    return chosen


def farm_config_text(name):
    """The config file of a farm setting's benchmark (its rerun trigger, as step_config_text's)."""
    path = layout.step_config("farm", layout.farm_root(name))
    header = (f"# Written by the workflow: the settings `sched farm-bench` depends on, under the\n"
              f"# chunked farm setting {name!r} (see config.yaml, farm.settings).\n"
              "# root: the project root, which the relative paths below are read from.\n")
    root = os.path.relpath(".", os.path.dirname(path))
    return header + yaml.safe_dump({"root": root, **farm_settings(name)}, sort_keys=True)


def farm_inputs(name):
    """The files a farm setting's scenarios are drawn from: the calibration and its workload file."""
    workload = FARM[name].get("workload") or WORKLOAD_FILE
    return ([CALIBRATION] if CALIBRATION else []) + ([workload] if workload else [])


def farm_outputs(name=None):
    """Every farm setting's files (or one's)."""
    names = [name] if name is not None else list(FARM)
    return [f"{layout.farm_root(n)}/{f}" for n in names for f in FARM_FILES]
