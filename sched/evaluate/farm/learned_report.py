"""The report's lines of a chunked setting's learned farm policy (issue 60, point 2; the longer run,
``profile: full``), every number read from the files ``sched farm-train`` and ``sched farm-learned``
wrote in the setting's folder beside its benchmark:

* ``farm_learned.json``: the candidacy on the selection (validation) seeds, its paired difference
  with the incumbent atc-tuned and whether the shipped-decision rule picks it (``would_ship``);
* ``farm_learned.csv``: its test rows at sync 0, 60 and 300 s against tuned ATC at the same sync,
  the shipped rule and ``farm-fifo`` (paired intervals, wins/ties/losses);
* ``farm_learning_curve.csv``: the validation mean by iteration, drawn in the figure by chain
  (:func:`curves`, :func:`sched.report.figures.chain_curves`);
* ``teach/teacher_labels.json`` (`train: {teacher: true}`): the chain is the gated teacher's warm
  start then PPO (``sched farm-teach``: its label counts and validation score), else PPO alone.

A folder without ``farm_learned.json`` (the default run) adds nothing: :func:`read` gives None.
"""

from pathlib import Path

import numpy as np

from sched import files, layout
from sched.evaluate.errors import ReportError
from sched.evaluate.farm.bench import FARM_COLUMNS, SYNCS, sync_name
from sched.formats.json_input import is_number
from sched.ranking.farm.learned import NAME
from sched.report.format import ci, pct

#: Which run writes these files (a farm setting with a ``train`` block, profile full).
RUN = "longer run (profile full)"
#: The learning curve's columns the report reads.
CURVE = ("iteration", "decisions", "val_mean_twt_s", "val_atc_tuned_twt_s")
#: The warm start's validation score and atc-tuned's on the same seeds (teacher_labels.json).
WARM = ("val_weighted_tardiness_s", "val_atc_tuned_weighted_tardiness_s")


def read(folder):
    """{"record", "table", "curve"} of the learned policy in a farm setting's ``folder``, or None
    when it has no ``farm_learned.json`` (the curve None when ``farm_learning_curve.csv`` is absent)."""
    from sched.report.inputs import read_json

    d = Path(folder)
    if not (d / layout.FARM_LEARNED).exists():
        return None
    record = _check_record(read_json(d / layout.FARM_LEARNED), d / layout.FARM_LEARNED)
    kinds = {"policy": str, "reference": str}
    table = files.read_csv(d / layout.FARM_LEARNED_TABLE, ReportError, dtype=kinds)
    if tuple(table.columns) != FARM_COLUMNS:
        raise ReportError(f"{d / layout.FARM_LEARNED_TABLE}: columns {', '.join(table.columns)}; "
                          f"expected {', '.join(FARM_COLUMNS)}")  # fmt: skip
    curve = None
    if (d / layout.FARM_CURVE).exists():
        curve = files.read_csv(d / layout.FARM_CURVE, ReportError)
        missing = [c for c in CURVE if c not in curve.columns]
        if missing:
            raise ReportError(f"{d / layout.FARM_CURVE}: column {missing[0]} is missing")
    taught = d / layout.FARM_TEACH / layout.FARM_TEACHER_LABELS
    teacher = read_json(taught) if taught.exists() else None
    if teacher is not None:
        _check_teacher(teacher, taught)
    return {"record": record, "table": table, "curve": curve, "teacher": teacher}


def _check_record(record, path):
    """farm_learned.json when the fields :func:`lines` formats have their types (would_ship a
    boolean, shipped_rule and reason strings, versus_atc_tuned's seeds an integer and its
    percentages numbers), else ReportError naming the file and field."""
    if not isinstance(record, dict):
        raise ReportError(f"{path}: expected an object, got {type(record).__name__}")
    for field in ("would_ship", "versus_atc_tuned", "shipped_rule", "reason"):
        if field not in record:
            raise ReportError(f"{path}: field {field} is missing")
    v = record["versus_atc_tuned"]
    checks = [("would_ship", isinstance(record["would_ship"], bool)),
              ("shipped_rule", isinstance(record["shipped_rule"], str)),
              ("reason", isinstance(record["reason"], str)),
              ("versus_atc_tuned", isinstance(v, dict))]  # fmt: skip
    if isinstance(v, dict):
        checks.append(("versus_atc_tuned.seeds", is_number(v.get("seeds"), integer=True, minimum=0)))
        for f in ("diff_pct", "ci_lo_pct", "ci_hi_pct"):
            checks.append((f"versus_atc_tuned.{f}", is_number(v.get(f))))
    for field, ok in checks:
        if not ok:
            raise ReportError(f"{path}: field {field}: unexpected value")
    return record


