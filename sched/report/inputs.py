"""The report's inputs: the benchmark's files, read and checked against each other.

Stale or mixed files would make a report that contradicts itself, so the
summary must match the per-scenario table, the winner must be one of its
policies, and the files must come from the config's scenario settings.
"""

import math
from pathlib import Path

from sched import files, layout
from sched.evaluate.errors import ReportError
from sched.evaluate.per_scenario import check_complete, read_per_scenario
from sched.evaluate.policies import is_ppo, ppo_seed
from sched.evaluate.seeds import train_seeds
from sched.files import read_csv
from sched.formats import json_input
from sched.limits import MAX_VERDICT_BYTES
from sched.verdict.summary import SUMMARY_COLUMNS, UNIT
from sched.verdict.winner import (
    EARLIER_WINNER_KEYS,
    SELECTION_DAYS_KEY,
    SELECTION_KEY,
    SELECTION_KEYS,
    WINNER_KEYS,
)

#: The columns of train_log.csv the report reads (sched.learn.ppo.train_log.RESULT_COLUMNS has them).
TRAIN_LOG_COLUMNS = (
    "iteration",
    "env_steps",
    "mean_episode_weighted_tardiness_s",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
)
#: The columns of its run record, train_log.run.csv (wall times and throughput; NaN without it).
TRAIN_RUN_COLUMNS = ("iteration", "wall_s", "steps_per_s", "collect_s", "update_s")


def read_json(path):
    """A verdict file (winner.json, tuned.json): a regular file of at most MAX_VERDICT_BYTES."""
    return json_input.parse(
        files.read_bytes(path, ReportError, MAX_VERDICT_BYTES), path, ReportError, nan=True
    )


def read_verdict_record(path, check):
    """A verdict file checked as ``rank()`` checks it (``sched.ranking.verdict_files``: each field
    its readers use, and the fields against one another), its data returned; ReportError
    naming the file and field otherwise (never a KeyError deep in a section)."""
    from sched.ranking.tasks import RankInputError

    data = read_json(path)
    try:
        check(data, path)
    except RankInputError as exc:
        raise ReportError(str(exc)) from None
    return data


def read_summary(path):
    """The benchmark's summary (``resume.csv``), with exactly its columns."""
    frame = read_csv(path, ReportError)
    if tuple(frame.columns) != SUMMARY_COLUMNS:
        raise ReportError(
            f"{path}: columns {', '.join(frame.columns)}; expected exactly {', '.join(SUMMARY_COLUMNS)}"
        )
    return frame


def read_winner(path):
    """The winner record (``winner.json``), with exactly its keys (``plan`` before ``setting`` when
    plan's candidacy gated it; ``selection`` last, when the winner was chosen on validation
    scenarios; files without it are read too, and so are those of earlier versions, without
    policy_sha256)."""
    w = read_json(path)
    with_plan = (*WINNER_KEYS[:-1], "plan", WINNER_KEYS[-1])  # gated by plan's candidacy (gate.plan_gate)
    shapes = [
        (*keys, *sel)
        for keys in (WINNER_KEYS, with_plan, EARLIER_WINNER_KEYS)
        for sel in ((), (SELECTION_KEY,))
    ]
    if not isinstance(w, dict) or tuple(w) not in shapes:
        got = ", ".join(w) if isinstance(w, dict) else type(w).__name__
        raise ReportError(
            f"{path}: keys {got}; expected exactly {', '.join(WINNER_KEYS)} (then {SELECTION_KEY})"
        )
    if SELECTION_KEY in w:
        check_selection_record(w[SELECTION_KEY], path)
    return w


def check_selection_record(sel, path):
    """winner.json's ``selection``: {"on": "validation", "seeds": [START, COUNT], "means": {...}}."""
    field = f"{path}: field {SELECTION_KEY}"
    shapes = (SELECTION_KEYS, (*SELECTION_KEYS, SELECTION_DAYS_KEY))
    if not isinstance(sel, dict) or tuple(sel) not in shapes:
        got = ", ".join(sel) if isinstance(sel, dict) else type(sel).__name__
        raise ReportError(f"{field}: keys {got}; expected exactly {', '.join(SELECTION_KEYS)}")
    if sel["on"] != "validation":
        raise ReportError(f'{field}.on: expected "validation", got {sel["on"]!r}')
    seeds = sel["seeds"]
    if not (
        isinstance(seeds, list)
        and len(seeds) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds)
        and seeds[1] > 0
    ):
        raise ReportError(f"{field}.seeds: expected [START, COUNT] (integers, COUNT > 0), got {seeds!r}")
    means = sel["means"]
    if not isinstance(means, dict) or not means:
        raise ReportError(f"{field}.means: expected {{POLICY: MEAN_WS, ...}}, got {means!r}")
    for name, v in means.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ReportError(f"{field}.means.{name}: expected a finite number >= 0, got {v!r}")
    if SELECTION_DAYS_KEY in sel:
        days = sel[SELECTION_DAYS_KEY]
        need = {"days": int, "best_rule": str, "chosen": str, "kept": bool, "leaned_on_days": bool}
        for key, kind in need.items():
            v = days.get(key) if isinstance(days, dict) else None
            if not isinstance(v, kind) or (kind is int and (isinstance(v, bool) or v < 1)):
                raise ReportError(f"{field}.days.{key}: expected {kind.__name__}, got {v!r:.40}")


def read_clairvoyant(path):
    """The clairvoyant table, or None when the file is absent."""
    from sched.evaluate.headroom import CLAIRVOYANT_COLUMNS

    if not Path(path).exists():
        return None
    clair = read_csv(path, ReportError)
    if tuple(clair.columns) != CLAIRVOYANT_COLUMNS:
        raise ReportError(
            f"{path}: columns {', '.join(clair.columns)}; expected {', '.join(CLAIRVOYANT_COLUMNS)}"
        )
    return clair


