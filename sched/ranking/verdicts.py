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
import logging
import os
import threading
from collections import namedtuple
from pathlib import Path

from sched import files, layout, setting
from sched.limits import MAX_CALIBRATION_BYTES, MAX_POLICY_BYTES
from sched.ranking.studio_sources import sources_moved
from sched.ranking.tasks import RankInputError
from sched.ranking.verdict_files import Choice, VerdictRefused, check_tuned, check_winner, read_verdict
from sched.sim import rules

#: A benchmark's verdict on one setting: where from, the setting, its winner (a Choice or
#: None), its tuned ATC k (or None) and, when its winner.json or tuned.json was refused (their
#: fields disagree: VerdictRefused), the words ``why`` adds ("" when none was).
Verdict = namedtuple("Verdict", "source setting winner tuned_k refused", defaults=("",))

_json_cache = {}
#: rank()'s warnings (a verdict file not found): the ``sched`` logger's child
log = logging.getLogger("sched.rank")
_warned = set()
_warned_lock = threading.Lock()


def _json_file(path, check, root="."):
    """``check(data, path, root)`` of a JSON file (:func:`read_verdict`), cached per file and
    check (a module-level function) while the file is unchanged; None if absent. A file whose
    fields disagree (VerdictRefused) is cached as its refusal: :func:`_verdicts` leaves it out
    and says why."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # a name the system refuses: read_bytes names it
        s = exc
    path = os.path.join(os.getcwd(), path)
    # ctime too: an in-place rewrite that restores the mtime (os.utime, cp -p) still changes it
    key = None if isinstance(s, Exception) else (s.st_mtime_ns, s.st_ctime_ns, s.st_size, s.st_ino, root)
    hit = _json_cache.get((path, check))
    if key is not None and hit is not None and hit[0] == key:
        return hit[1]
    try:
        value = read_verdict(path, check, root)
    except VerdictRefused as exc:
        value = exc
    _json_cache[(path, check)] = (key, value)  # one atomic store of (version, value): never torn
    return value


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
        won = _json_file(wpath, check_winner, st.root)
        tuned = _json_file(tpath, check_tuned, st.root)
        notes = []
        if isinstance(won, VerdictRefused):
            notes.append(str(won))  # names the file, the fields, and that it is not followed
            won = (None, won.where)
        if isinstance(tuned, VerdictRefused):
            notes.append(str(tuned))
            tuned = (None, tuned.where)
        choice, where = won if won is not None else (None, None)
        k, twhere = tuned if tuned is not None else (None, None)
        refused = "".join(f"; {n}" for n in notes)
        if where is not None and twhere is not None and not _same_setting(where, twhere):
            # winner.json and tuned.json of one folder measured on other settings: each holds for its own
            out.append(Verdict(source, twhere, None, k, refused))
            k = choice.k if choice is not None and choice.name == "atc-tuned" else None
        where = where or twhere or fallback
        if where is None:
            continue  # a verdict that does not say its setting is not used for any call
        if choice is not None and choice.name == "atc-tuned" and choice.k is not None:
            k = choice.k  # the k the benchmark measured
        out.append(Verdict(source, where, choice, k, refused))
    return out


def _same_setting(a, b):
    """Whether two settings a verdict folder's files record are one (farm, load and workload)."""
    return setting.same_farm(a, b) and a["load"] == b["load"] and a.get("workload") == b.get("workload")


def _closest(verdicts, st):
    """The verdict measured at the load closest to the config's scenario.load (the first listed
    on a tie: the main benchmark first)."""
    return min(enumerate(verdicts), key=lambda iv: (abs(iv[1].setting["load"] - st.farm["load"]), iv[0]))[1]


def _matching(st, farm):
    """The verdicts measured on the GPUs of the call. A robustness setting drawn from a workload
    file of its own (heavy-tails: the trace-like synthetic history's fit) is a stress test
    measured on another queue than the call's: left out (the studio's is the config's history)."""
    return [v for v in _verdicts(st) if setting.same_farm(v.setting, farm) and not _elsewhere(v)]