def _check_teacher(teacher, path):
    """Refuse teacher_labels.json unless its counts are integers >= 0 and its scores finite numbers
    >= 0 (ReportError naming the file and field): the chain's sentence formats them."""
    if not isinstance(teacher, dict):
        raise ReportError(f"{path}: expected an object, got {type(teacher).__name__}")
    for field in ("scenarios", "labelled", "deviations", *WARM):
        if field not in teacher:
            raise ReportError(f"{path}: field {field} is missing")
        v = teacher[field]
        count = field not in WARM
        if not is_number(v, integer=count, finite=True, minimum=0):
            kind = "an integer" if count else "a finite number"
            raise ReportError(f"{path}: field {field}: expected {kind} >= 0, got {str(v)[:40]!r}")


def chain(learned):
    """Which chain the learned policy came from, and for the taught one its warm start's numbers."""
    t = learned.get("teacher")
    if t is None:
        return "PPO alone from the ATC prior with the tuned k"
    v, a = (t[f] for f in WARM)
    return (
        f"the gated teacher's warm start (`sched farm-teach`: {t['labelled']:,} labels, {t['deviations']:,} "
        f"off ATC, on {t['scenarios']} training seeds; validation {v / 1e3:.3f} k w.s against atc-tuned's "
        f"{a / 1e3:.3f} k, {pct((v / a - 1) * 100 if a else 0.0, 2)}), then PPO (from it only if better "
        "than the ATC prior)"
    )


def _cell(table, policy, reference):
    hit = table[(table["policy"] == policy) & (table["reference"] == reference)]
    if hit.empty:
        return "not benchmarked"
    r = hit.iloc[0]
    return f"{pct(r.diff_pct)} {ci(r.ci_lo_pct, r.ci_hi_pct)}, {r.wins}/{r.ties}/{r.losses}"


def test_rows(learned):
    """[(sync, row name, vs atc-tuned at that sync, vs the shipped rule, vs farm-fifo)] of the test table:
    the sync the setting's row runs at first (its name is NAME), then the adapters' others."""
    table, out = learned["table"], []
    names = list(dict.fromkeys(table["policy"]))
    for s in (0.0, *SYNCS):
        name = NAME if s == 0 else sync_name(NAME, s)
        if name not in names:
            continue
        atc = "atc-tuned" if s == 0 else sync_name("atc-tuned", s)
        out.append((s, name, _cell(table, name, atc), _cell(table, name, "shipped"),
                    _cell(table, name, "farm-fifo")))  # fmt: skip
    return out


def lines(learned):
    """The learned policy's lines of a farm setting's section; none without a learned policy."""
    if learned is None:
        return []
    rec, table = learned["record"], learned["table"]
    named = table.loc[table["reference"] == "shipped", "reference_policy"].astype(str)
    shipped = ", ".join(dict.fromkeys(named))
    v = rec["versus_atc_tuned"]
    ships = "ships" if rec["would_ship"] else "does not ship"
    n = int(table["scenarios"].iloc[0]) if len(table) else 0
    out = [
        "",
        f"Learned farm policy ({NAME}; `sched farm-train`, `sched farm-learned`), every row of the {RUN}:",
        "",
        f"- chain: {chain(learned)}",
        f"- candidacy on {v['seeds']} selection (validation) scenarios against the incumbent atc-tuned: "
        f"{pct(v['diff_pct'])} {ci(v['ci_lo_pct'], v['ci_hi_pct'])}; it {ships}: {rec['reason']}",
        "",
        f"| {NAME} at sync | vs atc-tuned (same sync) | vs the shipped rule ({shipped or 'n/a'}, sync 0 s) "
        f"| vs farm-fifo | run |",
        "|---|---|---|---|---|",
    ]
    for s, _name, atc, rule, fifo in test_rows(learned):
        out.append(f"| {s:g} s | {atc} | {rule} | {fifo} | {RUN} |")
    out += [
        "",
        f"On {n:,} test scenarios, paired intervals, wins/ties/losses per scenario. Its validation mean "
        "by iteration: the right panel of the figure by chain (`learning_by_chain.png`).",
    ]
    return out


def curves(farms):
    """[(setting, cumulative decisions, validation mean, atc-tuned's on the same seeds)] of each farm
    setting of ``farms`` (``read_farms``) with a learning curve: the figure by chain's farm panel."""
    out = []
    for name, _verdict, table in farms or []:
        learned = table.attrs.get("learned")
        if learned is None or learned["curve"] is None:
            continue
        c = learned["curve"].sort_values("iteration")
        x = np.cumsum(c["decisions"].fillna(0).to_numpy(float))
        keep = c["val_mean_twt_s"].notna().to_numpy()
        atc = c["val_atc_tuned_twt_s"].dropna()
        out.append((name, x[keep], c["val_mean_twt_s"].to_numpy(float)[keep],
                    float(atc.iloc[0]) if len(atc) else None))  # fmt: skip
    return out
