"""What ``sched calibrate-workload`` hands back: the figure, the files, the terminal lines.

The figure shows the hourly arrivals observed against the fitted profile, and
the ECDF of the deadline allowance against allowances drawn from the fit.
"""

import io

import numpy as np

from sched.data.workload.workload import HOURS_PER_WEEK


def render_figure(result):
    """PNG bytes: hourly arrivals observed against fitted, and the ECDF of the allowance."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    d = result.data
    fig = Figure(figsize=(13, 8.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax_r, ax_e = fig.subplots(2, 1, height_ratios=[1.2, 1])
    hours = np.arange(HOURS_PER_WEEK)
    ax_r.bar(
        hours,
        d["arrivals"]["observed_rate_per_hour"],
        width=1.0,
        color="0.8",
        edgecolor="0.6",
        label="observed (tasks at that hour / hours observed)",
    )
    ax_r.step(
        hours,
        d["arrivals"]["rate_per_hour"],
        where="mid",
        color="tab:blue",
        lw=2,
        label=f"fitted (smoothing w = {d['arrivals']['smoothing_weight']:.3f})",
    )
    ax_r.set_xticks(
        np.arange(0, HOURS_PER_WEEK + 1, 24), ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", ""]
    )
    ax_r.set_xlim(-0.5, HOURS_PER_WEEK - 0.5)
    ax_r.set_ylabel("arrivals per hour")
    ax_r.set_xlabel("hour of the week (UTC)")
    ax_r.set_title(
        f"Arrivals: {d['tasks']} tasks over {d['span']['weeks']:.1f} weeks "
        f"({d['span']['start']} to {d['span']['end']})",
        fontsize=10,
    )
    ax_r.legend(fontsize=8)
    pairs = result.arrays["pairs"]
    if len(pairs):
        x = np.sort(pairs[:, 1])
        ax_e.step(
            x,
            np.arange(1, len(x) + 1) / len(x),
            where="post",
            color="k",
            lw=1.5,
            label=f"observed (sample of {len(x)} tasks with a deadline)",
        )
        from sched.data.workload.workload import draw_allowance

        rng = np.random.default_rng(0)
        fitted = draw_allowance({"deadlines": {**d["deadlines"], "share_without": 0.0}}, rng, pairs[:, 0])
        y = np.sort(fitted)
        ax_e.step(
            y,
            np.arange(1, len(y) + 1) / len(y),
            where="post",
            color="tab:orange",
            lw=1.2,
            label="fitted (drawn for the same estimates)",
        )
        ax_e.set_xscale("log")
        ax_e.legend(fontsize=8, loc="upper left")
    ax_e.set_xlabel("deadline allowance: due - submitted (s, log scale)")
    ax_e.set_ylabel("fraction of tasks <= allowance")
    ax_e.set_title(
        f"Deadline allowance ({d['deadlines']['share_without']:.1%} of tasks have no deadline)", fontsize=10
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def write_workload(result, out, figure):
    """Write the figure and the workload JSON as one set (sched.files.write_set: the JSON last)."""
    from sched import files

    png = render_figure(result)
    files.write_set([(figure, files.bytes_writer(png)), (out, files.json_writer(result.data))])


def summary_lines(result):
    d = result.data
    a, p, dl, ld = d["arrivals"], d["priorities"], d["deadlines"], d["load"]
    rate = np.array(a["rate_per_hour"])
    bins = len(dl["allowance"]["ratio_quantiles"]) if dl["allowance"] else 0
    lines = [
        f"{d['tasks']} tasks from {d['span']['start']} to {d['span']['end']} "
        f"({d['span']['weeks']:.2f} weeks); mean rate {a['mean_rate_per_hour']:.2f} tasks/h, "
        f"fitted hourly rates {rate.min():.2f} to {rate.max():.2f} "
        f"(smoothing w {a['smoothing_weight']:.3f}); tasks at {a['hours_with_tasks']} of the 168 hours "
        f"of the week ({a['hours_with_tasks_share']:.0%})",
        "priorities: "
        + ", ".join(f"{c['name']} (w {c['weight']:g}) {c['share']:.1%}" for c in p["classes"])
        + (
            f"; the mix changes with the hour of day (chi-square p = {p['mix_by_hour_pvalue']:.2g})"
            if p["varies_by_hour"]
            else f"; no change with the hour of day (p = {p['mix_by_hour_pvalue']:.2g})"
        ),
        f"deadlines: {dl['share_without']:.1%} without; "
        f"median allowance {dl['median_allowance_s'] or 0:.0f} s; "
        f"allowance / estimate in {bins} bins of the estimate",
        f"load on {ld['machines']}: {ld['implied_load']:.3f} from the estimates "
        f"(mean {ld['mean_estimate_s']:.1f} s)"
        + (
            f", {ld['implied_load_measured']:.3f} from the measured durations "
            f"(mean {ld['mean_measured_duration_s']:.1f} s)"
            if ld["implied_load_measured"] is not None
            else ""
        )
        + f"; {ld['peak_hour_load']:.2f} at the busiest hour",
    ]
    split = d.get("split")
    if split and split.get("held_out"):
        validation = split.get("validation")
        lines.append(
            f"fitted on {split['fitted'][0]} to {split['fitted'][1]}; "
            + (f"validation (not fitted): {validation[0]} to {validation[1]}; " if validation else "")
            + f"held out (not fitted): {split['held_out'][0]} to {split['held_out'][1]} "
            f"({split['test_days']} of {split['history_days']} days)"
        )
    return lines
