"""PPO from a distilled start (issue 48, point 3): each variant's validation curve and vital signs.

For each training seed S and each ``--variant NAME[:KEY=VALUE,...]`` (``train`` settings over the
config's), PPO runs ``--iterations`` from the policy file ``--start`` names (default: the last
round of expert iteration, ``results/train/seed-S/round-2.pt``), validated every ``--eval-every``
iterations on the training's validation scenarios (those that choose PPO's checkpoint: a
validation split, so this script chooses nothing on test seeds). One more key,
``value_warmup=N``, is the script's: the first N iterations update the critic only (zero
advantages and no entropy bonus: the actor gets no gradient), so that the critic learns the
start's own returns before the first policy step.

    python benchmarks/ppo_from_start.py --config results/config/train.yaml --seeds 1,2 \\
        --variant default --variant ent0:ent_coef=0 --variant critic10:value_warmup=10 [--out DIR]

Prints one row per seed and variant: the validation total against the start's at each check (%),
the best, and the means of entropy (first and last 5 iterations), approx_kl, clip fraction and
the critic's learned part's explained variance (``train_log.csv``). The numbers are evidence for
docs/learning.md; nothing in the workflow reads them.
"""

import dataclasses
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_variant(text):
    """(name, {train key: value}, value_warmup) of ``NAME[:KEY=VALUE,...]``."""
    name, _, rest = text.partition(":")
    sets = dict(item.split("=", 1) for item in rest.split(",") if item)
    from sched.errors import UsageError
    from sched.formats.yaml_input import parse

    values = {k: parse(v, f"--variant {name}: {k}", UsageError) for k, v in sets.items()}
    return name, values, int(values.pop("value_warmup", 0))


@contextmanager
def critic_first(iterations):
    """PPO's update during the first ``iterations`` iterations of the training run inside: the
    critic's loss only (the loop's own ``ppo_update``, given zero advantages and no entropy bonus)."""
    from sched.learn.ppo import loop

    original, calls = loop.ppo_update, [0]

    def update(net, optimizer, rollout, advantages, returns, ppo, gen, ev_baseline=float("nan")):
        calls[0] += 1
        if calls[0] <= iterations:
            advantages, ppo = np.zeros_like(advantages), dataclasses.replace(ppo, ent_coef=0.0)
        return original(net, optimizer, rollout, advantages, returns, ppo, gen, ev_baseline)

    loop.ppo_update = update
    try:
        yield
    finally:
        loop.ppo_update = original


def run(cfg, seed, values, warmup, a, out):
    """train_log.csv of one seed and variant."""
    from sched.learn.ppo import loop
    from sched.learn.settings import Training

    args = Training.from_config(cfg, iterations=a.iterations, seed=seed).replace(
        eval_every=a.eval_every, **values
    )
    start = Path(a.start.format(seed=seed))  # relative: from the working folder, the project's
    with critic_first(warmup):
        loop.train(
            cfg, args, out / "politique.pt", progress=False, resume=False, log=lambda *_: None, init=start
        )
    return pd.read_csv(out / "train_log.csv")


def row(name, seed, t):
    v = t.dropna(subset=["val_weighted_tardiness_s"]).set_index("iteration")["val_weighted_tardiness_s"]
    s = v.loc[0]
    curve = " ".join(f"{100 * (x / s - 1):+.1f}" for i, x in v.items() if i > 0)
    p = t[t.iteration > 0]
    return (
        f"| {name} | {seed} | {s:.0f} | {curve} | {100 * (v.min() / s - 1):+.2f} | "
        f"{p.entropy.iloc[:5].mean():.3f} / {p.entropy.iloc[-5:].mean():.3f} | {p.approx_kl.mean():.4f} | "
        f"{p.clip_fraction.mean():.3f} | {p.explained_variance_learned.mean():.3f} |"
    )


def main(argv=None):
    from sched.cli import ScriptParser, int_in

    ap = ScriptParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="results/config/train.yaml", help="the training's config")
    ap.add_argument("--seeds", default="1,2", help="training seeds (comma-separated)")
    ap.add_argument("--start", default="results/train/seed-{seed}/round-2.pt", help="the start's file")
    ap.add_argument("--iterations", type=int_in(1), default=100)
    ap.add_argument("--eval-every", type=int_in(0), default=10)
    ap.add_argument("--variant", action="append", default=[], help="NAME[:KEY=VALUE,...] (train settings)")
    ap.add_argument("--out", help="folder for each run's files (default: a temporary one)")
    a = ap.parse_args(argv)
    from sched.config import load_config

    cfg = load_config(a.config)
    base = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="ppo_from_start-"))
    print(
        "| variant | seed | start (w s) | validation vs start, % at each check | best "
        "| entropy first 5 / last 5 | approx_kl | clip fraction | explained variance (learned part) |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for text in a.variant or ["default"]:
        name, values, warmup = parse_variant(text)
        for seed in (int(s) for s in a.seeds.split(",")):
            out = base / f"{name}-{seed}"
            out.mkdir(parents=True, exist_ok=True)
            print(row(name, seed, run(cfg, seed, values, warmup, a, out)), flush=True)
    return 0


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/ppo_from_start.py"))
