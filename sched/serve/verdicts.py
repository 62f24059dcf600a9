"""Which benchmark verdict ``rank(policy="auto")`` follows for a call's GPUs (docs/rank.md).

Every ``winner.json`` and ``tuned.json`` records the setting it was measured
on (:mod:`sched.setting`); a call follows the winner measured on its own GPUs
(count and speeds), the closest load first, else ATC with the k tuned for
those GPUs, else ATC with config ``rules.atc_k``. The files are read once and
again only when they change; a malformed one is a ``RankInputError`` naming
the file and field. They are read as every other input is (``sched.files.read_bytes``):
a regular file of at most ``MAX_VERDICT_BYTES``, so a pipe does not hang a call and
a link to a device does not fill the memory.

A learned winner's ``policy_sha256`` binds its policy file: a file whose bytes do not
match is not run (the call falls back to ATC with the tuned k, else config
``rules.atc_k``, and ``why`` says so); a winner.json of an earlier version, without
the field, is followed with a note in ``why`` that its policy file is not checked.
Likewise the studio's verdict binds the fitted workload it was measured on
(``setting.workload.sha256``): with another fit of the config's history in its place it is
not followed, as if it were absent, and ``why`` says so.
"""

import hashlib
import json
import logging
import math
import os
import re
import threading
from collections import namedtuple
from pathlib import Path

from sched import files, layout, setting
from sched.limits import MAX_CALIBRATION_BYTES, MAX_POLICY_BYTES, MAX_VERDICT_BYTES
from sched.serve.tasks import RankInputError
from sched.sim import rules

# rule: rule id, or None for PPO; why: the reason it runs, in words (explain's column)
Plan = namedtuple("Plan", "name rule k policy_file why sha256", defaults=("", None))

#: A benchmark's verdict on one setting: where from, the setting, its winner (a Plan or
#: None) and its tuned ATC k (or None).
Verdict = namedtuple("Verdict", "source setting winner tuned_k")

_json_cache = {}
#: rank()'s warnings (a verdict file not found): the ``sched`` logger's child
log = logging.getLogger("sched.rank")
_warned = set()
_warned_lock = threading.Lock()


