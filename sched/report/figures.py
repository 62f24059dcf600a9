"""Figures of the benchmark report and the demonstration (PNG, matplotlib Agg).

Each function draws from tables the benchmark wrote and saves atomically
(a reader never sees half a PNG).
"""

import numpy as np

from sched.evaluate.policies import is_warm, policy_key
from sched.files import atomic_path
from sched.verdict.summary import UNIT

HEURISTIC_COLOR = "#4C72B0"
PPO_COLOR = "#DD8452"
WARM_COLOR = "#C9A27E"
REF_COLOR = "#55A868"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path, dpi):
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
    _plt().close(fig)
    return path


def _color(policy):
    if is_warm(policy):
        return WARM_COLOR
    if policy.startswith("ppo-"):
        return PPO_COLOR
    return REF_COLOR if policy == "atc" else HEURISTIC_COLOR


def mean_with_ci(summary, path, dpi, level):
    """Mean total weighted tardiness per policy with its bootstrap interval (from the summary)."""
    plt = _plt()
    r = summary.sort_values("rank", ascending=False)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(r) + 1.2))
    y = np.arange(len(r))
    m = r["mean_twt_k"].to_numpy()
    err = np.vstack([m - r["mean_twt_ci_lo_k"].to_numpy(), r["mean_twt_ci_hi_k"].to_numpy() - m])
    ax.barh(y, m, color=[_color(p) for p in r["policy"]], alpha=0.85)
    ax.errorbar(m, y, xerr=err, fmt="none", ecolor="black", capsize=3, lw=1)
    ax.set_yticks(y, r["policy"])
    ax.set_xlabel("mean total weighted tardiness per scenario (1,000 weighted s)")
    ax.set_title(
        f"Mean over {int(r['scenarios'].iloc[0])} test scenarios, bootstrap {level * 100:g} % interval"
    )
    ax.grid(axis="x", alpha=0.3)
    return save(fig, path, dpi)


def paired_differences(per_scenario, path, dpi, ref="atc", unit=UNIT):
    """Per-scenario difference (policy - ATC) of total weighted tardiness, one box per policy."""
    plt = _plt()
    table = per_scenario.pivot(index="scenario_seed", columns="policy", values="total_weighted_tardiness_s")
    pols = [p for p in sorted(table.columns, key=policy_key) if p != ref]
    data = [(table[p] - table[ref]).to_numpy() / unit for p in pols]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(pols) + 1.2))
    bp = ax.boxplot(
        data,
        orientation="horizontal",
        showfliers=True,
        patch_artist=True,
        flierprops={"markersize": 2, "alpha": 0.4},
    )
    for patch, p in zip(bp["boxes"], pols):
        patch.set_facecolor(_color(p))
        patch.set_alpha(0.6)
    ax.set_yticks(np.arange(1, len(pols) + 1), pols)
    ax.axvline(0, color="black", lw=1)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel(f"policy minus {ref}, per scenario (1,000 weighted s; < 0: better than {ref})")
    ax.set_title(f"Paired per-scenario differences against {ref}")
    ax.grid(axis="x", alpha=0.3)
    return save(fig, path, dpi)


