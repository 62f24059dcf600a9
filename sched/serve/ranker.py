"""``rank(tasks)``: the order in which a render queue should start its waiting tasks.

The queue hands over the tasks waiting now; ``rank`` plans them with a greedy
rollout of a policy on the given GPUs, through the compiled simulator (no
future arrivals are assumed), and returns their ids in the order they start.

This module chooses the policy (config settings, ``winner.json``,
``tuned.json``, policy files) and runs it. Reading the tasks and machines
(ids, limits, the duration model for missing estimates) is
:mod:`sched.serve.tasks`, the clock rules :mod:`sched.serve.times`; the
``explain`` table is :mod:`sched.serve.explain`.

Errors: every bad input ends in a :class:`RankInputError` (a
``sched.errors.SchedError``, so a ``ValueError``) with a one-line message
naming the task and field, the argument, or the file: the tasks, ``now``,
``machines``, ``policy``, ``policy_file`` (a damaged or crafted policy file:
the ``PolicyFileError`` of :mod:`sched.learn.policy_file` is its
``__cause__``), ``winner.json``, ``tuned.json`` and ``config`` (a
``ConfigError`` as the cause).
"""

import json
import math
import os
from collections import namedtuple
from pathlib import Path

import numpy as np

from sched import layout, setting
from sched.errors import SchedError
from sched.serve.explain import explain_frame
from sched.serve.tasks import RankInputError, read_queue, task_records
from sched.sim import rules

__all__ = ["Plan", "RankInputError", "Settings", "rank", "tuned_k"]

# rule: rule id, or None for PPO; why: the reason it runs, in words (explain's column)
Plan = namedtuple("Plan", "name rule k policy_file why", defaults=("",))
Settings = namedtuple("Settings", "weights atc_k winner tuned calibration others farm config")
#: A benchmark's verdict on one setting: where from, the setting, its winner (a Plan or
#: None) and its tuned ATC k (or None).
Verdict = namedtuple("Verdict", "source setting winner tuned_k")


# --------------------------------------------------------------------------- entry point


