"""Training throughput: the project's PPO trainer against sb3-contrib's MaskablePPO, same batch shape.

    python benchmarks/compare_sb3.py [--seconds 60 | --steps N] [--num-envs E] [--num-steps T]
                                     [--threads 1] [--config config.yaml] [--out results.csv|.json]

Needs the ``peer`` extra (``pip install -e '.[peer]'``: stable-baselines3 and
sb3-contrib); without it the script stops with a one-line message.

Both sides train from scratch, one after the other in this process, on the
config's scenario model (``--config``; without it the built-in defaults,
``sched.config.validate_config({}, "defaults")``, which need no calibration file):

* ``project``: ``sched.learn.ppo.loop.train`` with the config's ``train`` settings
  (architecture, top_k, privileged critic, ...), no warm start
  (``teacher_scenarios`` 0), no validation, no checkpoint;
* ``sb3``: ``sb3_contrib.MaskablePPO("MultiInputPolicy")`` on ``num_envs``
  copies of the project's Gymnasium environment (``sched/RenderQueue-v0``,
  ``sched.learn.env.gym_env``) in a ``DummyVecEnv``, masking with the
  environment's ``action_masks()``.

Unit. The project's PPO steps only at decisions where at least two tasks wait
(the simulator starts a lone waiting task itself); the Gymnasium environment
also steps at decisions with a single valid action. The compared unit is the
*decision with at least two waiting tasks*: on the sb3 side a wrapper counts
the steps whose ``action_masks()`` had at least two valid actions. The sb3
side's steps of every kind ("all steps") are shown too. decisions/s =
decisions / wall seconds, and the ratio is project / sb3 of decisions/s.

Batch shape. The same ``num_envs``, ``num_steps``, ``num_minibatches`` and
``update_epochs`` (defaults: the config's ``train`` section) on both sides:
``n_envs = num_envs``, ``n_steps = num_steps`` (so a rollout has the same
number of *steps*, ``num_envs x num_steps``; on the sb3 side some of them are
single-choice steps), ``batch_size = num_envs x num_steps / num_minibatches``
(the same minibatch size), ``n_epochs = update_epochs``. The learning
settings (learning rate, gamma, GAE lambda, clip, entropy and value
coefficients, gradient clipping, advantage normalisation, reward scale) are
the config's on both sides; sb3 does not anneal the learning rate. The
networks differ in shape, as each library builds them: the project's is its
configured one (by default the per-task scorer over the ``top_k`` candidates,
two tanh layers of ``hidden``); sb3's flattens the dict observation
(``max_queue`` task rows, globals, mask) into an actor and a critic of two
tanh layers of ``hidden`` each (``net_arch``).

Timing. Each side first runs ``--warmup`` iterations (2) of a throw-away run,
so compiling and first-call costs are paid outside the measurement (they also
estimate the iteration time for ``--seconds``). The wall seconds of a side are
the sum over its measured PPO iterations of the time collecting the rollout
and the time updating on it (the project's ``train_log.csv`` columns
``collect_s`` and ``update_s``; on the sb3 side the same split, taken by a
callback); setting up the environments and networks is left out (shown apart
as end-to-end seconds). Torch runs on ``--threads`` threads (1) on both
sides, numba too.

Budget. ``--steps N``: each side runs ceil(N / (num_envs x num_steps)) PPO
iterations (the same number of rollouts of the same shape). ``--seconds S``
(default 60): each side runs as many iterations as its warm-up iteration time
says fit in about S seconds.
"""

import copy
import datetime
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

#: What the ratio counts, in the printed table, the docs and the written results.
UNIT = "decisions with >= 2 waiting tasks"

#: The one-line message when the peer packages are missing.
MISSING = (
    "compare_sb3: sb3-contrib (and stable-baselines3) are not installed; "
    "install the peer extra: pip install -e '.[peer]'"
)

SIDES = ("project", "sb3")

COLUMNS = (
    "side",
    "iterations",
    "decisions",
    "all_steps",
    "wall_s",
    "decisions_per_s",
    "all_steps_per_s",
    "end_to_end_s",
)


