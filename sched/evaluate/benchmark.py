"""The benchmark: every policy on the same unseen test scenarios, and its statistics.

Steps (each a ``sched`` command, so the workflow can run them as separate jobs):

* ``tune``: ATC's look-ahead k chosen on validation seeds (:func:`tune_atc_k`);
* ``benchmark``: per-scenario results of each policy on a range of test seeds,
  a shard or the whole test set (:func:`run_policies`);
* ``gather``: shards concatenated and checked (:func:`gather`);
* the summary (``resume.csv``) and the winner (``winner.json``) are computed
  from the per-scenario table alone (:func:`analyse`), so a full run and the
  gathering of its shards give the same files.

Scenario seeds: test scenarios are the first ``benchmark.scenarios`` seeds of
``seeds.test``, validation scenarios the first ``benchmark.validation_scenarios``
of ``seeds.validation``; both are checked disjoint from each other and from the
training seeds here, not only in the config.

Statistics: "difference %" is (mean_policy - mean_ref) / mean_ref * 100 over
the same scenarios (paired); its interval is a percentile interval of the
paired bootstrap (scenarios drawn with replacement, the same draws for every
policy and reference, seeded from the config).
"""

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from sched import files
from sched.config import ConfigError, seed_range
from sched.errors import SchedError
from sched.sim import rules
from sched.sim.objective import tardiness, weighted_tardiness

#: The heuristics in the order every table lists them.
HEURISTICS = ("fifo", "spt", "edd", "wspt", "atc", "wmdd", "atc-tuned")
#: Training seeds benchmarked when the config has no ``train.seeds``.
DEFAULT_TRAIN_SEEDS = (1, 2, 3)
PPO_POLICY_FILE = "results/train/seed-{seed}/politique.pt"
DEFAULT_TUNED = "results/benchmark/tuned.json"
DEFAULT_BENCH_DIR = "results/benchmark"

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
RESUME_COLUMNS = (
    "policy",
    "rank",
    "scenarios",
    "atc_k",
    "mean_twt_k",
    "mean_twt_ci_lo_k",
    "mean_twt_ci_hi_k",
    "p90_twt_k",
    "gain_vs_fifo_pct",
    "diff_vs_atc_pct",
    "diff_vs_atc_ci_lo_pct",
    "diff_vs_atc_ci_hi_pct",
    "wins_vs_atc",
    "ties_vs_atc",
    "losses_vs_atc",
    "best_heuristic",
    "diff_vs_best_heuristic_pct",
    "diff_vs_best_heuristic_ci_lo_pct",
    "diff_vs_best_heuristic_ci_hi_pct",
    "wins_vs_best_heuristic",
    "ties_vs_best_heuristic",
    "losses_vs_best_heuristic",
)
WINNER_KEYS = (
    "policy",
    "rule",
    "atc_k",
    "policy_file",
    "significant",
    "runner_up",
    "mean_difference_pct",
    "ci95_pct",
    "reason",
)
#: Weighted seconds per reporting unit ("k" columns: thousands of weighted seconds).
UNIT = 1000.0

_PPO = re.compile(r"^ppo-(\d+)$")


class BenchmarkError(SchedError):
    """Bad benchmark input (seeds, policies, files); the message names what and where."""


# --------------------------------------------------------------------------- seeds


def _overlap(a, b):
    return max(a.start, b.start) < min(a.stop, b.stop)


def _split_seeds(cfg, split, count):
    """The first ``count`` seeds of ``split``, verified disjoint from the other splits."""
    seeds = seed_range(cfg, split)
    if count > len(seeds):
        raise ConfigError(
            f"config: {count} {split} scenarios asked but seeds.{split} has only {len(seeds)} seeds"
        )
    chosen = seeds[:count]
    for other in cfg["seeds"]:
        if other != split and _overlap(chosen, seed_range(cfg, other)):
            raise ConfigError(f"config: {split} seeds {chosen.start}-{chosen.stop - 1} overlap seeds.{other}")
    return chosen


