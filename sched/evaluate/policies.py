"""The named policies of the benchmark, and how to run each (its spec).

Names: the heuristics of :data:`HEURISTICS` (``atc-tuned`` is ATC with the k
that ``sched tune`` chose), ``ppo-<S>``, the PPO policy of training seed S, and
``ppo-<S>-warm``, its warm start (the teacher's distilled weights before PPO,
``warm_start.pt`` beside the policy file; only when training has a teacher).
Both learned kinds are policy files; a warm start is benchmarked to show PPO's
share of the gain, and is never the winner (:func:`sched.verdict.winner.choose_winner`).
``plan`` is the planner (``sched.learn.search.planner``) on the base policy of config
``plan.base`` (or on the winner, at a setting of its candidacy: :func:`sched.verdict.candidacy.plan_gate`).
A spec says how to run a name: ``kind`` ('rule' or 'ppo'), ``rule`` and
``atc_k`` for a rule, ``policy_file`` for a learned policy.
"""

import os
import re
from pathlib import Path

from sched import layout
from sched.config import shorten, training_atc_k
from sched.evaluate.errors import BenchmarkError
from sched.evaluate.seeds import train_seeds
from sched.files import file_problem
from sched.limits import MAX_SEED_DIGITS

#: The heuristics in the order every table lists them.
HEURISTICS = ("fifo", "spt", "edd", "wspt", "atc", "wmdd", "atc-tuned")
#: The delayed rules (``sched.sim.waiting``), run where config benchmark.waiting.rules names them.
DELAYED = ("wspt-wait", "atc-wait")

#: A seed (or a round) in a name: ASCII digits, at most limits.MAX_SEED_DIGITS (never a number
#: too long to read, nor a path too long to open).
_SEED = f"([0-9]{{1,{MAX_SEED_DIGITS}}})"
_PPO = re.compile(rf"^ppo-{_SEED}$")
_WARM = re.compile(rf"^ppo-{_SEED}-warm$")
_ROUND = re.compile(rf"^ppo-{_SEED}-r{_SEED}$")
_MAIN = re.compile(rf"^main-ppo-{_SEED}$")
#: The prefix of the main setting's policies benchmarked under another setting (the studio's
#: ``main-ppo-<S>``, results/train/seed-S/): benchmarked beside its own ``ppo-<S>``, never the winner.
MAIN_PREFIX = "main-"
#: The planner's name (docs/plan.md).
PLAN = "plan"
#: The gated teacher run as a policy (``sched.learn.search.teacher``: the planner with the teacher's
#: settings, ``train.teacher_*``, on its base rule ``train.teacher_base``).
TEACHER = "teacher"
#: Policies that plan at each decision (run one scenario after the other).
PLANNERS = (PLAN, TEACHER)
#: The suffix of a warm start's name: ``ppo-<S>-warm``.
WARM_SUFFIX = "-warm"


def is_ppo(name):
    """A final PPO policy, ``ppo-<S>`` (not its warm start)."""
    return bool(_PPO.match(name))


def is_warm(name):
    """A warm start, ``ppo-<S>-warm``."""
    return bool(_WARM.match(name))


def is_round(name):
    """A round of expert iteration, ``ppo-<S>-r<R>``."""
    return bool(_ROUND.match(name))


def round_name(seed, r):
    """The name of training seed ``seed``'s policy after round ``r`` of expert iteration."""
    return f"ppo-{seed}-r{r}"


def round_of(name):
    """The round of a ``ppo-<S>-r<R>`` name."""
    return int(_ROUND.match(name).group(2))


def is_main(name):
    """The main setting's policy under another setting, ``main-ppo-<S>``."""
    return bool(_MAIN.match(name))


def is_learned(name):
    """A policy run from a policy file: ``ppo-<S>``, ``ppo-<S>-warm``, ``ppo-<S>-r<R>`` or
    ``main-ppo-<S>``."""
    return is_ppo(name) or is_warm(name) or is_round(name) or is_main(name)


def competes(name):
    """Whether a policy may be a winner.json's: not a warm start or a round (the stages before
    the final ``ppo-<S>``), not the main setting's policy under another setting, not the teacher
    (each is benchmarked to measure, not to deploy); not plan either, which becomes the verdict
    through its candidacy on the winner (:func:`sched.verdict.candidacy.plan_gate`), not by the choice
    among the others."""
    return not (is_warm(name) or is_round(name) or is_main(name) or name in PLANNERS)


