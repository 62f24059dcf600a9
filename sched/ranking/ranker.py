"""``rank(tasks)``: the order in which a render queue should start its waiting tasks.

The queue hands over the tasks waiting now; ``rank`` plans them with a greedy
rollout of a policy on the given GPUs, through the compiled simulator (no
future arrivals are assumed), and returns their ids in the order they start.

This module chooses the policy (config settings, policy files; which
benchmark verdict ``auto`` follows for the call's GPUs is
:mod:`sched.ranking.verdicts`) and runs it. Reading the tasks and machines
(ids, limits, the duration model for missing estimates) is
:mod:`sched.ranking.tasks`, the clock rules :mod:`sched.ranking.times`; the
``explain`` table is :mod:`sched.ranking.explain`.

Errors: every bad input ends in a :class:`RankInputError` (a ``SchedError``, so a
``ValueError``) with a one-line message naming the task and field, the argument, or the
file: the tasks, ``now``, ``machines``, ``policy``, ``policy_file`` (a damaged or crafted
policy file: its ``PolicyFileError`` is the ``__cause__``), ``winner.json``, ``tuned.json``
and ``config`` (a ``ConfigError`` as the cause).
"""

import json
import os
import time
from collections import namedtuple
from collections.abc import Mapping

import numpy as np

from sched import layout, setting
from sched.cache import Cache
from sched.config import Record
from sched.errors import SchedError, shorten
from sched.limits import MAX_SEED_DIGITS
from sched.ranking import hold
from sched.ranking.explain import explain_frame
from sched.ranking.farm import plan as farm_plan
from sched.ranking.request import is_seed_name
from sched.ranking.tasks import RankInputError, RankSetupError, read_queue, task_records
from sched.ranking.times import WEEK_START_S
from sched.ranking.verdicts import Choice, auto_choice, missing_files, ppo_choice, tuned_k
from sched.sim import rules

__all__ = ["Call", "Decision", "Choice", "RankInputError", "RankSetupError", "Settings", "decide", "prepare"]
__all__ += ["rank", "readiness", "run", "tuned_k"]

#: root: the folder the config's relative paths were read from ("." : the working directory)
Settings = namedtuple("Settings", "weights atc_k winner tuned calibration others farm config root")

#: What a call decided: ``ids`` in start order (as given), the policy that ran (``policy``: its
#: name, ``why``: the reason in words) and, with ``explain``, the plan as a table (else None);
#: ``held``: a delayed rule's {id: planned start} of the tasks it holds now (sched.ranking.hold);
#: ``limits``: under a farm verdict's cap, {id: the most chunks of the job at once} (else None).
Decision = namedtuple("Decision", "ids policy why frame held limits", defaults=(None, None))


# --------------------------------------------------------------------------- entry point


def rank(
    tasks, now=None, policy="auto", machines=1, explain=False, config=None, policy_file=None, budget_ms=None
):
    """Ids of ``tasks`` in the order they should start.

    ``tasks``: a list of dicts (or a pandas DataFrame, one row per task) with
    ``id``; ``estimate_s`` (or ``duration_s``); ``weight`` (or ``priority``,
    a class name of config ``scenario.priorities``); ``due``; optional
    ``arrival`` (default ``now``) and ``kind``; times are numbers or datetimes
    (the clock rules are :mod:`sched.ranking.times`'s). Ids are strings or
    numbers, compared with surrounding white space stripped (``"a"`` and
    ``"a  "`` are duplicates) and returned as given; limits on sizes and
    values: :mod:`sched.ranking.tasks`. ``machines``: a count of
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
    command line, the file ``$SCHED_CONFIG`` names, else ``./config.yaml`` if
    present, else the defaults). A file's relative paths (``rank.winner``,
    ``scenario.calibration``, ...) are read from its folder, a mapping's from
    the working directory. A missing verdict file is named in ``why`` and
    logged as a warning on the ``sched.rank`` logger. ``policy="plan"``: the
    planner on config ``plan.base`` (:mod:`sched.ranking.plan_rank`);
    ``budget_ms``, its time budget per call (default config ``plan.budget_ms``).

    Returns a list of ids (as given) in start order; with ``explain=True`` a
    DataFrame with, in start order, each task's planned machine, start and
    end, lateness (end - due) and tardiness, and the policy used. Any bad
    input (tasks, arguments, config, policy or winner file) raises
    :class:`RankInputError`, and nothing else.
    """
    d = decide(tasks, now, policy, machines, explain, config, policy_file, budget_ms)
    return d.frame if explain else d.ids


