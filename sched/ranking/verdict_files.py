"""What a ``winner.json`` and a ``tuned.json`` must hold, read as ``rank()`` reads them
(the format: docs/file-contract.md). Each check takes the parsed JSON and the file's path
and returns what :mod:`sched.ranking.verdicts` follows; a malformed field is a
``RankInputError`` naming the file and field."""

import math
import os
import re
from collections import namedtuple
from pathlib import Path

from sched import files, layout, setting
from sched.errors import shorten
from sched.formats import json_input
from sched.limits import MAX_VERDICT_BYTES
from sched.ranking.tasks import RankInputError
from sched.sim import rules


class VerdictRefused(RankInputError):
    """A verdict file whose fields are each well formed but disagree with one another, or name
    something no later step can use (a policy file path the system refuses): ``rank()`` does not
    follow it and falls back, saying why (:mod:`sched.ranking.verdicts`). ``where``: the setting
    the file records (None when it records none)."""

    def __init__(self, message, where=None):
        super().__init__(message)
        self.where = where


#: The names of a learned policy (``sched.evaluate.policies.is_learned``).
_LEARNED = re.compile(r"(main-)?ppo-\d+(-warm|-r\d+)?")
#: Bytes of one part of a path (NAME_MAX on Linux and macOS) and of a whole path (PATH_MAX).
NAME_MAX, PATH_MAX = 255, 4095

# rule: rule id, or None for PPO; why: the reason it runs, in words (explain's column); plan:
# for the verdict plan, its record (base, settings, budget_ms; rule, k and policy_file are then
# its base's), else None; wait: a delayed rule's parameters (sched.ranking.hold), else None; cap:
# a farm verdict's parallelism limit, chunks of a job at once (sched.sim.farm_limits), else None;
# farm_policy: a learned farm verdict's policy_file record (sched.ranking.farm.learned), else None
Choice = namedtuple(
    "Choice",
    "name rule k policy_file why sha256 plan wait cap farm_policy",
    defaults=("", None, None, None, None, None),
)


def read_verdict(path, check, root=".", error=RankInputError):
    """``check(data, path, root)`` of the verdict file ``path`` (``check_winner``, ``check_tuned``),
    read as every file is: through ``sched.files.read_bytes`` (a regular file of at most
    MAX_VERDICT_BYTES, a FIFO refused without blocking) and ``sched.formats.json_input.parse`` (a key given
    twice refused). Its refusals are ``error`` (a VerdictRefused stays one when ``error`` is
    RankInputError: rank() falls back on it)."""
    data = json_input.parse(files.read_bytes(path, error, MAX_VERDICT_BYTES), path, error, nan=True)
    try:
        return check(data, path, root)
    except RankInputError as exc:
        if isinstance(exc, error):
            raise
        raise error(str(exc)) from None


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


def check_winner(data, path, root="."):
    """A winner.json (format in docs/file-contract.md) as (Choice, setting or None), paths resolved."""
    if not isinstance(data, dict):
        raise RankInputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    name = data.get("policy")
    if not isinstance(name, str) or not name:
        raise RankInputError(f"{path}: field policy: expected a policy name, got {name!r}")
    where = _setting_field(data, path, None)
    _check_selection(data.get("selection"), path)
    held = data.get("held_out")
    gate = _held_out_note(held, path)
    plan = _plan_record(data.get("plan"), path) if name == "plan" else None
    if plan is not None:
        d = plan["validation"]["mean_difference_pct"]
        gate = f"; plan on {plan['base']}, chosen on validation: {d:+.1f} % against {plan['base']}{gate}"
    rule, k, pfile = data.get("rule"), data.get("atc_k"), data.get("policy_file")
    sha = data.get("policy_sha256")
    if rule is not None:
        if rule not in rules.RULES + rules.WAIT_RULES:
            raise RankInputError(
                f"{path}: field rule: unknown rule {rule!r}; expected one of {', '.join(rules.RULES)}"
            )
        if k is not None:
            k = _positive_field(k, path, "atc_k")
    elif pfile is None:
        raise RankInputError(
            f"{path}: fields rule and policy_file are both null: nothing says how to run the winner"
        )
    if pfile is not None and not isinstance(pfile, str):
        raise RankInputError(f"{path}: field policy_file: expected a path, got {pfile!r:.60}")
    if sha is not None and not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
        raise RankInputError(
            f"{path}: field policy_sha256: expected 64 hexadecimal digits (or null), got {sha!r:.60}"
        )
    runs = plan["base"] if plan is not None else name  # a plan verdict runs its base's rule or file
    _agree(path, name, runs, rule, k, pfile, sha, where)
    if held is not None:  # the held-out gate runs after plan's: it judged the policy named, plan too
        _held_out_agrees(path, name, data["held_out"], where)
    if rule in rules.WAIT_RULES:  # a delayed rule: its alpha from the tuned.json beside, read per call
        wait = {"tuned": os.path.join(os.path.dirname(path), layout.TUNED)}  # (sched.ranking.hold.resolve)
        return Choice(name, rules.wait_base(rule), None, None, gate, wait=wait), where
    if rule is not None:
        return Choice(name, rules.rule_id(rule), k, None, gate, None, plan), where
    _usable_path(pfile, path, where)
    # The pipeline writes paths relative to the project root (the folder of the
    # config's relative paths, ``root``: the working directory when "."); a
    # copied results folder is found relative to winner.json.
    p = Path(pfile)
    if not p.is_absolute():
        p = Path(root) / p if root != "." else p
        if not os.path.lexists(p):  # os.path: False, never an OSError, for a name the system refuses
            beside = Path(path).parent / pfile
            if os.path.lexists(beside):
                p = beside
    return Choice(name, None, None, p, gate, sha, plan), where


