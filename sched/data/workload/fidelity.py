"""The fidelity check of the generator: do scenarios drawn from the fit imitate the days they
stand for?

The validation days (``split.validation``), replayed as one stream from the day before
(``sched.data.workload.replay.held_out_stream``), are compared with two kinds of generated
scenario, each run by the dispatching rules at their default settings (:data:`RULES`):

- **streams**: drawn from the fit over the same hours of the week, as long as the real stream
  and with the same warm-up day, whose tasks count toward nothing, so that each counted day
  starts with the backlog the generator carries into it (as the real days start);
- **scenarios**: the generated validation scenarios as the studio setting draws them
  (``scenario.tasks: day`` from a random hour of the week, after ``scenario.warm_up_days``
  warm-up days whose tasks count toward nothing; from an empty queue without them).

For each: arrivals per hour; the queue length and the backlog's work (GPU-hours still to run,
queued or running) at each hour, and at midnight; the share of late tasks (these under
:data:`REFERENCE`); each rule's mean weighted tardiness a day, its ratio to the reference's,
and Kendall's tau between the rules' rank order on the real days and on the generated ones.

Why :data:`TAU_THRESHOLD` = 0.8: with the 6 rules (15 pairs) a tau of at least 0.8 allows one
pair of rules swapped (13/15 - 2/15 = 0.73 is two pairs). A generator that swaps two pairs
would choose differently between rules that matter; below it the studio's verdict leans on
the real days (``sched.verdict.validation_days.validation_days_gate``). docs/workload.md, "Fidelity".
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sched.data.workload.fidelity_record import FORMAT, FidelityError, read_fidelity  # noqa: F401

#: The rules compared, at their default settings (no tuned k: the check runs before tuning).
RULES = ("fifo", "spt", "edd", "wspt", "atc", "wmdd")
#: The rule whose schedules give the queue, backlog and late-task figures, and the ratios' base.
REFERENCE = "wmdd"
#: Kendall's tau below which the generator is said to rank the rules unlike the real days.
TAU_THRESHOLD = 0.8
#: The kinds of sample, in the table's column order.
KINDS = ("real", "streams", "scenarios")
TABLE_COLUMNS = ("metric", "rule", *KINDS)
DAY_S = 86400.0
HOUR_S = 3600.0
#: A level (arrivals, queue, backlog, late share) the generated scenarios miss: the real days'
#: more than this factor above theirs, or below theirs by it.
MISS_FACTOR = 1.25
#: The levels compared, (metric, rule) as the table holds them.
LEVELS = (
    ("arrivals_per_hour", ""),
    ("queue_length_mean", REFERENCE),
    ("backlog_gpu_hours_mean", REFERENCE),
    ("late_share", REFERENCE),
    ("weighted_tardiness_k_per_day", REFERENCE),
)


@dataclass(frozen=True)
class Sample:
    """One scenario of the check: its tasks count from ``counted_from`` (s, from its start) for
    ``days`` days (``scenario``: a :class:`~sched.data.scenario.Scenario`)."""

    scenario: object
    counted_from: float
    days: float


def real_sample(stream, warm_up_days=1):
    """The validation days' :class:`Sample` (a replayed ``Stream``): counted after the warm-up
    day, over the days judged and those skipped between them."""
    days = len(stream.days) + len(stream.skipped)
    return Sample(stream.scenario, warm_up_days * DAY_S, float(days))


def _expected_arrivals(workload, week_start_s, span_s, scale):
    rate = np.asarray(workload["arrivals"]["rate_per_hour"], dtype=np.float64) * scale
    hours = (int(week_start_s // HOUR_S) + np.arange(int(math.ceil(span_s / HOUR_S)))) % len(rate)
    return float(rate[hours].sum())


def stream_samples(model, seeds, week_start_s, days, warm_up_days=1):
    """Streams drawn from ``model``'s workload over the hours of the real stream: from
    ``week_start_s`` (its time of week), ``warm_up_days + days`` days long, one per seed."""
    from sched.data.scenario import Scenario, generate

    span = (warm_up_days + days) * DAY_S
    expected = _expected_arrivals(model.workload, week_start_s, span, model.workload_scale)
    out = []
    for seed in seeds:
        n = int(1.2 * expected + 5 * math.sqrt(expected) + 50)
        while True:  # enough tasks to cover the span (the first try almost always is)
            sc = generate(model, seed, tasks=n, week_start_s=week_start_s)
            if sc.frame["arrival_s"].iloc[-1] >= span:
                break
            n *= 2
        frame = sc.frame[sc.frame["arrival_s"] < span].reset_index(drop=True)
        out.append(Sample(Scenario(sc.name, frame, sc.week_start_s), warm_up_days * DAY_S, float(days)))
    return out


def scenario_samples(scenarios):
    """The studio's generated validation scenarios, their tasks counted from their warm-up's end
    (``Scenario.counted_from_s``; 0 without one) over the span of the counted arrivals."""
    out = []
    for sc in scenarios:
        arr = sc.frame["arrival_s"].to_numpy()
        arr = arr[arr >= sc.counted_from_s]
        span = max(float(arr.max() - sc.counted_from_s), HOUR_S) if len(arr) else HOUR_S
        out.append(Sample(sc, sc.counted_from_s, span / DAY_S))
    return out


def _hour_marks(sample):
    """The whole UTC hours of the counted span (s from the sample's start) and which are midnights:
    a generated scenario starts at any second of the week, the real stream at a midnight."""
    week0 = sample.scenario.week_start_s + sample.counted_from
    first = sample.counted_from + (-week0) % HOUR_S
    t = first + HOUR_S * np.arange(
        max(1, int(np.floor(sample.days * 24 - (first - sample.counted_from) / HOUR_S)))
    )
    hour_of_day = np.round((sample.scenario.week_start_s + t) / HOUR_S).astype(np.int64) % 24
    return t, hour_of_day == 0


def sample_metrics(sample, schedules):
    """{metric: value} of one sample; ``schedules``: {rule: (start, end)} of :data:`RULES`."""
    arr, _dur, _est, w, due = sample.scenario.arrays
    counted = arr >= sample.counted_from
    start, end = schedules[REFERENCE]
    marks, midnight = _hour_marks(sample)
    t = marks[:, None]
    arrived = arr[None, :] <= t
    queue = (arrived & (start[None, :] > t)).sum(axis=1)
    backlog = np.where(arrived & (end[None, :] > t), end[None, :] - np.maximum(start[None, :], t), 0.0)
    backlog = backlog.sum(axis=1) / HOUR_S
    out = {
        ("arrivals_per_hour", ""): float(counted.sum() / (sample.days * 24)),
        ("queue_length_mean", REFERENCE): float(queue.mean()),
        ("backlog_gpu_hours_mean", REFERENCE): float(backlog.mean()),
        ("backlog_gpu_hours_at_midnight", REFERENCE): float(backlog[midnight].mean())
        if midnight.any()
        else np.nan,
        ("late_share", REFERENCE): float(np.mean(end[counted] > due[counted])) if counted.any() else 0.0,
    }
    for rule in RULES:
        s, e = schedules[rule]
        twt = float(np.sum(w[counted] * np.maximum(0.0, e[counted] - due[counted])))
        out[("weighted_tardiness_k_per_day", rule)] = twt / 1000.0 / sample.days
    return out, queue


def schedule_rules(samples, simulate):
    """{rule: (start, end)} for each sample, every rule of :data:`RULES`, by ``simulate``."""
    arrays = [s.scenario.arrays for s in samples]
    per = [{} for _ in samples]
    for rule in RULES:
        for i, (start, end, _m) in enumerate(simulate(arrays, rule)):
            per[i][rule] = (start, end)
    return per


def kendall_tau(a, b):
    """Kendall's tau (tau-b, scipy) between two orderings' scores; 1.0 when either is constant."""
    from scipy.stats import kendalltau

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 1.0 if np.ptp(a) == np.ptp(b) == 0 else 0.0
    return float(kendalltau(a, b).statistic)


def check(real, streams, scenarios, simulate, threshold=TAU_THRESHOLD):
    """The fidelity table (:data:`TABLE_COLUMNS`), the record ``fidelity.json`` holds (without its
    ``period``), and the hourly queue lengths (real, streams: an array per stream) for the figure.

    ``simulate(arrays, rule)``: the farm the rules run on, ``[(start, end, machine)]`` a scenario
    (``sched.sim.core.simulate_batch`` with the farm's machines and ATC's k: the check is data's,
    the simulation the floor above's, which the caller brings)."""
    groups = {"real": [real], "streams": list(streams), "scenarios": list(scenarios)}
    means, queues = {}, {}
    for kind, samples in groups.items():
        metrics = []
        for sample, sched in zip(samples, schedule_rules(samples, simulate)):
            m, q = sample_metrics(sample, sched)
            metrics.append(m)
            queues.setdefault(kind, []).append(q)
        means[kind] = {key: _mean([m[key] for m in metrics]) for key in metrics[0]}
    rows = [
        {"metric": key[0], "rule": key[1], **{kind: means[kind][key] for kind in KINDS}}
        for key in means["real"]
    ]
    twt = {
        kind: np.array([means[kind][("weighted_tardiness_k_per_day", r)] for r in RULES]) for kind in KINDS
    }
    for i, rule in enumerate(RULES):
        ref = RULES.index(REFERENCE)
        rows.append(
            {
                "metric": "ratio_to_" + REFERENCE,
                "rule": rule,
                **{kd: _ratio(twt[kd][i], twt[kd][ref]) for kd in KINDS},
            }
        )
    tau = {kind: round(kendall_tau(twt["real"], twt[kind]), 9) for kind in ("streams", "scenarios")}
    rows.append({"metric": "kendall_tau", "rule": "", "real": 1.0, **tau})
    record = {
        "format": FORMAT,
        "days": real.days,
        "streams": len(groups["streams"]),
        "scenarios": len(groups["scenarios"]),
        "scenario_warm_up_days": _warm_up_days(groups["scenarios"]),
        "rules": list(RULES),
        "reference": REFERENCE,
        "tau": tau,
        "threshold": threshold,
        # the generated validation scenarios choose the studio's verdict: their tau decides
        "lean_on_days": bool(tau["scenarios"] < threshold),
        "best_rule": {kind: RULES[int(np.argmin(twt[kind]))] for kind in KINDS},
    }
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    record["misses"] = misses(table)
    return table, record, queues


def misses(table, against="scenarios"):
    """What the generated samples (``against``: the scenarios, whose tau decides) miss of the real
    days, from the fidelity table: ``levels``, each of :data:`LEVELS` whose real value is more
    than :data:`MISS_FACTOR` times theirs or less than theirs over it ({name: real / generated});
    ``discordant``, the pairs of rules they order unlike the real days, with both ratios to the
    reference ([{rules: [a, b], real: [..], generated: [..]}], a before b on the real days)."""

    def value(metric, rule, kind):
        row = table[(table["metric"] == metric) & (table["rule"] == rule)]
        return float(row[kind].iloc[0]) if len(row) else float("nan")

    levels = {}
    for metric, rule in LEVELS:
        ratio = _ratio(value(metric, rule, "real"), value(metric, rule, against))
        if np.isfinite(ratio) and not 1 / MISS_FACTOR <= ratio <= MISS_FACTOR:
            levels[metric + (f" ({rule})" if rule else "")] = round(ratio, 6)
    ratio = {kind: [value("ratio_to_" + REFERENCE, r, kind) for r in RULES] for kind in ("real", against)}
    discordant = []
    for i in range(len(RULES)):
        for j in range(i + 1, len(RULES)):
            real, gen = ratio["real"][i] - ratio["real"][j], ratio[against][i] - ratio[against][j]
            if real * gen < 0:
                first, second = (i, j) if real < 0 else (j, i)
                discordant.append(
                    {
                        "rules": [RULES[first], RULES[second]],
                        "real": [round(ratio["real"][x], 6) for x in (first, second)],
                        "generated": [round(ratio[against][x], 6) for x in (first, second)],
                    }
                )
    return {"against": against, "levels": levels, "discordant": discordant}


def switch_variants(on, workload):
    """The generator's variants whose tau the check reports beside the config's (issue 50): the
    weekly profile alone, each of ``scenario.workload_model``'s switches alone, and all of them,
    those the workload file can draw (``sched.data.model.SWITCHES``); [(name, switches)]."""
    from sched.data.model import SWITCHES

    have = {"durations": workload.get("durations") is not None,
            "arrivals.day_factors": workload["arrivals"].get("day_factors") is not None}  # fmt: skip
    usable = [k for k, section in SWITCHES.items() if have[section]]
    off = dict.fromkeys(SWITCHES, False)
    variants = [("profile only", off)] + [(k, {**off, k: True}) for k in usable]
    if len(usable) > 1:
        variants.append(("all", {**off, **dict.fromkeys(usable, True)}))
    return [(name, sw) for name, sw in variants if sw != on]


def model_record(on, variants):
    """fidelity.json's ``model``: the switches on in the config, and each variant's tau."""
    return {
        "switches": dict(on),
        "on": [k for k, v in on.items() if v] or ["profile only"],
        "variants": [{"variant": name, "switches": sw, "tau": tau} for name, sw, tau in variants],
    }


def _warm_up_days(samples):
    """The generated scenarios' warm-up (days), as ``scenario.warm_up_days`` drew it."""
    return float(samples[0].counted_from / DAY_S) if samples else 0.0


def _mean(values):
    """The mean of the samples' values, those without one (NaN: no midnight in a short span) aside."""
    v = np.asarray(values, dtype=np.float64)
    return float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else float("nan")


def _ratio(x, ref):
    return float(x / ref) if ref > 0 else float("nan")


def render_figure(table, record, queues):
    """PNG bytes: the queue at each hour of the validation days against the generated streams
    (median and 10-90 % band), and each rule's tardiness over the reference's for each kind."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax_q, ax_r = fig.subplots(2, 1)
    real = queues["real"][0]
    hours = np.arange(len(real))
    ax_q.plot(hours, real, color="black", lw=1.4, label="validation days (real)")
    streams = np.array([q[: len(real)] for q in queues.get("streams", []) if len(q) >= len(real)])
    if len(streams):
        lo, mid, hi = np.percentile(streams, [10, 50, 90], axis=0)
        ax_q.fill_between(hours, lo, hi, color="tab:orange", alpha=0.25, label="generated streams, 10-90 %")
        ax_q.plot(hours, mid, color="tab:orange", lw=1.2, label="generated streams, median")
    ax_q.set_xlabel(f"hour of the validation days ({record['period'][0]} on), tasks queued under {REFERENCE}")
    ax_q.set_ylabel("tasks waiting")
    ax_q.legend(fontsize=8, loc="upper left")
    ratios = table[table["metric"] == "ratio_to_" + REFERENCE]
    x = np.arange(len(ratios))
    for i, (kind, color) in enumerate(zip(KINDS, ("black", "tab:orange", "tab:blue"))):
        ax_r.bar(x + (i - 1) * 0.27, ratios[kind].to_numpy(), width=0.27, color=color, label=kind)
    ax_r.set_xticks(x, ratios["rule"].tolist())
    ax_r.set_yscale("log")
    ax_r.set_ylabel(f"weighted tardiness / {REFERENCE}'s (log)")
    tau = record["tau"]
    ax_r.set_title(
        f"Kendall's tau of the rules' order against the real days: streams {tau['streams']:.2f}, "
        f"scenarios {tau['scenarios']:.2f} (threshold {record['threshold']:g})",
        fontsize=10,
    )
    ax_r.legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()
