"""The per-scenario table (``per_scenario.csv``): one row per scenario x policy.

The benchmark writes it for its range of test seeds (a shard or all of
them); ``sched gather`` joins the shards; the summary and the winner are
computed from it alone.
"""

from pathlib import Path

import numpy as np
import pandas as pd

from sched import files
from sched.config import shorten
from sched.data.objective import tardiness, weighted_tardiness
from sched.evaluate.errors import BenchmarkError
from sched.evaluate.policies import PLANNERS, is_heuristic, is_learned, policy_key
from sched.evaluate.seeds import range_text

PER_SCENARIO_COLUMNS = (
    "scenario_seed",
    "policy",
    "total_weighted_tardiness_s",
    "mean_tardiness_s",
    "p90_tardiness_s",
    "max_tardiness_s",
    "tardy_fraction",
    "mean_flow_time_s",
    "tasks",
)


def schedule_metrics(arrays, start, end, counted_from=0.0):
    """The per-scenario columns (all but seed and policy) of one schedule; with ``counted_from``
    (a scenario's warm-up, ``Scenario.counted_from_s``) only the tasks arriving from then on."""
    arrival, _duration, _estimate, weight, due = arrays
    if counted_from > 0:
        keep = arrival >= counted_from
        arrival, weight, due = arrival[keep], weight[keep], due[keep]
        end = np.asarray(end)[keep]
    tard = tardiness(end, due)
    return {
        "total_weighted_tardiness_s": weighted_tardiness(end, due, weight),
        "mean_tardiness_s": float(tard.mean()),
        "p90_tardiness_s": float(np.percentile(tard, 90)),
        "max_tardiness_s": float(tard.max()),
        "tardy_fraction": float((tard > 0).mean()),
        "mean_flow_time_s": float((np.asarray(end) - arrival).mean()),
        "tasks": int(len(tard)),
    }


def sort_frame(frame):
    """Rows by policy (table order), then scenario seed."""
    order = {p: i for i, p in enumerate(sorted(set(frame["policy"]), key=policy_key))}
    key = frame["policy"].map(order)
    return (
        frame.assign(_order=key)
        .sort_values(["_order", "scenario_seed"], kind="stable")
        .drop(columns="_order")
        .reset_index(drop=True)
    )


def read_per_scenario(path):
    """Read and check a per-scenario CSV (exact columns, valid values)."""
    path = Path(path)
    frame = files.read_csv(path, BenchmarkError, dtype={"policy": str})
    if tuple(frame.columns) != PER_SCENARIO_COLUMNS:
        raise BenchmarkError(
            f"{path}: columns {', '.join(map(str, frame.columns))}; expected "
            f"exactly {', '.join(PER_SCENARIO_COLUMNS)}"
        )
    if frame.empty:
        raise BenchmarkError(f"{path}: no rows")
    for col in PER_SCENARIO_COLUMNS:
        if col == "policy":
            _check_policy_names(path, frame[col])
        else:
            frame[col] = _numbers(path, col, frame[col])
    for col in ("scenario_seed", "tasks"):
        if (frame[col] != frame[col].round()).any():
            i = int(np.argmax((frame[col] != frame[col].round()).to_numpy()))
            raise BenchmarkError(
                f"{path}: row {i + 1} (line {i + 2}) field {col}: expected an "
                f"integer, got {frame[col].iloc[i]!r}"
            )
        frame[col] = frame[col].astype(np.int64)
    return frame


def _check_policy_names(path, names):
    bad = names.isna() | ~names.astype(str).map(lambda n: is_heuristic(n) or is_learned(n) or n in PLANNERS)
    if bad.any():
        i = int(np.argmax(bad.to_numpy()))
        raise BenchmarkError(
            f"{path}: row {i + 1} (line {i + 2}) field policy: unknown policy {shorten(names.iloc[i])}"
        )


def _numbers(path, col, column):
    """The column as numbers, each finite and >= 0."""
    values = pd.to_numeric(column, errors="coerce")
    bad = ~np.isfinite(values.to_numpy(dtype=float)) | (values.to_numpy(dtype=float) < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise BenchmarkError(
            f"{path}: row {i + 1} (line {i + 2}) field {col}: expected a "
            f"finite number >= 0, got {column.iloc[i]!r}"
        )
    return values


def check_complete(frame, source="per-scenario table", seeds=None, split="test"):
    """No duplicate scenario x policy, and every policy on every seed (and only ``seeds``, the
    ``split`` seeds: "test" or "selection", as the messages name them)."""
    dup = frame.duplicated(["scenario_seed", "policy"])
    if dup.any():
        r = frame[dup].iloc[0]
        raise BenchmarkError(
            f"{source}: scenario {r.scenario_seed} x policy {r.policy} appears "
            f"more than once (overlapping shards?)"
        )
    have = set(frame["scenario_seed"])
    if seeds is not None:
        want = set(seeds)
        missing, extra = sorted(want - have), sorted(have - want)
        if missing:
            raise BenchmarkError(
                f"{source}: {len(missing)} {split} seed(s) missing, first "
                f"{missing[0]} (expected {range_text(seeds)}: a shard is missing?)"
            )
        if extra:
            raise BenchmarkError(
                f"{source}: seed {extra[0]} is not one of the {split} seeds {range_text(seeds)}"
            )
    for policy, g in frame.groupby("policy"):
        lack = sorted(have - set(g["scenario_seed"]))
        if lack:
            raise BenchmarkError(
                f"{source}: policy {policy} has no row for scenario {lack[0]} "
                f"({len(lack)} missing; every policy must run on every scenario)"
            )
    return frame


def gather(paths, seeds=None, split="test", what="gathered shards"):
    """Concatenate per-scenario shards into one checked table (``seeds``: of ``split``)."""
    if not paths:
        raise BenchmarkError("gather: no shard files given")
    frames = [read_per_scenario(p) for p in paths]
    policies = [tuple(sorted(set(f["policy"]), key=policy_key)) for f in frames]
    for p, pol in zip(paths[1:], policies[1:]):
        if pol != policies[0]:
            raise BenchmarkError(
                f"{p}: policies {', '.join(pol)} differ from {paths[0]}'s ({', '.join(policies[0])})"
            )
    frame = pd.concat(frames, ignore_index=True)
    check_complete(frame, what, seeds, split)
    return sort_frame(frame)


def join_planners(frame, path, seeds):
    """The gathered shards' table ``frame`` with the planners' table at ``path`` (policies plan and
    teacher only, on every one of the test ``seeds``: the workflow's benchmark_plan) joined."""
    extra = read_per_scenario(path)
    others = sorted(set(extra["policy"]) - set(PLANNERS))
    if others:
        raise BenchmarkError(f"{path}: policy {others[0]} is not a planner ({', '.join(PLANNERS)})")
    clash = sorted(set(extra["policy"]) & set(frame["policy"]))
    if clash:
        raise BenchmarkError(f"{path}: policy {clash[0]} is in the shards too")
    joined = pd.concat([frame, extra], ignore_index=True)
    check_complete(joined, f"shards and {path}", seeds)
    return sort_frame(joined)


def matrix(frame):
    """Total weighted tardiness as (scenario seeds, {policy: array in seed order})."""
    seeds = np.array(sorted(set(frame["scenario_seed"])), dtype=np.int64)
    table = frame.pivot(index="scenario_seed", columns="policy", values="total_weighted_tardiness_s").loc[
        seeds
    ]
    return seeds, {p: table[p].to_numpy(dtype=float) for p in sorted(table.columns, key=policy_key)}
