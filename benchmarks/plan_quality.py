"""plan against its base policy on validation scenarios no other step uses: paired difference and compute
per decision. The script that chooses plan's settings (config ``plan``), so by default it reads no test seed.

    NUMBA_NUM_THREADS=1 python benchmarks/plan_quality.py --base ppo-1=results/train/seed-1/politique.pt \
        --scenarios 30 --candidates 4 --samples 16 --horizon 50 --z 2 [--depth D] [--skip N] \
        [--split test --confirm]

``--base``: ``atc-tuned`` (k from results/benchmark/tuned.json), a rule name (k = ``--atc-k``
or rules.atc_k), or ``NAME=POLICY_FILE``. The other settings default to config ``plan``.
Seeds (:func:`pick_seeds`): ``--split validation`` (the default) takes ``--scenarios`` seeds of
seeds.validation from :func:`free_validation_offset` + ``--skip`` on, after every validation seed
the workflow uses (ATC's k tuning, checkpoint selection, the winner's selection); ``--split test
--confirm`` takes the first test seeds from ``--skip`` on (the seeds of docs/plan.md's past
measurements), with a warning: a test seed used to choose a setting can no longer confirm it.
Prints the paired 95 % bootstrap interval of plan vs its base over the scenarios,
the decisions that deviated, and the process (one-core CPU) time per planned decision;
``--out`` writes the per-scenario table (CSV).
"""

import json
import sys
import time

import pandas as pd

from sched import layout
from sched.cli import add_chooser_options, chooser_seeds_or_exit
from sched.config import load_config
from sched.data.objective import tardiness
from sched.data.scenario import draw, scenario_model
from sched.evaluate.seeds import free_validation_offset, range_text  # noqa: F401  (free_validation_offset: the tests)
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.learn.search.planner import Planner, learned_base, rule_base

SCRIPT = "plan_quality.py"


def pick_seeds(cfg, split, count, skip=0, confirm=False):
    """The seeds this script runs on (``sched.cli.chooser_seeds_or_exit``)."""
    return chooser_seeds_or_exit(cfg, split, count, skip, confirm, SCRIPT)


def _twt(d, schedule):
    """Total weighted tardiness of a (start, end, machine) schedule of drawn scenario ``d``."""
    return float((d["weight"] * tardiness(schedule[1], d["due"])).sum())


def _k(name, cfg):
    """ATC's k of a rule name: atc-tuned's from tuned.json, else rules.atc_k."""
    if name == "atc-tuned":
        with open(layout.TUNED_PATH, encoding="utf-8") as fh:
            return json.load(fh)["atc_k"]
    return cfg["rules"]["atc_k"]


def parser():
    """The command line (``main`` parses it)."""
    from sched.cli import ScriptParser, float_in, int_in

    ap = ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="config.yaml")
    ap.add_argument("--base", required=True)
    ap.add_argument("--atc-k", type=float_in(0, above=True))
    ap.add_argument("--rollout", help="a rule (or atc-tuned) continuing the rollouts (default: the base)")
    ap.add_argument("--scenarios", type=int_in(1), default=30)
    add_chooser_options(ap)
    ap.add_argument("--load", type=float_in(0, above=True))
    ap.add_argument("--depth", type=int_in(1), help="decisions a rollout takes before its terminal estimate")
    ap.add_argument(
        "--chunk",
        type=int_in(0),
        default=0,
        help="> 0: the paired stopping rule, checked every CHUNK samples (the teacher's); 0: every sample",
    )
    for key, typ in (
        ("candidates", int_in(2, 16)),
        ("samples", int_in(1, 4096)),
        ("horizon", int_in(1, 10000)),
        ("z", float_in(0, 10)),
        ("seed", int_in(0, 2**31 - 1)),
    ):
        ap.add_argument(f"--{key}", type=typ)
    ap.add_argument("--out")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    cfg = load_config(a.config)
    seeds = pick_seeds(cfg, a.split, a.scenarios, a.skip, a.confirm)  # refused: one line (run_script)
    if a.load is not None:
        cfg = cfg.replace(scenario={"load": a.load})
    settings = dict(cfg["plan"])
    settings.update(
        {
            k: getattr(a, k)
            for k in ("candidates", "samples", "horizon", "z", "seed", "depth")
            if getattr(a, k) is not None
        }
    )
    name, _, pfile = a.base.partition("=")
    if pfile:
        from sched.learn.policy.kernel import run_one
        from sched.learn.policy.policy_file import load

        policy = load(pfile)
        base = learned_base(policy, name)
        run_base = lambda sc: run_one(policy, sc)  # noqa: E731
    else:
        from sched.sim.core import simulate

        rule = "atc" if name == "atc-tuned" else name
        k = a.atc_k or _k(name, cfg)
        base = rule_base(rule, k)
        run_base = lambda sc: simulate(*sc, rule, k=k)  # noqa: E731
    roll = None
    if a.rollout:
        rk = _k(a.rollout, cfg)
        roll = rule_base("atc" if a.rollout == "atc-tuned" else a.rollout, rk)
    planner = Planner(cfg, base, settings, roll, chunk=a.chunk)
    model = scenario_model(cfg)
    rows = []
    for seed in seeds:
        d = draw(model, seed)
        sc = (d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])
        b = _twt(d, run_base(sc))
        stats, c0 = {}, time.process_time()
        p = _twt(d, planner.schedule(sc, stats=stats))
        cpu = time.process_time() - c0
        dec = stats["decisions"]
        rows.append(
            dict(
                seed=seed, base=b, plan=p, decisions=dec, deviations=stats["deviations"],
                samples=stats["samples"], cpu_s=cpu,
            )
        )  # fmt: skip
        print(
            f"{seed} base {b / 1e3:9.3f} plan {p / 1e3:9.3f} {100 * (p / b - 1):+6.2f} % "
            f"deviated {rows[-1]['deviations']:3d}/{dec} {1e3 * cpu / max(dec, 1):6.1f} ms/decision",
            flush=True,
        )
    f = pd.DataFrame(rows)
    if a.out:
        f.to_csv(a.out, index=False)
    bench = cfg["benchmark"]
    counts = bootstrap_counts(len(f), bench["bootstrap_resamples"], bench["bootstrap_seed"])
    diff, lo, hi = paired_difference(f["plan"], f["base"], counts, bench["ci_level"])
    w, t, lz = win_tie_loss(f["plan"], f["base"], bench["tie_relative"], bench["tie_absolute_s"])
    shown = {k: settings.get(k) for k in ("candidates", "samples", "horizon", "z", "seed", "depth")}
    shown["chunk"] = a.chunk
    print(
        f"settings {json.dumps(shown)} rollout {a.rollout or 'the base'} "
        f"on {a.split} seeds {range_text(seeds)}"
    )
    print(
        f"plan vs {name}: {diff:+.2f} % [{lo:+.2f}, {hi:+.2f}] over {len(f)} scenarios, W/T/L {w}/{t}/{lz}; "
        f"mean base {f['base'].mean() / 1e3:.3f} plan {f['plan'].mean() / 1e3:.3f} k w.s; "
        f"deviated {f['deviations'].sum()}/{f['decisions'].sum()} decisions; "
        f"{1e3 * f['cpu_s'].sum() / f['decisions'].sum():.1f} ms CPU per planned decision (one core)"
    )


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/plan_quality.py"))
