"""``results/manifest.sha256``: one line per result artefact, what proves two runs agree.

A result depends on the commit, the config and the input files only (issue 45), so two runs of
one commit and config, on any machine, any ``-j``, any executor, give the same manifest. The
manifest lists every file under ``results/`` but:

* the run records (``sched.layout.is_run_record``: logs, usage tables, ``*.run.*`` files), which
  say how a run ran, not what it computed;
* the report's own outputs (``rapport.md``, its figures, the HTML report), its config file
  (``config/report.yaml``, which only the report reads: a change of it reruns the report, not the
  manifest) and the manifest itself: the report prints the manifest's digest, so it comes after it;
* temporaries of an atomic write (``.NAME.*.tmp``) and other hidden files.

Lines are in ``sha256sum``'s format (``sha256sum -c results/manifest.sha256`` from the project
root checks a tree against it) and in the workflow's order (:data:`DAG_ORDER`: calibration
first, the report's inputs last), so :func:`compare` names the first artefact that differs:
the step where two runs parted.

Names: a path is written as the file system's bytes (``<sha256>  <path>``), as ``sha256sum``
writes it; a path holding a backslash, a line feed or a carriage return is written as GNU
``sha256sum`` (coreutils 9) writes it: the line begins with a backslash and the path's ``\\``,
LF and CR are written ``\\\\``, ``\\n`` and ``\\r``. Any other byte (spaces at either end, tabs,
bytes that are not UTF-8) stands as it is: :func:`read` takes back every path :func:`manifest_text`
writes, and ``sha256sum -c`` reads the file too. Ordinary paths are never escaped, so the
workflow's manifest is the same bytes it always was. Every path printed (:func:`shown`) has
its control characters, backslashes and undecodable bytes escaped.

Links and other files: a symbolic link to a regular file (inside results/ or not) is listed
under its own path with its target's bytes hashed; a dangling link, a link to a folder, a
pipe, a socket or a device is refused by name (exit status 2): nothing under ``results/`` is
left out silently. A manifest with no entry is an error, on writing and on reading.
"""

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from sched import layout
from sched.errors import SchedError
from sched.limits import SHOWN_CHARS


class ManifestError(SchedError):
    """A manifest cannot be written or read; the message names the file and line."""


#: The workflow's steps in DAG order, as path patterns relative to results/ (a robustness
#: setting's files, under robustness/<name>/, follow the same order after the main run's).
DAG_ORDER = (
    r"config/",
    r"calibration\.",
    r"workload\.",
    r"teacher/labels-",
    r"teacher/",
    r"train/seed-\d+/warm_start\.pt",
    r"train/seed-\d+/round-",
    r"train/",
    r"tuned\.json",
    r"fidelity/",
    r"benchmark/tuned\.json",
    r"benchmark/selection/",
    r"selection/",
    r"benchmark/shards/",
    r"replay-validation/",
    r"replay/",
    r"benchmark/plan/",
    r"plan/",  # a robustness setting's plan candidacy (config plan.elsewhere)
    r"benchmark/clairvoyant",
    r"benchmark/",
    r"per_scenario\.csv",
    r"resume\.csv",
    r"winner\.json",
    r"demo/",
    r"figures/demo_gantt",
)
_ORDER = [re.compile(p) for p in DAG_ORDER]

#: The report's outputs (relative to results/), rendered after the manifest and from it.
REPORT_OUTPUTS = (
    layout.REPORT,
    "report.html",
    "figures/benchmark_mean_ci.png",
    "figures/benchmark_paired_vs_atc.png",
    "figures/benchmark_ecdf.png",
    "figures/learning_curves.png",
    "figures/learning_by_chain.png",
)
MANIFEST_NAME = Path(layout.MANIFEST).name
#: The report's config file (relative to results/): read by the report alone, written after the
#: manifest when only a report setting changed, so never listed.
REPORT_CONFIG = "config/report.yaml"


def dag_key(rel):
    """The sort key of a path relative to results/: the main run first, then each robustness
    setting by name; within one, the step's rank in :data:`DAG_ORDER`, then the path."""
    parts = rel.split("/")
    setting = ""
    if len(parts) > 2 and parts[0] == Path(layout.ROBUST_DIR).name:
        setting, rel = parts[1], "/".join(parts[2:])
    rank = next((i for i, p in enumerate(_ORDER) if p.match(rel)), len(_ORDER))
    return (setting != "", setting, rank, rel)


def is_result(rel):
    """Whether a path relative to results/ is listed: a result, not a run record, not the
    report's, not hidden."""
    return not (
        layout.is_run_record(rel)
        or rel in REPORT_OUTPUTS
        or rel in (MANIFEST_NAME, REPORT_CONFIG)
        or any(part.startswith(".") for part in rel.split("/"))  # temporaries, hidden files
    )


