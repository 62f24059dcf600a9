# Render-queue scheduler: calibrate -> train -> benchmark -> report.
#
#   snakemake -j4                       everything (the default target, rule all)
#   snakemake -j4 results/rapport.md    only what the report needs
#   snakemake --report results/report.html
#
# Every job is a `sched` command (see the log of each job under results/logs/
# for its output), reading its own config file results/config/<step>.yaml: see
# sched/pipeline/ (bound in workflow/rules/common.smk) and docs/workflow.md.
# Each rule's docstring names the command module and the library function it
# runs (`snakemake --list-rules` lists them); every path is from sched/layout.py.
import copy

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

min_version("8.0")


configfile: "config.yaml"


# The schema fills in the defaults; the package adds the checks a schema cannot
# express (disjoint seed ranges, shares summing to one, ...). An invalid config
# stops here, before any job runs.
validate(config, "workflow/schemas/config.schema.yaml")

try:
    from sched.config import ConfigError, validate_config
except ImportError as exc:   # e.g. the standard library's `sched`, not this project's
    raise WorkflowError(f"cannot import the project's package `sched` ({exc}): run the "
                        f"Snakemake of the environment it is installed in (.venv/bin/snakemake, "
                        f"after `.venv/bin/pip install -e '.[dev]'`)") from None

# The jobs read the paths of their config files (results/config/<step>.yaml)
# from the project root, the working directory of Snakemake, where config.yaml is:
# its relative paths mean the same here and in the commands (schema: root).
if config.get("root", ".") != ".":
    raise WorkflowError(f"config.yaml: root: must be '.' for the workflow (the project root), got {config['root']!r}")

try:
    # the package's frozen config (sched.config.Config): what the library functions called
    # here and in workflow/rules/common.smk read
    CFG = validate_config(copy.deepcopy(config), "config")
    # the seeds of each use: the winner's selection after tuning and checkpointing, plan's candidacy
    from sched.learn.search.planner import grid_names as plan_settings
    from sched.evaluate.seeds import check_seed_uses

    check_seed_uses(CFG)
    plan_settings(CFG)   # plan.grid: one name a setting
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}") from None


report: "workflow/report/workflow.rst"


wildcard_constraints:
    seed=r"\d+",
    seeds=r"\d+(-\d+)?",


include: "workflow/rules/common.smk"
include: "workflow/rules/config.smk"
include: "workflow/rules/calibrate.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/studio.smk"
include: "workflow/rules/farm.smk"
include: "workflow/rules/workload.smk"
include: "workflow/rules/manifest.smk"
include: "workflow/rules/report.smk"


rule all:
    """Everything: calibration, policies, benchmark, demonstration, report."""
    default_target: True
    input:
        rules.calibrate.output,
        expand(rules.train.output, seed=TRAIN_SEEDS),
        expand(rules.benchmark.output, seeds=SHARDS),
        rules.select.output,
        rules.gather.output,
        rules.benchmark_plan.output,
        rules.clairvoyant.output,
        rules.demo.output,
        rules.manifest.output,
        rules.report.output,
        robust_summaries,
        PLAN.farm_outputs(),
        PLAN.frames_outputs(),
