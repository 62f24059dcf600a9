"""The report's parts about the queue's own history: the workload line and "Replayed history"."""

from pathlib import Path

from sched import layout
from sched.evaluate.policies import is_ppo, policy_key
from sched.report.format import ci, ci_k, k, label, level_text, pct

#: The columns of `sched replay`'s windows.csv.
WINDOW_COLUMNS = ("scenario_seed", "window", "tasks", "window_hours")


def arrivals_text(sc):
    """How generated scenarios arrive under ``scenario.workload`` (the setup's words)."""
    from sched.data.workload.workload import load_workload

    w = load_workload(sc["workload"])
    scale = sc["workload_scale"]
    from sched.data.machines import total

    # the fit's load was on the GPUs configured when it was made: rescaled to today's
    load = w["load"]["implied_load"] * scale * w["load"]["capacity"] / total(sc["machines"])
    scaled = (
        "the history's own rates"
        if scale == 1
        else f"**the history's rates scaled by {scale:g}** (config `scenario.workload_scale`)"
    )
    return (
        f"non-homogeneous Poisson arrivals following the weekly profile fitted to the queue history "
        f"(`{sc['workload']}`: {w['tasks']:,} tasks over {w['span']['weeks']:.1f} weeks) from a seeded time "
        f"of the week, at {scaled}, a mean load of {load:.2f} from the estimates, with its priority mix and "
        f"deadline allowances"
    )


def read_replay(replay_dir):
    """(summary frame, windows frame) of a `sched replay` folder, or None when it has no summary."""
    from sched.evaluate.errors import ReportError
    from sched.files import read_csv
    from sched.report.inputs import read_summary

    d = Path(replay_dir)
    if not (d / layout.SUMMARY).exists():
        return None
    summary, path = read_summary(d / layout.SUMMARY), d / layout.REPLAY_WINDOWS
    windows = None
    if path.exists():
        windows = read_csv(path, ReportError)
        if list(windows.columns) != list(WINDOW_COLUMNS) or len(windows) != int(summary["scenarios"].iloc[0]):
            raise ReportError(
                f"{path}: expected the columns {', '.join(WINDOW_COLUMNS)} and one row a replayed window "
                f"({int(summary['scenarios'].iloc[0])}), got {', '.join(map(str, windows.columns))[:80]} "
                f"and {len(windows)} rows"
            )
    return summary, windows


def read_fit(path):
    """The workload file at ``path`` (validated), or None when there is none."""
    from sched.data.workload.workload import load_workload

    return load_workload(path) if Path(path).is_file() else None


def fit_line(fit):
    """One sentence on the history's fit (``sched calibrate-workload``)."""
    a, d, ld = fit["arrivals"], fit["deadlines"], fit["load"]
    busiest = max(a["rate_per_hour"])
    return (
        f"The history's fit (`sched calibrate-workload`, docs/workload.md): {fit['tasks']:,} tasks over "
        f"{fit['span']['weeks']:.1f} weeks, {a['mean_rate_per_hour']:.1f} tasks an hour on average and "
        f"{busiest:.1f} at the busiest hour of the week; {d['share_without']:.0%} without deadline; a mean "
        f"load of {ld['implied_load']:.2f} on {ld['machines']} from the estimates, "
        f"{ld['peak_hour_load']:.2f} at the busiest hour."
    )


def paired_table(r, bh, lv):
    """A summary's rows as a table: mean with its interval, difference with the best heuristic ``bh``
    with its paired interval, W/T/L (the replay's and the planner's subset tables)."""
    lines = [
        f"| policy | mean [{lv} CI] | vs {bh} [{lv} CI] | W/T/L vs {bh} |",
        "|---|---:|---:|---:|",
    ]
    for row in r.itertuples():
        lines.append(
            f"| {label(row)} | {k(row.mean_twt_k)} {ci_k(row.mean_twt_ci_lo_k, row.mean_twt_ci_hi_k)} "
            f"| {pct(row.diff_vs_best_heuristic_pct)} "
            f"{ci(row.diff_vs_best_heuristic_ci_lo_pct, row.diff_vs_best_heuristic_ci_hi_pct)} "
            f"| {row.wins_vs_best_heuristic}/{row.ties_vs_best_heuristic}/{row.losses_vs_best_heuristic} |"
        )
    return lines


def replay_section(cfg, replay, fit=None):
    if replay is None:
        return ["## Replayed history", "", fit_line(fit)] if fit is not None else []
    summary, windows = replay
    r = summary.iloc[sorted(range(len(summary)), key=lambda i: policy_key(summary["policy"].iloc[i]))]
    bh = r["best_heuristic"].iloc[0]
    lv = level_text(cfg.benchmark.ci_level)
    n = int(r["scenarios"].iloc[0])
    what = f"{n} windows"
    if windows is not None and len(windows):
        what = (
            f"{n} windows of {windows['window_hours'].iloc[0]:g} h ({windows['window'].iloc[0]} to "
            f"{windows['window'].iloc[-1]}, {int(windows['tasks'].sum()):,} tasks)"
        )
    lines = [
        "## Replayed history",
        "",
        *([fit_line(fit), ""] if fit is not None else []),
        f"The queue history cut into {what}, each a scenario with its real arrivals, priorities, deadlines "
        f"and measured durations; the scheduler sees the duration model's estimates (`sched replay`, "
        f"docs/workload.md). Each window starts with an empty queue; atc-tuned keeps the k tuned on the "
        f"generated validation scenarios. Mean total weighted tardiness per "
        f"window in k w·s; differences with the best heuristic on the replay, **{bh}**, paired over the "
        f"windows ({lv} bootstrap intervals; negative is better).",
        "",
        *paired_table(r, bh, lv),
    ]
    ppo = [row for row in r.itertuples() if is_ppo(row.policy)]
    if ppo:
        better = [x.policy for x in ppo if x.diff_vs_best_heuristic_ci_hi_pct < 0]
        worse = [x.policy for x in ppo if x.diff_vs_best_heuristic_ci_lo_pct > 0]
        lines += [
            "",
            f"Learned policies significantly better than {bh} on the replay: {', '.join(better) or 'none'}; "
            f"significantly worse: {', '.join(worse) or 'none'}.",
        ]
    return lines
