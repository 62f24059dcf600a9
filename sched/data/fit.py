"""Duration calibration from GPU bench logs.

Reads bench logs (CSV or JSON Lines, one record per measured render), fits
each task kind's duration distribution (log-normal and gamma with
``scipy.stats``, location fixed at 0; or empirical resampling) and a
log-linear duration model

    log(duration_s) = intercept + sum_f coef_f * log(f),   f in pixels, frames, steps

by least squares, and builds the calibration file that ``sched.scenario``
samples from (layout in ``sched/calibration_file.py``).

Malformed records (a missing field, a value that is not a number, NaN, a
duration <= 0, a line that is not JSON or not a JSON object, a row with the
wrong number of fields) are skipped, counted and reported with their line
numbers. A file with no record, a file with more than
``calibration.max_bad_share`` malformed records, a kind whose every record is
malformed, and a kind with fewer than ``calibration.min_records`` records stop
the calibration with a :class:`CalibrationError`; everything is decided before
anything is written.
"""

import csv
import hashlib
import io as _io
import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from sched.data.calibration import FEATURES, FORMAT, check_calibration, model_log_prediction
from sched.errors import SchedError

SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".json-lines": "jsonl"}
FIELDS = ("kind", "duration_s", "width", "height", "frames", "steps")
NUMERIC_FIELDS = ("duration_s", "width", "height", "frames", "steps")
SHOWN = 5  # malformed records listed by line in messages
_EXTRA, _SHORT = "\0extra", "\0short"  # csv.DictReader markers for too many / too few fields
FAMILY_PARAMETERS = 2  # lognormal (median, sigma), gamma (shape, scale): k in the AIC
KS_NOTE = (
    "KS p-values use the parameters fitted on the same data, so they are optimistic "
    "(Lilliefors); the statistic is the sup distance between the empirical and fitted CDFs."
)


class CalibrationError(SchedError):
    """Bench logs cannot be calibrated; the message names the file, line and field."""


# --------------------------------------------------------------------------- reading


@dataclass
class BenchLog:
    """One bench file after parsing: its valid records and what was skipped."""

    path: Path
    format: str
    sha256: str
    records: list = field(default_factory=list)  # valid records (dicts)
    bad: list = field(default_factory=list)  # (line, reason)
    bad_kinds: dict = field(default_factory=dict)  # kind -> malformed records naming it
    ignored: int = 0  # records of kinds not calibrated
    total: int = 0

    def bad_summary(self):
        shown = "; ".join(f"line {line}: {why}" for line, why in self.bad[:SHOWN])
        more = f"; and {len(self.bad) - SHOWN} more" if len(self.bad) > SHOWN else ""
        return f"{shown}{more}"


class _Bad(Exception):
    pass


def _number(value, name):
    if value is None or (isinstance(value, str) and value.strip() == ""):
        raise _Bad(f"{name}: missing value")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _Bad(f"{name}: {value!r} is not a number")
    try:
        x = float(value)
    except ValueError:
        raise _Bad(f"{name}: {value!r} is not a number") from None
    if math.isnan(x):
        raise _Bad(f"{name}: NaN")
    if not math.isfinite(x):
        raise _Bad(f"{name}: {value!r} is not finite")
    if x <= 0:
        raise _Bad(f"{name}: must be > 0, got {value!r}")
    return x


def _parse_record(raw, columns):
    """A valid record from a raw {name: value} mapping, or raise _Bad."""
    kcol, dcol = columns["kind"], columns["duration_s"]
    if kcol not in raw:
        raise _Bad(f"{kcol}: missing field")
    kind = raw[kcol]
    if kind is None or (isinstance(kind, str) and kind.strip() == ""):
        raise _Bad(f"{kcol}: missing value")
    if not isinstance(kind, str):
        raise _Bad(f"{kcol}: {kind!r} is not text")
    kind = kind.strip()
    if dcol not in raw:
        raise _Bad(f"{dcol}: missing field", kind)
    try:
        rec = {"kind": kind, "duration_s": _number(raw[dcol], dcol)}
        for f in ("width", "height", "frames", "steps"):
            v = raw.get(columns[f])
            # an absent feature is allowed (the model leaves it out); a present one must be valid
            absent = v is None or (isinstance(v, str) and v.strip() == "")
            rec[f] = np.nan if absent else _number(v, columns[f])
    except _Bad as exc:
        raise _Bad(exc.args[0], kind) from None
    names = {columns[f] for f in FIELDS}
    for k, v in raw.items():
        if k not in names and k not in rec:
            rec[k] = v
    return rec