def require_peer():
    """The sb3-contrib and stable-baselines3 modules, or SystemExit with :data:`MISSING`."""
    try:
        import sb3_contrib
        import stable_baselines3
    except ImportError:
        raise SystemExit(MISSING) from None
    return sb3_contrib, stable_baselines3


def base_config(path=None):
    """The config at ``path``, or the built-in defaults (no calibration file needed)."""
    from sched.config import load_config, validate_config

    return validate_config({}, "defaults") if path is None else load_config(path)


def make_args(cfg, num_envs, num_steps, num_minibatches, update_epochs, hidden, threads, seed, iterations):
    """The project's training settings: the config's ``train``, this shape, no warm start/validation."""
    from sched.learn.settings import Training

    return Training.from_config(
        cfg,
        num_envs=num_envs,
        num_steps=num_steps,
        num_minibatches=num_minibatches,
        update_epochs=update_epochs,
        hidden=hidden,
        iterations=iterations,
        teacher_scenarios=0,
        eval_every=0,
        checkpoint_every=0,
        threads=threads,
        seed=seed,
        tasks=None,  # the scenario's tasks, as the Gymnasium environment has them
    )


# ---------------------------------------------------------------- project side


def run_project(cfg, args, workdir):
    """Train ``args.ppo.iterations`` iterations; the measured numbers of the PPO iterations."""
    from sched.learn.chain import train
    from sched.learn.ppo import train_log

    out = Path(workdir) / "policy.pt"
    t0 = time.perf_counter()
    train(cfg, args, out, progress=False, resume=False)
    end_to_end = time.perf_counter() - t0
    rows = [r for r in read_log(out.with_name(train_log.FILE_NAME)) if int(float(r["iteration"])) > 0]
    per_iter = [float(r["collect_s"]) + float(r["update_s"]) for r in rows]
    decisions = int(float(rows[-1]["env_steps"])) if rows else 0
    return {
        "iterations": len(rows),
        "decisions": decisions,
        "all_steps": None,  # single-task decisions are taken inside the simulator, not counted
        "wall_s": sum(per_iter),
        "per_iteration_s": per_iter,
        "end_to_end_s": end_to_end,
    }


def read_log(path):
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------- sb3 side


def make_counting_env(cfg, max_queue, reward_scale):
    """The project's Gymnasium environment in a wrapper counting steps and >=2-choice steps."""
    import gymnasium as gym

    from sched.learn.env.gym_env import make_gym_env

    class CountingEnv(gym.Wrapper):
        """Counts the steps taken, and those whose mask had at least two valid actions."""

        def __init__(self, env):
            super().__init__(env)
            self.steps = 0
            self.decisions = 0

        def action_masks(self):
            return self.env.unwrapped.action_masks()

        def step(self, action):
            self.steps += 1
            if int(self.env.unwrapped.action_masks().sum()) >= 2:
                self.decisions += 1
            return self.env.step(action)

    return CountingEnv(make_gym_env(cfg, max_queue=max_queue, reward_scale=reward_scale))