def _agree(path, name, runs, rule, k, pfile, sha, where):
    """VerdictRefused unless the fields that say how to run the winner (rule, atc_k, policy_file,
    policy_sha256) are those of the policy it names (``runs``: the policy, or plan's base), as
    the benchmark writes them (``sched.verdict``): a rule runs itself (atc-tuned runs
    atc with its tuned k), with no policy file; a learned policy runs its file, with no rule."""
    said = f"policy {name}" + (f" (plan on {runs})" if runs != name else "")

    def refuse(why):
        raise VerdictRefused(f"{path}: fields disagree: {said} {why}; the verdict is not followed", where)

    if runs in rules.RULES or runs == "atc-tuned" or runs in rules.WAIT_RULES:
        want = "atc" if runs == "atc-tuned" else runs
        if rule != want:
            refuse(f"runs the rule {want}, but field rule is {shorten(rule)}")
        if pfile is not None or sha is not None:
            refuse(f"is a rule, but field policy_file or policy_sha256 is set ({shorten(pfile)})")
        if runs == "atc-tuned" and k is None:
            refuse("runs ATC with its tuned k, but field atc_k is null")
        if want != "atc" and k is not None:
            refuse(f"does not use a k, but field atc_k is {k:g}")
    elif _LEARNED.fullmatch(runs):
        if rule is not None or k is not None:
            refuse(f"is a learned policy, but field rule or atc_k is set ({shorten(rule)}, {shorten(k)})")
    else:
        refuse("is neither a rule, atc-tuned, a learned policy (ppo-<S>, main-ppo-<S>, ...) nor plan")


def _usable_path(pfile, path, where):
    """VerdictRefused when ``policy_file`` is a path no system call can take (empty, a NUL byte, a
    part over NAME_MAX bytes, the whole over PATH_MAX): every later step would fail on it."""
    raw = os.fsencode(pfile) if "\0" not in pfile else None
    if raw is None or not raw:
        why = "an empty path" if raw is not None else "a NUL character in the path"
    elif len(raw) > PATH_MAX:
        why = f"a path of {len(raw)} bytes, more than the {PATH_MAX} a path may have"
    else:
        longest = max(len(part) for part in raw.split(b"/"))
        too_long = f"a part of {longest} bytes, more than the {NAME_MAX} a file name may have"
        why = too_long if longest > NAME_MAX else None
    if why:
        raise VerdictRefused(
            f"{path}: field policy_file: {why} ({shorten(pfile)}); the verdict is not followed", where
        )


