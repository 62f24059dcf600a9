"""``rank(tasks)``: the order in which a render queue should start its waiting tasks.

The queue hands over the tasks waiting now; ``rank`` plans them with a greedy
rollout of a policy on the given GPUs, through the compiled simulator (no
future arrivals are assumed), and returns their ids in the order they start.

Times. ``due``, ``arrival``, ``now`` and busy machines' free times are either
numbers (seconds, all on one clock) or datetimes (``datetime`` objects or ISO
8601 text). Datetimes with a time zone are converted to POSIX seconds, and
numbers given alongside them are read as POSIX seconds too. Datetimes
without a time zone are accepted only when every time of the call is one
(they are then read on the local wall clock); mixed with numbers or with
zoned datetimes they are refused, since their offset is unknown. Without
``now``: the current time when datetimes are used, else 0 (numbers are then
seconds relative to the moment of the call).

The planned durations are the tasks' estimates (what a scheduler knows);
``duration_s`` stands in for a missing ``estimate_s``, and when the config
names a calibration with a duration model, the model estimates a task that
has neither from its kind and features.
"""

import json
import math
import os
import time
from collections import namedtuple
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from sched.errors import SchedError
from sched.sim import rules
from sched.sim.objective import tardiness


class RankInputError(SchedError):
    """``rank`` refuses its input; the message names the task id and field, or the file."""


#: Fields rank reads; any other field of a task is a feature for the duration model.
KNOWN_FIELDS = frozenset(("id", "estimate_s", "duration_s", "weight", "priority", "due", "arrival", "kind"))

#: Where ``ppo-<seed>`` policy files are, by the pipeline's contract.
PPO_FILE_PATTERN = "results/train/seed-{seed}/politique.pt"

_NUMBER = (int, float, np.integer, np.floating)
_NAIVE_EPOCH = datetime(1970, 1, 1)

Plan = namedtuple("Plan", "name rule k policy_file")  # rule: rule id, or None for PPO
Settings = namedtuple("Settings", "weights atc_k winner tuned calibration")


# --------------------------------------------------------------------------- entry point


def rank(tasks, now=None, policy="auto", machines=1, explain=False, config=None, policy_file=None):
    """Ids of ``tasks`` in the order they should start.

    ``tasks``: a list of dicts (or a pandas DataFrame, one row per task) with
    ``id``; ``estimate_s`` (or ``duration_s``); ``weight`` (or ``priority``,
    a class name of config ``scenario.priorities``); ``due``; optional
    ``arrival`` (default ``now``) and ``kind``. ``machines``: a count of
    free GPUs, or a list of the times at which each GPU becomes free (times
    before ``now`` mean free now). ``policy``: ``"auto"`` (the benchmark's
    winner from config ``rank.winner``, else ATC), a rule name, ``"atc-tuned"``,
    ``"ppo"`` with ``policy_file``, ``"ppo-<seed>"``, or a policy file path.
    ``config``: a config file path or a config mapping (default: as the
    command line, ``./config.yaml`` if present).

    Returns a list of ids (as given) in start order; with ``explain=True`` a
    DataFrame with, in start order, each task's planned machine, start and
    end, lateness (end - due) and tardiness, and the policy used. Bad input
    raises :class:`RankInputError`.
    """
    st = _settings(config)
    plan = _plan(policy, policy_file, st)
    if _is_frame(tasks):
        tasks = _frame_records(tasks)
    elif isinstance(tasks, (str, bytes)) or not hasattr(tasks, "__len__"):
        raise RankInputError(
            f"tasks: expected a list of task objects or a DataFrame, got {type(tasks).__name__}"
        )
    q = _read(tasks, now, machines, st)
    if q.n == 0:
        order = start = end = mach = np.zeros(0, np.int64)
    elif plan.rule is not None:
        from sched.sim.one_queue import rollout_order

        order, start, end, mach = rollout_order(
            q.arrival, q.estimate, q.weight, q.due, q.machine_free, plan.rule, plan.k
        )
    else:
        order, start, end, mach = _ppo_rollout(plan, q)
    if explain:
        return _explain(q, plan, order, start, end, mach)
    ids = q.ids
    return [ids[i] for i in order.tolist()]


# --------------------------------------------------------------------------- settings

_settings_cache = {}


