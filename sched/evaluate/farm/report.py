"""The report's rows of the chunked farm settings (config farm.settings; ``sched farm-bench``).

Two parts, every number read from each setting's ``farm.csv`` and ``farm_verdict.json``
(:mod:`sched.evaluate.farm.bench`): under the first table, one row a chunked setting (the decision
chosen on its validation scenarios, which ``rank()`` is to run there, against tuned ATC, the best
rule and ``farm-fifo`` on its test scenarios); and the section "Chunked farm settings": every
policy against ``farm-fifo``, ``farm-balanced`` and tuned ATC, then the comparisons the issue
names (frame level against the same jobs run whole, the shipped decision against the farm's
dispatchers at sync 0, 60 and 300 s), and, in the longer run, the learned farm policy's candidacy
and test rows (:mod:`.learned_report`).
"""

from pathlib import Path

import numpy as np
import pandas as pd

from sched import files, layout
from sched.evaluate.errors import ReportError
from sched.evaluate.farm import learned_report
from sched.evaluate.farm import plan_candidacy as pcand
from sched.evaluate.farm.bench import FARM_COLUMNS, FIFO_CAPPED, SYNCS, WHOLE, sync_name
from sched.evaluate.farm.headroom import NAME as CLAIRVOYANT
from sched.formats.json_input import is_number
from sched.report.format import ci, k, pct
from sched.report.inputs import read_json
from sched.verdict.summary import UNIT


def read_farms(dirs):
    """[(name, verdict, farm.csv frame)] of each farm setting's folder in ``dirs`` (those built)."""
    out = []
    for d in dirs or []:
        d = Path(d)
        if not (d / layout.FARM_TABLE).exists() or not (d / layout.FARM_VERDICT).exists():
            continue
        table = files.read_csv(d / layout.FARM_TABLE, ReportError, dtype={"policy": str, "reference": str})
        if tuple(table.columns) != FARM_COLUMNS:
            raise ReportError(
                f"{d / layout.FARM_TABLE}: columns {', '.join(table.columns)}; "
                f"expected {', '.join(FARM_COLUMNS)}"
            )
        if (d / layout.FARM_PLAN).exists():  # plan's candidacy (the longer run's)
            table.attrs["plan"] = pcand.check(
                read_json(d / layout.FARM_PLAN), d / layout.FARM_PLAN, ReportError
            )
        learned = learned_report.read(d)  # the learned farm policy (the longer run's), else None
        verdict = _check_verdict(read_json(d / layout.FARM_VERDICT), d / layout.FARM_VERDICT)
        if learned is not None:
            if verdict.get("policy") == learned_report.NAME:  # it ships: its rows are the shipped decision's
                attrs = dict(table.attrs)
                table = pd.concat([table, learned["table"]], ignore_index=True)
                table.attrs.update(attrs)
            table.attrs["learned"] = learned
        out.append((d.name, verdict, table))
    return out


def _check_verdict(verdict, path):
    """``verdict`` (a farm_verdict.json) when the fields the report formats have their types (policy
    and reason strings; atc_k, sync_s and cap numbers >= 0 or null; policy_file an object or
    absent), else ReportError naming the file and field (rank() checks the whole file,
    sched.ranking.farm.plan.check_farm_verdict)."""

    def number(x, integer=False):
        return x is None or is_number(x, integer, finite=True, minimum=0)

    if not isinstance(verdict, dict):
        raise ReportError(f"{path}: expected a JSON object, got {type(verdict).__name__}")
    checks = [("policy", isinstance(verdict.get("policy"), str)),
              ("reason", isinstance(verdict.get("reason"), str)),
              ("atc_k", number(verdict.get("atc_k"))), ("sync_s", number(verdict.get("sync_s"))),
              ("cap", number(verdict.get("cap"), integer=True)),
              ("policy_file", isinstance(verdict.get("policy_file", {}), dict))]  # fmt: skip
    for field, ok in checks:
        if not ok:
            raise ReportError(f"{path}: field {field}: unexpected value {str(verdict.get(field))[:40]!r}")
    return verdict