def ecdf(per_scenario, path, dpi, unit=UNIT):
    """Empirical CDF of the per-scenario total weighted tardiness of each policy."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p in sorted(set(per_scenario["policy"]), key=policy_key):
        v = (
            np.sort(per_scenario.loc[per_scenario["policy"] == p, "total_weighted_tardiness_s"].to_numpy())
            / unit
        )
        ax.step(
            v,
            np.arange(1, len(v) + 1) / len(v),
            where="post",
            label=p,
            lw=2 if p in ("atc",) or p.startswith("ppo-") else 1.2,
            ls="--" if p.startswith("ppo-") else "-",
        )
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("total weighted tardiness of a scenario (1,000 weighted s)")
    ax.set_ylabel("fraction of scenarios")
    ax.set_title("ECDF of per-scenario total weighted tardiness")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    return save(fig, path, dpi)


#: The PPO diagnostics of the learning-curve figure: (train_log.csv column, panel title, log scale).
DIAGNOSTICS = (
    ("approx_kl", "approx_kl (log scale)", True),
    ("clip_fraction", "clip_fraction", False),
    ("entropy", "entropy", False),
    ("explained_variance", "explained_variance", False),
)


def learning_curves(logs, path, dpi, unit=UNIT, reference=None, targets=None):
    """The learning-curve figure (:func:`learning_curves_figure`), saved to ``path``."""
    return save(learning_curves_figure(logs, unit, reference, targets), path, dpi)


def learning_curves_figure(logs, unit=UNIT, reference=None, targets=None):
    """Training of each seed: the greedy policy on the validation scenarios (top left),
    the sampled policy's training episodes (top right), and PPO's diagnostics (bottom).

    Top left, one line per seed through the validated points: -1 the untrained
    network (the ATC prior), 0 the teacher warm start, then PPO iterations;
    ``reference``: (label, value in weighted s), ATC on the same validation
    scenarios. Top right, the mean weighted tardiness of the last training
    episodes (different scenarios each time, sampled actions: noisy). Bottom,
    one panel per column of :data:`DIAGNOSTICS`, one line per seed over the PPO
    iterations (the log's rows with iteration > 0); ``targets``: {column: (low,
    high)}, a shaded target range. Returns the matplotlib figure.
    """
    plt = _plt()
    fig = plt.figure(figsize=(14, 8))
    grid = fig.add_gridspec(2, len(DIAGNOSTICS), height_ratios=(1.3, 1))
    half = len(DIAGNOSTICS) // 2
    top = [fig.add_subplot(grid[0, :half]), fig.add_subplot(grid[0, half:])]
    bottom = [fig.add_subplot(grid[1, i]) for i in range(len(DIAGNOSTICS))]
    if reference is not None:
        top[0].axhline(reference[1] / unit, color="black", ls=":", lw=1, label=reference[0])
    for seed, log in sorted(logs.items()):
        if "val_weighted_tardiness_s" in log:
            v = log.dropna(subset=["val_weighted_tardiness_s"])
            top[0].plot(
                v["iteration"], v["val_weighted_tardiness_s"] / unit, "o-", ms=3, label=f"ppo-{seed}", lw=1.2
            )
        ppo = log[log["iteration"] > 0]
        top[1].plot(
            ppo["iteration"], ppo["mean_episode_weighted_tardiness_s"] / unit, label=f"ppo-{seed}", lw=1
        )
        for ax, (column, _, _) in zip(bottom, DIAGNOSTICS):
            if column in ppo:
                ax.plot(ppo["iteration"], ppo[column], label=f"ppo-{seed}", lw=0.8)
    top[0].set_xlabel("iteration (-1: ATC prior, 0: teacher warm start)")
    top[0].set_ylabel("mean weighted tardiness (1,000 weighted s)")
    top[0].set_title("Validation scenarios, greedy policy")
    top[1].set_xlabel("PPO iteration")
    top[1].set_ylabel("mean weighted tardiness (1,000 weighted s)")
    top[1].set_title("Training episodes, sampled actions (last 50)")
    for ax, (column, title, log_scale) in zip(bottom, DIAGNOSTICS):
        if log_scale:
            ax.set_yscale("log")
        if targets and column in targets:
            lo, hi = targets[column]
            ax.axhspan(lo, hi, color=REF_COLOR, alpha=0.15, label=f"target [{lo:g}, {hi:g}]")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("PPO iteration")
    for ax in top + bottom:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def chain_curves(chains, path, dpi, unit=UNIT, reference=None, farm=()):
    """The learning curve of each training chain (:func:`chain_curves_figure`), saved to ``path``."""
    return save(chain_curves_figure(chains, unit, reference, farm), path, dpi)


def _checks(log):
    """A train log's validated rows from the chain's start (iteration 0) on: PPO's checks."""
    v = log.dropna(subset=["val_weighted_tardiness_s"])
    return v[v["iteration"] >= 0]


def chain_mean(logs):
    """(decisions, mean validation score) over the checks every seed of ``logs`` ({seed: train
    log}) reached: a seed the patience rule stopped earlier ends the mean there."""
    import pandas as pd

    rows = []
    for seed, log in logs.items():
        rows.append(_checks(log)[["iteration", "env_steps", "val_weighted_tardiness_s"]].assign(seed=seed))
    every = pd.concat(rows, ignore_index=True)
    counts = every.groupby("iteration")["seed"].nunique()
    shared = counts[counts == len(logs)].index
    mean = every[every["iteration"].isin(shared)].groupby("iteration")[
        ["env_steps", "val_weighted_tardiness_s"]
    ]
    mean = mean.mean().sort_index()
    return mean["env_steps"].to_numpy(), mean["val_weighted_tardiness_s"].to_numpy()