def sb3_model(cfg, args, max_queue):
    """MaskablePPO on ``num_envs`` counting environments, the batch shape and settings of ``args``."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    envs = [make_counting_env(cfg, max_queue, args.ppo.reward_scale) for _ in range(args.ppo.num_envs)]
    vec = DummyVecEnv([lambda e=e: e for e in envs])
    model = MaskablePPO(
        "MultiInputPolicy",
        vec,
        n_steps=args.ppo.num_steps,
        batch_size=max(1, args.ppo.batch_size // args.ppo.num_minibatches),
        n_epochs=args.ppo.update_epochs,
        learning_rate=args.ppo.learning_rate,
        gamma=args.ppo.gamma,
        gae_lambda=args.ppo.gae_lambda,
        clip_range=args.ppo.clip_coef,
        clip_range_vf=args.ppo.clip_coef if args.ppo.clip_vloss else None,
        normalize_advantage=args.ppo.norm_adv,
        ent_coef=args.ppo.ent_coef,
        vf_coef=args.ppo.vf_coef,
        max_grad_norm=args.ppo.max_grad_norm,
        target_kl=args.ppo.target_kl,
        policy_kwargs={
            "net_arch": {
                "pi": [args.network.hidden, args.network.hidden],
                "vf": [args.network.hidden, args.network.hidden],
            },
            "activation_fn": torch.nn.Tanh,
        },
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    return model, envs


def timing_callback():
    """A callback splitting each sb3 iteration into collecting (rollout) and updating seconds."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Timing(BaseCallback):
        def __init__(self):
            super().__init__()
            self.collect, self.update = [], []
            self._start = self._end = None

        def _on_rollout_start(self):
            now = time.perf_counter()
            if self._end is not None:
                self.update.append(now - self._end)
            self._start = now

        def _on_rollout_end(self):
            self._end = time.perf_counter()
            self.collect.append(self._end - self._start)

        def _on_training_end(self):
            if self._end is not None and len(self.update) < len(self.collect):
                self.update.append(time.perf_counter() - self._end)

        def _on_step(self):
            return True

    return Timing()


def run_sb3(cfg, args, max_queue):
    """Train MaskablePPO ``args.ppo.iterations`` iterations; the measured numbers."""
    t0 = time.perf_counter()
    model, envs = sb3_model(cfg, args, max_queue)
    timing = timing_callback()
    model.learn(
        total_timesteps=args.ppo.iterations * args.ppo.batch_size, callback=timing, log_interval=10**9
    )
    end_to_end = time.perf_counter() - t0
    per_iter = [c + u for c, u in zip(timing.collect, timing.update)]
    return {
        "iterations": len(per_iter),
        "decisions": sum(e.decisions for e in envs),
        "all_steps": sum(e.steps for e in envs),
        "wall_s": sum(per_iter),
        "per_iteration_s": per_iter,
        "end_to_end_s": end_to_end,
    }


# ---------------------------------------------------------------- both


def iterations_for(budget_s, warm_per_iter):
    """Iterations expected to fit in ``budget_s`` from the warm-up's iteration times (the last one)."""
    t = warm_per_iter[-1] if warm_per_iter else 0.0
    return max(1, round(budget_s / t)) if t > 0 else 1


