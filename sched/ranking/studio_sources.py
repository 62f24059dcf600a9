"""The sources the studio's verdict was measured on, against the config's now (issue 58).

A studio verdict binds the fitted workload (its sha256, :mod:`sched.ranking.verdicts`); the fit
records the history files it was fitted on (``sources``: path and sha256 of each, written by
``sched calibrate-workload``). ``rank()`` follows the verdict only when those are the config's
``workload.history`` now: the same files (paths resolved under the config's root), of the same
bytes. A history moved, edited, or a fit recording no sources: not followed, and ``why`` says so.
"""

import os

from sched import files
from sched.errors import shorten
from sched.formats import json_input
from sched.limits import MAX_CALIBRATION_BYTES, MAX_HISTORY_BYTES
from sched.ranking.tasks import RankInputError

_fit_cache = {}


def sources_moved(st, fit, sha256_of):
    """Why the history files the fit ``fit`` records (its ``sources``: path and sha256 of each,
    ``sched calibrate-workload``) are not the config's ``workload.history`` now, in words; "" when
    they are: the same files (paths resolved) with the same bytes. A fit recording none, or
    unreadable, is said so: the studio's verdict is followed only on the sources it was measured on.
    ``sha256_of(path, limit)``: a file's SHA-256, cached (None when not readable)."""
    want = sorted(os.path.realpath(p) for p in st.config.workload.history)
    try:
        s = os.stat(fit)
        key = (os.path.abspath(fit), s.st_mtime_ns, s.st_ctime_ns, s.st_size, s.st_ino, st.root)
        if key not in _fit_cache:
            if len(_fit_cache) > 16:
                _fit_cache.clear()
            _fit_cache[key] = _fit_sources(fit, st.root)
        recorded = _fit_cache[key]
    except (OSError, RankInputError) as exc:
        why = str(exc) if isinstance(exc, RankInputError) else f"{fit}: cannot read: {exc.strerror}"
        return f"a fit whose sources cannot be told ({why})"
    if isinstance(recorded, str):
        return recorded
    if sorted(p for p, _ in recorded) != want:
        names = ", ".join(os.path.basename(p) for p, _ in recorded)
        now = ", ".join(os.path.basename(p) for p in want)
        return (
            f"the fit {fit} of {names}, not of config workload.history now ({now}); refit it "
            "(`sched calibrate-workload`) and rerun the studio"
        )
    for p, sha in recorded:
        if sha256_of(p, MAX_HISTORY_BYTES) != sha:
            return (
                f"the fit {fit} of {os.path.basename(p)} as it was (sha256 {sha[:12]}…), whose bytes have "
                "changed since (or it is no longer readable); refit it and rerun the studio"
            )
    return ""


def _fit_sources(fit, root):
    """[(resolved path, sha256)] of the sources a fitted workload records, or why not (a str)."""
    data = json_input.parse(
        files.read_bytes(fit, RankInputError, MAX_CALIBRATION_BYTES), fit, RankInputError, nan=True
    )
    sources = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(sources, list) or not sources:
        return f"a fit, {fit}, that records no sources (history files and their sha256)"
    out = []
    for src in sources:
        p, sha = (src.get("path"), src.get("sha256")) if isinstance(src, dict) else (None, None)
        if not (isinstance(p, str) and p and "\0" not in p and isinstance(sha, str) and len(sha) == 64):
            return f"a fit, {fit}, whose field sources holds {shorten(src)}, not a path and its sha256"
        if not os.path.isabs(p) and root != ".":
            p = os.path.join(root, p)
        out.append((os.path.realpath(p), sha))
    return out