def rank(
    tasks, now=None, policy="auto", machines=1, explain=False, config=None, policy_file=None, budget_ms=None
):
    """Ids of ``tasks`` in the order they should start.

    ``tasks``: a list of dicts (or a pandas DataFrame, one row per task) with
    ``id``; ``estimate_s`` (or ``duration_s``); ``weight`` (or ``priority``,
    a class name of config ``scenario.priorities``); ``due``; optional
    ``arrival`` (default ``now``) and ``kind``; times are numbers or datetimes
    (the clock rules are :mod:`sched.serve.times`'s). Ids are strings or
    numbers, compared with surrounding white space stripped (``"a"`` and
    ``"a  "`` are duplicates) and returned as given; limits on sizes and
    values: :mod:`sched.serve.tasks`. ``machines``: a count of
    free GPUs; a spec ``"NxSPEED[,NxSPEED...]"`` such as ``"2x1.0,2x0.6"`` or a
    machines CSV path (``name,speed``), every GPU free now; or a list with
    one item per GPU: the time it becomes free (times before ``now`` mean
    free now), or a mapping ``{"free_at": ..., "speed": ...}`` (both
    optional: free now, speed 1). ``policy``: ``"auto"`` (the benchmark winner
    measured on the same GPUs as the call: config ``rank.winner`` or a setting
    under ``rank.settings``; else ATC with the k tuned for those GPUs; else ATC
    with ``rules.atc_k``: docs/rank.md), a rule name, ``"atc-tuned"`` (the k
    tuned for the call's GPUs),
    ``"ppo"`` with ``policy_file``, ``"ppo-<seed>"``, or a policy file path.
    ``config``: a config file path or a config mapping (default: as the
    command line, ``./config.yaml`` if present). ``policy="plan"``: the
    planner on config ``plan.base`` (:mod:`sched.serve.plan_rank`);
    ``budget_ms``, its time budget per call (default config ``plan.budget_ms``).

    Returns a list of ids (as given) in start order; with ``explain=True`` a
    DataFrame with, in start order, each task's planned machine, start and
    end, lateness (end - due) and tardiness, and the policy used. Any bad
    input (tasks, arguments, config, policy or winner file) raises
    :class:`RankInputError`, and nothing else.
    """
    st = _settings(config)
    q = read_queue(task_records(tasks), now, machines, st)
    plan = _plan(policy, policy_file, st, _farm_of(q))
    if budget_ms is not None and plan.name != "plan":
        raise RankInputError(f"budget_ms: only used with policy 'plan', not {plan.name!r}")
    if q.n == 0:
        order = start = end = mach = np.zeros(0, np.int64)
    elif plan.name == "plan":
        from sched.serve.plan_rank import plan_order

        order, start, end, mach = plan_order(
            q, st.config, lambda b: _plan(b, None, st, _farm_of(q)), budget_ms
        )
    elif plan.rule is not None:
        from sched.sim.one_queue import rollout_order

        order, start, end, mach = rollout_order(
            q.arrival, q.estimate, q.weight, q.due, q.machine_free, q.speed, plan.rule, plan.k
        )
    else:
        order, start, end, mach, plan = _ppo_rollout(plan, q)
    if explain:
        return explain_frame(q, plan, order, start, end, mach)
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

    try:
        cfg = load_config(path) if from_file else validate_config(copy.deepcopy(config), "config")
    except SchedError as exc:  # ConfigError: the message names the file and field
        raise RankInputError(str(exc)) from exc
    st = Settings(
        weights={name: float(c["weight"]) for name, c in cfg["scenario"]["priorities"].items()},
        atc_k=float(cfg["rules"]["atc_k"]),
        winner=cfg["rank"]["winner"],
        tuned=cfg["rank"]["tuned"],
        calibration=cfg["scenario"].get("calibration"),
        others=cfg["rank"]["settings"],
        farm=setting.of_config(cfg),
        config=cfg,
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
    except RecursionError:
        raise RankInputError(f"{path}: not a readable JSON file: nested too deeply") from None
    value = check(data, path)
    _json_cache[path] = (key, value)
    return value


def _positive_field(value, path, field):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        raise RankInputError(f"{path}: field {field}: expected a number > 0, got {value!r}")
    return float(value)


def _setting_field(data, path, fallback):
    """The ``setting`` a verdict file records; ``fallback`` for files of earlier versions."""
    if data.get("setting") is None:
        return fallback
    try:
        return setting.read(data["setting"], "field setting")
    except setting.SettingError as exc:
        raise RankInputError(f"{path}: {exc}") from None


def _check_winner(data, path):
    """A winner.json (format in docs/file-contract.md) as (Plan, setting or None), paths resolved."""
    if not isinstance(data, dict):
        raise RankInputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    name = data.get("policy")
    if not isinstance(name, str) or not name:
        raise RankInputError(f"{path}: field policy: expected a policy name, got {name!r}")
    where = _setting_field(data, path, None)
    rule, k, pfile = data.get("rule"), data.get("atc_k"), data.get("policy_file")
    if rule is not None:
        if rule not in rules.RULES:
            raise RankInputError(
                f"{path}: field rule: unknown rule {rule!r}; expected one of {', '.join(rules.RULES)}"
            )
        if k is not None:
            k = _positive_field(k, path, "atc_k")
        return Plan(name, rules.rule_id(rule), k, None), where
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
    return Plan(name, None, None, p), where


def _check_tuned(data, path):
    """A tuned.json as (k, setting or None); the setting of earlier files is their ``scenario``."""
    if not isinstance(data, dict) or "atc_k" not in data:
        raise RankInputError(f'{path}: field atc_k: missing (expected {{"atc_k": K, ...}})')
    k = _positive_field(data["atc_k"], path, "atc_k")
    sc = data.get("scenario")
    legacy = None
    if isinstance(sc, dict) and isinstance(sc.get("machines"), int) and "load" in sc:
        legacy = _setting_field({"setting": {**sc, "speeds": None}}, path, None)
    return k, _setting_field(data, path, legacy)


def _verdicts(st):
    """Every verdict rank() may follow: the main benchmark's (config rank.winner and
    rank.tuned; files without a setting are taken as the config's scenario), then each
    folder of config rank.settings holding a winner.json or tuned.json, by name."""
    sources = [("the main benchmark", st.winner, st.tuned, st.farm)]
    if st.others is not None and os.path.isdir(st.others):
        for name in sorted(os.listdir(st.others)):
            d = os.path.join(st.others, name)
            if os.path.isdir(d):
                w, t = os.path.join(d, layout.WINNER), os.path.join(d, layout.TUNED)
                sources.append((f"setting {name}", w, t, None))
    out = []
    for source, wpath, tpath, fallback in sources:
        won = _json_file(wpath, _check_winner)
        tuned = _json_file(tpath, _check_tuned)
        plan, where = won if won is not None else (None, None)
        k, twhere = tuned if tuned is not None else (None, None)
        where = where or twhere or fallback
        if where is None:
            continue  # a verdict that does not say its setting is not used for any call
        if plan is not None and plan.name == "atc-tuned" and plan.k is not None:
            k = plan.k  # the k the benchmark measured
        out.append(Verdict(source, where, plan, k))
    return out


def _closest(verdicts, st):
    """The verdict measured at the load closest to the config's scenario.load (the first listed
    on a tie: the main benchmark first)."""
    return min(enumerate(verdicts), key=lambda iv: (abs(iv[1].setting["load"] - st.farm["load"]), iv[0]))[1]


def _matching(st, farm):
    """The verdicts measured on the GPUs of the call."""
    return [v for v in _verdicts(st) if setting.same_farm(v.setting, farm)]


def tuned_k(st, farm=None):
    """The tuned ATC k for the call's GPUs (default: the config's): from the winner when
    atc-tuned won there, else from its tuned.json."""
    farm = farm or st.farm
    found = [v for v in _matching(st, farm) if v.tuned_k is not None]
    if not found:
        raise RankInputError(
            f"policy atc-tuned: no tuned k for {setting.describe({**farm, 'load': None})} (neither "
            f"{st.winner} naming atc-tuned, {st.tuned}, nor a setting under {st.others} tuned for "
            f"these GPUs); run the benchmark, or use policy 'atc' (config rules.atc_k)"
        )
    v = _closest(found, st)
    return v.tuned_k, v


def _auto(st, farm):
    """What policy "auto" runs for the call's GPUs, and why (docs/rank.md)."""
    gpus = setting.describe({**farm, "load": None})
    found = _matching(st, farm)
    won = [v for v in found if v.winner is not None]
    if won:
        v = _closest(won, st)
        plan = v.winner
        if plan.rule is not None and plan.k is None:
            plan = plan._replace(k=st.atc_k)
        if plan.rule is None:
            plan = _ppo_plan(plan.name, plan.policy_file, st.winner)
        more = " (of several, the one whose load is closest to config scenario.load)" if len(won) > 1 else ""
        return plan._replace(
            why=f"auto: the winner of {v.source}, measured on {setting.describe(v.setting)}: "
            f"the call's {gpus}{more}"
        )
    tuned = [v for v in found if v.tuned_k is not None]
    if tuned:
        v = _closest(tuned, st)
        return Plan(
            "atc-tuned",
            rules.ATC,
            v.tuned_k,
            None,
            f"auto: no benchmark winner for {gpus}; ATC with the k tuned for them in {v.source}",
        )
    return Plan(
        "atc",
        rules.ATC,
        st.atc_k,
        None,
        f"auto: no benchmark or tuning for {gpus}; ATC with config rules.atc_k",
    )


def _farm_of(q):
    """The call's GPUs as a setting (no load: a call does not state one)."""
    return {"machines": len(q.machine_free), "speeds": setting.canonical_speeds(q.speed)}


def _plan(policy, policy_file, st, farm):
    """How to run ``policy`` on the call's GPUs ``farm``: a Plan (name, rule id or None, k,
    policy file, why)."""
    if not isinstance(policy, (str, os.PathLike)):
        raise RankInputError(f"policy: expected a name or a policy file path, got {policy!r}")
    name = os.fspath(policy)
    if policy_file is not None and not (name == "ppo" or name.startswith("ppo-")):
        raise RankInputError(f"policy_file: only used with policy 'ppo' or 'ppo-<seed>', not {name!r}")
    asked = f"asked for by the call (policy={name!r})"
    if name == "auto":
        return _auto(st, farm)
    if name in rules.RULES:
        return Plan(name, rules.rule_id(name), st.atc_k, None, asked)
    if name == "plan":
        return Plan(name, None, None, None, f"{asked}: lookahead on config plan.base (docs/plan.md)")
    if name == "atc-tuned":
        k, v = tuned_k(st, farm)
        return Plan(name, rules.ATC, k, None, f"{asked}; k tuned in {v.source} for these GPUs")
    if name == "ppo":
        if policy_file is None:
            raise RankInputError("policy ppo: needs policy_file (a trained policy file)")
        return _ppo_plan(name, policy_file, "policy_file", asked)
    if name.startswith("ppo-") and name[4:].isdigit():
        pfile = policy_file if policy_file is not None else layout.policy_file(name[4:])
        return _ppo_plan(name, pfile, "policy_file", asked)
    if os.path.isfile(name):
        return _ppo_plan("ppo", name, "policy", asked)
    raise RankInputError(
        f"policy: unknown policy {name!r}; expected auto, {', '.join(rules.RULES)}, atc-tuned, "
        f"ppo (with policy_file), ppo-<seed>, plan, or an existing policy file"
    )


def _ppo_plan(name, pfile, where, why=""):
    p = Path(pfile)
    if not p.is_file():
        raise RankInputError(f"{where}: policy file {p} not found")
    return Plan(name, None, None, p, why)


def _ppo_rollout(plan, q):
    """Greedy (argmax) rollout of a trained policy over the queue (sched.learn.vec_env.run_greedy)."""
    from sched.learn.policy_file import PolicyFileError, load_cached
    from sched.learn.vec_env import run_greedy_one

    try:
        policy = load_cached(plan.policy_file)
    except PolicyFileError as exc:  # the message names the file and the field or tensor
        raise RankInputError(str(exc)) from exc
    trained, farm = policy.meta.get("setting"), _farm_of(q)
    if trained is not None and not setting.same_farm(trained, farm):
        gpus = setting.describe({**farm, "load": None})
        note = f"note: trained for {setting.describe(trained)}, not the call's {gpus}"
        plan = plan._replace(why=f"{plan.why}; {note}")
    start, end, mach = run_greedy_one(
        policy,
        (q.arrival, q.estimate, q.estimate, q.weight, q.due),
        machines=q.speed,
        machine_free=q.machine_free,
    )
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    mach = np.asarray(mach, np.int64)
    # Equal start times go to the lowest free machine first, one decision after
    # the other (end > start, estimates are > 0), so (start, machine) is the
    # decision order.
    order = np.lexsort((np.arange(q.n), mach, start))
    return order, start, end, mach, plan