def decide(
    tasks, now=None, policy="auto", machines=1, explain=False, config=None, policy_file=None, budget_ms=None
):
    """:func:`rank`'s decision with the policy that made it: a :class:`Decision` (the ids in
    start order, the policy's name and why, and with ``explain`` the plan as a table). The
    arguments and errors are :func:`rank`'s; ``sched serve`` answers with all of it."""
    return run(prepare(tasks, now, policy, machines, explain, config, policy_file, budget_ms))


#: A call read and its policy chosen, not yet run (:func:`prepare`); ``started``: the call's
#: ``time.perf_counter()`` (policy plan's budget bounds the whole call).
Call = namedtuple("Call", "q st choice budget_ms explain started")


def prepare(
    tasks, now=None, policy="auto", machines=1, explain=False, config=None, policy_file=None, budget_ms=None,
    *, started=None,
):  # fmt: skip
    """The first half of :func:`decide`: the tasks read and checked, the policy chosen (a
    :class:`Call`). Every bad input is refused here; a fault of the files read on the caller's
    behalf (config, verdicts, policy file) is a :class:`RankSetupError`. ``started``: when the
    call began, a ``time.perf_counter()`` (default: now); plan's ``budget_ms`` counts from it, so
    that ``sched serve`` passes when the request arrived and the budget bounds what its client
    waits, a wait for a free worker included."""
    started = time.perf_counter() if started is None else float(started)
    st = _settings(config)
    q = read_queue(task_records(tasks), now, machines, st)
    if budget_ms is not None:  # the arguments first: a bad one is the call's one error
        from sched.learn.search.planner import PlanError, check_budget

        try:
            check_budget(budget_ms)
        except PlanError as exc:
            raise RankInputError(str(exc)) from None
    choose = lambda: _choice(policy, policy_file, st, _farm_of(q))  # noqa: E731
    choice = choose() if q.chunks is None else farm_plan.choose(policy, choose, st, _farm_of(q))
    if budget_ms is not None and choice.name != "plan":
        raise RankInputError(f"budget_ms: only used with policy 'plan', not {choice.name!r}")
    return Call(q, st, choice, budget_ms, explain, started)


def run(call):
    """The second half of :func:`decide`: the prepared call's policy run over its queue."""
    q, st, choice = call.q, call.st, call.choice
    if q.n == 0:
        order = start = end = mach = np.zeros(0, np.int64)
    elif q.chunks is not None:  # jobs of frames: the rule's plan on the chunked model
        order, start, end, mach = farm_plan.plan(q, choice, call.explain)
    elif choice.name == "plan":
        from sched.ranking.plan_rank import plan_order

        order, start, end, mach, note = plan_order(
            q,
            st.config,
            lambda b: _choice(b, None, st, _farm_of(q)),
            call.budget_ms,
            call.started,
            choice if choice.plan is not None else None,
        )
        choice = choice._replace(why=f"{choice.why}; {note}")
    elif choice.wait is not None:  # a delayed rule: held tasks start later than now
        order, start, end, mach, holds = hold.plan(q, choice)
    elif choice.rule is not None:
        from sched.sim.one_queue import rollout_order

        order, start, end, mach = rollout_order(
            q.arrival, q.estimate, q.weight, q.due, q.machine_free, q.speed, choice.rule, choice.k
        )
    else:
        order, start, end, mach, choice = _ppo_rollout(choice, q)
    frame = explain_frame(q, choice, order, start, end, mach) if call.explain else None
    ids, held = q.ids, None
    if choice.wait is not None and q.n:  # a delayed rule's holds, in why and in ``held``
        frame, held = hold.outcome(frame, q, choice, holds, start)
    limits = farm_plan.limits_of(q, choice)  # a farm verdict's cap: each job's limit
    if frame is not None and limits is not None:
        frame["limit"] = [limits[ids[i]] for i in order.tolist()]
    return Decision([ids[i] for i in order.tolist()], choice.name, choice.why, frame, held, limits)


def is_rule(call):
    """Whether the prepared call runs a dispatching rule (microseconds a task), not a learned
    policy or the planner."""
    return call.choice.rule is not None and call.choice.name != "plan"


def is_ready(call):
    """Whether the prepared call runs in microseconds a task from now on: a rule, or a learned
    policy whose file this process has already loaded (a first load takes a second)."""
    if is_rule(call):
        return True
    from sched.learn.policy.policy_file import is_cached

    return call.choice.name != "plan" and is_cached(call.choice.policy_file)