def benchmark_seeds(cfg):
    """The benchmark's test scenarios: the first ``benchmark.scenarios`` seeds of seeds.test."""
    return _split_seeds(cfg, "test", cfg["benchmark"]["scenarios"])


def validation_seeds(cfg):
    """Seeds on which ATC's k is tuned: the first ``benchmark.validation_scenarios`` of seeds.validation."""
    return _split_seeds(cfg, "validation", cfg["benchmark"]["validation_scenarios"])


def clairvoyant_seeds(cfg):
    """The first ``benchmark.clairvoyant.scenarios`` test seeds."""
    return benchmark_seeds(cfg)[: cfg["benchmark"]["clairvoyant"]["scenarios"]]


def shard_ranges(cfg):
    """The test seeds cut into ``benchmark.shards`` consecutive ranges of near-equal size."""
    seeds = benchmark_seeds(cfg)
    cuts = np.linspace(0, len(seeds), cfg["benchmark"]["shards"] + 1).round().astype(int)
    return [seeds[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def range_text(seeds):
    """'A-B' (inclusive) for a range of seeds, as ``--seeds`` takes it."""
    return f"{seeds.start}-{seeds.stop - 1}" if len(seeds) > 1 else f"{seeds.start}"


def parse_seed_range(text):
    """``'A-B'`` (inclusive) or ``'N'`` -> range."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(text))
    if not m:
        raise BenchmarkError(f"--seeds: expected A-B or N (non-negative integers), got {text!r}")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    if hi < lo:
        raise BenchmarkError(f"--seeds: {text!r} ends before it starts")
    return range(lo, hi + 1)


def check_within(
    seeds, allowed, what, allowed_name="the test seeds", source="benchmark.scenarios of seeds.test"
):
    """Refuse seeds outside ``allowed`` (a range), naming the first one."""
    if len(seeds) == 0:
        raise BenchmarkError(f"{what}: no seeds")
    if seeds.start < allowed.start or seeds.stop > allowed.stop:
        bad = seeds.start if seeds.start < allowed.start else seeds.stop - 1
        raise BenchmarkError(
            f"{what}: seed {bad} is not one of {allowed_name} {range_text(allowed)} ({source})"
        )
    return seeds


# --------------------------------------------------------------------------- policies


def train_seeds(cfg):
    """Training seeds whose PPO policies are benchmarked (config ``train.seeds``)."""
    return list((cfg.get("train") or {}).get("seeds", DEFAULT_TRAIN_SEEDS))


def is_ppo(name):
    return bool(_PPO.match(name))


def is_heuristic(name):
    return name in HEURISTICS


def policy_key(name):
    """Sort key: heuristics in table order, then PPO by training seed."""
    if name in HEURISTICS:
        return (0, HEURISTICS.index(name), "")
    m = _PPO.match(name)
    return (1, int(m.group(1)), "") if m else (2, 0, name)


def default_policies(cfg):
    return list(HEURISTICS) + [f"ppo-{s}" for s in train_seeds(cfg)]


def parse_policies(text, cfg):
    """Comma-separated policy names (None: every heuristic and every trained PPO)."""
    if text is None:
        return default_policies(cfg)
    names = [p.strip() for p in str(text).split(",") if p.strip()]
    if not names:
        raise BenchmarkError("--policies: empty list")
    for n in names:
        if not (is_heuristic(n) or is_ppo(n)):
            raise BenchmarkError(
                f"--policies: unknown policy {n!r}; expected {', '.join(HEURISTICS)} or ppo-<training seed>"
            )
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BenchmarkError(f"--policies: {', '.join(dup)} given twice")
    return sorted(names, key=policy_key)


def parse_policy_files(items):
    """``['ppo-1=PATH', ...]`` -> {'ppo-1': Path}."""
    out = {}
    for item in items or []:
        name, sep, path = str(item).partition("=")
        name = name.strip()
        if not sep or not path.strip() or not is_ppo(name):
            raise BenchmarkError(f"--policy-file: expected ppo-<seed>=PATH, got {item!r}")
        if name in out:
            raise BenchmarkError(f"--policy-file: {name} given twice")
        out[name] = Path(path.strip())
    return out


def read_tuned(path):
    """The tuned ATC k from ``sched tune``'s file."""
    import json

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchmarkError(
            f"{path}: tuned-k file not found (run `sched tune` first, or leave atc-tuned out of --policies)"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchmarkError(f"{path}: not valid JSON: {exc}") from None
    k = data.get("atc_k") if isinstance(data, dict) else None
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not np.isfinite(k) or k <= 0:
        raise BenchmarkError(f"{path}: field atc_k: expected a number > 0, got {k!r}")
    return data


def resolve_policies(cfg, names, tuned=None, policy_files=None, missing_ok=False):
    """How to run each named policy: {name: spec}.

    A spec has ``kind`` ('rule' or 'ppo'), ``rule`` and ``atc_k`` for a rule,
    ``policy_file`` for PPO. ``tuned``: path of ``sched tune``'s file (needed
    for atc-tuned). ``policy_files`` overrides the default policy file of a
    PPO policy. A missing file is an error, unless ``missing_ok``: then the
    policy is left out and listed under the key ``None``.
    """
    policy_files = dict(policy_files or {})
    unused = set(policy_files) - set(names)
    if unused:
        raise BenchmarkError(
            f"--policy-file: {', '.join(sorted(unused))} is not among the policies run ({', '.join(names)})"
        )
    specs, skipped = {}, []
    for name in names:
        if name == "atc-tuned":
            path = Path(tuned or DEFAULT_TUNED)
            if missing_ok and not path.exists():
                skipped.append(f"{name} ({path} not found)")
                continue
            specs[name] = {
                "kind": "rule",
                "rule": "atc",
                "atc_k": float(read_tuned(path)["atc_k"]),
                "policy_file": None,
            }
        elif is_heuristic(name):
            k = float(cfg["rules"]["atc_k"]) if name == "atc" else None
            specs[name] = {"kind": "rule", "rule": name, "atc_k": k, "policy_file": None}
        else:
            seed = int(_PPO.match(name).group(1))
            path = policy_files.get(name, Path(PPO_POLICY_FILE.format(seed=seed)))
            if not Path(path).is_file():
                if missing_ok and name not in policy_files:
                    skipped.append(f"{name} ({path} not found)")
                    continue
                raise BenchmarkError(
                    f"policy {name}: policy file {path} not found (train it with `sched train`, "
                    f"or name another file with --policy-file {name}=PATH)"
                )
            specs[name] = {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": str(path)}
    return specs, skipped


# --------------------------------------------------------------------------- running


def schedule_metrics(arrays, start, end):
    """The per-scenario columns (all but seed and policy) of one schedule."""
    arrival, _duration, _estimate, weight, due = arrays
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


def generate_scenarios(cfg, seeds, progress=False):
    from sched.data.scenario import generate

    seeds = list(seeds)
    it = _bar(seeds, "scenarios", progress)
    return [generate(cfg, s) for s in it]


def _bar(iterable, desc, progress, total=None):
    if not progress:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, file=sys.stderr, leave=False, dynamic_ncols=True)


def schedule_policy(spec, scenarios, arrays, machines):
    """(start, end, machine) per scenario under one policy spec, in one batched call."""
    if spec["kind"] == "rule":
        from sched.sim.core import simulate_batch

        k = spec["atc_k"] if spec["atc_k"] is not None else rules.ATC_K_DEFAULT
        return simulate_batch(arrays, spec["rule"], machines=machines, k=k)
    from sched.evaluate.runs import schedule_scenarios

    return schedule_scenarios(scenarios, "ppo", machines=machines, policy_file=spec["policy_file"])


def warm_up(machines):
    """Compile (or load from numba's cache) the rollouts, serial and parallel, outside timings."""
    import numba

    from sched.sim.core import simulate_batch

    tiny = (np.array([0.0, 1.0]), np.ones(2), np.ones(2), np.ones(2), np.full(2, 5.0))
    simulate_batch([tiny], "fifo", machines=machines)
    simulate_batch([tiny] * (2 * numba.get_num_threads()), "fifo", machines=machines)


def run_policies(cfg, seeds, specs, progress=False, timings=None):
    """Per-scenario table of every policy in ``specs`` on the scenarios of ``seeds``.

    All policies see the same scenarios (common random numbers). ``timings``,
    a dict, receives each policy's scheduling wall time in seconds.
    """
    import time

    seeds = list(seeds)
    machines = cfg["scenario"]["machines"]
    scenarios = generate_scenarios(cfg, seeds, progress)
    arrays = [s.arrays for s in scenarios]
    if any(s["kind"] == "rule" for s in specs.values()):
        warm_up(machines)
    rows = []
    names = sorted(specs, key=policy_key)
    for name in _bar(names, "policies", progress):
        t0 = time.perf_counter()
        results = schedule_policy(specs[name], scenarios, arrays, machines)
        if timings is not None:
            timings[name] = time.perf_counter() - t0
        if len(results) != len(arrays):
            raise RuntimeError(f"policy {name}: {len(results)} schedules for {len(arrays)} scenarios")
        for seed, arr, (start, end, _mach) in zip(seeds, arrays, results):
            rows.append({"scenario_seed": seed, "policy": name, **schedule_metrics(arr, start, end)})
    return sort_frame(pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS)))


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


# --------------------------------------------------------------------------- per-scenario files


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
            bad = frame[col].isna() | ~frame[col].astype(str).map(lambda n: is_heuristic(n) or is_ppo(n))
            if bad.any():
                i = int(np.argmax(bad.to_numpy()))
                raise BenchmarkError(
                    f"{path}: row {i + 1} (line {i + 2}) field policy: unknown policy {frame[col].iloc[i]!r}"
                )
            continue
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float)) | (values.to_numpy(dtype=float) < 0)
        if bad.any():
            i = int(np.argmax(bad))
            raise BenchmarkError(
                f"{path}: row {i + 1} (line {i + 2}) field {col}: expected a "
                f"finite number >= 0, got {frame[col].iloc[i]!r}"
            )
        frame[col] = values
    for col in ("scenario_seed", "tasks"):
        if (frame[col] != frame[col].round()).any():
            i = int(np.argmax((frame[col] != frame[col].round()).to_numpy()))
            raise BenchmarkError(
                f"{path}: row {i + 1} (line {i + 2}) field {col}: expected an "
                f"integer, got {frame[col].iloc[i]!r}"
            )
        frame[col] = frame[col].astype(np.int64)
    return frame


