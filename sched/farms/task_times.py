"""The measured task times a farm sync keeps between runs (issue 47): a job's mean seconds per
succeeded task, keyed by the job and its count of succeeded tasks. Finished tasks never change,
so a job whose count did not change since the last sync costs no call.

The file (JSON, written atomically, read with a size limit, no code run)::

    {"format": "sched-task-times/1", "farm": F, "queue": Q,
     "jobs": {"<job id>": [<succeeded tasks>, <mean seconds per task>], ...}}

It is a cache: a file of another farm or queue, or one with a bad field, is set aside with a
warning naming the file and the field, and the sync measures every job again (it rewrites the
file). An entry that is bad (a count that is not a whole number > 0, seconds that are not a
finite number within 0 and sched.limits.MAX_SECONDS) is dropped alone, with a warning naming the
file, the job and the field, and that job is measured again.

It is written only over a file of its own (``format`` ``sched-task-times/1``) or where none is:
a symbolic link, a folder, a file that is not JSON or of another format (a decision log named
by mistake) is neither read nor written, with a warning (:func:`load`). A dry run writes nothing.
It keeps the jobs of the last sync only, so it stays within rank()'s limit of jobs. Job ids
are read without the white space around them (``sched.formats.csv_input.normal_id``); two that differ by
it only are the same job given twice: both entries are dropped, named, and the job measured again.
"""

import math
import os

from sched import files
from sched.errors import SchedError, shorten
from sched.farms.mapping import printable
from sched.formats import json_input
from sched.formats.csv_input import normal_id
from sched.limits import MAX_FARM_COUNT, MAX_RANK_TASKS, MAX_SECONDS

FORMAT = "sched-task-times/1"
#: The file's largest size: rank()'s limit of jobs, each a short line.
MAX_BYTES = 256 * MAX_RANK_TASKS
#: JSON values the file may hold (an entry is an array of two numbers).
MAX_VALUES = 4 * MAX_RANK_TASKS + 64


class TaskTimesError(SchedError):
    """A task-times file cannot be read or is malformed; the message names the file and field."""


class _NotOurs(TaskTimesError):
    """The path is no task-times file: neither read further nor written over."""


def read(path, farm, queue):
    """(``{job id: (succeeded, mean seconds)}``, a warning or None) of the file at ``path`` for
    this farm and queue (:func:`load`, without whether it may be written)."""
    times, warning, _ = load(path, farm, queue)
    return times, warning


def load(path, farm, queue):
    """(times, a warning or None, whether the file may be written) of ``path`` for this farm and
    queue: empty without a warning and writable when it does not exist yet; empty with a warning,
    writable, when it is a task-times file of another queue or malformed; the good entries with a
    warning naming the first bad one when some are bad; empty with a warning, NOT writable, when
    it is a link or not a task-times file."""
    if not os.path.lexists(path):
        return {}, None, True
    try:
        times, warning = _read(path, farm, queue)
        return times, warning, True
    except _NotOurs as exc:
        return (
            {},
            f"{exc}; measuring every job again; not overwritten: the task times measured are not kept",
            False,
        )
    except TaskTimesError as exc:
        return {}, f"{exc}; measuring every job again", True


def _document(path):
    """The file's JSON object, if it is a task-times file (its ``format``); else _NotOurs."""
    if os.path.islink(path):
        raise _NotOurs(f"task times {path}: a symbolic link (links are not followed for writing)")
    data = files.read_bytes(path, _NotOurs, limit=MAX_BYTES)
    doc = json_input.parse(data, f"task times {path}", _NotOurs, max_values=MAX_VALUES)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise _NotOurs(
            f"task times {path}: field format: expected {FORMAT!r}, got {shorten(got)}: not a task-times file"
        )
    return doc


def _read(path, farm, queue):
    doc = _document(path)
    if doc.get("farm") != farm or doc.get("queue") != queue:
        raise TaskTimesError(f"task times {path}: fields farm, queue: another queue's file")
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict):
        raise TaskTimesError(f"task times {path}: field jobs: expected {{job id: [succeeded, seconds]}}")
    out, bad, seen = {}, [], set()
    for jid, entry in jobs.items():
        got = entry_times(entry)
        key = normal_id(jid)  # as every id the project reads
        if key in seen:  # the same job twice (white space aside): dropped, measured again
            out.pop(key, None)
            bad.append((key, "the same job twice (white space around ids aside)"))
        elif got is None:
            bad.append(
                (
                    jid,
                    f"expected [succeeded tasks > 0, seconds >= 0] (a whole count at most "
                    f"{MAX_FARM_COUNT}, seconds finite and at most {MAX_SECONDS:g}: sched.limits), "
                    f"got {shorten(entry)}",
                )
            )
        else:
            out[key] = got
        seen.add(key)
    if not bad:
        return out, None
    jid, why = bad[0]
    more = f" ({len(bad) - 1} more entries like it dropped)" if len(bad) > 1 else ""
    return out, (
        f"task times {path}: field jobs.{printable(jid)[:60]}: {why}: the entry is dropped, "
        f"the job measured again{more}"
    )


def entry_times(entry):
    """(succeeded tasks, mean seconds) of one entry, or None when it is not one: a list of a
    whole count within 1 and MAX_FARM_COUNT and seconds finite within 0 and MAX_SECONDS."""
    if not (isinstance(entry, list) and len(entry) == 2):
        return None
    n, mean = entry
    if not (type(n) is int and 0 < n <= MAX_FARM_COUNT and seconds_ok(mean)):
        return None
    return n, float(mean)


def seconds_ok(x):
    """Whether ``x`` is a number of seconds a reader may use: finite, within 0 and MAX_SECONDS."""
    return (
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= MAX_SECONDS
    )


def write(path, farm, queue, times):
    """Write ``times`` ({job id: (succeeded, mean seconds)}) for this farm and queue, atomically:
    only where no file is, or over a task-times file (a TaskTimesError naming the path otherwise:
    a link, a file of another format)."""
    if os.path.lexists(path):
        _document(path)
    jobs = {jid: [int(n), float(mean)] for jid, (n, mean) in sorted(times.items())}
    files.write_json(path, {"format": FORMAT, "farm": farm, "queue": queue, "jobs": jobs})