def compare(
    cfg,
    *,
    num_envs=None,
    num_steps=None,
    num_minibatches=None,
    update_epochs=None,
    hidden=None,
    threads=1,
    seed=1,
    tasks=None,
    max_queue=64,
    seconds=None,
    steps=None,
    warmup=2,
    log=print,
):
    """Run both sides (warm-up, then the measured runs); the results as a dict.

    ``seconds`` (per side, approximate) or ``steps`` (each side runs
    ceil(steps / (num_envs x num_steps)) iterations); None for the settings
    means the config's ``train`` value. ``tasks`` overrides the scenario's
    tasks on both sides. Returns ``{"unit", "settings", "sides": [one dict per
    side, keys COLUMNS], "ratio"}`` (ratio: project / sb3 decisions per
    second). ``log`` (None: quiet) gets the progress lines.
    """
    require_peer()
    import sb3_contrib
    import stable_baselines3
    import torch

    from sched import threads as sched_threads

    log = log or (lambda msg: None)
    if (seconds is None) == (steps is None):
        raise ValueError("give exactly one of seconds and steps")
    cfg = copy.deepcopy(cfg)
    if tasks is not None:
        cfg = cfg.replace(scenario={"tasks": int(tasks)})
    train_cfg = cfg.get("train", {})

    def pick(value, key):
        return int(train_cfg[key]) if value is None else int(value)

    shape = {
        "num_envs": pick(num_envs, "num_envs"),
        "num_steps": pick(num_steps, "num_steps"),
        "num_minibatches": pick(num_minibatches, "num_minibatches"),
        "update_epochs": pick(update_epochs, "update_epochs"),
        "hidden": pick(hidden, "hidden"),
    }

    def args_for(iterations):
        return make_args(cfg, **shape, threads=threads, seed=seed, iterations=iterations)

    sched_threads.apply(threads, torch=True)
    torch.set_num_threads(int(threads))
    batch = args_for(1).batch_size
    results = {}
    with tempfile.TemporaryDirectory(prefix="compare_sb3_") as tmp:
        warm = {}
        if warmup > 0:
            log(f"warm-up: {warmup} iteration(s) of each side")
            warm["project"] = run_project(cfg, args_for(warmup), Path(tmp) / "warm")["per_iteration_s"]
            warm["sb3"] = run_sb3(cfg, args_for(warmup), max_queue)["per_iteration_s"]
        for side in SIDES:
            if steps is not None:
                iterations = max(1, math.ceil(steps / batch))
            else:
                iterations = iterations_for(seconds, warm.get(side, []))
            log(f"{side}: {iterations} iteration(s) of {shape['num_envs']} x {shape['num_steps']} steps")
            torch.set_num_threads(int(threads))  # train() sets it too; the sb3 side runs after it
            if side == "project":
                res = run_project(cfg, args_for(iterations), Path(tmp) / "run")
            else:
                res = run_sb3(cfg, args_for(iterations), max_queue)
            results[side] = row_of(side, res)
    sides = [results[s] for s in SIDES]
    p, s = results["project"]["decisions_per_s"], results["sb3"]["decisions_per_s"]
    return {
        "unit": UNIT,
        "date": datetime.date.today().isoformat(),
        "settings": {
            **shape,
            "batch_size": batch,
            "minibatch_size": max(1, batch // shape["num_minibatches"]),
            "threads": int(threads),
            "seed": int(seed),
            "tasks": int(cfg["scenario"]["tasks"]),
            "max_queue": int(max_queue),
            "budget": f"{seconds} s per side" if seconds is not None else f"{steps} steps per side",
            "warmup_iterations": int(warmup),
        },
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "sb3_contrib": sb3_contrib.__version__,
        },
        "machine": f"{platform.machine()}, {os.cpu_count()} logical cores",
        "sides": sides,
        "ratio": p / s if s > 0 else math.nan,
    }


def row_of(side, res):
    wall = res["wall_s"]
    all_steps = res["all_steps"]
    return {
        "side": side,
        "iterations": res["iterations"],
        "decisions": res["decisions"],
        "all_steps": all_steps,
        "wall_s": wall,
        "decisions_per_s": res["decisions"] / wall if wall > 0 else math.nan,
        "all_steps_per_s": all_steps / wall if all_steps is not None and wall > 0 else None,
        "end_to_end_s": res["end_to_end_s"],
    }


def table(result):
    """The printed table of :func:`compare`'s result."""
    head = (
        "side",
        "iterations",
        "decisions (>=2 tasks)",
        "all steps",
        "wall s",
        "decisions/s",
        "all steps/s",
    )
    lines = []
    for r in result["sides"]:
        lines.append(
            (
                r["side"],
                f"{r['iterations']:,}",
                f"{r['decisions']:,}",
                "-" if r["all_steps"] is None else f"{r['all_steps']:,}",
                f"{r['wall_s']:.2f}",
                f"{r['decisions_per_s']:,.0f}",
                "-" if r["all_steps_per_s"] is None else f"{r['all_steps_per_s']:,.0f}",
            )
        )
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    st = result["settings"]
    out = [
        f"PPO training throughput, {st['num_envs']} envs x {st['num_steps']} steps per rollout, "
        f"minibatch {st['minibatch_size']}, {st['update_epochs']} epochs, {st['threads']} thread(s)",
        fmt.format(*head),
        *(fmt.format(*line) for line in lines),
        f"ratio project / sb3 in {UNIT} per second: {result['ratio']:.2f}",
        "(project: single-task decisions are taken inside its simulator, not counted as steps; "
        "wall s = collecting + updating, setup excluded)",
    ]
    return "\n".join(out)