def check_complete(frame, source="per-scenario table", seeds=None):
    """No duplicate scenario x policy, and every policy on every seed (and only ``seeds``)."""
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
                f"{source}: {len(missing)} test seed(s) missing, first "
                f"{missing[0]} (expected {range_text(seeds)}: a shard is missing?)"
            )
        if extra:
            raise BenchmarkError(
                f"{source}: seed {extra[0]} is not one of the test seeds {range_text(seeds)}"
            )
    for policy, g in frame.groupby("policy"):
        lack = sorted(have - set(g["scenario_seed"]))
        if lack:
            raise BenchmarkError(
                f"{source}: policy {policy} has no row for scenario {lack[0]} "
                f"({len(lack)} missing; every policy must run on every scenario)"
            )
    return frame


def gather(paths, seeds=None):
    """Concatenate per-scenario shards into one checked table."""
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
    check_complete(frame, "gathered shards", seeds)
    return sort_frame(frame)


# --------------------------------------------------------------------------- statistics


def bootstrap_counts(n, resamples, seed):
    """How often each scenario is drawn in each resample: (resamples, n) integers."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)


def _interval(samples, level):
    """Percentile interval of the finite bootstrap samples.

    A resample can be undefined (every drawn scenario has a zero reference
    total, so the relative difference is 0/0): such resamples are left out.
    When more than half are, no interval is given (NaN).
    """
    a = (1.0 - level) / 2.0
    finite = samples[np.isfinite(samples)]
    if finite.size == 0 or finite.size < samples.size / 2:
        return float("nan"), float("nan")
    lo, hi = np.quantile(finite, [a, 1.0 - a])
    return float(lo), float(hi)


def paired_difference(x, ref, counts, level):
    """(difference %, CI low %, CI high %) of mean(x) vs mean(ref), paired by scenario."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    if ref.sum() <= 0:
        return float("nan"), float("nan"), float("nan")
    point = (x.sum() - ref.sum()) / ref.sum() * 100.0
    sx, sr = counts @ x, counts @ ref
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = (sx - sr) / sr * 100.0
    lo, hi = _interval(samples, level)
    return float(point), lo, hi