def _row(table, policy, reference):
    hit = table[(table["policy"] == policy) & (table["reference"] == reference)]
    return None if hit.empty else hit.iloc[0]


def _cell(table, policy, reference):
    """'d % [lo, hi], W/T/L' of ``policy`` against ``reference`` (its farm.csv row)."""
    r = _row(table, policy, reference)
    if r is None:
        return "not benchmarked"
    if r.reference_policy == policy or not isinstance(r.reference_policy, str):
        return "— (itself)"
    return f"{pct(r.diff_pct)} {ci(r.ci_lo_pct, r.ci_hi_pct)}, {r.wins}/{r.ties}/{r.losses}"


def _runs(verdict):
    p = verdict["policy"]
    if isinstance(verdict.get("policy_file"), dict):  # the learned farm policy (its candidacy ships it)
        return (
            f"{p} (its policy file {verdict['policy_file'].get('path')}; {learned_report.RUN}), frame level"
        )
    kk = verdict.get("atc_k")
    sync = verdict.get("sync_s") or 0
    cap = verdict.get("cap")
    name = f"{p} (k = {kk:g})" if kk is not None else p
    name += f", at most {cap} chunks of a job at once" if cap else ""
    return name + (f" at sync {sync:g} s" if sync else "") + ", frame level"


def first_table_lines(farms):
    """The chunked settings' rows under the report's first table (none when no farm was built)."""
    if not farms:
        return []
    trained = any("learned" in t.attrs for _, _, t in farms)
    kind = (
        "rules, and a learned policy where the longer run trains one"
        if trained
        else "rules only, no training"
    )
    lines = [
        "",
        f"Chunked farm settings (jobs of frames; {kind}): the decision chosen on each "
        "setting's validation scenarios, which `rank()` is to run on that farm, against tuned ATC, the "
        "best rule and the farm's own dispatcher `farm-fifo` on its test scenarios (section "
        '"Chunked farm settings").',
        "",
        "| setting | rank() runs | vs atc-tuned (test) | vs the best rule (test) | vs farm-fifo (test) "
        "| clairvoyant vs it (first test scenarios) |",
        "|---|---|---|---|---|---|",
    ]
    for name, verdict, table in farms:
        p = verdict["policy"]
        best = _row(table, p, "best-rule")
        best_name = best.reference_policy if best is not None else "n/a"
        lines.append(
            f"| {name} | {_runs(verdict)} | {_cell(table, p, 'atc-tuned')} | "
            f"{best_name}: {_cell(table, p, 'best-rule')} | {_cell(table, p, 'farm-fifo')} | "
            f"{_headroom(table)} |"
        )
    return lines


def section_lines(farms):
    """The section "Chunked farm settings" (empty when no farm was built)."""
    if not farms:
        return []
    lines = [
        "## Chunked farm settings",
        "",
        "Jobs of frames on a render farm (config `farm.settings`, `sched farm-bench`): each job's work is "
        "frames × time per frame, cut into chunks the farm dispatches one GPU each. `farm-fifo` stands for "
        "OpenCue's and Deadline's default (job priority, then submission order), `farm-balanced` for "
        "Deadline Cloud's `priorityBalanced` and OpenCue's BALANCED (equal priorities share the free hosts). "
        f"`{WHOLE}` runs the same jobs whole and non-preemptive (today's model) under tuned ATC; "
        "`<policy>-sync-<S>s` is the policy as the adapters run it, ranking every S seconds. "
        "`atc-tuned-cap` limits every job to a number of chunks at once tuned on the validation seeds "
        "(a farm's job limit: Deadline Cloud's `maxWorkerCount`, OpenCue's job `max_cores`), "
        "`farm-fifo-cap` is farm-fifo with that limit. "
        "Paired bootstrap intervals over the test scenarios; wins/ties/losses per scenario. "
        f"`{CLAIRVOYANT}` knows the future: per scenario the lower of the best rule and the best job "
        "priority list a local search finds (`sched.sim.farm_clairvoyant`: a list is what a farm runs "
        "when each job's priority is set once), on the first test scenarios only: the headroom below "
        "the shipped decision, not a contestant.",
    ]
    for name, verdict, table in farms:
        p = verdict["policy"]
        n = int(table["scenarios"].iloc[0])
        lines += ["", f"### {name}", "", f"Shipped: {_runs(verdict)}; {verdict['reason']}.", ""]
        lines += _comparisons(table, p)
        lines += learned_report.lines(table.attrs.get("learned"))
        lines += [
            "",
            f"Every policy ({n:,} test scenarios; mean total weighted tardiness in thousands of weighted "
            "seconds):",
            "",
            "| policy | mean (k w.s) | vs farm-fifo | vs farm-balanced | vs atc-tuned |",
            "|---|---:|---|---|---|",
        ]
        for pol in dict.fromkeys(table["policy"]):
            if pol == CLAIRVOYANT:  # on fewer scenarios: its own line above
                continue
            r = _row(table, pol, "farm-fifo")
            mean = r.mean_twt_k if r is not None else np.nan
            lines.append(
                f"| {pol} | {k(mean)} | {_cell(table, pol, 'farm-fifo')} | "
                f"{_cell(table, pol, 'farm-balanced')} | {_cell(table, pol, 'atc-tuned')} |"
            )
    return lines