def warm_name(seed):
    """The name of training seed ``seed``'s warm start."""
    return f"ppo-{seed}{WARM_SUFFIX}"


def is_heuristic(name):
    return name in HEURISTICS or name in DELAYED


def ppo_seed(name):
    """The training seed of a learned policy's name (``ppo-<S>`` or ``ppo-<S>-warm``)."""
    return int((_PPO.match(name) or _WARM.match(name) or _ROUND.match(name) or _MAIN.match(name)).group(1))


def policy_key(name):
    """Sort key: heuristics in table order, then PPO by training seed, each followed by its
    warm start and its rounds in order."""
    if is_heuristic(name):
        return (0, (HEURISTICS + DELAYED).index(name), 0, 0, "")
    m = _PPO.match(name)
    if m:
        return (1, int(m.group(1)), 0, 0, "")
    m = _WARM.match(name)
    if m:
        return (1, int(m.group(1)), 1, 0, "")
    m = _ROUND.match(name)
    if m:
        return (1, int(m.group(1)), 2, int(m.group(2)), "")
    m = _MAIN.match(name)
    if m:
        return (2, int(m.group(1)), 0, 0, "")
    return (3, 0, 0, 0, name)


def best_heuristic(twt):
    """The heuristic with the lowest mean (first in table order on a tie)."""
    cands = [p for p in twt if is_heuristic(p)]
    if not cands:
        raise BenchmarkError("no heuristic among the policies: the summary compares to heuristics")
    return min(cands, key=lambda p: (twt[p].mean(), policy_key(p)))


def default_policies(cfg):
    """Every heuristic, then ``ppo-<S>`` for each training seed of the config."""
    return list(HEURISTICS) + [f"ppo-{s}" for s in train_seeds(cfg)]


def has_teacher(cfg):
    """Whether training has a teacher's warm start (``train.teacher_scenarios`` > 0)."""
    return cfg.train.teacher_scenarios > 0


def benchmark_policies(cfg):
    """:func:`default_policies`, and each seed's warm start ``ppo-<S>-warm`` after its
    ``ppo-<S>`` when training has a teacher: what ``sched benchmark`` runs by default."""
    warm = [warm_name(s) for s in train_seeds(cfg)] if has_teacher(cfg) else []
    return sorted(default_policies(cfg) + warm, key=policy_key)


def parse_policies(text, cfg, default=default_policies):
    """Comma-separated policy names (None: ``default(cfg)``)."""
    if text is None:
        return default(cfg)
    names = [p.strip() for p in str(text).split(",") if p.strip()]
    if not names:
        raise BenchmarkError("--policies: empty list")
    for n in names:
        if not (is_heuristic(n) or is_learned(n) or n in PLANNERS):
            raise BenchmarkError(
                f"--policies: unknown policy {shorten(n)}; expected {', '.join(HEURISTICS + DELAYED)}, "
                f"ppo-<training seed>, ppo-<training seed>-warm, ppo-<training seed>-r<round>, "
                f"main-ppo-<training seed>, {PLAN} or {TEACHER}"
            )
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BenchmarkError(f"--policies: {', '.join(dup)} given twice")
    return sorted(names, key=policy_key)


def parse_policy_files(items):
    """``['ppo-1=PATH', 'ppo-1-warm=PATH', ...]`` -> {'ppo-1': Path, 'ppo-1-warm': Path}."""
    out = {}
    for item in items or []:
        name, sep, path = str(item).partition("=")
        name = name.strip()
        if not sep or not path.strip() or not is_learned(name):
            raise BenchmarkError(
                f"--policy-file: expected ppo-<seed>=PATH, ppo-<seed>-warm=PATH, ppo-<seed>-r<round>=PATH "
                f"or main-ppo-<seed>=PATH, got {item!r}"
            )
        if name in out:
            raise BenchmarkError(f"--policy-file: {name} given twice")
        out[name] = Path(path.strip())
    return out


def read_tuned(path):
    """The tuned ATC k from ``sched tune``'s file."""
    from sched.ranking.verdict_files import check_tuned, read_verdict

    path = Path(path)
    if file_problem(path) == "not found":
        raise BenchmarkError(
            f"{path}: tuned-k file not found (run `sched tune` first, or leave atc-tuned out of --policies)"
        )
    # read as rank() reads it (bounded, a FIFO refused, duplicate keys refused) and checked as it
    # checks it: a k > 0, fields that agree
    return read_verdict(
        path, lambda data, p, root: (check_tuned(data, p, root), data)[1], error=BenchmarkError
    )


