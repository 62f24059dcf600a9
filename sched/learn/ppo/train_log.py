"""The training log (``train_log.csv`` beside the policy file), its progress bar and its plot.

One row per PPO iteration, and before them one row per starting point:
iteration -1 the untrained network (the ATC prior) when there is a warm
start, iteration 0 the warm start (or the untrained network without one).

What the iterations computed (losses, scores) is a result; how fast they ran is a run record:
the timing columns (:data:`RUN_COLUMNS`) go to ``train_log.run.csv`` beside it, so that the
log's bytes depend on the commit, the config and the inputs only (issue 45).
"""

import csv
import math
import time

import numpy as np

from sched import files, layout
from sched.errors import SchedError
from sched.formats.csv_input import safe_cell
from sched.learn.ppo.checkpoint import RECENT_EPISODES

#: The log's file name, beside the policy file, and its run record's.
FILE_NAME = layout.TRAIN_LOG
RUN_FILE_NAME = layout.TRAIN_RUN_LOG

LOG_COLUMNS = (
    "iteration",
    "env_steps",
    "episodes",
    "mean_episode_weighted_tardiness_s",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
    "explained_variance_learned",
    "explained_variance_baseline",
    "steps_per_s",
    "collect_s",
    "update_s",
    "wall_s",
    "learning_rate",
    "val_weighted_tardiness_s",
    "val_atc_weighted_tardiness_s",
)

#: The columns of the run record (the iteration, then wall times and throughput).
RUN_COLUMNS = ("iteration", "steps_per_s", "collect_s", "update_s", "wall_s")
#: The columns of the log itself: every other one.
RESULT_COLUMNS = tuple(c for c in LOG_COLUMNS if c not in RUN_COLUMNS[1:])

NAN = float("nan")


def start_row(iteration, loss, learning_rate, wall, val, val_atc):
    """The row of a starting point: ``loss`` is the distillation's (NaN without one)."""
    row = dict.fromkeys(LOG_COLUMNS, NAN)
    row.update(
        iteration=iteration,
        env_steps=0,
        episodes=0,
        policy_loss=loss,
        wall_s=wall,
        learning_rate=learning_rate,
        val_weighted_tardiness_s=val,
        val_atc_weighted_tardiness_s=val_atc,
    )
    return row


def iteration_row(iteration, progress, stats, timing, learning_rate, val, val_atc):
    """The row of a PPO iteration (``progress``: a RunProgress, ``stats``: its UpdateStats,
    ``timing``: (decisions, seconds collecting them, seconds updating on them))."""
    decisions, collect_s, update_s = timing
    recent = progress.recent
    return {
        "iteration": iteration,
        "env_steps": progress.env_steps,
        "episodes": progress.episodes,
        "mean_episode_weighted_tardiness_s": float(np.mean(recent)) if recent else NAN,
        "policy_loss": stats.pg_loss,
        "value_loss": stats.v_loss,
        "entropy": stats.entropy_loss,
        "approx_kl": stats.approx_kl,
        "clip_fraction": stats.clip_fraction,
        "explained_variance": stats.explained_variance,
        "explained_variance_learned": stats.explained_variance_learned,
        "explained_variance_baseline": stats.explained_variance_baseline,
        "steps_per_s": decisions / max(collect_s + update_s, 1e-9),
        "collect_s": collect_s,
        "update_s": update_s,
        "wall_s": progress.wall,
        "learning_rate": learning_rate,
        "val_weighted_tardiness_s": val,
        "val_atc_weighted_tardiness_s": val_atc,
    }


def run_path(path):
    """The run record beside the log ``path``."""
    from pathlib import Path

    return Path(path).with_name(RUN_FILE_NAME)


def _csv_writer(rows, columns):
    def write(tmp):
        with open(tmp, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
            w.writeheader()
            # text cells a spreadsheet would run as formulas quoted (sched.formats.csv_input.safe_cell)
            w.writerows({k: safe_cell(v) for k, v in row.items()} for row in rows)

    return write


def write(path, rows):
    """Write the log and, beside it, its run record, atomically as a set."""
    files.write_set(
        [(run_path(path), _csv_writer(rows, RUN_COLUMNS)), (path, _csv_writer(rows, RESULT_COLUMNS))]
    )


class ProgressBar:
    """A tqdm bar over the iterations, showing the episode and validation scores."""

    def __init__(self, iterations, seed, done):
        from tqdm import tqdm

        self.bar = tqdm(
            total=iterations, initial=done, desc=f"train seed {seed}", unit="it", dynamic_ncols=True
        )

    def show(self, row):
        post = {"wt": f"{row['mean_episode_weighted_tardiness_s']:.0f}"}
        if not math.isnan(row["val_weighted_tardiness_s"]):
            post["val/atc"] = f"{row['val_weighted_tardiness_s'] / row['val_atc_weighted_tardiness_s']:.3f}"
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(1)

    def close(self):
        self.bar.close()


class Stopwatch:
    """Seconds since a start, which a resumed run sets back by the time already spent."""

    def __init__(self, already=0.0):
        self.t0 = time.perf_counter() - already

    def __call__(self):
        return time.perf_counter() - self.t0


def plot_learning_curve(log_csv, png, title=None):
    """Learning curve from a training log: episode and validation weighted tardiness."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = files.read_csv(log_csv, SchedError)  # the project's CSV rules (sched.formats.csv_input)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(
        df["iteration"],
        df["mean_episode_weighted_tardiness_s"] / 1000,
        lw=1,
        alpha=0.6,
        label=f"training episodes (sampled actions, last {RECENT_EPISODES})",
    )
    val = df.dropna(subset=["val_weighted_tardiness_s"])
    if len(val):
        ax.plot(
            val["iteration"],
            val["val_weighted_tardiness_s"] / 1000,
            "o-",
            ms=3,
            label="validation, greedy policy",
        )
        ax.axhline(
            val["val_atc_weighted_tardiness_s"].iloc[0] / 1000,
            color="k",
            ls="--",
            lw=1,
            label="validation, ATC",
        )
    ax.set_xlabel("iteration")
    ax.set_ylabel("weighted tardiness per scenario (1,000 s)")
    ax.set_title(title or "PPO learning curve")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with files.atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