def _headroom(table):
    """'d % [lo, hi], W/T/L on N scenarios' of the clairvoyant reference against the shipped
    decision ('not computed' when its row is absent)."""
    r = _row(table, CLAIRVOYANT, "shipped")
    if r is None:
        return "not computed"
    return f"{_cell(table, CLAIRVOYANT, 'shipped')} on {int(r.scenarios):,}"


def _comparisons(table, p):
    """The comparisons the issue names, one line each."""
    out = [
        "- tuned ATC at frame boundaries against the same jobs run whole: "
        f"{_cell(table, 'atc-tuned', WHOLE)}",
        f"- the shipped decision ({p}) against farm-fifo: {_cell(table, p, 'farm-fifo')}; against "
        f"farm-balanced: {_cell(table, p, 'farm-balanced')}; against atc-tuned: "
        f"{_cell(table, p, 'atc-tuned')}; against the jobs run whole: {_cell(table, p, WHOLE)}",
    ]
    if _row(table, FIFO_CAPPED, "farm-fifo") is not None:
        alone = _cell(table, FIFO_CAPPED, "farm-fifo")
        out.append(f"- the job limit alone ({FIFO_CAPPED}) against farm-fifo: {alone}")
    if _row(table, CLAIRVOYANT, "shipped") is not None:
        out.append(
            f"- the clairvoyant reference against the shipped decision: {_headroom(table)} test scenarios; "
            f"against farm-fifo: {_cell(table, CLAIRVOYANT, 'farm-fifo')}"
        )
    plan = table.attrs.get("plan")
    if plan is not None and plan.get("run"):
        v, st, vs = plan["validation"], plan["settings"], plan.get("against", "atc-tuned")
        out.append(
            f"- plan on tuned ATC ({st['candidates']} candidates x {st['samples']} samples) against "
            f"{vs} on {v['seeds'][1]} validation scenarios: {pct(v['diff_pct'])} "
            f"{ci(v['ci_lo_pct'], v['ci_hi_pct'])}, {v['wins']}/{v['ties']}/{v['losses']}; means "
            f"{k(v['mean_twt_s'] / UNIT)} against {k(v['base_mean_twt_s'] / UNIT)} k w.s "
            f"(the longer run's candidacy): {plan['reason']}"
        )
    elif plan is not None:
        out.append(f"- plan on the chunked farm: {plan['reason']}")
    itself = "itself" if p != learned_report.NAME else "the rules' choice"  # farm_learned.csv's "shipped"
    for s in SYNCS:
        q = sync_name(p, s)
        if _row(table, q, "farm-fifo") is not None:
            out.append(
                f"- the shipped decision at sync {s:g} s against farm-fifo: {_cell(table, q, 'farm-fifo')}; "
                f"against farm-balanced: {_cell(table, q, 'farm-balanced')}; against {itself} at sync 0: "
                f"{_cell(table, q, 'shipped')}; against atc-tuned at sync {s:g} s: "
                f"{_cell(table, q, sync_name('atc-tuned', s))}"
            )
    return out
