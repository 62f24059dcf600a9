"""The plan of a run: its policies, seeds, robustness and farm settings, and the files of each job.

:class:`Plan` is built from the validated config (the dict Snakemake validated, the schema's
defaults filled in) and the package's frozen config of it. A method taking ``setting`` serves
the main run (None) and each robustness setting (its name) alike. The workflow
(workflow/rules/common.smk) binds these to its rules; tests call them directly.
"""

import copy
import os
import re
import shlex

from sched import files, layout
from sched.config import validate_config
from sched.errors import SchedError, shorten
from sched.evaluate.policies import HEURISTICS, default_policies, policy_key, round_name, warm_name
from sched.evaluate.seeds import (
    benchmark_seeds,
    plan_validation_seeds,
    range_text,
    selection_seeds,
    shard_ranges,
)
from sched.formats import json_input
from sched.learn.search.planner import elsewhere_names, grid_names
from sched.pipeline import steps, studio
from sched.report.training import trains_ppo_alone
from sched.verdict.candidacy import PLAN_RUN

STUDIO = studio.NAME
#: The files of one chunked farm setting's benchmark (`sched farm-bench`).
FARM_FILES = (layout.TUNED, layout.FARM_SELECTION, layout.PER_SCENARIO, layout.FARM_TABLE,
              layout.FARM_VERDICT, layout.FARM_CLAIRVOYANT, layout.FARM_PLAN)  # fmt: skip
#: The files of a farm setting's learned policy (`sched farm-train`, then `sched farm-learned`).
FARM_TRAIN_FILES = (layout.FARM_POLICY, layout.FARM_CURVE)
FARM_LEARNED_FILES = (layout.FARM_LEARNED, layout.FARM_LEARNED_TABLE, layout.FARM_LEARNED_SCENARIOS)
#: ... of such a setting's benchmark: its verdict is the rules' (FARM_RULES_VERDICT), and
#: `sched farm-learned` writes farm_verdict.json (the learned policy's when it ships), rank()'s.
FARM_BENCH_LEARNED_FILES = tuple(
    layout.FARM_RULES_VERDICT if f == layout.FARM_VERDICT else f for f in FARM_FILES
)
FARM_SHIP_FILES = FARM_LEARNED_FILES + (layout.FARM_VERDICT,)


class PlanError(SchedError):
    """The config asks for a run the workflow cannot build."""


def active(entries, profile):
    """{name: entry} of the settings ``entries`` the profile builds (`profile: full`: the longer run's)."""
    return {s["name"]: s for s in entries if profile == "full" or s.get("profile", "default") == "default"}


def stage_policy(seed, r):
    """Training seed ``seed``'s policy after round ``r`` (0: the warm start)."""
    return layout.warm_policy_file(seed) if int(r) == 0 else layout.round_policy_file(seed, int(r))


def round_label_files(seed, r):
    """The label files of rounds 1..r of training seed ``seed`` (aggregated, as in DAgger)."""
    return [layout.round_labels(seed, i) for i in range(1, int(r) + 1)]


def candidacy_files(dirs):
    """What a verdict reads of each validation run in ``dirs``: its per-scenario table and plan.json."""
    return [f"{d}/{name}" for d in dirs for name in (layout.PER_SCENARIO, PLAN_RUN)]