def _settings(config):
    """What rank needs from the config, cached per file (path, mtime, size) or content."""
    from_file = config is None or isinstance(config, (str, os.PathLike))
    if from_file:
        path = config
        if path is None:
            from sched.config import DEFAULT_CONFIG as path
        try:
            s = os.stat(path)
            key = (os.getcwd(), os.fspath(path), s.st_mtime_ns, s.st_size, s.st_ino)
        except OSError:
            key = (os.getcwd(), os.fspath(path))
            if config is None:  # no ./config.yaml: the defaults, as load_config does
                path = None
    elif isinstance(config, dict):
        key = ("mapping", json.dumps(config, sort_keys=True, default=str))
    else:
        raise RankInputError(f"config: expected a file path or a mapping, got {type(config).__name__}")
    hit = _settings_cache.get(key)
    if hit is not None:
        return hit
    import copy

    from sched.config import load_config, validate_config

    cfg = load_config(path) if from_file else validate_config(copy.deepcopy(config), "config")
    st = Settings(
        weights={name: float(c["weight"]) for name, c in cfg["scenario"]["priorities"].items()},
        atc_k=float(cfg["rules"]["atc_k"]),
        winner=cfg["rank"]["winner"],
        tuned=cfg["rank"]["tuned"],
        calibration=cfg["scenario"].get("calibration"),
    )
    if len(_settings_cache) > 32:
        _settings_cache.clear()
    _settings_cache[key] = st
    return st


# --------------------------------------------------------------------------- policy

_json_cache = {}