def _entries(root):
    """Every path under ``root`` that is not a folder it walks into (links to folders included),
    hidden folders left out: nothing in them is listed."""

    def refuse(exc):
        raise ManifestError(f"{shown(exc.filename)}: cannot read the folder ({exc.strerror})")

    for folder, dirs, names in os.walk(root, onerror=refuse):
        walked = []
        for d in dirs:
            if d.startswith("."):
                continue
            if os.path.islink(os.path.join(folder, d)):
                names.append(d)  # a link to a folder: checked (and refused) as an entry
            else:
                walked.append(d)
        dirs[:] = sorted(walked)
        for name in names:
            yield os.path.join(folder, name)


def _check_entry(path):
    """``path`` (a result to list) if it is a regular file or a link to one; else a
    ManifestError naming it: a dangling link, a link to a folder, a pipe, a socket, a device."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:  # gone since the folder was read
        raise ManifestError(f"{shown(path)}: cannot read: {exc.strerror}") from None
    if stat.S_ISREG(mode):
        return path
    if not stat.S_ISLNK(mode):
        raise ManifestError(
            f"{shown(path)}: not a regular file (a pipe, socket or device); a manifest lists files "
            "only: remove it from the results"
        )
    try:
        target = os.stat(path).st_mode
    except OSError:
        raise ManifestError(
            f"{shown(path)}: a dangling symbolic link (to {shown(os.readlink(path))}: nothing there, "
            "or a loop of links); a manifest hashes a link's target: fix or remove the link"
        ) from None
    if stat.S_ISREG(target):
        return path
    what = "a folder" if stat.S_ISDIR(target) else "a pipe, socket or device"
    raise ManifestError(
        f"{shown(path)}: a symbolic link to {what} ({shown(os.readlink(path))}); a manifest follows "
        "links to regular files only: copy the folder's files in, or remove the link"
    )


def result_files(results_dir=layout.RESULTS):
    """Every result artefact under ``results_dir``, as paths relative to it, in DAG order:
    regular files and links to regular files (any other kind of file is a ManifestError naming it)."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ManifestError(f"{shown(results_dir)}: no such folder (run the workflow first)")
    top = os.fspath(root)
    rels = {}
    for path in _entries(top):
        rel = os.path.relpath(path, top).replace(os.sep, "/")
        if is_result(rel):
            rels[rel] = path
    for rel in rels:
        _check_entry(rels[rel])
    return sorted(rels, key=dag_key)


def _open_regular(path):
    """A binary file object of the regular file at ``path`` (links followed), opened without
    blocking, or ManifestError naming it."""
    name = shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ManifestError(f"{name}: cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ManifestError(f"{name}: not a regular file (a folder, pipe or device?)")
    return os.fdopen(fd, "rb")


def sha256(path):
    """The sha256 (hex) of the regular file at ``path`` (a link: its target's bytes)."""
    h = hashlib.sha256()
    with _open_regular(path) as fh:
        try:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        except OSError as exc:
            raise ManifestError(f"{shown(path)}: cannot read: {exc.strerror}") from None
    return h.hexdigest()


#: The characters GNU sha256sum escapes in a path (and marks its line with a leading backslash).
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}


def entry_line(digest_hex, path):
    """One manifest line: ``<sha256>  <path>``, or sha256sum's escaped form for a path holding
    a backslash, LF or CR (module docstring)."""
    if not any(c in path for c in _ESCAPES):
        return f"{digest_hex}  {path}"
    return f"\\{digest_hex}  " + "".join(_ESCAPES.get(c, c) for c in path)


def manifest_text(results_dir=layout.RESULTS, prefix=None):
    """The manifest of ``results_dir``: ``<sha256>  <path>`` lines (:func:`entry_line`), the paths
    as seen from the project root (``prefix``: results_dir's own name by default). Paths that are
    not UTF-8 hold their bytes as surrogates (Python's file-system encoding): write the text with
    :func:`encode`."""
    prefix = Path(results_dir).name if prefix is None else prefix
    lines = []
    for rel in result_files(results_dir):
        lines.append(entry_line(sha256(Path(results_dir) / rel), f"{prefix}/{rel}"))
    if not lines:
        raise ManifestError(f"{shown(results_dir)}: no result artefact to list")
    return "\n".join(lines) + "\n"


def encode(text):
    """The bytes of a manifest's text: UTF-8, a path's undecodable bytes as they were."""
    return text.encode("utf-8", "surrogateescape")