def tuned_rule(call):
    """The prepared call's decision by the tuned rule (ATC with the k tuned for the call's GPUs,
    else config ``rules.atc_k``): ``sched serve``'s answer when the call's own policy is too late
    or cannot run. Returns (Decision, where the k comes from)."""
    farm = _farm_of(call.q)
    try:
        k, v = tuned_k(call.st, farm)
        choice, how = Choice("atc-tuned", rules.ATC, k, None, ""), f"k tuned in {v.source} for these GPUs"
    except RankInputError:  # no tuned k for these GPUs, or tuned.json unreadable
        choice, how = Choice("atc", rules.ATC, call.st.atc_k, None, ""), "config rules.atc_k"
    return run(call._replace(choice=choice)), how


def fallback(call):
    """The prepared call's answer when its own policy is too late: for the verdict plan, its
    base policy's order (a rule's in microseconds, a learned policy's in about 5 microseconds a
    task); for any other policy, :func:`tuned_rule`'s. Returns (Decision, how it was chosen)."""
    if call.choice.name == "plan" and call.choice.plan is not None:
        from sched.ranking.plan_rank import base_of

        base = base_of(call.choice)
        return run(call._replace(choice=base, budget_ms=None)), f"plan's base policy, {base.name}"
    return tuned_rule(call)


def readiness(config=None):
    """(policy, why) that policy ``auto`` runs on the config's GPUs, once the config and its
    verdict files (config ``rank.winner`` and ``rank.tuned``) are found and valid; otherwise a
    RankInputError naming what is missing or malformed (``sched serve``'s ``/readyz``)."""
    st = _settings(config)
    gone = missing_files(st)
    if gone:
        raise RankInputError(f"verdicts not found: {', '.join(gone)} (the benchmark writes them)")
    choice = auto_choice(st, {"machines": st.farm["machines"], "speeds": st.farm["speeds"]})
    return choice.name, choice.why


# --------------------------------------------------------------------------- settings

#: the Settings of each config (file or mapping); a Settings is never changed once built, so
#: threads share it
_settings_cache = Cache(33)


def _settings(config):
    """What rank needs from the config, cached per file (path, mtime, size) or content."""
    from sched.config import config_path

    from_file = config is None or isinstance(config, (str, os.PathLike))
    if from_file:
        try:  # config=, else $SCHED_CONFIG, else ./config.yaml if present, else None: the defaults
            path = config_path(config)
        except SchedError as exc:
            raise RankSetupError(str(exc)) from exc
        try:
            s = os.stat(path)
            key = (os.getcwd(), os.fspath(path), s.st_mtime_ns, s.st_ctime_ns, s.st_size, s.st_ino)
        except (OSError, TypeError):
            key = (os.getcwd(), None if path is None else os.fspath(path))
    elif isinstance(config, Mapping):  # a dict, or a Config already validated
        plain = config.to_dict() if isinstance(config, Record) else config
        key = ("mapping", os.getcwd(), json.dumps(plain, sort_keys=True, default=str))
    else:
        raise RankInputError(f"config: expected a file path or a mapping, got {type(config).__name__}")
    return _settings_cache.get(key, lambda: _load_settings(path if from_file else plain, from_file))


def _load_settings(source, from_file):
    """The Settings of a config file's path (None: the schema's defaults) or of a mapping."""
    import copy

    from sched.config import load_config, validate_config

    try:
        if from_file:
            cfg = load_config(source)
        else:  # a mapping: its relative paths are read from the working directory
            cfg = validate_config(copy.deepcopy(source), "config", ".")
    except SchedError as exc:  # ConfigError: the message names the file and field
        raise RankSetupError(str(exc)) from exc
    return Settings(
        weights={name: float(c["weight"]) for name, c in cfg.scenario.priorities.items()},
        atc_k=float(cfg.rules.atc_k),
        winner=cfg.rank.winner,
        tuned=cfg.rank.tuned,
        calibration=cfg.scenario.get("calibration"),
        others=cfg.rank.settings,
        farm=setting.of_config(cfg),
        config=cfg,
        root=cfg.root,
    )


# --------------------------------------------------------------------------- policy


def _farm_of(q):
    """The call's GPUs as a setting (no load: a call does not state one)."""
    return {"machines": len(q.machine_free), "speeds": setting.canonical_speeds(q.speed)}