def _plan_record(plan, path):
    """winner.json's ``plan`` record of a plan verdict (``sched.verdict.candidacy.plan_gate``): its
    base's name, settings (checked as config ``plan``'s) and budget; the base's rule, k and policy
    file are the record's own fields."""
    from sched.learn.search.planner import PlanError, check_settings
    from sched.ranking.tasks import RankSetupError

    if not isinstance(plan, dict):
        raise RankInputError(f"{path}: field plan: the verdict plan needs its record, got {plan!r:.40}")
    base, st, val = plan.get("base"), plan.get("settings"), plan.get("validation")
    if not (isinstance(base, str) and 0 < len(base) < 200) or base == "plan":
        raise RankInputError(f"{path}: field plan.base: expected the base policy's name, got {base!r:.40}")
    if not isinstance(st, dict) or st.get("rollout", "base") not in ("base", "atc-tuned", *rules.RULES):
        raise RankInputError(f"{path}: field plan.settings: expected plan's settings, got {st!r:.60}")
    d = val.get("mean_difference_pct") if isinstance(val, dict) else None
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d):
        raise RankInputError(
            f"{path}: field plan.validation.mean_difference_pct: expected a number, got {d!r:.40}"
        )
    try:
        settings = check_settings({**st, "budget_ms": plan.get("budget_ms")}, f"{path}: field plan.settings")
    except PlanError as exc:
        raise RankSetupError(str(exc)) from None
    settings["rollout"] = st.get("rollout", "base")
    return {"base": base, "settings": settings, "validation": {"mean_difference_pct": float(d)}}


def _held_out_note(held, path):
    """The words ``why`` adds for a verdict gated on held-out days (winner.json ``held_out``,
    ``sched.verdict.held_out``); "" without one."""
    if held is None:
        return ""
    if not isinstance(held, dict):
        raise RankInputError(f"{path}: field held_out: expected an object or null, got {held!r:.40}")
    days, chosen, best, deployed = (held.get(k) for k in ("days", "chosen", "best_rule", "deployed"))
    confirmed = held.get("confirmed", deployed)  # files before the validation days lack it
    if isinstance(days, bool) or not isinstance(days, int) or days < 1 or not isinstance(deployed, bool):
        raise RankInputError(f"{path}: field held_out: expected days >= 1 and deployed true/false")
    if not (isinstance(chosen, str) and isinstance(best, str) and len(chosen) + len(best) < 200):
        raise RankInputError(f"{path}: field held_out: expected the chosen and best_rule policy names")
    if not isinstance(confirmed, bool):
        raise RankInputError(f"{path}: field held_out.confirmed: expected true/false, got {confirmed!r:.40}")
    failed = held.get("failed") or []  # the confirmation's reasons it failed (issue 50; earlier files: none)
    if not (isinstance(failed, list) and all(isinstance(f, str) and len(f) < 400 for f in failed)):
        raise RankInputError(f"{path}: field held_out.failed: expected a list of reasons, got {failed!r:.60}")
    if held.get("best_rule_on") == "incumbent":
        if confirmed:
            return f"; confirmed on the {days} held-out days against the incumbent {best}"
        if deployed:  # the verdict is the incumbent itself
            return f"; not confirmed on the {days} held-out days ({'; '.join(failed)}); it is the incumbent"
        return (
            f"; {chosen}, chosen on validation, is not confirmed on the {days} held-out days "
            f"({'; '.join(failed)}): the incumbent {best} runs"
        )
    if deployed and chosen == best:
        return f"; also the best rule on the {days} held-out days"
    if deployed and not confirmed:
        return (
            f"; significantly worse than {best} (the validation days' best rule) on the {days} held-out days"
        )
    if deployed:
        return f"; not significantly worse than {best} on the {days} held-out days"
    return (
        f"; {chosen}, chosen on validation, is significantly worse than {best} on the {days} "
        f"held-out days: {best} runs"
    )