class Plan:
    """What the workflow builds under ``config`` (a dict) and ``cfg`` (its frozen config)."""

    def __init__(self, config, cfg):
        steps.check_train_listed(config)
        self.config, self.cfg = config, cfg
        self.profile = config.get("profile", "default")
        self.train_seeds = [int(s) for s in config["train"]["seeds"]]
        self.policies = default_policies(cfg)  # the heuristics, then ppo-<S> per training seed (the demo's)
        self.shards = [range_text(r) for r in shard_ranges(cfg)]
        self.test_seeds = range_text(benchmark_seeds(cfg))  # the whole test set, as `--seeds` takes it
        # the validation seeds the winner is chosen on (benchmark.selection_scenarios from selection_offset)
        self.selection_seeds = range_text(selection_seeds(cfg))
        # plan's candidacy (sched.verdict.candidacy.plan_gate): the settings of plan.grid the profile runs,
        # each on the first plan.validation_scenarios selection seeds (those that chose its base)
        self.plan_settings = grid_names(cfg, self.profile)
        if not self.plan_settings:
            raise PlanError(f"config: plan.grid: no setting runs in the {self.profile} profile; one must")
        self.plan_seeds = range_text(plan_validation_seeds(cfg))
        # plan's candidacy under the robustness settings and the studio (config plan.elsewhere): the
        # settings of plan.grid any of them tries; none when the profile does not build it
        self.plan_elsewhere = elsewhere_names(cfg, self.profile)
        self.calibration = config["scenario"]["calibration"]  # None: scenarios use scenario.kinds
        self.workload_file = config["scenario"]["workload"]  # None: constant-rate arrivals
        self.history = config["workload"]["history"]  # []: calibrate-workload and replay off
        # The robustness settings by name: each reruns the benchmark (and, with `train`, the
        # teacher and the training) with scenario settings overridden, from its own config files
        # under results/robustness/<name>/config/; the studio's when the config names a history.
        self.robust = active(config["robustness"]["settings"], self.profile)
        if self.history:
            if STUDIO in self.robust:
                raise PlanError(f"config robustness.settings: the name {STUDIO!r} is the studio setting's")
            self.robust[STUDIO] = studio.setting(config)
        self.farm = active((config.get("farm") or {}).get("settings", []), self.profile)

    # ------------------------------------------------------------ inputs and training

    @staticmethod
    def results_root(setting=None):
        """The folder holding the outputs of the main run (None) or of a robustness setting."""
        return layout.RESULTS if setting is None else layout.robust_root(setting)

    def calibration_files(self):
        """The calibration (none when scenario.calibration is null)."""
        return [self.calibration] if self.calibration else []

    def calibration_input(self, setting=None):
        """The files scenarios are drawn from: the calibration and the workload file (the
        setting's, else scenario.workload's; the studio's is always the fit)."""
        workload = self.robust[setting].get("workload") if setting in self.robust else None
        workload = workload or self.workload_file
        return self.calibration_files() + ([workload] if workload else [])

    def replay_outputs(self):
        """`sched replay`'s files (the report's "Replayed history"), when the config names a history."""
        names = (layout.PER_SCENARIO, layout.SUMMARY, layout.WINNER, layout.REPLAY_WINDOWS)
        return [f"{layout.REPLAY_DIR}/{name}" for name in names] if self.history else []

    def retrains(self, setting):
        """Whether a robustness setting trains its own policies (it has `train` overrides)."""
        return setting is not None and bool(self.robust[setting].get("train"))

    def has_teacher(self, setting=None):
        """Whether the training of the main run (None) or of a setting that retrains has the
        teacher's warm start (train.teacher_scenarios > 0, the setting's over the main)."""
        if setting is not None and not self.retrains(setting):
            return False
        return self.step_settings("train", setting)["train"]["teacher_scenarios"] > 0

    def train_rounds(self, setting=None):
        """The rounds of expert iteration of the main run (train.rounds when it has a teacher; the
        robustness settings have none: their warm start runs inside `sched train --teacher`)."""
        return int(self.config["train"].get("rounds", 0)) if setting is None and self.has_teacher() else 0

    def train_init(self, seed):
        """The policy training seed ``seed`` starts from: its last round (none without a teacher)."""
        return [stage_policy(seed, self.train_rounds())] if self.has_teacher() else []

    def teach_settings(self, teacher):
        """The robustness settings that retrain with (``teacher``) or without a teacher: a
        regular expression for the `setting` wildcard (one that matches nothing when none)."""
        names = [n for n in self.robust if self.retrains(n) and self.has_teacher(n) == teacher]
        return "|".join(re.escape(n) for n in names) or "(?!)"

    def teacher_shards(self, setting=None):
        """The `A-B` seed ranges of the teacher jobs: the first train.teacher_scenarios
        training seeds in train.teacher_shards parts (none without a warm start)."""
        train = self.step_settings("train", setting)["train"]
        n = train["teacher_scenarios"]
        if n <= 0:
            return []
        first = self.config["seeds"]["train"]["start"]
        k = max(1, min(train["teacher_shards"], n))
        bounds = [first + (n * i) // k for i in range(k + 1)]
        return [f"{lo}-{hi - 1}" for lo, hi in zip(bounds, bounds[1:])]

    def teacher_files(self, setting=None):
        """The rollout teacher's label files (the warm start), one per teacher job; labels do not
        depend on the sharding (they are keyed on the scenario's seed)."""
        return [layout.teacher_labels(r, self.results_root(setting)) for r in self.teacher_shards(setting)]

    def atc_k_arg(self, setting, tuned_path):
        """`--atc-k K` when a robustness setting trains from a k of its own (its train.atc_k;
        `tuned`: the k tuned for it, read from ``tuned_path``); empty otherwise."""
        wanted = (self.robust[setting].get("train") or {}).get("atc_k")
        if wanted is None:
            return ""
        if wanted == "tuned":
            # not built yet (a dry run): the OS's FileNotFoundError naming the file, on which
            # Snakemake postpones a params function of its inputs (snakemake.exceptions)
            os.stat(tuned_path)
            tuned = json_input.parse(files.read_text(tuned_path, PlanError), tuned_path, PlanError)
            wanted = tuned.get("atc_k") if isinstance(tuned, dict) else None
            if isinstance(wanted, bool) or not isinstance(wanted, int | float) or not wanted > 0:
                raise PlanError(f"{tuned_path}: atc_k: expected a number > 0, got {shorten(repr(wanted))}")
        return f"--atc-k {float(wanted)!r}"

    # ------------------------------------------------------------ policies

    def learned_policies(self, setting=None, warm=True):
        """[(name, policy file)]: ppo-<S> per training seed (the setting's own when it retrains,
        else the main ones), each followed, with ``warm``, by its warm start ppo-<S>-warm when the
        training that made it had a teacher, by its rounds ppo-<S>-r<R> (the main run's), and,
        under the studio, by the main setting's policy as main-ppo-<S>."""
        root = self.results_root(setting) if self.retrains(setting) else layout.RESULTS
        out = []
        for s in self.train_seeds:
            out.append((f"ppo-{s}", layout.policy_file(s, root)))
            if warm and self.has_teacher(setting):
                out.append((warm_name(s), layout.warm_policy_file(s, root)))
            if warm and setting is None:  # the main run's stages
                rounds = range(1, self.train_rounds() + 1)
                out.extend((round_name(s, r), layout.round_policy_file(s, r)) for r in rounds)
            if warm and setting == STUDIO:  # the main setting's policies, on the studio's queue
                out.append((f"main-ppo-{s}", layout.policy_file(s)))
        return out

    def policy_files(self, setting=None, warm=True):
        """The policy files of learned_policies (the inputs of the jobs that run them)."""
        return [path for _, path in self.learned_policies(setting, warm)]

    def policy_file_args(self, setting=None, warm=True):
        """`--policy-file NAME=PATH ...` naming each learned policy explicitly."""
        pairs = self.learned_policies(setting, warm)
        return " ".join(f"--policy-file {name}={shlex.quote(path)}" for name, path in pairs)

    def wait_rules(self, setting=None):
        """The delayed rules a setting runs as candidates (issue 60): the main run's
        benchmark.waiting.rules; a robustness setting's own wait_rules (absent: none)."""
        if setting is None:
            return list((self.config["benchmark"].get("waiting") or {}).get("rules") or [])
        return list(self.robust[setting].get("wait_rules") or [])

    def bench_policies(self, setting=None):
        """The benchmark's `--policies`: every heuristic (the setting's delayed rules too) and
        every learned policy, in table order."""
        learned = (name for name, _ in self.learned_policies(setting))
        names = [*HEURISTICS, *self.wait_rules(setting), *learned]
        return ",".join(sorted(names, key=policy_key))

    def select_policies(self, setting=None):
        """The selection run's `--policies`: those that may win winner.json, every heuristic (the
        setting's delayed rules too) and ppo-<S> per training seed (no warm start: benchmarked,
        they do not compete)."""
        learned = (name for name, _ in self.learned_policies(setting, warm=False))
        names = [*HEURISTICS, *self.wait_rules(setting), *learned]
        return ",".join(sorted(names, key=policy_key))

    def planners(self, setting=None):
        """benchmark_plan's `--policies`: plan, and the gated teacher run as a policy (teacher) in
        the longer run when training has one."""
        return "plan" + (",teacher" if self.profile == "full" and self.has_teacher(setting) else "")

    # ------------------------------------------------------------ step configs

    def step_settings(self, step, setting=None):
        """The settings ``step`` depends on, taken from the validated config (defaults filled
        in), under the robustness setting named ``setting`` (None: the main run)."""
        chosen = steps.settings_of(self.config, steps.step_keys(self.config, step))
        if setting is None:
            return chosen
        overrides = self.robust[setting]
        chosen = copy.deepcopy(chosen)
        for key in steps.SETTING_SCENARIO_KEYS:
            if key in overrides and "scenario" in chosen:
                chosen["scenario"][key] = overrides[key]
        if setting == STUDIO and "selection_scenarios" in chosen.get("benchmark", {}):
            chosen["benchmark"]["selection_scenarios"] = studio.selection_scenarios(self.config)
        if "waiting" in chosen.get("benchmark", {}):  # the delayed rules: the setting's own wait_rules only
            if overrides.get("wait_rules"):
                chosen["benchmark"]["waiting"]["rules"] = list(overrides["wait_rules"])
            else:
                del chosen["benchmark"]["waiting"]
        if "train" in chosen and overrides.get("train"):
            # atc_k: the setting's own k is passed on the command line (atc_k_arg), as
            # `tuned` is only known once its tuned.json is written
            own = {k: v for k, v in overrides["train"].items() if k != "atc_k"}
            chosen["train"].update({k: v for k, v in own.items() if step == "train" or k in chosen["train"]})
            if step == "train" and own.get("wait") and "waiting" in self.config["benchmark"]:
                chosen["benchmark"] = steps.select(self.config["benchmark"], steps.WAIT_BOUND)  # its bound
        return chosen

    def step_config(self, step, setting=None):
        """The path of ``step``'s config file (``setting`` may be the wildcard "{setting}")."""
        return layout.step_config(step, self.results_root(setting))

    def step_config_text(self, step, setting=None):
        """The config file of ``step`` (of the main run, or under a robustness setting); as the
        params of the rule writing it, it is the rerun trigger."""
        header = steps.main_header(step) if setting is None else steps.setting_header(step, setting)
        return steps.config_text(header, self.step_config(step, setting), self.step_settings(step, setting))

    def frozen(self, step, setting=None):
        """The package's frozen config of ``step``'s settings under ``setting``."""
        return validate_config(copy.deepcopy(self.step_settings(step, setting)), "config")

    def setting_selection_seeds(self, setting=None):
        """The `--seeds` of a setting's selection run (the studio's: studio.selection_scenarios)."""
        return range_text(selection_seeds(self.frozen("select", setting)))

    # ------------------------------------------------------------ the robustness settings

    def ppo_alone_logs(self, wildcards=None):
        """The training logs of the robustness settings that train PPO alone on the main queue
        (sched.report.training.trains_ppo_alone): the report's chain curves."""
        scenario = self.config["scenario"]
        return [layout.train_log(s, layout.robust_root(name)) for name, st in self.robust.items()
                if name != STUDIO and trains_ppo_alone(st, scenario) for s in self.train_seeds]  # fmt: skip

    def robust_summaries(self, studio_built):
        """resume.csv of every robustness setting (the studio's when ``studio_built``)."""
        names = [name for name in self.robust if name != STUDIO or studio_built]
        return [f"{layout.robust_root(name)}/{layout.SUMMARY}" for name in names]

    def robust_report_inputs(self, studio_built):
        """What the report reads of every robustness setting (the studio's when ``studio_built``):
        its summary, verdict, per-scenario table and tuned k (the report's shadow job needs them)."""
        names = [name for name in self.robust if name != STUDIO or studio_built]
        kept = (layout.SUMMARY, layout.WINNER, layout.PER_SCENARIO, layout.TUNED)
        return [f"{layout.robust_root(name)}/{f}" for name in names for f in kept]

    def other_settings(self):
        """The robustness settings but the studio: a regular expression for the wildcard."""
        return "|".join(n for n in self.robust if n != STUDIO) or "^$"

    def studio_report_inputs(self):
        """What the report reads of the built studio setting: its replays, fidelity check and
        winner.json (the summary comes with robust_summaries)."""
        return (studio.held_out_files() + studio.validation_day_files() + studio.fidelity_files()
                + [studio.winner_file()])  # fmt: skip

    def farm_outputs(self, name=None):
        """Every chunked farm setting's files, its learned policy's included (or one's benchmark)."""
        names = [name] if name is not None else list(self.farm)
        trained = self.farm_learned()
        out = [f"{layout.farm_root(n)}/{f}" for n in names
               for f in (FARM_BENCH_LEARNED_FILES if n in trained else FARM_FILES)]  # fmt: skip
        if name is None:
            learned = FARM_TRAIN_FILES + FARM_SHIP_FILES
            out += [f"{layout.farm_root(n)}/{f}" for n in trained for f in learned]
            out += [f for n in self.farm_taught() for f in self.farm_teach_files(n)]
        return out

    def farm_learned(self):
        """The farm settings whose learned policy the run trains and judges (a `train` block; full)."""
        return [n for n, s in self.farm.items() if s.get("train")] if self.profile == "full" else []

    def farm_taught(self):
        """The learned farm settings whose PPO starts from the gated teacher's warm start
        (`train: {teacher: true}`): `sched farm-teach` runs first, on farm-train's config file."""
        return [n for n in self.farm_learned() if self.farm[n]["train"].get("teacher")]

    def farm_untaught(self):
        """The learned farm settings whose PPO starts from the ATC prior (no teacher)."""
        return [n for n in self.farm_learned() if n not in self.farm_taught()]

    def farm_teach_files(self, name):
        """`sched farm-teach`'s files under a farm setting (none without a teacher): farm-train's start."""
        d = f"{layout.farm_root(name)}/{layout.FARM_TEACH}"
        return [f"{d}/{f}" for f in (layout.FARM_POLICY, layout.FARM_TEACHER_LABELS)
                if name in self.farm_taught()]  # fmt: skip

    def farm_train_config_text(self, name):
        """The config file of `sched farm-train` (and `sched farm-teach`) under a farm setting: its
        benchmark's settings with the setting's `train` block over them, as written (the
        benchmark's own config file has none; `teacher` is the workflow's)."""
        chosen = self.farm_settings(name)
        own = {k: v for k, v in copy.deepcopy(self.farm[name]["train"]).items() if k != "teacher"}
        chosen["train"] = {**chosen.get("train", {}), **own}
        path = layout.step_config("farm_train", layout.farm_root(name))
        return steps.config_text(steps.farm_header(name, "farm-train"), path, chosen)

    def farm_plan_arg(self):
        """`sched farm-bench`'s `--plan` (plan's candidacy on the chunked farm): the longer run's."""
        return "--plan" if self.profile == "full" else ""

    def farm_bench_threads(self):
        """farm-bench's threads: two with `--plan` (its scenarios side by side: 16 CPU-min on farm-32)."""
        return 2 if self.farm_plan_arg() else 1

    def farm_settings(self, name):
        """The settings `sched farm-bench` reads under the farm setting ``name``."""
        chosen = copy.deepcopy(steps.settings_of(self.config, steps.FARM_STEP))
        for key in steps.FARM_SCENARIO_KEYS:
            if key in self.farm[name]:
                chosen["scenario"][key] = copy.deepcopy(self.farm[name][key])
        return chosen

    def farm_config_text(self, name):
        """The config file of a farm setting's benchmark (its rerun trigger, as step_config_text's)."""
        path = layout.step_config("farm", layout.farm_root(name))
        return steps.config_text(steps.farm_header(name), path, self.farm_settings(name))

    def farm_inputs(self, name):
        """The files a farm setting's scenarios are drawn from: the calibration, its workload file
        and its frames fit (``chunks.frames: {fit: FILE}``)."""
        workload = self.farm[name].get("workload") or self.workload_file
        fit = ((self.farm[name].get("chunks") or {}).get("frames") or {}).get("fit")
        return self.calibration_files() + ([workload] if workload else []) + ([fit] if fit else [])

    def frames_outputs(self):
        """The frames fits (issue 59, point 6): the bench logs' (with bench logs), the history's
        (with a history), the trace-like history's and its file (when a setting draws from the
        trace's fit)."""
        settings = [*self.robust.values(), *self.farm.values()]
        trace = any(s.get("workload") == layout.TRACE_WORKLOAD for s in settings)
        return [
            *([layout.FRAMES_FIT] if self.config["calibration"]["bench"] else []),
            *([layout.WORKLOAD_FRAMES_FIT] if self.history else []),
            *([layout.TRACE_FRAMES_HISTORY, layout.TRACE_FRAMES_FIT] if trace else []),
        ]
