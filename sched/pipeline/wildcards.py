"""The rules' input and params functions: named, and tested, where a rule once had a lambda.

Snakemake calls an input function with the job's ``wildcards``, and a params function with the
arguments it names (``wildcards``, ``input``, ``output``). The generic ones below read a job's
own files; :class:`ByWildcards` turns the wildcards (``setting``, ``step``, ``seed``, ``round``,
``farm``) into a :class:`sched.pipeline.plan.Plan`'s answers.
"""

import os
import shlex

from sched import layout
from sched.pipeline import candidacy
from sched.pipeline.plan import PLAN_RUN, STUDIO, round_label_files, stage_policy


def output_dir(wildcards, output):
    """The folder of the job's first output (its `--out`)."""
    return os.path.dirname(output[0])


def gantt_dir(wildcards, output):
    """The folder of the demo's Gantt chart (its `--figures`)."""
    return os.path.dirname(output.gantt)


def figures_dir(wildcards, output):
    """The folder of the report's figures (its `--figures`)."""
    return os.path.dirname(output.figures[0])


def bench_dir(wildcards, input):
    """The folder of the benchmark's files the report reads."""
    return os.path.dirname(input.bench[0])


def demo_dir(wildcards, input):
    """The folder of the demo's table."""
    return os.path.dirname(input.demo)


def train_dir(wildcards, input):
    """The training folder: above each seed's folder of training logs."""
    return os.path.dirname(os.path.dirname(input.train_logs[0]))


def candidacy_dirs(wildcards, input):
    """`--plan-candidacy`'s folders: those of the candidacy's plan.json files, quoted."""
    return " ".join(shlex.quote(os.path.dirname(p)) for p in input.candidacy)


def shard_seeds(wildcards):
    """A benchmark shard's `--seeds`: its wildcard."""
    return wildcards.seeds


def calibration_arg(wildcards, input):
    """`--calibration FILE` when the job has a calibration input, else ""."""
    return f"--calibration {shlex.quote(input.calibration[0])}" if input.calibration else ""


def init_arg(wildcards, input):
    """`--init FILE` when training starts from a policy, else ""."""
    return f"--init {shlex.quote(input.init[0])}" if input.init else ""


def teacher_arg(wildcards, input):
    """`--teacher FILE ...`: the setting's label files (the warm start inside the training job)."""
    return "--teacher " + " ".join(shlex.quote(p) for p in input.teacher)


class ByWildcards:
    """A plan's answers for the job a rule's wildcards name."""

    def __init__(self, plan):
        self.plan = plan

    # the main run's
    def step_config_text(self, wildcards):
        """The text of the config file of ``wildcards.step`` (under ``wildcards.setting`` if any)."""
        return self.plan.step_config_text(wildcards.step, getattr(wildcards, "setting", None))

    def round_start(self, wildcards):
        """The policy round R starts from: the seed's policy of round R - 1."""
        return stage_policy(wildcards.seed, int(wildcards.round) - 1)

    def round_labels(self, wildcards):
        """The labels of rounds 1..R of the seed, which round R distils."""
        return round_label_files(wildcards.seed, int(wildcards.round))

    def train_init(self, wildcards):
        """The policy training starts from (none without a teacher)."""
        return self.plan.train_init(wildcards.seed)

    # under a robustness setting
    def calibration(self, wildcards):
        """The files the setting's scenarios are drawn from."""
        return self.plan.calibration_input(wildcards.setting)

    def teacher_files(self, wildcards):
        """The setting's teacher label files."""
        return self.plan.teacher_files(wildcards.setting)

    def atc_k_arg(self, wildcards, input):
        """`--atc-k K` of the setting's own k, or ""."""
        return self.plan.atc_k_arg(wildcards.setting, input.tuned)

    def policy_files(self, wildcards):
        """Every learned policy the setting's benchmark runs."""
        return self.plan.policy_files(wildcards.setting)

    def final_policy_files(self, wildcards):
        """The setting's final policies (no warm start)."""
        return self.plan.policy_files(wildcards.setting, warm=False)

    def policy_file_args(self, wildcards):
        """`--policy-file` of every learned policy the setting's benchmark runs."""
        return self.plan.policy_file_args(wildcards.setting)

    def final_policy_file_args(self, wildcards):
        """`--policy-file` of the setting's final policies."""
        return self.plan.policy_file_args(wildcards.setting, warm=False)

    def bench_policies(self, wildcards):
        """The setting's benchmark's `--policies`."""
        return self.plan.bench_policies(wildcards.setting)

    def select_policies(self, wildcards):
        """The setting's selection run's `--policies`."""
        return self.plan.select_policies(wildcards.setting)

    def selection_seeds(self, wildcards):
        """The setting's selection run's `--seeds`."""
        return self.plan.setting_selection_seeds(wildcards.setting)

    def verdict_config(self, wildcards):
        """The config file the setting's benchmark reads (gather's, or verdict's with a candidacy)."""
        setting = wildcards.setting
        return self.plan.step_config(candidacy.verdict_step(self.plan, setting), setting)

    def plan_inputs(self, wildcards):
        """What the setting's benchmark reads of plan's candidacy."""
        return candidacy.inputs_under(self.plan, wildcards.setting)

    def selection_arg(self, wildcards, input):
        """The setting's benchmark's `--selection CSV` and its candidacy's options."""
        return f"--selection {input.selection} {candidacy.args_under(self.plan, wildcards.setting)}"

    def plan_seeds(self, wildcards):
        """The `--seeds` of plan's candidacy under the setting."""
        return candidacy.seeds_under(self.plan, wildcards.setting)

    def candidacy_runs(self, wildcards):
        """The plan.json of each of the setting's candidacy runs."""
        return [f"{d}/{PLAN_RUN}" for d in candidacy.dirs_under(self.plan, wildcards.setting)]

    def candidacy_tables(self, wildcards):
        """The per-scenario table of each of the setting's candidacy runs."""
        return [f"{d}/{layout.PER_SCENARIO}" for d in candidacy.dirs_under(self.plan, wildcards.setting)]

    def studio_selection_arg(self, wildcards, input):
        """The studio's benchmark's `--selection CSV`, its candidacy's options, and the replays and
        fidelity check its verdict is weighed and confirmed on."""
        plan = candidacy.args_under(self.plan, STUDIO)
        return (f"--selection {input.selection} {plan} --held-out {input.held_out}"
                f" --validation-days {input.validation_days} --fidelity {input.fidelity}")  # fmt: skip

    # under a chunked farm setting
    def farm_config_text(self, wildcards):
        """The text of the farm setting's config file."""
        return self.plan.farm_config_text(wildcards.farm)

    def farm_train_config_text(self, wildcards):
        """The text of `sched farm-train`'s config file under the farm setting."""
        return self.plan.farm_train_config_text(wildcards.farm)

    def farm_teach_files(self, wildcards):
        """`sched farm-teach`'s files under the farm setting (none without a teacher)."""
        return self.plan.farm_teach_files(wildcards.farm)

    def farm_init(self, wildcards):
        """The warm start `sched farm-train` starts from under the farm setting (none without a teacher)."""
        return self.plan.farm_teach_files(wildcards.farm)[:1]

    def farm_inputs(self, wildcards):
        """The files the farm setting's scenarios are drawn from."""
        return self.plan.farm_inputs(wildcards.farm)