def _json_file(path, check, root="."):
    """``check(data, path, root)`` of a JSON file, cached while the file is unchanged; None if absent."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    path = os.path.join(os.getcwd(), path)
    # ctime too: an in-place rewrite that restores the mtime (os.utime, cp -p) still changes it
    key = (s.st_mtime_ns, s.st_ctime_ns, s.st_size, s.st_ino, root)
    hit = _json_cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    text = files.read_text(path, RankInputError, MAX_VERDICT_BYTES)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RankInputError(f"{path}: not a readable JSON file: {exc}") from None
    except RecursionError:
        raise RankInputError(f"{path}: not a readable JSON file: nested too deeply") from None
    value = check(data, path, root)
    _json_cache[path] = (key, value)  # one atomic store of (version, value): never torn
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


def _check_winner(data, path, root="."):
    """A winner.json (format in docs/file-contract.md) as (Plan, setting or None), paths resolved."""
    if not isinstance(data, dict):
        raise RankInputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    name = data.get("policy")
    if not isinstance(name, str) or not name:
        raise RankInputError(f"{path}: field policy: expected a policy name, got {name!r}")
    where = _setting_field(data, path, None)
    _check_selection(data.get("selection"), path)
    gate = _held_out_note(data.get("held_out"), path)
    rule, k, pfile = data.get("rule"), data.get("atc_k"), data.get("policy_file")
    if rule is not None:
        if rule not in rules.RULES:
            raise RankInputError(
                f"{path}: field rule: unknown rule {rule!r}; expected one of {', '.join(rules.RULES)}"
            )
        if k is not None:
            k = _positive_field(k, path, "atc_k")
        return Plan(name, rules.rule_id(rule), k, None, gate), where
    if pfile is None:
        raise RankInputError(
            f"{path}: fields rule and policy_file are both null: nothing says how to run the winner"
        )
    if not isinstance(pfile, str):
        raise RankInputError(f"{path}: field policy_file: expected a path, got {pfile!r}")
    sha = data.get("policy_sha256")
    if sha is not None and not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
        raise RankInputError(
            f"{path}: field policy_sha256: expected 64 hexadecimal digits (or null), got {sha!r:.60}"
        )
    # The pipeline writes paths relative to the project root (the folder of the
    # config's relative paths, ``root``: the working directory when "."); a
    # copied results folder is found relative to winner.json.
    p = Path(pfile)
    if not p.is_absolute():
        p = Path(root) / p if root != "." else p
        if not p.exists():
            beside = Path(path).parent / pfile
            if beside.exists():
                p = beside
    return Plan(name, None, None, p, gate, sha), where


def _held_out_note(held, path):
    """The words ``why`` adds for a verdict gated on held-out days (winner.json ``held_out``,
    ``sched.evaluate.gate``); "" without one."""
    if held is None:
        return ""
    if not isinstance(held, dict):
        raise RankInputError(f"{path}: field held_out: expected an object or null, got {held!r:.40}")
    days, chosen, best, deployed = (held.get(k) for k in ("days", "chosen", "best_rule", "deployed"))
    if isinstance(days, bool) or not isinstance(days, int) or days < 1 or not isinstance(deployed, bool):
        raise RankInputError(f"{path}: field held_out: expected days >= 1 and deployed true/false")
    if not (isinstance(chosen, str) and isinstance(best, str) and len(chosen) + len(best) < 200):
        raise RankInputError(f"{path}: field held_out: expected the chosen and best_rule policy names")
    if deployed and chosen == best:
        return f"; also the best rule on the {days} held-out days"
    if deployed:
        return f"; not significantly worse than {best} on the {days} held-out days"
    return (
        f"; {chosen}, chosen on validation, is significantly worse than {best} on the {days} "
        f"held-out days: {best} runs"
    )


_SHA256 = re.compile(r"[0-9a-f]{64}")
_sha_cache = {}


def _file_sha256(path, limit=MAX_POLICY_BYTES):
    """The SHA-256 of a file's bytes (a policy file, a fitted workload), cached while the file
    is unchanged (None: not a readable regular file of at most ``limit`` bytes; the caller
    names it)."""
    try:
        s = os.stat(path)
    except OSError:
        return None
    key = (os.path.abspath(path), s.st_mtime_ns, s.st_ctime_ns, s.st_size, s.st_ino, limit)
    if key not in _sha_cache:
        try:
            digest = hashlib.sha256(files.read_bytes(path, RankInputError, limit)).hexdigest()
        except RankInputError:
            return None
        if len(_sha_cache) > 64:
            _sha_cache.clear()
        _sha_cache[key] = digest
    return _sha_cache[key]


def _check_selection(sel, path):
    """winner.json's ``selection`` (how the winner was chosen), when there is one: files of earlier
    versions, and those chosen on the test scenarios, have none. rank() does not use it."""
    if sel is None:
        return
    want = ("on", "seeds", "means")
    if not isinstance(sel, dict) or tuple(sel) != want:
        got = ", ".join(map(str, sel)) if isinstance(sel, dict) else type(sel).__name__
        raise RankInputError(f"{path}: field selection: keys {got}; expected exactly {', '.join(want)}")
    seeds = sel["seeds"]
    if not (isinstance(seeds, list) and len(seeds) == 2 and all(type(x) is int and x >= 0 for x in seeds)):
        raise RankInputError(f"{path}: field selection.seeds: expected [START, COUNT], got {seeds!r}")
    if not isinstance(sel["means"], dict):
        raise RankInputError(
            f"{path}: field selection.means: expected {{POLICY: MEAN, ...}}, got {sel['means']!r}"
        )


def _check_tuned(data, path, root="."):
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
        won = _json_file(wpath, _check_winner, st.root)
        tuned = _json_file(tpath, _check_tuned, st.root)
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


def auto_plan(st, farm):
    """What policy "auto" runs for the call's GPUs, and why (docs/rank.md)."""
    gpus = setting.describe({**farm, "load": None})
    found = _matching(st, farm)
    studio, stale = _studio(st, [v for v in found if v.winner is not None])
    if stale:  # measured on another fit than the config's history now has: as if it were absent
        found = [v for v in found if v.source != f"setting {layout.STUDIO}"]
    won = [v for v in found if v.winner is not None]
    refused = ""
    if studio is not None:
        won = [studio]
    if won:
        v = _closest(won, st)
        plan = v.winner
        if plan.rule is not None and plan.k is None:
            plan = plan._replace(k=st.atc_k)
        note = ""
        if plan.rule is None:
            wfile = _winner_file(st, v)
            plan = ppo_plan(plan.name, plan.policy_file, wfile)._replace(sha256=plan.sha256)
            if plan.sha256 is None:
                note = (
                    f"; note: {wfile} records no policy_sha256 (written by an earlier version): "
                    f"its policy file is not checked"
                )
            elif _file_sha256(plan.policy_file) != plan.sha256:
                refused = (
                    f"; the winner of {v.source}, {plan.name}, is not run: its policy file "
                    f"{plan.policy_file} does not match {wfile}'s policy_sha256"
                )
        if not refused:
            more = (
                " (of several, the one whose load is closest to config scenario.load)" if len(won) > 1 else ""
            )
            if v is studio:
                w = v.setting["workload"]
                names = ", ".join(w["history"]) or "the history"
                days = _days(w["held_out"])
                why = (
                    f"auto: the winner of {v.source}, measured on the fitted workload of {names} "
                    f"({days} held-out days), {setting.describe({**v.setting, 'load': None})}: the call's "
                    f"{gpus}{v.winner.why}{note}{_missing_winner(st)}"
                )
                _warn(why)
                return plan._replace(why=why)
            why = (
                f"auto: the winner of {v.source}, measured on {setting.describe(v.setting)}: "
                f"the call's {gpus}{more}{note}{_missing_winner(st)}{stale}"
            )
            _warn(why, force=bool(stale))
            return plan._replace(why=why)
    tuned = [v for v in found if v.tuned_k is not None]
    missing = _missing(st)
    if tuned:
        v = _closest(tuned, st)
        lead = "auto" if refused else f"auto: no benchmark winner for {gpus}"
        why = f"{lead}{missing}{refused}{stale}; ATC with the k tuned for them in {v.source}"
        _warn(why, force=bool(refused or stale))
        return Plan("atc-tuned", rules.ATC, v.tuned_k, None, why)
    lead = "auto" if refused else f"auto: no benchmark or tuning for {gpus}"
    why = f"{lead}{missing}{refused}{stale}; ATC with config rules.atc_k"
    _warn(why, force=bool(refused or stale))
    return Plan("atc", rules.ATC, st.atc_k, None, why)