def chain_curves_figure(chains, unit=UNIT, reference=None, farm=()):
    """Validation cost against PPO's decisions simulated, one colour a training chain (issue 48,
    point 1): each seed a thin line from its chain's start (PPO iteration 0: the ATC prior, or the
    policy the warm start and the rounds handed over) through every check, the seeds' mean a thick
    one over the checks every seed reached. ``chains``: [(label, {seed: train log})];
    ``reference``: (label, value in weighted s), ATC on the same validation scenarios. The
    decisions are counts (the log's ``env_steps``), the same on any machine. ``farm``: the learned
    farm policies' chains (``sched.evaluate.farm.learned_report.curves``), in a right panel of their
    own when there are any: their validation scenarios are their farm setting's, so their costs do
    not share the main chains' axis. Returns the figure."""
    plt = _plt()
    if farm:
        fig, (ax, right) = plt.subplots(1, 2, figsize=(14, 5), gridspec_kw={"width_ratios": (3, 2)})
        _farm_panel(right, farm, unit, len(chains))
    else:
        fig, ax = plt.subplots(figsize=(9, 5))
    if reference is not None:
        ax.axhline(reference[1] / unit, color="black", ls=":", lw=1, label=reference[0])
    for i, (label, logs) in enumerate(chains):
        color = f"C{i}"
        for log in logs.values():
            v = _checks(log)
            ax.plot(
                v["env_steps"] / 1e6,
                v["val_weighted_tardiness_s"] / unit,
                "-",
                color=color,
                lw=0.7,
                alpha=0.45,
            )
        x, y = chain_mean(logs)
        ax.plot(
            x / 1e6, y / unit, "o-", color=color, lw=2.2, ms=3, label=f"{label} (mean of {len(logs)} seeds)"
        )
    ax.set_xlabel("PPO decisions simulated (millions)")
    ax.set_ylabel("mean weighted tardiness (1,000 weighted s)")
    ax.set_title("Validation scenarios, greedy policy: each training chain's PPO stage")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _farm_panel(ax, farm, unit, first):
    """The learned farm policies' validation mean against the farm decisions PPO simulated (``farm``:
    [(setting, decisions, mean, atc-tuned's mean or None)]), one colour a setting (after the
    ``first`` colours of the main chains), atc-tuned dotted."""
    for i, (label, x, y, atc) in enumerate(farm):
        color = f"C{first + i}"
        if atc is not None:
            ax.axhline(atc / unit, color=color, ls=":", lw=1, label=f"atc-tuned ({label}, same scenarios)")
        ax.plot(x / 1e6, y / unit, "o-", color=color, lw=2.2, ms=3, label=f"learned farm policy ({label})")
    ax.set_xlabel("farm decisions simulated by PPO (millions)")
    ax.set_ylabel("mean weighted tardiness (1,000 weighted s)")
    ax.set_title("Chunked farm settings: the learned policy's PPO (its own scenarios)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def gantt(scenario, schedules, machines, path, dpi, hours, title):
    """Gantt chart of a scenario under several policies, one panel each.

    ``schedules``: {label: (start, end, machine)}. Bars are coloured by
    weight; tardy tasks are outlined in red. Only the first ``hours`` hours
    are shown.
    """
    plt = _plt()
    _, _, _, weight, due = scenario.arrays
    horizon = hours * 3600.0
    wvals = sorted(set(weight.tolist()))
    cmap = plt.get_cmap("viridis", max(len(wvals), 2))
    wcolor = {w: cmap(i) for i, w in enumerate(wvals)}
    fig, axes = plt.subplots(
        len(schedules),
        1,
        figsize=(11, 1.1 + 0.55 * machines * len(schedules) + 0.6 * len(schedules)),
        sharex=True,
        squeeze=False,
    )
    for ax, (label, (start, end, mach)) in zip(axes[:, 0], schedules.items()):
        shown = start < horizon
        for j in np.flatnonzero(shown):
            late = end[j] > due[j]
            ax.barh(
                mach[j],
                (min(end[j], horizon) - start[j]) / 60.0,
                left=start[j] / 60.0,
                height=0.7,
                color=wcolor[weight[j]],
                edgecolor="red" if late else "white",
                linewidth=1.2 if late else 0.3,
            )
        ax.set_yticks(range(machines), [f"GPU {m}" for m in range(machines)])
        ax.set_ylim(-0.6, machines - 0.4)
        ax.set_title(label, fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("time (minutes)")
    last = max(float(np.max(e)) for _, e, _ in schedules.values())
    axes[-1, 0].set_xlim(0, min(horizon, last) / 60.0)
    handles = [plt.Rectangle((0, 0), 1, 1, color=wcolor[w]) for w in wvals]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="red"))
    fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    fig.legend(
        handles,
        [f"weight {w:g}" for w in wvals] + ["tardy"],
        loc="lower center",
        bbox_to_anchor=(0.5, -0.02),
        ncol=len(handles),
        fontsize=8,
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return save(fig, path, dpi)
