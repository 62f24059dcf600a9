"""The per-step config files: what each step reads of the config, and the file's text.

Each job reads its settings from its own config file, results/config/<step>.yaml
(results/robustness/<name>/config/<step>.yaml under a robustness setting), holding only the
settings that step depends on (the commands fill in the schema's defaults for the rest). The
rule writing it takes the text as `params`, Snakemake's rerun trigger: the file is rewritten,
and the steps reading it rerun, exactly when one of those settings changes. A training setting
reruns training and what reads its policies, not calibration; a `report:` setting reruns the
report (and the demo's Gantt chart for its resolution and window), nothing upstream.

:data:`STEP_SETTINGS` lists, per step and per config section, the settings the step reads:
:data:`ALL` (the whole section), :data:`PLAN_OWN` or a list of keys; an entry {key: [...]}
takes some settings of a nested section.
"""

import os

import yaml

from sched.errors import SchedError

ALL = "all"
#: plan's settings but where its candidacy runs elsewhere (plan.elsewhere, read by the workflow
#: alone): what plan's own jobs and the verdicts depend on.
PLAN_OWN = "all but elsewhere"

#: What a generated scenario depends on. scenario.calibration names the file; its contents reach
#: the jobs as a declared input.
SCENARIO = {"scenario": ALL, "rules": ALL, "seeds": ALL}
#: The benchmark's counts are checked against each other and the seed ranges
#: (sched.config.check_benchmark_counts), so a step that reads any benchmark setting gets all.
BENCHMARK_COUNTS = ["scenarios", "validation_scenarios", "shards", {"clairvoyant": ["scenarios"]}]
#: The winner's selection seeds (sched.evaluate.seeds.selection_seeds): the selection run and
#: gather, which checks the selection table against them.
SELECTION = ["selection_scenarios", "selection_offset"]
#: The paired statistics of a summary.
BOOTSTRAP = ["bootstrap_resamples", "bootstrap_seed", "ci_level", "tie_relative", "tie_absolute_s"]
#: What the gated teacher and a round's labels depend on (`sched teach`, and `sched train
#: --teacher` checks labels against them).
TEACHER = ["teacher_scenarios", "teacher_base", "teacher_candidates", "teacher_samples", "teacher_chunk",
           "teacher_horizon", "teacher_z", "round_scenarios", "round_teacher_share", "round_samples",
           "round_chunk", "round_horizon", "round_continuation", "top_k", "tasks", "atc_k"]  # fmt: skip
#: What a distillation (`sched distill`) reads: the student's architecture, the imitation, the
#: validation that keeps it or its start.
DISTILL = ["architecture", "hidden", "atc_prior", "prior_scale", "prior_rule", "top_k", "atc_k", "tasks",
           "teacher_scenarios", "distill_target", "round_target", "distill_improve", "distill_epochs",
           "distill_lr", "distill_batch", "distill_scale", "max_grad_norm",
           "validation_scenarios"]  # fmt: skip
#: Every train setting but `seeds` (each training job's --seed) and `threads` (its --threads, the
#: rule's threads): :func:`check_train_listed` holds the config to it.
TRAIN = [
    "iterations", "num_envs", "num_steps", "learning_rate", "linear_lr_mult", "anneal_lr", "gamma",
    "gae_lambda", "num_minibatches", "update_epochs", "norm_adv", "clip_coef", "clip_vloss", "ent_coef",
    "vf_coef", "max_grad_norm", "target_kl", "reward_scale", "architecture", "hidden", "atc_prior",
    "prior_scale", "prior_rule", "top_k", "atc_k", "teacher_scenarios", "teacher_shards", "teacher_base",
    "teacher_candidates", "teacher_samples", "teacher_chunk", "teacher_horizon", "teacher_z", "rounds",
    "round_scenarios", "round_teacher_share", "round_samples", "round_chunk", "round_horizon",
    "round_continuation", "distill_target", "round_target", "distill_improve", "distill_epochs", "distill_lr",
    "distill_batch",
    "distill_scale", "privileged_critic", "tasks", "loads", "eval_every", "patience", "validation_scenarios",
    "checkpoint_every", "group_size",
]  # fmt: skip
TRAIN_NOT_READ = ["seeds", "threads"]
#: The train settings without a default (``sched.learn.settings.OPTIONAL``): a step config names one
#: only when the config sets it, so that no file of a run without it changes.
TRAIN_OPTIONAL = ["wait"]
#: What a training with the wait output reads of the benchmark: its bound (``benchmark.waiting``'s
#: ``max_wait_s``), with the counts every reader of the benchmark gets.
WAIT_BOUND = [*BENCHMARK_COUNTS, {"waiting": ["max_wait_s"]}]
#: A verdict's benchmark settings: the counts, the selection's seeds, the paired statistics.
VERDICT_BENCHMARK = [*BENCHMARK_COUNTS, *SELECTION, *BOOTSTRAP]

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
    "gather": {**SCENARIO, "benchmark": VERDICT_BENCHMARK, "train": ["validation_scenarios"]},
    # the main setting's gather also gates the winner with plan's candidacy (plan.choice_se; the
    # planners' specs: plan's settings, the teacher's)
    "verdict": {**SCENARIO, "benchmark": VERDICT_BENCHMARK, "train": ["validation_scenarios", *TEACHER],
                "plan": PLAN_OWN},
    # the whole clairvoyant section (its scenarios count included)
    "clairvoyant": {**SCENARIO, "benchmark": ["scenarios", "validation_scenarios", "shards", "atc_k_grid",
                                              "clairvoyant"]},
    "demo": {**SCENARIO, "benchmark": [*BENCHMARK_COUNTS, "demo_seed"],
             "report": ["figure_dpi", "gantt_hours"]},
    "report": {**SCENARIO, "benchmark": ALL, "train": ["seeds", *TEACHER], "report": ALL, "robustness": ALL,
               "plan": ALL, "workload": ALL, "studio": ALL, "profile": ALL},
    # the workload from the queue history (workflow/rules/workload.smk)
    "calibrate_workload": {"scenario": ["calibration", "machines", "priorities"], "workload": ALL},
    "replay": {**SCENARIO, "workload": ALL, "benchmark": [*BENCHMARK_COUNTS, *BOOTSTRAP]},
    # the studio's replays with plan on its verdict (config plan.elsewhere): the replay's settings,
    # with the selection's (plan's base) and plan's
    "replay_plan": {**SCENARIO, "workload": ALL, "benchmark": VERDICT_BENCHMARK,
                    "train": ["validation_scenarios"], "plan": PLAN_OWN},
    # plan's candidacy (its base: what the selection table chooses; its seeds: the selection's
    # first) and its run on the test seeds at the setting the candidacy picks
    "plan": {**SCENARIO, "benchmark": VERDICT_BENCHMARK,
             "train": ["validation_scenarios", *TEACHER],  # the teacher: the planner, the teacher's settings
             "plan": PLAN_OWN},
}  # fmt: skip
#: The steps a robustness setting has a config file of.
SETTING_STEPS = ("tune", "teach", "train", "select", "gather", "replay", "plan", "verdict", "replay_plan")
#: The scenario settings a robustness setting may override (the schema's robustness.settings).
SETTING_SCENARIO_KEYS = ("load", "machines", "tasks", "workload", "warm_up_days", "workload_scale",
                         "workload_model")  # fmt: skip

