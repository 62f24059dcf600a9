# Shared definitions: the workflow's plan bound to the rules. What each job reads, runs and
# writes (per-step settings, policy lists, seeds, file lists, the robustness and farm settings)
# comes from the package, sched/pipeline/, which tests import without Snakemake
# (tests/test_pipeline_plan.py); this file keeps only what Snakemake alone knows: the
# interpreter of the jobs, the cores a job reserves, the studio's checkpoint and the manifest's
# inputs. Every path comes from sched.layout (sched/layout.py), which the package uses too.
import os
import re
import shlex
import sys

from snakemake.exceptions import WorkflowError

from sched import layout
from sched.errors import SchedError
from sched.verdict.candidacy import PLAN_RUN, PLAN_TIMES
from sched.pipeline import candidacy, steps, studio
from sched.pipeline import wildcards as wc
from sched.pipeline.plan import (FARM_BENCH_LEARNED_FILES, FARM_FILES, FARM_LEARNED_FILES, FARM_SHIP_FILES,
                                 FARM_TRAIN_FILES, Plan)
from sched.threads import usable_cpus

# Jobs run `python -m sched`: the interpreter running Snakemake (the project's
# virtual environment, where the package is installed) comes first on their
# PATH, whether or not the environment is activated.
# (A prefix replaces Snakemake's default one, bash's strict mode: kept.)
shell.prefix(f"set -euo pipefail; export PATH={shlex.quote(os.path.dirname(sys.executable))}:\"$PATH\"; ")

try:
    PLAN = Plan(config, CFG)   # sched/pipeline/plan.py
except SchedError as exc:
    raise WorkflowError(str(exc)) from None
WC = wc.ByWildcards(PLAN)   # the rules' wildcard functions (sched/pipeline/wildcards.py)

TRAIN_SEEDS = PLAN.train_seeds   # one policy per training seed (train.seeds)
SHARDS = PLAN.shards   # the benchmark's shards of test seeds, `A-B`
TEST_SEEDS = PLAN.test_seeds   # the whole test set, as `--seeds` takes it
PLAN_SETTINGS = PLAN.plan_settings   # plan's candidacy: the settings of plan.grid the profile runs
PLAN_ELSEWHERE = PLAN.plan_elsewhere   # ... and those it tries under the settings (plan.elsewhere)
CALIBRATION = PLAN.calibration_files()   # [] when scenario.calibration is null
HISTORY = PLAN.history   # the queue history: [] turns calibrate-workload, replay and the studio off
# The robustness settings by name (config robustness.settings, with the studio's when the config
# names a history: sched/pipeline/studio.py), and the chunked farm settings (config farm.settings)
ROBUST = PLAN.robust
FARM = PLAN.farm
FARM_LEARNED = PLAN.farm_learned()   # the farm settings with a learned policy (profile full)
STUDIO = studio.NAME


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


def studio_built():
    """Whether the studio setting is built: the config names a history and its fit held days out
    (results/workload.json's split.held_out; a history shorter than 14 days holds none, and
    `sched calibrate-workload` says so). Known once the calibrate_workload checkpoint has run."""
    if STUDIO not in ROBUST:
        return False
    from sched.data.workload.workload import held_out_days, load_workload

    return held_out_days(load_workload(checkpoints.calibrate_workload.get().output.json)) is not None


def robust_summaries(wildcards=None):
    """resume.csv (the summary) of every robustness setting (the studio's when it is built)."""
    return PLAN.robust_summaries(STUDIO in ROBUST and studio_built())


def robust_report_inputs(wildcards=None):
    """What the report reads of every robustness setting (the studio's when it is built)."""
    return PLAN.robust_report_inputs(STUDIO in ROBUST and studio_built())


def studio_report_inputs(wildcards):
    """What the report reads of the studio setting; none when the studio is not built."""
    return PLAN.studio_report_inputs() if studio_built() else []


def manifest_inputs(wildcards=None):
    """Every result the workflow builds but the report's own: the manifest waits for all of them
    (an input function: the studio's files are known once its checkpoint has run)."""
    out = [*rules.calibrate.output, *expand(rules.train.output, seed=TRAIN_SEEDS),
           *expand(rules.benchmark.output, seeds=SHARDS), *rules.select.output, *rules.gather.output,
           *expand(rules.plan_candidacy.output, setting=PLAN_SETTINGS), *rules.benchmark_plan.output,
           *rules.clairvoyant.output, *rules.demo.output,
           *robust_summaries(), *PLAN.replay_outputs(), *([layout.WORKLOAD] if HISTORY else [])]
    built = STUDIO in ROBUST and studio_built()
    if built:
        out += PLAN.studio_report_inputs()
    for name in ROBUST:   # plan's runs under the settings (config plan.elsewhere)
        if name != STUDIO or built:
            out += candidacy.inputs_under(PLAN, name)
    out += PLAN.frames_outputs()   # the frames fits (issue 59: workflow/rules/calibrate.smk, workload.smk)
    return out + PLAN.farm_outputs()   # the chunked farm settings (their rules: workflow/rules/farm.smk)
