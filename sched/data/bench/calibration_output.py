"""What ``sched calibrate`` hands back: the figure of the fits, the files, the terminal lines.

The figure shows, per kind, the measured durations against the fitted
distributions (density and cumulative distribution, log time axis) and the
duration model's predictions against the measurements.
"""

import io
from pathlib import Path

import numpy as np

from sched.data.bench.gpu_effect import summary as gpu_summary
from sched.data.distributions import frozen

COLORS = {"lognormal": "tab:blue", "gamma": "tab:orange"}


def render_figure(cal):
    """PNG bytes: per kind, the measured durations against the fitted distributions."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kinds = list(cal.data["kinds"])
    fig = Figure(figsize=(5.2 * len(kinds), 12.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(3, len(kinds), squeeze=False)
    for j, kind in enumerate(kinds):
        e = cal.data["kinds"][kind]
        _distribution_panels(axes[0, j], axes[1, j], kind, e, np.sort(cal.durations[kind]))
        _model_panel(axes[2, j], kind, e, cal.durations[kind], cal.predictions[kind])
    fig.suptitle(
        "Duration calibration: " + ", ".join(Path(s["path"]).name for s in cal.data["sources"]), fontsize=11
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _distribution_panels(ax_h, ax_c, kind, e, x):
    """Histogram and ECDF of the sorted durations ``x``, with every candidate family."""
    grid = np.geomspace(x[0] * 0.7, x[-1] * 1.4, 400)
    # densities per unit of ln(duration), so that areas read fairly on the log axis
    edges = np.geomspace(x[0], x[-1], int(np.clip(np.sqrt(len(x)), 8, 40)) + 1)
    counts, _ = np.histogram(x, edges)
    ax_h.bar(
        edges[:-1],
        counts / (len(x) * np.diff(np.log(edges))),
        width=np.diff(edges),
        align="edge",
        color="0.8",
        edgecolor="0.5",
        label=f"measured (n={len(x)})",
    )
    ax_c.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color="k", lw=1.5, label="measured (ECDF)")
    for fam, c in e["candidates"].items():
        chosen = fam == e["distribution"]
        d = frozen(fam, c["parameters"])
        style = dict(color=COLORS[fam], lw=2.2 if chosen else 1.2, ls="-" if chosen else "--")
        label = f"{fam}{' (chosen)' if chosen else ''}: AIC {c['aic']:.0f}, KS D={c['ks_statistic']:.3f}"
        ax_h.plot(grid, d.pdf(grid) * grid, label=label, **style)
        ax_c.plot(grid, d.cdf(grid), label=label, **style)
    ax_h.axvline(e["median_s"], color="k", ls=":", lw=1, label=f"measured median {e['median_s']:.1f} s")
    ax_h.set_ylim(0, ax_h.get_ylim()[1] * 1.45)  # room for the legend
    for ax in (ax_h, ax_c):
        ax.set_xscale("log")
        ax.set_xlabel("duration (s, log scale)")
        ax.legend(fontsize=7.5, loc="upper left" if ax is ax_c else "upper right")
    ax_h.set_title(f"{kind}: {e['count']} renders ({e['share']:.0%}), {e['distribution']}", fontsize=10)
    ax_h.set_ylabel("density per unit of ln(duration)")
    ax_c.set_ylabel("fraction of renders <= duration")
    ax_c.set_title(f"{kind}: cumulative distribution", fontsize=10)


def _model_panel(ax_m, kind, e, measured, pred):
    """Measured durations against the duration model's predictions (or why there is none)."""
    m = e["duration_model"]
    if m is None:
        ax_m.text(
            0.5,
            0.5,
            "no duration model\n" + e["duration_model_note"],
            ha="center",
            va="center",
            wrap=True,
            fontsize=8,
            transform=ax_m.transAxes,
        )
        ax_m.set_axis_off()
        return
    ax_m.scatter(pred, measured, s=8, alpha=0.5, color="tab:green")
    lo, hi = min(pred.min(), measured.min()) * 0.8, max(pred.max(), measured.max()) * 1.25
    ax_m.plot([lo, hi], [lo, hi], color="k", lw=1)
    ax_m.set_xscale("log")
    ax_m.set_yscale("log")
    ax_m.set_xlabel("predicted from " + " × ".join(m["features"]) + " (s)")
    ax_m.set_ylabel("measured (s)")
    ax_m.set_title(
        f"{kind}: duration model, R² {m['r2']:.2f}, residual σ {m['residual_sigma']:.3f}", fontsize=10
    )


def write_calibration(cal, out, figure):
    """Write the figure and the calibration JSON as one set (sched.files.write_set: the JSON last)."""
    from sched import files

    png = render_figure(cal)  # decided before anything is written
    files.write_set([(figure, files.bytes_writer(png)), (out, files.json_writer(cal.data))])


def summary_lines(cal):
    """One line per kind for the terminal."""
    lines = []
    for kind, e in cal.data["kinds"].items():
        gof = e["goodness_of_fit"]
        fit = (
            f"{e['distribution']} " + ", ".join(f"{k} {v:.4g}" for k, v in e["parameters"].items())
            if e["distribution"] != "empirical"
            else f"empirical ({e['count']} samples)"
        )
        if gof:
            fit += f" (KS D={gof['ks_statistic']:.3f}, p={gof['ks_pvalue']:.2f}, AIC {gof['aic']:.1f})"
        m = e["duration_model"]
        model = (
            f"model on {', '.join(m['features'])}: R² {m['r2']:.3f}, residual σ {m['residual_sigma']:.3f}"
            if m
            else "no duration model"
        )
        lines.append(
            f"{kind}: {e['count']} records ({e['share']:.1%}), median {e['median_s']:.1f} s, "
            f"mean {e['mean_s']:.1f} s; {fit}; {model}"
        )
    s = cal.data["estimate_noise_sigma"]
    lines.append("estimate noise sigma: " + (f"{s:.3f}" if s is not None else "none (no duration model)"))
    return lines + gpu_summary(cal.data.get("gpu_speeds"))