def _held_out_agrees(path, runs, held, where):
    """VerdictRefused unless winner.json's ``held_out`` record (checked by :func:`_held_out_note`)
    says the policy the verdict names (``runs``: its field policy, plan included) is what the
    held-out gate left
    (``sched.verdict.held_out.held_out_gate``): the chosen policy when it was deployed (confirmed,
    or the incumbent itself), else the rule it fell back to (``best_rule``)."""
    chosen, best, deployed = held["chosen"], held["best_rule"], held["deployed"]
    confirmed = held.get("confirmed", deployed)
    incumbent = held.get("best_rule_on") == "incumbent"
    if incumbent:
        if held.get("incumbent", best) != best:
            why = f"incumbent {shorten(held.get('incumbent'))} is not its best_rule {shorten(best)}"
            raise VerdictRefused(f"{path}: field held_out: {why}; the verdict is not followed", where)
        deployed_ok = deployed == (confirmed or chosen == best)
        want = chosen if deployed else best
    else:
        deployed_ok = confirmed == deployed
        want = chosen if deployed else best
    if not deployed_ok:
        raise VerdictRefused(
            f"{path}: field held_out: deployed {str(deployed).lower()} and confirmed "
            f"{str(confirmed).lower()} disagree (chosen {shorten(chosen)}, best_rule {shorten(best)}); "
            "the verdict is not followed",
            where,
        )
    if not deployed and chosen == best:
        raise VerdictRefused(
            f"{path}: field held_out: not deployed, yet its chosen policy is its best_rule "
            f"({shorten(best)}); the verdict is not followed",
            where,
        )
    if runs != want:
        state = "deployed" if deployed else "not deployed"
        raise VerdictRefused(
            f"{path}: fields policy and held_out disagree: held_out says {shorten(chosen)} was chosen "
            f"and {state}, so {shorten(want)} runs, but the verdict runs {shorten(runs)}; the verdict is "
            "not followed",
            where,
        )


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _check_selection(sel, path):
    """winner.json's ``selection`` (how the winner was chosen), when there is one: files of earlier
    versions, and those chosen on the test scenarios, have none. rank() does not use it."""
    if sel is None:
        return
    want = ("on", "seeds", "means")
    if not isinstance(sel, dict) or tuple(sel) not in (want, (*want, "days")):
        got = ", ".join(map(str, sel)) if isinstance(sel, dict) else type(sel).__name__
        raise RankInputError(f"{path}: field selection: keys {got}; expected exactly {', '.join(want)}")
    seeds = sel["seeds"]
    if not (isinstance(seeds, list) and len(seeds) == 2 and all(type(x) is int and x >= 0 for x in seeds)):
        raise RankInputError(f"{path}: field selection.seeds: expected [START, COUNT], got {seeds!r}")
    if not isinstance(sel["means"], dict):
        raise RankInputError(
            f"{path}: field selection.means: expected {{POLICY: MEAN, ...}}, got {sel['means']!r}"
        )
    if "days" in sel and not isinstance(sel["days"], dict):
        raise RankInputError(f"{path}: field selection.days: expected an object, got {sel['days']!r:.40}")


def check_tuned(data, path, root="."):
    """A tuned.json as (k, setting or None); the setting of earlier files is their ``scenario``."""
    if not isinstance(data, dict) or "atc_k" not in data:
        raise RankInputError(f'{path}: field atc_k: missing (expected {{"atc_k": K, ...}})')
    k = _positive_field(data["atc_k"], path, "atc_k")
    sc = data.get("scenario")
    legacy = None
    if isinstance(sc, dict) and isinstance(sc.get("machines"), int) and "load" in sc:
        legacy = _setting_field({"setting": {**sc, "speeds": None}}, path, None)
    where = _setting_field(data, path, legacy)
    _tuned_agrees(data, path, k, where)
    return k, where


def _tuned_agrees(data, path, k, where):
    """VerdictRefused when tuned.json's fields disagree (``sched.evaluate.tuning`` writes them): its
    rule is ATC's, its k one of its grid's, its scenario's GPU count its setting's."""

    def refuse(why):
        raise VerdictRefused(f"{path}: fields disagree: {why}; the tuned k is not used", where)

    if data.get("rule", "atc") != "atc":
        refuse(f"field rule is {shorten(data.get('rule'))}, but a tuned k is ATC's")
    grid = data.get("grid")
    ks = [g.get("atc_k") if isinstance(g, dict) else g for g in grid] if isinstance(grid, list) else []
    if ks and all(_is_number(x) for x in ks):  # the k of each grid point ({atc_k, ...}; bare ks too)
        if not any(float(x) == k for x in ks):
            refuse(f"atc_k {k:g} is not one of its grid's ({shorten(sorted(set(ks)), 60)})")
    sc, st = data.get("scenario"), data.get("setting")
    if isinstance(sc, dict) and isinstance(st, dict) and type(sc.get("machines")) is int:
        if sc["machines"] != st.get("machines"):
            got = shorten(st.get("machines"))
            refuse(f"scenario.machines {sc['machines']} is not setting.machines {got}")


def _is_number(x):
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)