def shown(name):
    """``name`` (str, bytes or a path) as it may be printed: one line, its backslashes, control
    and format characters escaped (``\\x1b``, ``\\n``, ``\\\\``), a byte that is not UTF-8 as
    ``\\xff``: a hostile name cannot draw on the terminal or forge a line of output."""
    raw = name if isinstance(name, (bytes, bytearray)) else os.fsencode(os.fspath(name))
    text = bytes(raw).decode("utf-8", "surrogateescape")
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for c in text:
        if 0xDC80 <= ord(c) <= 0xDCFF:  # an undecodable byte
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        elif c == "\\":
            out.append("\\\\")
        else:
            out.append(c if c.isprintable() else repr(c)[1:-1])
    return "".join(out)


def digest(path=layout.MANIFEST):
    """The sha256 of a manifest file: the one number that names a run's evidence."""
    if not Path(path).is_file():
        raise ManifestError(f"{shown(path)}: manifest not found (the workflow's rule `manifest` writes it)")
    return sha256(path)


#: Bytes of a manifest (a line per artefact: the workflow's have a few hundred).
MAX_BYTES = 64 << 20
_LINE = re.compile(rb"(\\?)([0-9a-f]{64}) [ *](.+)", re.S)
_UNESCAPE = {b"\\": b"\\", b"n": b"\n", b"r": b"\r"}


def _lines(data, path):
    """(line number, escaped, sha256, path bytes as written) of each line of a manifest's bytes;
    ManifestError naming the first line that is not a manifest line."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    for n, raw in enumerate(lines, 1):
        m = _LINE.fullmatch(raw[:-1] if raw.endswith(b"\r") else raw)  # CRLF: ours escape a CR
        if not m:
            raise ManifestError(
                f"{shown(path)}, line {n}: expected '<sha256>  <path>' (sha256sum's format), "
                f"got '{shown(raw[:SHOWN_CHARS])}'"
            )
        yield n, bool(m.group(1)), m.group(2).decode("ascii"), m.group(3)


_ESCAPED = re.compile(rb"(?:[^\\]|\\[\\nr])*", re.S)
_ESCAPE = re.compile(rb"\\([\\nr])")


def _unescape(name, where):
    """The path bytes of an escaped line's path (sha256sum's ``\\\\``, ``\\n``, ``\\r``)."""
    if not _ESCAPED.fullmatch(name):
        raise ManifestError(f"{where}: an escaped path holds a backslash not followed by \\\\, n or r")
    return _ESCAPE.sub(lambda m: _UNESCAPE[m.group(1)], name)


def read(path):
    """[(path, sha256)] of a manifest, in its order (paths as :func:`manifest_text` holds them);
    ManifestError naming the line otherwise, or when it has no entry."""
    from sched import files

    data = files.read_bytes(path, ManifestError, MAX_BYTES)
    out, seen = [], set()
    for n, escaped, sha, raw in _lines(data, path):
        name = (_unescape(raw, f"{shown(path)}, line {n}") if escaped else raw).decode(
            "utf-8", "surrogateescape"
        )
        if name in seen:
            raise ManifestError(f"{shown(path)}, line {n}: '{shown(name)}' listed twice")
        seen.add(name)
        out.append((name, sha))
    if not out:
        raise ManifestError(
            f"{shown(path)}: no entry (an empty manifest proves nothing: `sched manifest write` lists "
            "at least one artefact)"
        )
    return out


def check_out(path):
    """Refuse ``path`` as the manifest to write when it is a symbolic link (never written
    through) or an existing file that is not a manifest (never written over): a ManifestError
    naming it. A file that does not exist yet, an empty one or a manifest may be replaced."""
    from sched import files

    if os.path.islink(path):
        raise ManifestError(
            f"{shown(path)}: a symbolic link; a manifest is not written through a link (give the "
            "file's own path, or remove the link)"
        )
    if not os.path.lexists(path):
        return
    try:
        for _ in _lines(files.read_bytes(path, ManifestError, MAX_BYTES), path):
            pass
    except ManifestError as exc:
        raise ManifestError(
            f"{exc}; {shown(path)} is not a manifest: not written over (remove it, or choose another --out)"
        ) from None


@dataclass(frozen=True)
class Difference:
    """One artefact on which two manifests disagree: ``how`` is "differs", "only in A" or "only in B"."""

    path: str
    how: str


def compare(a, b):
    """Every artefact on which manifests ``a`` and ``b`` disagree, in DAG order (the first is
    where the runs parted)."""
    da, db = dict(read(a)), dict(read(b))
    out = []
    for path in sorted(set(da) | set(db), key=lambda p: dag_key(p.split("/", 1)[-1])):
        if path not in db:
            out.append(Difference(path, "only in A"))
        elif path not in da:
            out.append(Difference(path, "only in B"))
        elif da[path] != db[path]:
            out.append(Difference(path, "differs"))
    return out