def read_train_logs(train_dir, seeds):
    """{seed: log frame} for each training seed that has ``seed-<S>/train_log.csv``."""
    logs = {}
    for s in seeds:
        p = Path(train_dir) / layout.seed_subdir(s) / layout.TRAIN_LOG
        if not p.exists():
            continue
        log = read_csv(p, ReportError)
        missing = [c for c in TRAIN_LOG_COLUMNS if c not in log.columns]
        if missing:
            raise ReportError(f"{p}: missing column(s) {', '.join(missing)}")
        if log.empty:
            raise ReportError(f"{p}: no rows")
        logs[s] = _with_run_record(log, p.with_name(layout.TRAIN_RUN_LOG))
    return logs


def _with_run_record(log, path):
    """The log with its run record's timing columns (NaN where the record is absent or has no
    row for an iteration): they are shown apart from the results, never decide anything."""
    import numpy as np

    log = log.drop(columns=[c for c in TRAIN_RUN_COLUMNS[1:] if c in log.columns])
    if not path.exists():
        return log.assign(**dict.fromkeys(TRAIN_RUN_COLUMNS[1:], np.nan))
    run = read_csv(path, ReportError)
    missing = [c for c in TRAIN_RUN_COLUMNS if c not in run.columns]
    if missing:
        raise ReportError(f"{path}: missing column(s) {', '.join(missing)}")
    run = run[list(TRAIN_RUN_COLUMNS)].drop_duplicates("iteration", keep="last")
    return log.merge(run, on="iteration", how="left")


def read_robustness(cfg, robust_dir):
    """[(setting, summary frame or None)] for each setting of robustness.settings."""
    out = []
    for setting in cfg.robustness.settings:
        p = Path(robust_dir) / setting["name"] / layout.SUMMARY
        out.append((setting, read_summary(p) if p.exists() else None))
    return out


def check_summary(per, summary, winner, bench_dir):
    """The summary has the per-scenario table's policies and means; the winner is one of them."""
    means = per.groupby("policy")["total_weighted_tardiness_s"].mean() / UNIT
    if set(means.index) != set(summary["policy"]):
        raise ReportError(
            f"{bench_dir / layout.SUMMARY}: policies {', '.join(summary['policy'])} "
            f"differ from per_scenario.csv's ({', '.join(means.index)})"
        )
    for _, r in summary.iterrows():
        if not math.isclose(r.mean_twt_k, means[r.policy], rel_tol=1e-9, abs_tol=1e-12):
            raise ReportError(
                f"{bench_dir / layout.SUMMARY}: policy {r.policy} field mean_twt_k: "
                f"{r.mean_twt_k} does not match per_scenario.csv ({means[r.policy]}); "
                f"rerun `sched gather` or `sched benchmark`"
            )
    if winner["policy"] not in set(summary["policy"]):
        raise ReportError(f"{bench_dir / layout.WINNER}: policy {winner['policy']} is not in resume.csv")
    chosen = (winner.get(SELECTION_KEY) or {}).get("means", {})
    if chosen and winner["policy"] not in chosen:
        raise ReportError(
            f"{bench_dir / layout.WINNER}: policy {winner['policy']} has no mean in field "
            f"{SELECTION_KEY}.means"
        )


def check_settings(cfg, per, summary, tuned, bench_dir):
    """The files come from the config's scenario settings (the setup section describes the config)."""
    if tuned is None and "atc-tuned" in set(summary["policy"]):
        raise ReportError(f"{bench_dir / layout.TUNED}: file not found (atc-tuned was benchmarked)")
    sc = {key: cfg.scenario[key] for key in ("tasks", "load", "machines")}
    if tuned is not None and tuned.get("scenario") != sc:
        raise ReportError(
            f"{bench_dir / layout.TUNED}: made with scenario settings "
            f"{tuned.get('scenario')}, the config has {sc}; rerun the benchmark"
        )
    expected = sc["tasks"] if sc["tasks"] != "day" else None  # day: the workload's count
    if expected is not None and set(per["tasks"]) != {expected}:
        raise ReportError(
            f"{bench_dir / layout.PER_SCENARIO}: scenarios of "
            f"{sorted(set(per['tasks']))} tasks, the config has scenario.tasks "
            f"{sc['tasks']}; rerun the benchmark"
        )


def load(bench_dir, train_dir, demo_dir, cfg):
    """Every input of the report, checked for consistency: a dict of tables and records."""
    bench_dir = Path(bench_dir)
    per = read_per_scenario(bench_dir / layout.PER_SCENARIO)
    check_complete(per, str(bench_dir / layout.PER_SCENARIO))
    summary = read_summary(bench_dir / layout.SUMMARY)
    winner = read_winner(bench_dir / layout.WINNER)
    check_summary(per, summary, winner, bench_dir)
    tuned = read_json(bench_dir / layout.TUNED) if (bench_dir / layout.TUNED).exists() else None
    check_settings(cfg, per, summary, tuned, bench_dir)
    clair = read_clairvoyant(bench_dir / layout.CLAIRVOYANT)
    demo = None
    if demo_dir is not None and (Path(demo_dir) / layout.DEMO_TABLE).exists():
        demo = read_per_scenario(Path(demo_dir) / layout.DEMO_TABLE)
    ppo_seeds = sorted({ppo_seed(p) for p in summary["policy"] if is_ppo(p)} | set(train_seeds(cfg)))
    logs = read_train_logs(train_dir, ppo_seeds)
    return {
        "per": per,
        "summary": summary,
        "winner": winner,
        "tuned": tuned,
        "clair": clair,
        "demo": demo,
        "logs": logs,
    }