def _elsewhere(v):
    """Whether verdict ``v`` is a robustness setting's measured on a workload file of its own."""
    return (
        v.source.startswith("setting ")
        and v.source != f"setting {layout.STUDIO}"
        and bool(v.setting.get("workload"))
    )


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


def auto_choice(st, farm):
    """What policy "auto" runs for the call's GPUs, and why (docs/rank.md)."""
    gpus = setting.describe({**farm, "load": None})
    found = _matching(st, farm)
    told = "".join(dict.fromkeys(v.refused for v in found))  # files whose fields disagree: said
    studio, stale = _studio(st, [v for v in found if v.winner is not None])
    if stale:  # measured on another fit than the config's history now has: as if it were absent
        found = [v for v in found if v.source != f"setting {layout.STUDIO}"]
    stale += told  # said, and warned of, wherever the call goes
    won = [v for v in found if v.winner is not None]
    refused = ""
    if studio is not None:
        won = [studio]
    if won:
        v = _closest(won, st)
        choice = v.winner
        if choice.rule is not None and choice.k is None:
            choice = choice._replace(k=st.atc_k)
        note = ""
        if choice.rule is None:
            wfile = _winner_file(st, v)
            choice = ppo_choice(choice.name, choice.policy_file, wfile)._replace(
                sha256=choice.sha256, plan=choice.plan
            )
            if choice.sha256 is None:
                note = (
                    f"; note: {wfile} records no policy_sha256 (written by an earlier version): "
                    f"its policy file is not checked"
                )
            elif _file_sha256(choice.policy_file) != choice.sha256:
                refused = (
                    f"; the winner of {v.source}, {choice.name}, is not run: its policy file "
                    f"{choice.policy_file} does not match {wfile}'s policy_sha256"
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
                    f"{gpus}{v.winner.why}{note}{_missing_winner(st)}{told}"
                )
                _warn(why, force=bool(told))
                return choice._replace(why=why)
            why = (
                f"auto: the winner of {v.source}, measured on {setting.describe(v.setting)}: "
                f"the call's {gpus}{more}{v.winner.why}{note}{_missing_winner(st)}{stale}"
            )
            _warn(why, force=bool(stale))
            return choice._replace(why=why)
    tuned = [v for v in found if v.tuned_k is not None]
    missing = _missing(st)
    if tuned:
        v = _closest(tuned, st)
        lead = "auto" if refused else f"auto: no benchmark winner for {gpus}"
        why = f"{lead}{missing}{refused}{stale}; ATC with the k tuned for them in {v.source}"
        _warn(why, force=bool(refused or stale))
        return Choice("atc-tuned", rules.ATC, v.tuned_k, None, why)
    lead = "auto" if refused else f"auto: no benchmark or tuning for {gpus}"
    why = f"{lead}{missing}{refused}{stale}; ATC with config rules.atc_k"
    _warn(why, force=bool(refused or stale))
    return Choice("atc", rules.ATC, st.atc_k, None, why)


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
                moved = sources_moved(st, path, _file_sha256)
                if not moved:
                    return v, ""
                return None, f"; the verdict of {v.source} was measured on {moved}: not followed"
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


def ppo_choice(name, pfile, where, why=""):
    """The Choice of the learned policy ``name`` in file ``pfile`` (``where``: the argument or file
    that names it); RankInputError when it is no regular file (missing, a folder, a device, a
    name the system refuses), naming it."""
    from sched.learn.policy.policy_file import path_problem

    try:
        p = Path(pfile)
    except TypeError:
        raise RankInputError(f"{where}: expected a policy file path, got {pfile!r:.40}") from None
    problem = path_problem(p)
    if problem is not None:
        raise RankInputError(f"{where}: {problem}")
    return Choice(name, None, None, p, why)