def _json_file(path, check):
    """``check(data, path)`` of a JSON file, cached while the file is unchanged; None if absent."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    path = os.path.join(os.getcwd(), path)
    key = (s.st_mtime_ns, s.st_size, s.st_ino)
    hit = _json_cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RankInputError(f"{path}: not a readable JSON file: {exc}") from None
    value = check(data, path)
    _json_cache[path] = (key, value)
    return value


def _positive(value, path, field):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise RankInputError(f"{path}: field {field}: expected a number > 0, got {value!r}")
    return float(value)


def _check_winner(data, path):
    """A winner.json (format in the README) as a Plan, paths resolved."""
    if not isinstance(data, dict):
        raise RankInputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    name = data.get("policy")
    if not isinstance(name, str) or not name:
        raise RankInputError(f"{path}: field policy: expected a policy name, got {name!r}")
    rule, k, pfile = data.get("rule"), data.get("atc_k"), data.get("policy_file")
    if rule is not None:
        if rule not in rules.RULES:
            raise RankInputError(
                f"{path}: field rule: unknown rule {rule!r}; expected one of {', '.join(rules.RULES)}"
            )
        if k is not None:
            k = _positive(k, path, "atc_k")
        return Plan(name, rules.rule_id(rule), k, None)
    if pfile is None:
        raise RankInputError(
            f"{path}: fields rule and policy_file are both null: nothing says how to run the winner"
        )
    if not isinstance(pfile, str):
        raise RankInputError(f"{path}: field policy_file: expected a path, got {pfile!r}")
    # The pipeline writes paths relative to the project root (the working
    # directory); a copied results folder is found relative to winner.json.
    p = Path(pfile)
    if not p.is_absolute() and not p.exists():
        beside = Path(path).parent / p
        if beside.exists():
            p = beside
    return Plan(name, None, None, p)


def _check_tuned(data, path):
    if not isinstance(data, dict) or "atc_k" not in data:
        raise RankInputError(f'{path}: field atc_k: missing (expected {{"atc_k": K, ...}})')
    return _positive(data["atc_k"], path, "atc_k")


def tuned_k(st):
    """The tuned ATC k: from winner.json when atc-tuned won, else from tuned.json."""
    won = _json_file(st.winner, _check_winner)
    if won is not None and won.name == "atc-tuned" and won.k is not None:
        return won.k
    k = _json_file(st.tuned, _check_tuned)
    if k is None:
        raise RankInputError(
            f"policy atc-tuned: no tuned k found (neither {st.winner} naming atc-tuned nor "
            f"{st.tuned} exists); run the benchmark, or use policy 'atc' (config rules.atc_k)"
        )
    return k


def _plan(policy, policy_file, st):
    """How to run ``policy``: a Plan(name, rule id or None, k, policy file)."""
    if not isinstance(policy, (str, os.PathLike)):
        raise RankInputError(f"policy: expected a name or a policy file path, got {policy!r}")
    name = os.fspath(policy)
    if policy_file is not None and not (name == "ppo" or name.startswith("ppo-")):
        raise RankInputError(f"policy_file: only used with policy 'ppo' or 'ppo-<seed>', not {name!r}")
    if name == "auto":
        won = _json_file(st.winner, _check_winner)
        if won is None:
            return Plan("atc", rules.ATC, st.atc_k, None)
        if won.rule is not None and won.k is None:
            won = won._replace(k=st.atc_k)
        return won if won.rule is not None else _ppo_plan(won.name, won.policy_file, st.winner)
    if name in rules.RULES:
        return Plan(name, rules.rule_id(name), st.atc_k, None)
    if name == "atc-tuned":
        return Plan(name, rules.ATC, tuned_k(st), None)
    if name == "ppo":
        if policy_file is None:
            raise RankInputError("policy ppo: needs policy_file (a trained policy file)")
        return _ppo_plan(name, policy_file, "policy_file")
    if name.startswith("ppo-") and name[4:].isdigit():
        pfile = policy_file if policy_file is not None else PPO_FILE_PATTERN.format(seed=name[4:])
        return _ppo_plan(name, pfile, "policy_file")
    if os.path.isfile(name):
        return _ppo_plan("ppo", name, "policy")
    raise RankInputError(
        f"policy: unknown policy {name!r}; expected auto, {', '.join(rules.RULES)}, atc-tuned, "
        f"ppo (with policy_file), ppo-<seed>, or an existing policy file"
    )


def _ppo_plan(name, pfile, where):
    p = Path(pfile)
    if not p.is_file():
        raise RankInputError(f"{where}: policy file {p} not found")
    return Plan(name, None, None, p)


def _ppo_rollout(plan, q):
    """Greedy (argmax) rollout of a trained policy over the queue (sched.learn.vec_env.run_greedy)."""
    from sched.learn.networks import load_cached
    from sched.learn.vec_env import run_greedy_one

    policy = load_cached(plan.policy_file)
    start, end, mach = run_greedy_one(
        policy,
        (q.arrival, q.estimate, q.estimate, q.weight, q.due),
        machines=len(q.machine_free),
        machine_free=q.machine_free,
    )
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    mach = np.asarray(mach, np.int64)
    # Equal start times go to the lowest free machine first, one decision after
    # the other (end > start, estimates are > 0), so (start, machine) is the
    # decision order.
    order = np.lexsort((np.arange(q.n), mach, start))
    return order, start, end, mach


# --------------------------------------------------------------------------- input

Queue = namedtuple("Queue", "n ids arrival estimate weight due machine_free kinds clock tz")


def _is_frame(obj):
    import sys

    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def _frame_records(df):
    """DataFrame rows as task dicts; NaN / NaT / None cells count as absent."""
    if "id" not in df.columns and df.index.name == "id":
        df = df.reset_index()
    cols = list(df.columns)
    absent = df.isna().to_numpy()
    return [
        {c: v for c, v, a in zip(cols, row, skip) if not a}
        for row, skip in zip(df.itertuples(index=False, name=None), absent)
    ]


def _where(task_id, pos):
    return f"task {task_id!r}" if task_id is not None else f"task #{pos + 1} (no id)"


def _bad(task_id, pos, field, why):
    return RankInputError(f"{_where(task_id, pos)}: field {field}: {why}")


def _number(v):
    """v as a float if it is a number (not a bool), else None."""
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    if isinstance(v, _NUMBER) and not isinstance(v, (bool, np.bool_)):
        return float(v)
    return None


def _when(v):
    """A time value: a float (seconds) or a datetime. Raises ValueError with the reason."""
    f = _number(v)
    if f is not None:
        if not math.isfinite(f):
            raise ValueError(f"not finite: {v!r}")
        return f
    if isinstance(v, datetime):
        if v != v:  # NaT
            raise ValueError(f"not a date: {v!r}")
        return v
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.strip())
        except ValueError:
            raise ValueError(
                f"unparsable date {v!r} (expected ISO 8601, e.g. 2026-05-09T14:30:00+02:00)"
            ) from None
    raise ValueError(f"expected seconds or an ISO 8601 datetime, got {type(v).__name__} {v!r}")


def _read(tasks, now, machines, st):
    """Validate the tasks, now and machines; the planning arrays on one clock."""
    n = len(tasks)
    ids = [None] * n
    est = [0.0] * n
    weight = [0.0] * n
    due = [0.0] * n
    arrival = [None] * n
    kinds = [None] * n
    seen = {}
    dates = []  # (value, task id, pos, field) of every datetime met
    weights = st.weights
    model = None
    isfinite = math.isfinite
    for pos, task in enumerate(tasks):
        try:
            get = task.get
        except AttributeError:
            raise RankInputError(
                f"task #{pos + 1}: expected an object with fields, got {type(task).__name__}"
            ) from None
        tid = get("id")
        if tid is None:
            raise _bad(None, pos, "id", "missing")
        try:
            first = seen.setdefault(tid, pos)
        except TypeError:
            raise _bad(tid, pos, "id", f"must be a string or a number, got {type(tid).__name__}") from None
        if first != pos:
            raise _bad(tid, pos, "id", f"duplicate id (also task #{first + 1})")
        ids[pos] = tid

        field, v = "estimate_s", get("estimate_s")
        if v is None:
            field, v = "duration_s", get("duration_s")
        if v is None:
            if model is None:
                model = _duration_model(st.calibration)
            v = model(task, tid, pos)
            field = "estimate_s"
        f = v if type(v) is float else _number(v)  # the common case first: speed
        if f is None:
            raise _bad(tid, pos, field, f"not a number: {v!r}")
        if not (f > 0.0 and f < math.inf):
            raise _bad(tid, pos, field, f"must be finite and > 0, got {v!r}")
        est[pos] = f

        v = get("weight")
        if v is None:
            cls = get("priority")
            if cls is None:
                raise _bad(tid, pos, "weight", "missing (give weight or priority)")
            try:
                f = weights[cls]
            except (KeyError, TypeError):
                raise _bad(
                    tid,
                    pos,
                    "priority",
                    f"unknown priority class {cls!r}; expected one of "
                    f"{', '.join(weights)} (config scenario.priorities)",
                ) from None
        else:
            f = v if type(v) is float else _number(v)
            if f is None:
                raise _bad(tid, pos, "weight", f"not a number: {v!r}")
            if not (f > 0.0 and f < math.inf):
                raise _bad(tid, pos, "weight", f"must be finite and > 0, got {v!r}")
        weight[pos] = f

        v = get("due")
        if v is None:
            raise _bad(tid, pos, "due", "missing")
        due[pos] = v if type(v) is float and isfinite(v) else _time(v, tid, pos, "due", dates)
        v = get("arrival")
        if v is not None:
            arrival[pos] = v if type(v) is float and isfinite(v) else _time(v, tid, pos, "arrival", dates)
        kinds[pos] = get("kind")

    if now is not None:
        try:
            now = _when(now)
        except ValueError as exc:
            raise RankInputError(f"now: {exc}") from None
        if type(now) is not float:
            dates.append((now, None, None, "now"))
    free = _machines(machines, dates)

    clock, tz = "seconds", None
    if dates:
        clock, tz = _clock(dates, now, free, due, arrival)
        if clock != "seconds":
            conv = _to_seconds_naive if clock == "naive" else _to_seconds_aware
            due = [conv(x) if type(x) is not float else x for x in due]
            arrival = [conv(x) if x is not None and type(x) is not float else x for x in arrival]
            free = [conv(x) if type(x) is not float else x for x in free]
            if now is not None and type(now) is not float:
                now = conv(now)
    if now is None:
        now = (
            time.time()
            if clock == "aware"
            else _to_seconds_naive(datetime.now())
            if clock == "naive"
            else 0.0
        )
    arrival = [now if a is None else a for a in arrival]
    mfree = np.array(free, dtype=np.float64)
    np.maximum(mfree, now, out=mfree)
    return Queue(
        n,
        ids,
        np.array(arrival, dtype=np.float64),
        np.array(est, dtype=np.float64),
        np.array(weight, dtype=np.float64),
        np.array(due, dtype=np.float64),
        mfree,
        kinds,
        clock,
        tz,
    )


def _time(v, tid, pos, field, dates):
    """A task's time field: seconds, or a datetime noted in ``dates``."""
    try:
        f = _when(v)
    except ValueError as exc:
        raise _bad(tid, pos, field, str(exc)) from None
    if type(f) is not float:
        dates.append((f, tid, pos, field))
    return f


