"""How the dispatching rules compare on generated scenarios (the config's scenario model).

    python benchmarks/rule_mix.py [--config config.yaml] [--seeds 0-199] [--confirm]

The default seeds 0-199 lie outside the training, validation and test ranges of
the shipped config (the figures of docs/model.md); a range that reaches into
seeds.test is refused without ``--confirm`` (:func:`pick_seeds`): the script
chooses the scenario model's deadlines, and a test seed used to choose a
setting can no longer confirm it.

Prints each rule's mean total weighted tardiness relative to the best rule,
how many scenarios each rule wins, and the mean of the per-scenario best rule
relative to the best single rule (room left for a state-aware policy).
"""

import sys

import numpy as np

from sched.config import load_config, seed_range
from sched.data.objective import weighted_tardiness
from sched.data.scenario import generate, scenario_model
from sched.evaluate.seeds import overlap, parse_seed_range, range_text
from sched.sim import core, rules

SCRIPT = "rule_mix.py"


def pick_seeds(cfg, text, confirm=False):
    """The seeds of ``--seeds`` (``A-B`` or ``N``). A range that reaches into seeds.test exits 2
    with a one-line message without ``confirm``; with it, a one-line warning goes to stderr."""
    seeds = parse_seed_range(text)
    test = seed_range(cfg, "test")
    if overlap(seeds, test):
        if not confirm:
            print(
                f"{SCRIPT}: --seeds {range_text(seeds)} reaches into seeds.test ({range_text(test)}) and "
                f"needs --confirm: a test seed used to choose a setting can no longer confirm it",
                file=sys.stderr,
            )
            raise SystemExit(2)
        print(
            f"{SCRIPT}: warning: --seeds {range_text(seeds)} includes test seeds: a test seed used to "
            f"choose something can no longer confirm it",
            file=sys.stderr,
        )
    return seeds


def parser():
    """The command line (``main`` parses it)."""
    from sched.cli import ScriptParser

    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config")
    ap.add_argument("--seeds", default="0-199", help="A-B (inclusive); default outside every split")
    ap.add_argument("--confirm", action="store_true", help="run even if --seeds includes test seeds")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    cfg = load_config(a.config)
    seeds = pick_seeds(cfg, a.seeds, a.confirm)  # refused: one line (run_script)
    model = scenario_model(cfg)
    scs = [generate(model, s) for s in seeds]
    arrays = [s.arrays for s in scs]
    twt = {}
    for r in rules.RULES:
        out = core.simulate_batch(arrays, r, machines=cfg["scenario"]["machines"], k=cfg["rules"]["atc_k"])
        twt[r] = np.array([weighted_tardiness(e, d, w) for (_, e, _), (_, _, _, w, d) in zip(out, arrays)])
    table = np.array([twt[r] for r in rules.RULES])
    best = table.mean(1).min()
    wins = np.bincount(table.argmin(0), minlength=len(rules.RULES))
    print(f"{len(scs)} scenarios, load {cfg['scenario']['load']}, machines {cfg['scenario']['machines']}")
    print(f"{'rule':6} {'mean TWT':>12} {'/ best':>7} {'wins':>5}")
    for i, r in enumerate(rules.RULES):
        print(f"{r:6} {table[i].mean():12.0f} {table[i].mean() / best:7.3f} {wins[i]:5d}")
    print(f"best rule per scenario: {table.min(0).mean() / best:.3f} of the best single rule")


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/rule_mix.py"))