def _raw_records(text, fmt, path, columns):
    """Yield (line, raw mapping or _Bad) for every record of a file's text."""
    if fmt == "csv":
        reader = csv.DictReader(_io.StringIO(text, newline=""), restkey=_EXTRA, restval=_SHORT)
        header = reader.fieldnames
        if header is None:
            return
        header = [h.strip() for h in header]
        reader.fieldnames = header
        for f in ("kind", "duration_s"):
            if columns[f] not in header:
                raise CalibrationError(
                    f"{path}: no column {columns[f]!r} (columns: {', '.join(header)}); "
                    f"name the {f} column in calibration.columns.{f}"
                )
        for row in reader:
            line = reader.line_num
            if _EXTRA in row:
                yield line, _Bad(f"{len(header) + len(row[_EXTRA])} fields, the header has {len(header)}")
            elif _SHORT in row.values():
                n = sum(v != _SHORT for v in row.values())
                yield line, _Bad(f"{n} fields, the header has {len(header)}")
            else:
                yield line, row
    else:
        for line, s in enumerate(text.splitlines(), start=1):
            if not s.strip():
                continue
            try:
                obj = json.loads(s)
            except json.JSONDecodeError as exc:
                yield line, _Bad(f"not valid JSON ({exc.msg})")
                continue
            if not isinstance(obj, dict):
                yield line, _Bad(f"not a JSON object (a {type(obj).__name__})")
                continue
            yield line, obj