#: What `sched farm-bench` reads under a chunked farm setting: the scenario (its chunks), the seeds,
#: the benchmark's counts, the selection's offset, the k grid and the bootstrap (and the
#: checkpoints' validation count, which the selection seeds are checked against).
FARM_STEP = {**SCENARIO, "benchmark": [*BENCHMARK_COUNTS, *SELECTION, "atc_k_grid", *BOOTSTRAP],
             "train": ["validation_scenarios"]}  # fmt: skip
#: The scenario settings a farm setting may override (the schema's farm.settings).
FARM_SCENARIO_KEYS = ("load", "machines", "tasks", "workload", "workload_scale", "workload_model", "chunks")


class StepError(SchedError):
    """The config has a setting no step's list accounts for."""


def check_train_listed(config):
    """Refuse a train setting listed neither in TRAIN nor in TRAIN_NOT_READ: a new one must be."""
    unlisted = set(config["train"]) - set(TRAIN) - set(TRAIN_NOT_READ) - set(TRAIN_OPTIONAL)
    if unlisted:
        raise StepError(f"sched/pipeline/steps.py: add train.{min(unlisted)} to TRAIN or TRAIN_NOT_READ")


def step_keys(config, step):
    """The settings keys of ``step``: STEP_SETTINGS', and the tune step's benchmark.waiting (the
    delayed rules' alphas, tuned beside ATC's k: issue 60) when the config has it."""
    keys = STEP_SETTINGS[step]
    if step == "tune" and "waiting" in config["benchmark"]:
        keys = {**keys, "benchmark": [*keys["benchmark"], "waiting"]}
    if step == "train" and "wait" in config["train"]:  # optional: named only when set
        keys = {**keys, "train": [*keys["train"], "wait"]}
        if config["train"]["wait"] and "waiting" in config["benchmark"]:
            keys["benchmark"] = WAIT_BOUND
    return keys


def select(section, keys):
    """The settings ``keys`` (ALL, PLAN_OWN, or a list as in STEP_SETTINGS) of a config section."""
    if keys == ALL:
        return section
    if keys == PLAN_OWN:
        return {k: v for k, v in section.items() if k != "elsewhere"}
    out = {}
    for key in keys:
        if isinstance(key, dict):
            ((name, sub),) = key.items()
            out[name] = select(section[name], sub)
        else:
            out[key] = section[key]
    return out


def settings_of(config, keys):
    """The settings ``keys`` ({section: keys}, an entry of STEP_SETTINGS) of the config."""
    return {name: select(config[name], sub) for name, sub in keys.items()}


def config_text(header, path, settings):
    """A step's config file at ``path``: the comment ``header``, ``root`` (the project root,
    relative to the file's folder, as the commands resolve the relative paths in a config file
    against its folder: workflow/schemas, root), then the settings, keys sorted (reordering
    config.yaml changes nothing)."""
    header += "# root: the project root, which the relative paths below are read from.\n"
    root = os.path.relpath(".", os.path.dirname(path))
    return header + yaml.safe_dump({"root": root, **settings}, sort_keys=True)


def main_header(step):
    """The header of the main run's config file of ``step``."""
    return (f"# Written by the workflow from its config: the settings `sched {step}` depends\n"
            f"# on; the others take the defaults of workflow/schemas/config.schema.yaml.\n"
            f"# Rewritten, and the step rerun, when one of them changes.\n")  # fmt: skip


def setting_header(step, setting):
    """The header of ``step``'s config file under the robustness setting ``setting``."""
    return (f"# Written by the workflow: the settings `sched {step}` depends on, under the\n"
            f"# robustness setting {setting!r} (see config.yaml, robustness.settings).\n")  # fmt: skip


def farm_header(name, command="farm-bench"):
    """The header of a chunked farm setting's config file (of ``command``'s)."""
    return (f"# Written by the workflow: the settings `sched {command}` depends on, under the\n"
            f"# chunked farm setting {name!r} (see config.yaml, farm.settings).\n")  # fmt: skip