def _choice(policy, policy_file, st, farm):
    """How to run ``policy`` on the call's GPUs ``farm``: a Choice (name, rule id or None, k,
    policy file, why)."""
    if not isinstance(policy, (str, os.PathLike)):
        raise RankInputError(f"policy: expected a name or a policy file path, got {shorten(policy)}")
    name = os.fspath(policy)
    if policy_file is not None and not (name == "ppo" or name.startswith("ppo-")):
        raise RankInputError(f"policy_file: only used with policy 'ppo' or 'ppo-<seed>', not {shorten(name)}")
    asked = f"asked for by the call (policy={name!r})"
    if name == "auto":  # a delayed winner's alpha: sched.ranking.hold
        return hold.resolve(_setup(auto_choice, st, farm), st, farm)
    if name in rules.RULES:
        return Choice(name, rules.rule_id(name), st.atc_k, None, asked)
    if name in rules.WAIT_RULES:
        return _setup(hold.delayed_choice, name, st, asked)
    if name == "plan":
        return Choice(name, None, None, None, f"{asked}: lookahead on config plan.base (docs/plan.md)")
    if name == "atc-tuned":
        k, v = _setup(tuned_k, st, farm)
        return Choice(name, rules.ATC, k, None, f"{asked}; k tuned in {v.source} for these GPUs")
    if name == "ppo":
        if policy_file is None:
            raise RankInputError("policy ppo: needs policy_file (a trained policy file)")
        return _setup(ppo_choice, name, policy_file, "policy_file", asked)
    digits = name[4:] if name.startswith("ppo-") else ""
    if digits.isascii() and digits.isdecimal() and len(digits) > MAX_SEED_DIGITS:
        raise RankInputError(
            f"policy: the seed of ppo-<seed> has {len(digits)} digits, more than "
            f"{MAX_SEED_DIGITS} (sched.limits.MAX_SEED_DIGITS): {shorten(name)}"
        )
    if is_seed_name(name):
        from sched.config import under_root

        pfile = policy_file
        if pfile is None:  # the workflow's policy file, under the config's root
            pfile = under_root(st.config, layout.policy_file(name[4:]))
            _known_seed(name, pfile, st.config)
        return _setup(ppo_choice, name, pfile, "policy_file", asked)
    if os.path.lexists(name) or _looks_like_a_path(name):  # a folder or a device: said so, not "unknown"
        return _setup(ppo_choice, "ppo", name, "policy", asked)
    raise RankInputError(
        f"policy: unknown policy {shorten(name)}; expected auto, {', '.join(rules.RULES)}, atc-tuned, "
        f"{', '.join(rules.WAIT_RULES)}, ppo (with policy_file), ppo-<seed>, or an existing policy file"
    )


def _known_seed(name, pfile, cfg):
    """A ``ppo-<seed>`` the config does not train and no policy file holds names no policy: the
    caller's error (a RankInputError), not a fault of the files (a configured seed's policy file
    missing is one: a RankSetupError). No path in the message: a service's client reads it."""
    seeds = list(cfg.train.seeds)
    if int(name[4:]) not in seeds and not os.path.isfile(pfile):
        shown = ", ".join(map(str, seeds[:10])) + (", ..." if len(seeds) > 10 else "")
        raise RankInputError(
            f"policy: unknown policy {name!r}: seed {name[4:]} is not among config train.seeds "
            f"({shown}) and its policy file is not found"
        )


def _looks_like_a_path(name):
    """Whether policy ``name`` can only be a file's path (a folder in it, or a policy file's suffix)."""
    return os.sep in name or name.endswith((".pt", ".pth"))


def _setup(read, *args):
    """``read(*args)``, whose refusals are faults of the files it reads (a RankSetupError)."""
    try:
        return read(*args)
    except RankSetupError:
        raise
    except RankInputError as exc:
        raise RankSetupError(str(exc)) from exc


def _ppo_rollout(choice, q):
    """Greedy (argmax) rollout of a trained policy over the queue: its compiled decision
    (``sched.learn.policy.kernel.run_one``), the benchmark's."""
    from sched.learn.policy import kernel
    from sched.learn.policy.policy_file import PolicyFileError, load_cached

    try:
        policy = load_cached(choice.policy_file)
    except PolicyFileError as exc:  # the message names the file and the field or tensor
        raise RankSetupError(str(exc)) from exc
    trained, farm = policy.meta.get("setting"), _farm_of(q)
    if trained is not None and not setting.same_farm(trained, farm):
        gpus = setting.describe({**farm, "load": None})
        note = f"note: trained for {setting.describe(trained)}, not the call's {gpus}"
        choice = choice._replace(why=f"{choice.why}; {note}")
    start, end, mach = kernel.run_one(
        policy,
        (q.arrival, q.estimate, q.estimate, q.weight, q.due),
        machines=q.speed,
        machine_free=q.machine_free,
        week_start_s=WEEK_START_S,
    )
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    mach = np.asarray(mach, np.int64)
    # Equal start times go to the lowest free machine first, one decision after
    # the other (end > start, estimates are > 0), so (start, machine) is the
    # decision order.
    order = np.lexsort((np.arange(q.n), mach, start))
    return order, start, end, mach, choice