def write_results(path, result):
    """``path`` (.json: the whole result; otherwise CSV, one row per side), written atomically."""
    import csv

    from sched import files

    path = Path(path)
    if path.suffix.lower() == ".json":
        files.write_json(path, result)
        return
    rows = []
    for r in result["sides"]:
        row = {c: "" if r[c] is None else r[c] for c in COLUMNS}
        row.update(unit=result["unit"], ratio_project_to_sb3=result["ratio"], date=result["date"])
        row.update(result["settings"])
        rows.append(row)
    with files.atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def parse_args(argv=None):
    from sched.cli import ScriptParser, float_in, int_in

    ap = ScriptParser(
        description="Training throughput of the project's PPO against sb3-contrib's MaskablePPO "
        f"(unit: {UNIT}). Needs the peer extra: pip install -e '.[peer]'."
    )
    budget = ap.add_mutually_exclusive_group()
    budget.add_argument(
        "--seconds",
        type=float_in(0, above=True),
        help="about this many measured seconds per side (default 60)",
    )
    budget.add_argument(
        "--steps", type=int_in(1), help="each side runs ceil(STEPS / (num_envs x num_steps)) PPO iterations"
    )
    ap.add_argument("--num-envs", type=int_in(1), help="environments per rollout (default: the config's)")
    ap.add_argument(
        "--num-steps", type=int_in(1), help="steps per environment per rollout (default: the config's)"
    )
    ap.add_argument("--num-minibatches", type=int_in(1), help="minibatches per epoch (default: the config's)")
    ap.add_argument(
        "--update-epochs", type=int_in(1), help="passes over each rollout (default: the config's)"
    )
    ap.add_argument("--hidden", type=int_in(1), help="hidden width of both networks (default: the config's)")
    ap.add_argument("--threads", type=int_in(1), default=1, help="torch and numba threads (default: 1)")
    ap.add_argument("--seed", type=int_in(0), default=1)
    ap.add_argument("--tasks", type=int_in(1), help="tasks per scenario (default: the config's)")
    ap.add_argument(
        "--max-queue", type=int_in(1), default=64, help="rows of the Gymnasium observation (default: 64)"
    )
    ap.add_argument(
        "--warmup", type=int_in(0), default=2, help="throw-away iterations per side first (default: 2)"
    )
    ap.add_argument("--config", help="config file (default: the built-in defaults, no calibration file)")
    ap.add_argument("--out", help="write the results there: .json (everything) or CSV (one row per side)")
    a = ap.parse_args(argv)
    for name in ("seconds", "steps", "num_envs", "num_steps", "num_minibatches", "update_epochs", "hidden"):
        value = getattr(a, name)
        if value is not None and value <= 0:
            ap.error(f"--{name.replace('_', '-')}: must be > 0, got {value}")
    if a.threads < 1 or a.warmup < 0 or a.max_queue < 1 or (a.tasks is not None and a.tasks < 1):
        ap.error("--threads, --max-queue and --tasks must be >= 1, --warmup >= 0")
    if a.seconds is None and a.steps is None:
        a.seconds = 60.0
    return a


def main(argv=None):
    a = parse_args(argv)
    require_peer()  # before any work: one line and out when the peer extra is missing
    cfg = base_config(a.config)
    result = compare(
        cfg,
        num_envs=a.num_envs,
        num_steps=a.num_steps,
        num_minibatches=a.num_minibatches,
        update_epochs=a.update_epochs,
        hidden=a.hidden,
        threads=a.threads,
        seed=a.seed,
        tasks=a.tasks,
        max_queue=a.max_queue,
        seconds=a.seconds,
        steps=a.steps,
        warmup=a.warmup,
        log=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    print(table(result))
    if a.out:
        write_results(a.out, result)
        print(f"written: {a.out}")
    return 0


if __name__ == "__main__":
    from sched.cli import run_script

    sys.exit(run_script(main, "benchmarks/compare_sb3.py"))