def resolve_policies(
    cfg, names, tuned=None, policy_files=None, missing_ok=False, plan_base=None, plan_setting=None
):
    """How to run each named policy: ({name: spec}, [skipped]).

    ``tuned``: path of ``sched tune``'s file (needed for atc-tuned; default
    :data:`sched.layout.TUNED_PATH`). ``policy_files`` overrides the default
    policy file of a learned policy (:func:`sched.layout.policy_file` for ``ppo-<S>``,
    :func:`sched.layout.warm_policy_file` for ``ppo-<S>-warm``). A missing
    file is an error, unless ``missing_ok``: then the policy is left out and
    described in the list of skipped policies. ``plan_base``: the name of plan's base policy
    (one of ``policy_files``' or a rule), instead of config ``plan.base``: the other files may
    then go unused. ``plan_setting``: plan at that setting of config ``plan.grid`` (its
    candidacy, :func:`sched.verdict.candidacy.plan_gate`) instead of config ``plan``'s own settings.
    """
    policy_files = dict(policy_files or {})
    # with plan on a base chosen elsewhere, the files are those of the policies it was chosen among
    unused = set() if plan_base is not None and PLAN in names else set(policy_files) - set(names)
    if unused:
        raise BenchmarkError(
            f"--policy-file: {', '.join(sorted(unused))} is not among the policies run ({', '.join(names)})"
        )
    specs, skipped = {}, []
    for name in names:
        if name == PLAN:
            specs[name] = plan_spec(cfg, tuned, policy_files.get(PLAN), plan_base, policy_files, plan_setting)
        elif name == TEACHER:
            specs[name] = teacher_spec(cfg, tuned)
        elif name == "atc-tuned":
            path = Path(tuned or layout.TUNED_PATH)
            if missing_ok and not path.exists():
                skipped.append(f"{name} ({path} not found)")
                continue
            specs[name] = rule_spec("atc", float(read_tuned(path)["atc_k"]))
        elif name in DELAYED:
            from sched.sim.waiting import tuned_parameters

            alpha, k, wait = tuned_parameters(read_tuned(Path(tuned or layout.TUNED_PATH)), name)
            specs[name] = {**rule_spec(name, k), "wait_alpha": alpha, "max_wait_s": wait}
        elif is_heuristic(name):
            specs[name] = rule_spec(name, float(cfg.rules.atc_k) if name == "atc" else None)
        else:
            if is_round(name):
                default = layout.round_policy_file(ppo_seed(name), round_of(name))
            else:
                default = (layout.warm_policy_file if is_warm(name) else layout.policy_file)(ppo_seed(name))
            path = policy_files.get(name, Path(default))
            why = file_problem(path)
            if why == "not found":
                if missing_ok and name not in policy_files:
                    skipped.append(f"{name} ({path} not found)")
                    continue
                how = " with a teacher (train.teacher_scenarios > 0)" if is_warm(name) else ""
                raise BenchmarkError(
                    f"policy {name}: policy file {path} not found (train it with `sched train`{how}, "
                    f"or name another file with --policy-file {name}=PATH)"
                )
            if why is not None:  # a folder, a device, a name too long: not "not found"
                raise BenchmarkError(f"policy {name}: policy file {path}: {why}")
            specs[name] = {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": str(path)}
    return specs, skipped


def rule_spec(rule, atc_k=None):
    """The spec of a dispatching rule (``atc_k``: ATC's k, None for the other rules)."""
    return {"kind": "rule", "rule": rule, "atc_k": atc_k, "policy_file": None}


def same_rule(a, b):
    """Whether two specs run the same rule with the same k (the same schedules)."""
    return bool(
        a
        and b
        and a.get("kind") == b.get("kind") == "rule"
        and a["rule"] == b["rule"]
        and a.get("atc_k") == b.get("atc_k")
    )


def teacher_spec(cfg, tuned=None):
    """The spec of ``teacher``: the planner on the rule ``train.teacher_base`` (ATC with the
    training's k: ``train.atc_k``, the tuned k when it is ``tuned``, else ``rules.atc_k``), the
    base continuing its rollouts, with the teacher's settings (``settings``, ``chunk``)."""
    from sched.learn.settings import TeacherSettings

    k = cfg.train.atc_k
    if k == "tuned":
        k = float(read_tuned(Path(tuned or layout.TUNED_PATH))["atc_k"])
    k = training_atc_k(cfg, k)
    rule = cfg.train.teacher_base
    teacher = TeacherSettings.from_config(cfg)
    settings = dict(
        cfg.plan,
        candidates=teacher.candidates,
        samples=teacher.samples,
        horizon=teacher.horizon,
        z=teacher.z,
        budget_ms=None,
    )
    return {
        "kind": PLAN,
        "rule": None,
        "atc_k": None,
        "policy_file": None,
        "base": rule,
        "base_spec": rule_spec(rule, k if rule == "atc" else None),
        "rollout_spec": None,
        "settings": settings,
        "chunk": int(teacher.chunk),
    }


def plan_spec(cfg, tuned=None, policy_file=None, base=None, policy_files=None, setting=None):
    """The spec of ``plan``: its base policy's spec (``base``, a policy name found in
    ``policy_files`` or a rule; else config ``plan.base``, or the policy file ``policy_file``)
    under ``base_spec``, its name under ``base``, and the rule that continues its rollouts
    (config ``plan.rollout``) under ``rollout_spec`` (None: the base). ``setting``: a setting
    of config ``plan.grid``, whose settings and rollout replace config ``plan``'s (under
    ``settings`` and ``setting``)."""
    if base is not None:
        files = {base: policy_files[base]} if base in (policy_files or {}) else None
        spec = resolve_policies(cfg, [base], tuned=tuned, policy_files=files)[0][base]
        return _plan_spec(cfg, tuned, base, spec, setting)
    base = str(policy_file) if policy_file is not None else cfg.plan.base
    if base == "auto":
        from sched.ranking.verdict_files import check_winner, read_verdict

        path = Path(cfg.rank.winner)
        if file_problem(path) == "not found":
            raise BenchmarkError(f"plan.base: auto needs the winner file {path} (not found)")
        # read and checked as rank() reads it: a winner whose fields disagree is refused here too
        won, choice = read_verdict(
            path,
            lambda data, p, root: (data, check_winner(data, p, root)[0]),
            cfg.get("root") or ".",
            error=BenchmarkError,
        )
        name = won["policy"]
        spec = rule_spec(won["rule"], won["atc_k"]) if won["rule"] else None
        spec = spec or {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": str(choice.policy_file)}
    elif is_heuristic(base) or is_learned(base):
        name, spec = base, resolve_policies(cfg, [base], tuned=tuned)[0][base]
    elif os.path.lexists(base) or os.sep in base or base.endswith((".pt", ".pth")):
        why = file_problem(base)
        if why is not None:  # a folder, a device: said so, not "unknown base policy"
            raise BenchmarkError(f"plan.base: policy file {base}: {why}")
        name, spec = Path(base).stem, {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": base}
    else:
        raise BenchmarkError(
            f"plan.base: unknown base policy {base[:40]!r}; expected auto, {', '.join(HEURISTICS)}, "
            f"ppo-<training seed> or an existing policy file"
        )
    return _plan_spec(cfg, tuned, name, spec, setting)


def _plan_spec(cfg, tuned, name, spec, setting=None):
    """plan's spec on the base policy ``name`` of spec ``spec`` (:func:`plan_spec`)."""
    settings = None
    if setting is not None:
        from sched.learn.search.planner import grid_setting

        settings = grid_setting(cfg, setting)
    roll = cfg.plan.rollout if settings is None else settings["rollout"]
    if roll == "base":
        roll_spec = None
    elif is_heuristic(roll):
        try:
            roll_spec = resolve_policies(cfg, [roll], tuned=tuned)[0][roll]
        except BenchmarkError as exc:  # the rollout's k: say which setting asked for it
            why = str(exc).split(" (run `sched tune`")[0]
            raise BenchmarkError(
                f"plan.rollout: {roll}: {why}; run `sched tune` first, or set plan.rollout to atc or base"
            ) from None
    else:
        raise BenchmarkError(
            f"plan.rollout: unknown rollout policy {roll[:40]!r}; expected base or one of "
            f"{', '.join(HEURISTICS)}"
        )
    return {
        "kind": PLAN,
        "rule": None,
        "atc_k": None,
        "policy_file": None,
        "base": name,
        "base_spec": spec,
        "rollout_spec": roll_spec,
        "settings": settings,
        "setting": setting,
    }