def read_bench(path, options):
    """Parse one bench file under the ``calibration`` config section ``options``."""
    path = Path(path)
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise CalibrationError(
            f"{path}: unknown bench log format {path.suffix or '(no extension)'!r}; "
            f"expected {', '.join(SUFFIXES)} (CSV or JSON Lines)"
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CalibrationError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise CalibrationError(f"{path}: is a folder, not a bench log") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CalibrationError(f"{path}: not UTF-8 text ({exc})") from None
    log = BenchLog(path, fmt, hashlib.sha256(data).hexdigest())
    columns, wanted = options["columns"], options.get("kinds")
    for line, raw in _raw_records(text, fmt, path, columns):
        log.total += 1
        try:
            if isinstance(raw, _Bad):
                raise raw
            rec = _parse_record(raw, columns)
        except _Bad as exc:
            log.bad.append((line, exc.args[0]))
            if len(exc.args) > 1:
                log.bad_kinds[exc.args[1]] = log.bad_kinds.get(exc.args[1], 0) + 1
            continue
        if wanted is not None and rec["kind"] not in wanted:
            log.ignored += 1
            continue
        rec["source"], rec["line"] = str(path), line
        log.records.append(rec)
    if log.total == 0:
        raise CalibrationError(f"{path}: empty file (no bench record)")
    share = len(log.bad) / log.total
    if share > options["max_bad_share"]:
        raise CalibrationError(
            f"{path}: {len(log.bad)} of {log.total} records are malformed ({share:.1%}), more "
            f"than calibration.max_bad_share ({options['max_bad_share']:.1%}): {log.bad_summary()}"
        )
    return log


# --------------------------------------------------------------------------- fitting


def fit_family(name, x):
    """Maximum-likelihood fit of ``name`` (location 0) to durations ``x``."""
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if name == "lognormal":
            s, _, scale = stats.lognorm.fit(x, floc=0)
            params = {"median_s": float(scale), "sigma": float(s)}
        elif name == "gamma":
            a, _, scale = stats.gamma.fit(x, floc=0)
            params = {"shape": float(a), "scale_s": float(scale)}
        else:
            raise ValueError(f"distribution: unknown family {name!r}")
    dist = frozen(name, params)
    ll = float(np.sum(dist.logpdf(x)))
    ks = stats.kstest(x, dist.cdf)
    return {
        "parameters": params,
        "median_s": float(dist.median()),
        "mean_s": float(dist.mean()),
        "log_likelihood": ll,
        "aic": 2 * FAMILY_PARAMETERS - 2 * ll,
        "ks_statistic": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
    }


def frozen(family, params):
    """The scipy distribution of a family with calibration-file parameters."""
    from scipy import stats

    if family == "lognormal":
        return stats.lognorm(params["sigma"], 0, params["median_s"])
    return stats.gamma(params["shape"], 0, params["scale_s"])


def choose(candidates, criterion):
    key = {"aic": "aic", "ks": "ks_statistic"}[criterion]
    return min(candidates, key=lambda name: (candidates[name][key], name))


def fit_duration_model(frame, kind):
    """Least-squares log-linear model of one kind's durations: (model or None, notes).

    A feature enters when every record of the kind carries it, it varies, and
    it is not collinear with the features already in.
    """
    n = len(frame)
    values = {
        "pixels": frame["width"].to_numpy(float) * frame["height"].to_numpy(float),
        "frames": frame["frames"].to_numpy(float),
        "steps": frame["steps"].to_numpy(float),
    }
    y = np.log(frame["duration_s"].to_numpy(float))
    X, used, notes, absent = [np.ones(n)], [], [], []
    for f in FEATURES:
        v = values[f]
        have = np.isfinite(v)
        what = "width and height" if f == "pixels" else f
        if not have.any():
            absent.append(what)
            continue
        if not have.all():
            notes.append(f"{what} missing in {int((~have).sum())} of {n} records: left out of the model")
            continue
        lv = np.log(v)
        if np.ptp(lv) == 0:
            notes.append(f"{f} is {v[0]:g} in every record: left out (the intercept holds it)")
            continue
        trial = np.column_stack(X + [lv])
        if np.linalg.matrix_rank(trial) < trial.shape[1]:
            notes.append(f"{f} is collinear with {', '.join(used)}: left out")
            continue
        X.append(lv)
        used.append(f)
    if not used:
        if len(absent) == len(FEATURES):
            why = "the records carry no feature (width and height, frames, steps)"
        else:
            why = "no feature is usable: " + "; ".join(notes)
        return None, [why]
    A = np.column_stack(X)
    dof = n - A.shape[1]
    if dof < 1:
        return None, [f"{n} records are too few for {len(used)} features"]
    beta, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ beta
    ssr = float(resid @ resid)
    sst = float(((y - y.mean()) ** 2).sum())
    model = {
        "features": used,
        "coefficients": {
            "intercept": float(beta[0]),
            **{f"log_{f}": float(b) for f, b in zip(used, beta[1:])},
        },
        "formula": "log(duration_s) = intercept + sum over features f of coefficients['log_' + f] * log(f)"
        " (pixels = width * height)",
        "residual_sigma": math.sqrt(ssr / dof),
        "r2": 1.0 - ssr / sst if sst > 0 else 1.0,
        "n": n,
        "dof": dof,
    }
    if notes:
        model["notes"] = notes
    return model, notes


# --------------------------------------------------------------------------- calibration


@dataclass
class Calibration:
    """What ``calibrate`` decided: the file content, notes, and data for the figure."""

    data: dict
    notes: list  # (level, text): level "warning" or "note"
    durations: dict  # kind -> measured durations (np.ndarray)
    predictions: dict  # kind -> model median predictions, or None


def calibrate(paths, options):
    """Calibrate from bench files ``paths`` under the ``calibration`` config section."""
    if not paths:
        raise CalibrationError("no bench log given (pass files or set calibration.bench)")
    seen = set()
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            raise CalibrationError(f"{p}: bench log given twice")
        seen.add(key)
    logs = [read_bench(p, options) for p in paths]
    notes = []
    for log in logs:
        if log.bad:
            notes.append(
                (
                    "warning",
                    f"{log.path}: skipped {len(log.bad)} malformed record(s) of "
                    f"{log.total}: {log.bad_summary()}",
                )
            )
        if log.ignored:
            notes.append(
                ("note", f"{log.path}: ignored {log.ignored} record(s) of kinds not in calibration.kinds")
            )
    names = ", ".join(str(log.path) for log in logs)
    records = [r for log in logs for r in log.records]
    frame = pd.DataFrame.from_records(records)
    valid = set(frame["kind"]) if len(frame) else set()
    for kind in sorted({k for log in logs for k in log.bad_kinds} - valid):
        if options.get("kinds") is not None and kind not in options["kinds"]:
            continue
        n = sum(log.bad_kinds.get(kind, 0) for log in logs)
        raise CalibrationError(
            f"kind {kind!r} has no valid record in {names} (its {n} record(s) are malformed)"
        )
    for kind in options.get("kinds") or []:
        if kind not in valid:
            raise CalibrationError(f"kind {kind!r} (calibration.kinds) has no valid record in {names}")
    if not valid:
        raise CalibrationError(f"no valid bench record in {names}")
    counts = frame["kind"].value_counts()
    few = {k: int(c) for k, c in counts.items() if c < options["min_records"]}
    if few:
        listed = ", ".join(f"{k!r} has {c}" for k, c in sorted(few.items()))
        raise CalibrationError(
            f"too few records to fit in {names}: {listed} valid record(s), fewer than "
            f"calibration.min_records ({options['min_records']}); add measurements, lower "
            f"calibration.min_records or leave the kind out with calibration.kinds"
        )

    families = list(options["families"])
    choice = options["distribution"]
    if choice in ("lognormal", "gamma") and choice not in families:
        families.append(choice)
    total = len(frame)
    kinds, durations, predictions = {}, {}, {}
    for kind in sorted(valid):
        sub = frame[frame["kind"] == kind]
        x = np.sort(sub["duration_s"].to_numpy(float))
        if np.ptp(x) == 0:
            raise CalibrationError(
                f"kind {kind!r}: all {len(x)} durations in {names} are "
                f"{x[0]:g} s; a distribution cannot be fitted to one value"
            )
        candidates = {f: fit_family(f, x) for f in families}
        best = choose(candidates, options["criterion"])
        share = len(x) / total
        entry = {
            "count": int(len(x)),
            "share": share,
            "median_s": float(np.median(x)),
            "mean_s": float(np.mean(x)),
            "p90_s": float(np.quantile(x, 0.9)),
            "min_s": float(x[0]),
            "max_s": float(x[-1]),
        }
        if choice == "empirical":
            entry["distribution"] = "empirical"
            entry["parameters"] = {"samples_s": x.tolist()}
            entry["goodness_of_fit"] = None
            entry["selection"] = (
                f"empirical resampling of the {len(x)} measured durations "
                f"(calibration.distribution); best parametric family by "
                f"{options['criterion']}: {best}"
            )
        else:
            chosen = best if choice == "auto" else choice
            c = candidates[chosen]
            entry["distribution"] = chosen
            entry["parameters"] = dict(c["parameters"])
            entry["goodness_of_fit"] = {
                "ks_statistic": c["ks_statistic"],
                "ks_pvalue": c["ks_pvalue"],
                "aic": c["aic"],
            }
            entry["selection"] = (
                f"lowest {'AIC' if options['criterion'] == 'aic' else 'KS statistic'} "
                f"among {', '.join(families)}"
                if choice == "auto"
                else "fixed by calibration.distribution"
            )
        entry["candidates"] = candidates
        entry["spec"] = {"share": share, "distribution": entry["distribution"], **entry["parameters"]}
        model, model_notes = fit_duration_model(sub, kind)
        entry["duration_model"] = model
        if model is None:
            entry["duration_model_note"] = (
                f"no duration model: {model_notes[0]}; estimates for this kind fall back to its distribution"
            )
            notes.append(("note", f"kind {kind!r}: {entry['duration_model_note']}"))
            predictions[kind] = None
        else:
            for text in model_notes:
                notes.append(("note", f"kind {kind!r}: duration model: {text}"))
            predictions[kind] = np.array(
                [math.exp(model_log_prediction(model, _row_features(r))) for r in sub.itertuples()]
            )
        kinds[kind] = entry
        durations[kind] = sub["duration_s"].to_numpy(float)

    models = {k: e["duration_model"] for k, e in kinds.items() if e["duration_model"]}
    if models:
        dof = sum(m["dof"] for m in models.values())
        sigma = math.sqrt(sum(m["residual_sigma"] ** 2 * m["dof"] for m in models.values()) / dof)
        noise_note = (
            f"pooled residual sigma of the duration models of {', '.join(sorted(models))} "
            f"(log scale); the simulator's default estimate noise"
        )
        if len(models) < len(kinds):
            noise_note += f"; {', '.join(sorted(set(kinds) - set(models)))} without a model"
    else:
        sigma = None
        noise_note = (
            "no duration model (no feature in the bench logs): the simulator's "
            "estimate noise defaults to 0; set scenario.estimate_noise_sigma"
        )
        notes.append(("note", noise_note))

    data = {
        "format": FORMAT,
        "sources": [
            {
                "path": str(log.path),
                "format": log.format,
                "sha256": log.sha256,
                "records": log.total,
                "valid": len(log.records),
                "malformed": len(log.bad),
                "ignored": log.ignored,
                "malformed_lines": [line for line, _ in log.bad[:SHOWN]],
            }
            for log in logs
        ],
        "records": total,
        "columns": dict(options["columns"]),
        "selection": {
            "distribution": choice,
            "criterion": options["criterion"],
            "families": families,
            "min_records": options["min_records"],
            "max_bad_share": options["max_bad_share"],
        },
        "goodness_of_fit_note": KS_NOTE,
        "kinds": kinds,
        "estimate_noise_sigma": sigma,
        "estimate_noise_note": noise_note,
    }
    check_calibration(data, "(being written)")
    return Calibration(data, notes, durations, predictions)


def _row_features(row):
    return {"pixels": row.width * row.height, "frames": row.frames, "steps": row.steps}


# --------------------------------------------------------------------------- figure and files


def render_figure(cal):
    """PNG bytes: per kind, the measured durations against the fitted distributions."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kinds = list(cal.data["kinds"])
    fig = Figure(figsize=(5.2 * len(kinds), 12.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(3, len(kinds), squeeze=False)
    colors = {"lognormal": "tab:blue", "gamma": "tab:orange"}
    for j, kind in enumerate(kinds):
        e = cal.data["kinds"][kind]
        x = np.sort(cal.durations[kind])
        grid = np.geomspace(x[0] * 0.7, x[-1] * 1.4, 400)
        ax_h, ax_c, ax_m = axes[0, j], axes[1, j], axes[2, j]
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
        ax_c.step(
            x, np.arange(1, len(x) + 1) / len(x), where="post", color="k", lw=1.5, label="measured (ECDF)"
        )
        for fam, c in e["candidates"].items():
            chosen = fam == e["distribution"]
            d = frozen(fam, c["parameters"])
            style = dict(color=colors[fam], lw=2.2 if chosen else 1.2, ls="-" if chosen else "--")
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
        m, pred = e["duration_model"], cal.predictions[kind]
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
        else:
            measured = cal.durations[kind]
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
    fig.suptitle(
        "Duration calibration: " + ", ".join(Path(s["path"]).name for s in cal.data["sources"]), fontsize=11
    )
    buf = _io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def write_calibration(cal, out, figure):
    """Write the figure, then the calibration JSON (both atomically)."""
    from sched import files

    png = render_figure(cal)  # decided before anything is written
    with files.atomic_path(figure) as tmp:
        tmp.write_bytes(png)
    files.write_json(out, cal.data)


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
    return lines