def win_tie_loss(x, ref, rel, abs_s):
    """Scenarios where x is lower than ref (wins), equal within the tolerance (ties), higher."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    tie = np.abs(x - ref) <= abs_s + rel * np.maximum(np.abs(x), np.abs(ref))
    return int(((x < ref) & ~tie).sum()), int(tie.sum()), int(((x > ref) & ~tie).sum())


def matrix(frame):
    """Total weighted tardiness as (scenario seeds, {policy: array in seed order})."""
    seeds = np.array(sorted(set(frame["scenario_seed"])), dtype=np.int64)
    table = frame.pivot(index="scenario_seed", columns="policy", values="total_weighted_tardiness_s").loc[
        seeds
    ]
    return seeds, {p: table[p].to_numpy(dtype=float) for p in sorted(table.columns, key=policy_key)}


def best_heuristic(twt):
    """The heuristic with the lowest mean (first in table order on a tie)."""
    cands = [p for p in twt if is_heuristic(p)]
    if not cands:
        raise BenchmarkError("no heuristic among the policies: the summary compares to heuristics")
    return min(cands, key=lambda p: (twt[p].mean(), policy_key(p)))


def analyse(frame, cfg, specs):
    """resume.csv's table and winner.json's record from a complete per-scenario table."""
    check_complete(frame)
    b = cfg["benchmark"]
    seeds, twt = matrix(frame)
    for ref in ("fifo", "atc"):
        if ref not in twt:
            raise BenchmarkError(
                f"the summary needs policy {ref} (a reference); it is not among {', '.join(twt)}"
            )
    n = len(seeds)
    counts = bootstrap_counts(n, b["bootstrap_resamples"], b["bootstrap_seed"])
    level = b["ci_level"]
    rel, abs_s = b["tie_relative"], b["tie_absolute_s"]
    bh = best_heuristic(twt)
    means = {p: v.mean() for p, v in twt.items()}
    order = sorted(twt, key=lambda p: (means[p], policy_key(p)))
    rank = {p: i + 1 for i, p in enumerate(order)}
    rows = []
    for p, v in twt.items():
        boot_means = counts @ v / n / UNIT
        lo_m, hi_m = _interval(boot_means, level)
        d_atc = paired_difference(v, twt["atc"], counts, level)
        d_bh = paired_difference(v, twt[bh], counts, level)
        fifo = twt["fifo"].mean()
        spec = specs.get(p) or {}
        rows.append(
            {
                "policy": p,
                "rank": rank[p],
                "scenarios": n,
                "atc_k": spec.get("atc_k") if spec.get("rule") == "atc" else None,
                "mean_twt_k": v.mean() / UNIT,
                "mean_twt_ci_lo_k": lo_m,
                "mean_twt_ci_hi_k": hi_m,
                "p90_twt_k": float(np.percentile(v, 90)) / UNIT,
                "gain_vs_fifo_pct": (fifo - v.mean()) / fifo * 100.0 if fifo > 0 else float("nan"),
                "diff_vs_atc_pct": d_atc[0],
                "diff_vs_atc_ci_lo_pct": d_atc[1],
                "diff_vs_atc_ci_hi_pct": d_atc[2],
                **dict(
                    zip(
                        ("wins_vs_atc", "ties_vs_atc", "losses_vs_atc"),
                        win_tie_loss(v, twt["atc"], rel, abs_s),
                    )
                ),
                "best_heuristic": bh,
                "diff_vs_best_heuristic_pct": d_bh[0],
                "diff_vs_best_heuristic_ci_lo_pct": d_bh[1],
                "diff_vs_best_heuristic_ci_hi_pct": d_bh[2],
                **dict(
                    zip(
                        ("wins_vs_best_heuristic", "ties_vs_best_heuristic", "losses_vs_best_heuristic"),
                        win_tie_loss(v, twt[bh], rel, abs_s),
                    )
                ),
            }
        )
    resume = pd.DataFrame(rows, columns=list(RESUME_COLUMNS))
    winner = choose_winner(twt, specs, counts, level, bh)
    return resume, winner


def choose_winner(twt, specs, counts, level, bh=None):
    """The winner record (see the README, "Benchmark and report").

    The policy with the lowest mean wins when the paired interval of its
    difference to the runner-up lies entirely below zero. The runner-up is the
    next-lowest mean, leaving out the other training seeds of PPO when the
    best is a PPO policy (they are replicas of the same method, and the
    question winner.json answers is whether the learned policy beats the
    rules) and any policy that is the same rule with the same k (atc-tuned
    when the tuning kept k = 2: the same schedules). Otherwise the best
    heuristic is kept, with ``significant`` false.
    """
    bh = bh or best_heuristic(twt)
    means = {p: v.mean() for p, v in twt.items()}
    order = sorted(twt, key=lambda p: (means[p], policy_key(p)))
    best = order[0]
    others = [
        p
        for p in order[1:]
        if not (is_ppo(best) and is_ppo(p)) and not _same_rule(specs.get(best), specs.get(p))
    ]
    if not others:
        raise BenchmarkError("the winner needs at least two policies to compare")
    runner = others[0]
    d, lo, hi = paired_difference(twt[best], twt[runner], counts, level)
    ci = f"[{lo:+.2f} %, {hi:+.2f} %]"
    significant = bool(np.isfinite(hi) and hi < 0)
    if significant:
        winner, runner_up = best, runner
        reason = (
            f"{best} has the lowest mean total weighted tardiness, {d:+.2f} % against the "
            f"runner-up {runner}; the paired bootstrap {level * 100:g} % interval {ci} lies "
            f"entirely below zero."
        )
    elif best == bh:
        winner, runner_up = bh, runner
        reason = (
            f"{bh} has the lowest mean, {d:+.2f} % against the runner-up {runner}, but the "
            f"paired bootstrap {level * 100:g} % interval {ci} does not lie entirely below zero; "
            f"{bh} is the best heuristic and is kept."
        )
    else:
        winner, runner_up = bh, best
        reason = (
            f"{best} has the lowest mean, {d:+.2f} % against the runner-up {runner}, but the "
            f"paired bootstrap {level * 100:g} % interval {ci} does not lie entirely below zero; "
            f"falling back to the best heuristic, {bh}."
        )
        d, lo, hi = paired_difference(twt[bh], twt[best], counts, level)
    spec = specs.get(winner) or {}
    return {
        "policy": winner,
        "rule": spec.get("rule") if is_heuristic(winner) else None,
        "atc_k": spec.get("atc_k") if spec.get("rule") == "atc" else None,
        "policy_file": spec.get("policy_file") if is_ppo(winner) else None,
        "significant": significant,
        "runner_up": runner_up,
        "mean_difference_pct": d,
        "ci95_pct": [lo, hi],
        "reason": reason,
    }


def _same_rule(a, b):
    return bool(
        a
        and b
        and a.get("kind") == b.get("kind") == "rule"
        and a["rule"] == b["rule"]
        and a.get("atc_k") == b.get("atc_k")
    )


def write_outputs(out_dir, frame, cfg, specs, full):
    """per_scenario.csv, and for a full run resume.csv and winner.json, into ``out_dir``.

    Everything is computed before anything is written.
    """
    out_dir = Path(out_dir)
    if full:
        resume, winner = analyse(frame, cfg, specs)
    files.write_csv(out_dir / "per_scenario.csv", frame)
    written = [out_dir / "per_scenario.csv"]
    if full:
        files.write_csv(out_dir / "resume.csv", resume)
        files.write_json(out_dir / "winner.json", winner)
        written += [out_dir / "resume.csv", out_dir / "winner.json"]
    return written


# --------------------------------------------------------------------------- tuning


def tune_atc_k(cfg, progress=False):
    """ATC's k with the lowest mean total weighted tardiness on the validation seeds."""
    from sched import config as config_mod
    from sched.sim.core import simulate_batch

    seeds = validation_seeds(cfg)
    if _overlap(seeds, benchmark_seeds(cfg)):
        raise ConfigError("config: validation seeds overlap the test seeds")
    machines = cfg["scenario"]["machines"]
    arrays = [s.arrays for s in generate_scenarios(cfg, seeds, progress)]
    grid = []
    for k in _bar(cfg["benchmark"]["atc_k_grid"], "atc k grid", progress):
        res = simulate_batch(arrays, "atc", machines=machines, k=float(k))
        twt = [schedule_metrics(a, s, e)["total_weighted_tardiness_s"] for a, (s, e, _) in zip(arrays, res)]
        grid.append({"atc_k": float(k), "mean_twt_s": float(np.mean(twt))})
    best = min(range(len(grid)), key=lambda i: (grid[i]["mean_twt_s"], i))
    return {
        "rule": "atc",
        "atc_k": grid[best]["atc_k"],
        "criterion": "lowest mean total weighted tardiness on the validation seeds "
        "(first in grid order on a tie)",
        "validation_seeds": {"first": seeds.start, "last": seeds.stop - 1, "count": len(seeds)},
        "scenario": {k: cfg["scenario"][k] for k in ("tasks", "load", "machines")},
        "reference_atc_k": float(cfg["rules"]["atc_k"]),
        "grid": grid,
        "config_hash": config_mod.config_hash(cfg, ["scenario", "rules", "seeds", "benchmark"]),
    }