def _machines(machines, dates):
    """Free times of the machines (floats or datetimes; -inf: free at any time)."""
    f = _number(machines)
    if f is not None:
        if not (math.isfinite(f) and f == int(f) and f >= 1):
            raise RankInputError(f"machines: expected a whole count >= 1, got {machines!r}")
        return [-math.inf] * int(f)
    if isinstance(machines, (str, bytes, dict)) or not hasattr(machines, "__iter__"):
        raise RankInputError(
            "machines: expected a count of free GPUs or a list of the times "
            f"at which each becomes free, got {machines!r}"
        )
    free = []
    for m, v in enumerate(machines):
        try:
            t = _when(v)
        except ValueError as exc:
            raise RankInputError(f"machines[{m}]: {exc}") from None
        if type(t) is not float:
            dates.append((t, None, None, f"machines[{m}]"))
        free.append(t)
    if not free:
        raise RankInputError("machines: empty list (at least one GPU is needed)")
    return free


def _clock(dates, now, free, due, arrival):
    """'aware' (POSIX seconds) or 'naive' (local wall clock), and the time zone to show."""
    naive = [d for d in dates if d[0].utcoffset() is None]
    aware = [d for d in dates if d[0].utcoffset() is not None]
    if not naive:
        return "aware", (now if isinstance(now, datetime) else aware[0][0]).tzinfo
    if aware:
        other = aware[0]
        mixed = f"a date with one ({_label(other)} {other[0].isoformat()})"
    else:
        num = _first_number(now, free, due, arrival)
        if num is None:
            return "naive", None
        mixed = f"numbers ({num})"
    d = naive[0]
    raise RankInputError(
        f"{_label(d)}: date {d[0].isoformat()} has no time zone and cannot be "
        f"mixed with {mixed}; add a time zone, e.g. +00:00"
    )


