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
"""

import hashlib
import re
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


def result_files(results_dir=layout.RESULTS):
    """Every result artefact under ``results_dir``, as paths relative to it, in DAG order."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ManifestError(f"{results_dir}: no such folder (run the workflow first)")
    rels = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return sorted((r for r in rels if is_result(r)), key=dag_key)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def manifest_text(results_dir=layout.RESULTS, prefix=None):
    """The manifest of ``results_dir``: ``<sha256>  <path>`` lines, the paths as seen from the
    project root (``prefix``: results_dir's own name by default)."""
    prefix = Path(results_dir).name if prefix is None else prefix
    lines = []
    for rel in result_files(results_dir):
        lines.append(f"{sha256(Path(results_dir) / rel)}  {prefix}/{rel}")
    if not lines:
        raise ManifestError(f"{results_dir}: no result artefact to list")
    return "\n".join(lines) + "\n"


def digest(path=layout.MANIFEST):
    """The sha256 of a manifest file: the one number that names a run's evidence."""
    if not Path(path).is_file():
        raise ManifestError(f"{path}: manifest not found (the workflow's rule `manifest` writes it)")
    return sha256(path)


_LINE = re.compile(r"^([0-9a-f]{64})  (\S(?:.*\S)?)$")


def read(path):
    """[(path, sha256)] of a manifest, in its order; ManifestError naming the line otherwise."""
    from sched import files

    text = files.read_text(path, ManifestError, 64 << 20)
    out, seen = [], set()
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if not m:
            raise ManifestError(
                f"{path}, line {n}: expected '<sha256>  <path>' (sha256sum's format), "
                f"got {line[:SHOWN_CHARS]!r}"
            )
        if m.group(2) in seen:
            raise ManifestError(f"{path}, line {n}: {m.group(2)!r} listed twice")
        seen.add(m.group(2))
        out.append((m.group(2), m.group(1)))
    return out


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
