"""The measured task times a farm sync keeps between runs (issue 47): a job's mean seconds per
succeeded task, keyed by the job and its count of succeeded tasks. Finished tasks never change,
so a job whose count did not change since the last sync costs no call.

The file (JSON, written atomically, read with a size limit, no code run)::

    {"format": "sched-task-times/1", "farm": F, "queue": Q,
     "jobs": {"<job id>": [<succeeded tasks>, <mean seconds per task>], ...}}

It is a cache: a file of another farm or queue, or one that cannot be read or is malformed, is
set aside with a warning naming the file and the field, and the sync measures every job again
(it rewrites the file). It keeps the jobs of the last sync only, so it stays within rank()'s
limit of jobs.
"""

import math

from sched import files, json_input
from sched.errors import SchedError
from sched.limits import MAX_RANK_TASKS

FORMAT = "sched-task-times/1"
#: The file's largest size: rank()'s limit of jobs, each a short line.
MAX_BYTES = 256 * MAX_RANK_TASKS


class TaskTimesError(SchedError):
    """A task-times file cannot be read or is malformed; the message names the file and field."""


def read(path, farm, queue):
    """(``{job id: (succeeded, mean seconds)}``, a warning or None) of the file at ``path`` for
    this farm and queue: empty with a warning when it cannot be used, empty without one when it
    does not exist yet."""
    import os

    if not os.path.lexists(path):
        return {}, None
    try:
        return _read(path, farm, queue), None
    except TaskTimesError as exc:
        return {}, f"{exc}; measuring every job again"


def _not_json(message):
    return TaskTimesError(message.replace(": not valid JSON", ": not JSON", 1))


def _read(path, farm, queue):
    data = files.read_bytes(path, TaskTimesError, limit=MAX_BYTES)
    doc = json_input.parse(data, f"task times {path}", _not_json)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise TaskTimesError(f"task times {path}: field format: expected {FORMAT!r}, got {str(got)[:40]!r}")
    if doc.get("farm") != farm or doc.get("queue") != queue:
        raise TaskTimesError(f"task times {path}: fields farm, queue: another queue's file")
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict):
        raise TaskTimesError(f"task times {path}: field jobs: expected {{job id: [succeeded, seconds]}}")
    out = {}
    for jid, entry in jobs.items():
        ok = isinstance(entry, list) and len(entry) == 2
        n, mean = entry if ok else (None, None)
        if not (ok and type(n) is int and n > 0 and _seconds(mean)):
            raise TaskTimesError(
                f"task times {path}: field jobs.{str(jid)[:60]}: expected [succeeded tasks > 0, seconds >= 0]"
            )
        out[jid] = (n, float(mean))
    return out


def _seconds(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def write(path, farm, queue, times):
    """Write ``times`` ({job id: (succeeded, mean seconds)}) for this farm and queue, atomically."""
    jobs = {jid: [int(n), float(mean)] for jid, (n, mean) in sorted(times.items())}
    files.write_json(path, {"format": FORMAT, "farm": farm, "queue": queue, "jobs": jobs})