# --------------------------------------------------------------------------- demonstration


def run_demo(cfg, seed, specs):
    """One scenario under every policy: (scenario, {policy: (start, end, machine)}, table).

    The table has the per-scenario columns, one row per policy.
    """
    from sched.data.scenario import generate

    sc = generate(cfg, seed)
    machines = cfg["scenario"]["machines"]
    schedules, rows = {}, []
    for name in sorted(specs, key=policy_key):
        start, end, mach = schedule_policy(specs[name], [sc], [sc.arrays], machines)[0]
        schedules[name] = (np.asarray(start), np.asarray(end), np.asarray(mach))
        rows.append({"scenario_seed": seed, "policy": name, **schedule_metrics(sc.arrays, start, end)})
    return sc, schedules, pd.DataFrame(rows, columns=list(PER_SCENARIO_COLUMNS))


def demo_pair(table, specs=None):
    """The two policies the demonstration's Gantt chart shows: ATC and its challenger.

    The challenger is the PPO policy with the lowest weighted tardiness on the
    scenario, or, without PPO, the best other heuristic on it (not ATC again
    under another name: atc-tuned when the tuning kept ATC's k).
    """
    specs = specs or {}
    twt = dict(zip(table["policy"], table["total_weighted_tardiness_s"]))
    ppo = [p for p in twt if is_ppo(p)]
    pool = ppo or [p for p in twt if p != "atc" and not _same_rule(specs.get("atc"), specs.get(p))]
    if "atc" not in twt or not pool:
        raise BenchmarkError("demo: the Gantt chart needs atc and at least one other policy")
    return "atc", min(pool, key=lambda p: (twt[p], policy_key(p)))