def _studio(st, won):
    """(verdict, note): the studio's verdict among ``won`` (the call's farm), followed first
    when the config names a history (workload.history): the verdict of setting ``studio``
    measured on a fitted workload with held-out days; None otherwise (today's order: the
    closest load). A studio verdict whose recorded workload sha256 is not that of the fit the
    config's history has now (:func:`studio_workload`: refitted on another history, or gone)
    is not followed: (None, the words ``why`` adds), and the caller leaves it out altogether,
    as if it were absent."""
    if not (st.config or {}).get("workload", {}).get("history"):
        return None, ""
    for v in won:
        w = v.setting.get("workload")
        if v.source == f"setting {layout.STUDIO}" and w is not None and w.get("held_out"):
            path = studio_workload(st)
            now = _file_sha256(path, MAX_CALIBRATION_BYTES)
            if now == w["sha256"]:
                return v, ""
            have = f"sha256 {now[:12]}…" if now else "not found or not readable"
            return None, (
                f"; the verdict of {v.source} was measured on another fitted workload (sha256 "
                f"{w['sha256'][:12]}…) than {path} ({have}), the fit of config workload.history: "
                "not followed"
            )
    return None, ""


def studio_workload(st):
    """The fitted workload of the config's history: the studio's (``sched calibrate-workload``'s
    default ``--out``, results/workload.json under the config's root)."""
    from sched.config import under_root

    return under_root(st.config, layout.WORKLOAD)


def _days(span):
    from datetime import date

    first, last = (date.fromisoformat(d) for d in span)
    return (last - first).days + 1


def _winner_file(st, v):
    """The winner.json a verdict was read from (the main benchmark's or a setting's)."""
    if v.source == "the main benchmark":
        return st.winner
    return os.path.join(st.others, v.source.removeprefix("setting "), layout.WINNER)


def missing_files(st, fields=("winner", "tuned")):
    """``config rank.winner FILE`` (and ``rank.tuned``) for the main verdict files that do not exist."""
    paths = {"winner": st.winner, "tuned": st.tuned}
    return [
        f"config rank.{field} {os.path.abspath(paths[field])}"
        for field in fields
        if not os.path.exists(paths[field])
    ]


def _missing(st):
    """ " (config rank.winner FILE not found, ...)" for the main verdict files that do not exist."""
    gone = [f"{f} not found" for f in missing_files(st)]
    return f" ({', '.join(gone)})" if gone else ""


def _missing_winner(st):
    """ "; note: config rank.winner FILE not found" when the main winner.json does not exist (a
    call following another verdict still says so: a deployment missing its main verdict is
    seen, not a surprise)."""
    gone = missing_files(st, ("winner",))
    return f"; note: {gone[0]} not found" if gone else ""


def _warn(why, force=False):
    """A warning on the ``sched.rank`` logger when a verdict file is missing (or, ``force``, a
    winner's policy file does not match), once per message (a daemon calling rank() for every
    decision does not repeat it)."""
    if not (force or "not found" in why) or why in _warned:
        return
    with _warned_lock:  # once, even when threads meet the same missing file together
        if why in _warned:
            return
        if len(_warned) < 256:  # bounded: a few distinct messages in practice
            _warned.add(why)
    log.warning("rank(): %s", why)


def ppo_plan(name, pfile, where, why=""):
    p = Path(pfile)
    if not p.is_file():
        raise RankInputError(f"{where}: policy file {p} not found")
    return Plan(name, None, None, p, why)
