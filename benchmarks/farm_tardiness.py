"""How much tardiness the rules leave on a few GPU farms: why `mixed-4` (docs/benchmark-and-report.md).

    python benchmarks/farm_tardiness.py [--scenarios 16] [--calibration results/calibration.json]
        [--config config.yaml] [--skip N] [--split test --confirm]

Mean total weighted tardiness per scenario (k w·s) of FIFO, EDD, WMDD and ATC
at k 0.5, 1 and 2, for each farm below (a count or a machines spec), at load
0.95, with the schema's workload and deadlines (those of the shipped config)
and the given calibration. The script that chooses a farm setting, so by
default it reads no test seed (:func:`pick_seeds`, with the seed ranges of
``--config``): ``--split validation`` (the default) takes ``--scenarios`` seeds
of seeds.validation from :func:`free_validation_offset` + ``--skip`` on, after
every validation seed the workflow uses (ATC's k tuning, checkpoint selection,
the winner's selection); ``--split test --confirm`` takes the first test seeds
from ``--skip`` on (those of docs/benchmark-and-report.md's past table), with a
warning: a test seed used to choose a setting can no longer confirm it.
"""

import sys

import numpy as np

from sched.cli import add_chooser_options, chooser_seeds_or_exit
from sched.config import load_config, validate_config
from sched.data.scenario import generate, scenario_model
from sched.evaluate.per_scenario import schedule_metrics
from sched.evaluate.seeds import free_validation_offset, range_text  # noqa: F401  (free_validation_offset: the tests)
from sched.sim.core import simulate_batch

SCRIPT = "farm_tardiness.py"
#: (machines, tasks): 400 tasks per GPU, as the main setting's 400 on one.
FARMS = ((1, 400), (4, 1600), ("1x1.25,1x1.0,2x0.6", 1600), ("1x1.0,3x0.6", 1600))
RULES = (("fifo", None), ("edd", None), ("wmdd", None), ("atc", 0.5), ("atc", 1.0), ("atc", 2.0))


def pick_seeds(cfg, split, count, skip=0, confirm=False):
    """The seeds this script runs on (``sched.cli.chooser_seeds_or_exit``)."""
    return chooser_seeds_or_exit(cfg, split, count, skip, confirm, SCRIPT)


def parser():
    """The command line (``main`` parses it)."""
    from sched.cli import ScriptParser, float_in, int_in

    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int_in(1), default=16)
    ap.add_argument("--calibration", default="results/calibration.json")
    ap.add_argument("--load", type=float_in(0, above=True), default=0.95)
    ap.add_argument("--config", default="config.yaml", help="whose seed ranges and validation uses count")
    add_chooser_options(ap)
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    seeds = pick_seeds(
        load_config(a.config), a.split, a.scenarios, a.skip, a.confirm
    )  # refused: one line (run_script)
    cfg = validate_config({"scenario": {"calibration": a.calibration}})
    model = scenario_model(cfg)
    print(f"{a.split} seeds {range_text(seeds)}")
    print("| setting | " + " | ".join(r if k is None else f"{r} k {k:g}" for r, k in RULES) + " |")
    print("|---" * (len(RULES) + 1) + "|")
    for machines, tasks in FARMS:
        arrays = [generate(model, s, tasks=tasks, load=a.load, machines=machines).arrays for s in seeds]
        cells = []
        for rule, k in RULES:
            kw = {} if k is None else {"k": k}
            res = simulate_batch(arrays, rule, machines=machines, **kw)
            twt = [
                schedule_metrics(x, s, e)["total_weighted_tardiness_s"] for x, (s, e, _) in zip(arrays, res)
            ]
            cells.append(f"{np.mean(twt) / 1000:.1f}")
        print(f"| {machines} GPUs, {tasks} tasks | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/farm_tardiness.py"))
