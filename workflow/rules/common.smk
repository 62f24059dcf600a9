# Shared definitions: the interpreter the jobs run, the policies, the shards,
# and the per-step config files that make reruns precise.
import os
import shlex
import sys

import yaml

from sched.evaluate import benchmark as bm

# Jobs run `python -m sched`: the interpreter running Snakemake (the project's
# virtual environment, where the package is installed) comes first on their
# PATH, whether or not the environment is activated.
# (A prefix replaces Snakemake's default one, bash's strict mode: kept.)
shell.prefix(f"set -euo pipefail; export PATH={shlex.quote(os.path.dirname(sys.executable))}:\"$PATH\"; ")

BENCH = "results/benchmark"
TRAIN_SEEDS = [int(s) for s in config["train"]["seeds"]]
POLICIES = bm.default_policies(config)   # the heuristics, then ppo-<S> per training seed
SHARDS = [bm.range_text(r) for r in bm.shard_ranges(config)]
CALIBRATION = config["scenario"]["calibration"]   # None: scenarios use scenario.kinds
# The rollout teacher's labels (the policies' warm start) are made once, by `sched teach`,
# for every training seed, in train.teacher_shards parallel jobs over the labelled seeds.
def _teacher_shards():
    n = config["train"]["teacher_scenarios"]
    if n <= 0:
        return []
    first = config["seeds"]["train"]["start"]
    k = max(1, min(config["train"]["teacher_shards"], n))
    bounds = [first + (n * i) // k for i in range(k + 1)]
    return [f"{lo}-{hi - 1}" for lo, hi in zip(bounds, bounds[1:])]


TEACHER_SHARDS = _teacher_shards()
TEACHER = [f"results/teacher/labels-{r}.npz" for r in TEACHER_SHARDS]


def calibration_input():
    """The calibration file scenarios are drawn from (none when scenario.calibration is null)."""
    return [CALIBRATION] if CALIBRATION else []


def policy_files():
    return [f"results/train/seed-{s}/politique.pt" for s in TRAIN_SEEDS]


def policy_file_args():
    """`--policy-file ppo-S=PATH ...` naming each trained policy explicitly."""
    return " ".join(f"--policy-file ppo-{s}={shlex.quote(p)}"
                    for s, p in zip(TRAIN_SEEDS, policy_files()))


# ---------------------------------------------------------------- per-step configs
#
# Each job reads its settings from its own config file, results/config/<step>.yaml,
# holding only the settings that step depends on (the commands fill in the
# schema's defaults for the rest). The rule writing it takes those settings as
# `params`, Snakemake's rerun trigger: the file is rewritten, and the steps
# reading it rerun, exactly when one of those settings changes. A training
# setting reruns training and what reads its policies, not calibration; a
# `report:` setting reruns the report (and the demo's Gantt chart for its
# resolution and window), nothing upstream.

# What a generated scenario depends on. scenario.calibration names the file;
# its contents reach the jobs as a declared input.
SCENARIO_SECTIONS = ("scenario", "rules", "seeds")
# The benchmark's counts are checked against each other and the seed ranges
# (sched.config.check_benchmark_counts), so a step that reads any benchmark
# setting gets all of them.
BENCHMARK_COUNTS = ("scenarios", "validation_scenarios", "shards", "clairvoyant.scenarios")
STATISTICS = ("bootstrap_resamples", "bootstrap_seed", "ci_level", "tie_relative", "tie_absolute_s")

STEP_SETTINGS = {
    "calibrate": {"calibration": None},
    # train.seeds is the job's --seed; train.threads its --threads (the rule's threads)
    "train": {**dict.fromkeys(SCENARIO_SECTIONS), "train": ("-seeds", "-threads")},
    # what `sched teach` reads, and what `sched train --teacher` checks the labels against
    "teach": {**dict.fromkeys(SCENARIO_SECTIONS),
              "train": ("teacher_scenarios", "teacher_samples", "teacher_horizon", "top_k",
                        "tasks", "atc_k")},
    "tune": {**dict.fromkeys(SCENARIO_SECTIONS), "benchmark": (*BENCHMARK_COUNTS, "atc_k_grid")},
    "benchmark": {**dict.fromkeys(SCENARIO_SECTIONS), "benchmark": BENCHMARK_COUNTS},
    "gather": {**dict.fromkeys(SCENARIO_SECTIONS), "benchmark": (*BENCHMARK_COUNTS, *STATISTICS)},
    "clairvoyant": {**dict.fromkeys(SCENARIO_SECTIONS),
                    "benchmark": (*BENCHMARK_COUNTS, "atc_k_grid", "clairvoyant")},
    "demo": {**dict.fromkeys(SCENARIO_SECTIONS), "benchmark": (*BENCHMARK_COUNTS, "demo_seed"),
             "report": ("figure_dpi", "gantt_hours")},
    "report": {**dict.fromkeys(SCENARIO_SECTIONS), "benchmark": None, "train": ("seeds",),
               "report": None, "robustness": None},
}


def _pick(section, keys):
    """The settings ``keys`` of a config section (dotted for nested ones; None: all of
    them; a leading '-' leaves a key out)."""
    if keys is None:
        return section
    if all(k.startswith("-") for k in keys):
        return {k: v for k, v in section.items() if f"-{k}" not in keys}
    out = {}
    for key in keys:
        head, _, rest = key.partition(".")
        if rest:
            out.setdefault(head, {})[rest] = section[head][rest]
        else:
            out[head] = section[head]
    return out


def step_settings(step):
    """The settings ``step`` depends on, taken from the validated config (defaults filled in)."""
    return {name: _pick(config[name], keys) for name, keys in STEP_SETTINGS[step].items()}


def step_config_text(step):
    """results/config/<step>.yaml; as the rule's params, it is the rerun trigger."""
    header = (f"# Written by the workflow from its config: the settings `sched {step}` depends\n"
              f"# on; the others take the defaults of workflow/schemas/config.schema.yaml.\n"
              f"# Rewritten, and the step rerun, when one of them changes.\n")
    # sorted keys: reordering config.yaml changes nothing
    return header + yaml.safe_dump(step_settings(step), sort_keys=True)


def step_config(step):
    return f"results/config/{step}.yaml"



# ---------------------------------------------------------------- robustness settings
#
# Each setting of `robustness.settings` reruns the benchmark (and, with `train`,
# the teacher and the training) with scenario.load / scenario.machines
# overridden, from its own per-step config files under
# results/robustness/<name>/config/: the same commands, the same contracts.
ROBUST = {s["name"]: s for s in config["robustness"]["settings"]}
ROBUST_DIR = "results/robustness"


def variant_settings(variant, step):
    """step_settings(step) under the setting ``variant``."""
    import copy

    v = ROBUST[variant]
    st = copy.deepcopy(step_settings(step))
    for key in ("load", "machines"):
        if key in v and "scenario" in st:
            st["scenario"][key] = v[key]
    if "train" in st and v.get("train"):
        # atc_k: tuned is passed on the command line, from the setting's tuned.json
        st["train"].update({k: val for k, val in v["train"].items()
                            if k != "atc_k" and (step == "train" or k in st["train"])})
    return st


def variant_config_text(variant, step):
    return (f"# Written by the workflow: the settings `sched {step}` depends on, under the\n"
            f"# robustness setting {variant!r} (see config.yaml, robustness.settings).\n"
            + yaml.safe_dump(variant_settings(variant, step), sort_keys=True))


def variant_config(variant, step):
    return f"{ROBUST_DIR}/{variant}/config/{step}.yaml"


def variant_retrains(variant):
    return bool(ROBUST[variant].get("train"))


def variant_teacher_shards(variant):
    n = variant_settings(variant, "teach")["train"]["teacher_scenarios"]
    if n <= 0:
        return []
    first = config["seeds"]["train"]["start"]
    shards = ROBUST[variant].get("train", {}).get("teacher_shards", config["train"]["teacher_shards"])
    k = max(1, min(shards, n))
    bounds = [first + (n * i) // k for i in range(k + 1)]
    return [f"{lo}-{hi - 1}" for lo, hi in zip(bounds, bounds[1:])]


def variant_policy_files(variant):
    if variant_retrains(variant):
        return [f"{ROBUST_DIR}/{variant}/train/seed-{s}/politique.pt" for s in TRAIN_SEEDS]
    return policy_files()


def variant_policy_file_args(variant):
    return " ".join(f"--policy-file ppo-{s}={shlex.quote(p)}"
                    for s, p in zip(TRAIN_SEEDS, variant_policy_files(variant)))


def variant_atc_k_arg(variant, tuned_path):
    """`--atc-k K` when the setting trains from its own tuned k (train.atc_k: tuned)."""
    wanted = (ROBUST[variant].get("train") or {}).get("atc_k")
    if wanted is None:
        return ""
    if wanted == "tuned":
        import json

        with open(tuned_path) as fh:
            wanted = json.load(fh)["atc_k"]
    return f"--atc-k {float(wanted)!r}"