def _label(d):
    value, tid, pos, field = d
    return f"{_where(tid, pos)}: field {field}" if pos is not None else field


def _first_number(now, free, due, arrival):
    if type(now) is float:
        return f"now = {now:g}"
    for m, t in enumerate(free):
        if type(t) is float and math.isfinite(t):
            return f"machines[{m}] = {t:g}"
    for name, col in (("due", due), ("arrival", arrival)):
        for pos, t in enumerate(col):
            if type(t) is float:
                return f"task #{pos + 1} {name} = {t:g}"
    return None


def _to_seconds_aware(d):
    return d.timestamp()


def _to_seconds_naive(d):
    return (d - _NAIVE_EPOCH).total_seconds()


def _duration_model(calibration):
    """A function estimating a task's duration from its kind and features.

    Needs ``sched.data.calibration.predict_duration`` (issue 3) and a config
    that names a calibration; without them a task with no estimate is refused.
    """
    predict = None
    if calibration:
        try:
            from sched.data.calibration import predict_duration as predict
        except ImportError:
            predict = None

    def estimate(task, tid, pos):
        if predict is None:
            why = (
                "no calibration with a duration model is configured (scenario.calibration)"
                if not calibration
                else "this version cannot read duration models"
            )
            raise _bad(tid, pos, "estimate_s", f"missing (give estimate_s or duration_s; {why})")
        kind = task.get("kind")
        if kind is None:
            raise _bad(
                tid,
                pos,
                "kind",
                "missing (the duration model needs it when estimate_s and duration_s are absent)",
            )
        features = {k: v for k, v in task.items() if k not in KNOWN_FIELDS}
        try:
            value = predict(calibration, kind, features)
        except (ValueError, KeyError, TypeError) as exc:
            raise _bad(
                tid, pos, "estimate_s", f"missing, and the duration model cannot estimate it: {exc}"
            ) from None
        return value

    return estimate


# --------------------------------------------------------------------------- explain

EXPLAIN_COLUMNS = ("id", "machine", "start_s", "end_s", "lateness_s", "tardiness_s", "policy", "atc_k")


def _explain(q, plan, order, start, end, mach):
    """The plan as a table, in start order."""
    import pandas as pd

    order = np.asarray(order, np.int64)
    s, e = np.asarray(start, np.float64)[order], np.asarray(end, np.float64)[order]
    late = e - q.due[order]
    frame = pd.DataFrame(
        {
            "id": pd.Series([q.ids[i] for i in order.tolist()], dtype=object),
            "machine": np.asarray(mach, np.int64)[order],
            "start_s": s,
            "end_s": e,
            "lateness_s": late,
            "tardiness_s": tardiness(e, q.due[order]),
            "policy": plan.name,
            "atc_k": plan.k if plan.rule == rules.ATC else np.nan,
        },
        columns=list(EXPLAIN_COLUMNS),
    )
    if q.clock == "aware":
        frame["start_at"] = pd.to_datetime(s, unit="s", utc=True).tz_convert(q.tz or UTC)
        frame["end_at"] = pd.to_datetime(e, unit="s", utc=True).tz_convert(q.tz or UTC)
    elif q.clock == "naive":
        frame["start_at"] = pd.to_datetime(s, unit="s")
        frame["end_at"] = pd.to_datetime(e, unit="s")
    return frame


def explain_records(frame):
    """The explain table as JSON-ready dicts (datetimes in ISO 8601, NaN as null)."""
    out = []
    for row in frame.to_dict("records"):
        rec = {}
        for k, v in row.items():
            if isinstance(v, datetime):
                v = v.isoformat()
            elif isinstance(v, (float, np.floating)) and not math.isfinite(v):
                v = None
            elif isinstance(v, np.generic):
                v = v.item()
            rec[k] = v
        out.append(rec)
    return out
