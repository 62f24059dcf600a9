"""How an OpenCue job becomes a task for ``rank()``: its weight, due time and estimate (docs/opencue.md).

A job's fields, by precedence:

1. its latest comment whose subject is ``sched`` (case aside): one ``key: value`` (or
   ``key=value``) a line;
2. the first row of the mapping CSV (``--mapping FILE``, kept by production) whose ``job``
   pattern (shell-style, ``fnmatch``) matches the job's name;
3. the defaults: weight 1, due ``default_due_h`` hours after the job's submission.

Keys (comment) and columns (CSV): ``weight`` (a number > 0) or ``priority`` (a class of
config ``scenario.priorities``); ``due`` (an ISO 8601 datetime; without a time zone, UTC)
or ``due_after_h`` (hours after the job's submission); ``frame_s`` (seconds a frame takes,
for a job none of whose frames has finished yet); ``kind`` and the duration model's
features (for the calibration's model: ``sched.data.calibration``). Other comment keys are
features. The estimate is the job's waiting frames times its average frame time, else
times ``frame_s``, else the duration model's estimate for its kind and features with
``frames`` = the waiting frames.
"""

import csv
import fnmatch
import io
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sched import files
from sched.errors import SchedError

#: Bytes of a mapping CSV (a row a job pattern: far smaller).
MAX_MAPPING_BYTES = 16 * 1024**2
#: Keys with a meaning of their own; any other comment key is a feature of the duration model.
KEYS = ("weight", "priority", "due", "due_after_h", "frame_s", "kind")
#: The subject of the job comments the adapter reads.
SUBJECT = "sched"


class MappingError(SchedError):
    """A mapping CSV or a job comment that cannot be read; the message names the row or job and field."""


@dataclass(frozen=True)
class Rule:
    """One row of the mapping CSV: the values it sets for the jobs its pattern matches."""

    pattern: str
    values: dict = field(default_factory=dict)


def read_mapping(path):
    """The rules of the mapping CSV ``path``, in file order."""
    text = files.read_text(path, MappingError, MAX_MAPPING_BYTES)
    reader = csv.DictReader(io.StringIO(text))
    cols = reader.fieldnames or []
    if "job" not in cols:
        raise MappingError(f"{path}: column job: missing (the job-name pattern of each row)")
    unknown = [c for c in cols if c != "job" and c not in KEYS]
    if unknown:
        raise MappingError(
            f"{path}: column {unknown[0]!r}: unknown; expected job and any of {', '.join(KEYS)}"
        )
    rules = []
    for line, row in enumerate(reader, start=2):
        if None in row:
            raise MappingError(f"{path}: line {line}: more fields than columns")
        pattern = (row.get("job") or "").strip()
        if not pattern:
            raise MappingError(f"{path}: line {line}: column job: empty")
        where = f"{path}: line {line}"
        values = {k: v.strip() for k, v in row.items() if k != "job" and v is not None and v.strip()}
        rules.append(Rule(pattern, check_values(values, where)))
    return rules


def comment_values(message, where):
    """The ``key: value`` lines of a ``sched`` comment, checked."""
    values = {}
    for n, raw in enumerate(message.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":") if ":" in line.split("=", 1)[0] else line.partition("=")
        if not sep or not key.strip():
            raise MappingError(f"{where}: line {n}: expected key: value, got {line[:60]!r}")
        values[key.strip().lower()] = value.strip()
    return check_values(values, where, features=True)


def check_values(values, where, features=False):
    """``values`` (strings) as typed values; refused naming ``where`` and the key."""
    out = {}
    for key, text in values.items():
        if key in ("weight", "due_after_h", "frame_s"):
            try:
                v = float(text)
            except ValueError:
                raise MappingError(f"{where}: {key}: expected a number, got {text[:40]!r}") from None
            least = 0.0 if key == "due_after_h" else math.ulp(0.0)  # due_after_h may be 0: due on submission
            if not (math.isfinite(v) and v >= least):
                sign = ">= 0" if key == "due_after_h" else "> 0"
                raise MappingError(f"{where}: {key}: expected a finite number {sign}, got {text[:40]!r}")
            out[key] = v
        elif key == "due":
            out[key] = posix_seconds(text, f"{where}: due")
        elif key in ("priority", "kind"):
            out[key] = text
        elif features:
            out[key] = _feature(text)
        else:
            raise MappingError(f"{where}: {key}: unknown key; expected one of {', '.join(KEYS)}")
    if "weight" in out and "priority" in out:
        raise MappingError(f"{where}: weight and priority: give one of them")
    if "due" in out and "due_after_h" in out:
        raise MappingError(f"{where}: due and due_after_h: give one of them")
    return out


def _feature(text):
    try:
        v = float(text)
    except ValueError:
        return text
    return v if math.isfinite(v) else text


def posix_seconds(text, where):
    """An ISO 8601 datetime (UTC when it names no time zone) in seconds since 1970 UTC."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MappingError(f"{where}: expected an ISO 8601 datetime, got {text[:40]!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.timestamp()


def job_values(name, comment, rules):
    """The values that hold for job ``name``: its ``sched`` comment's over the first matching
    rule's (``comment``: the comment's checked values, or None)."""
    out = {}
    for rule in rules:
        if fnmatch.fnmatchcase(name, rule.pattern):
            out.update(rule.values)
            break
    if comment:
        for pair in (("weight", "priority"), ("due", "due_after_h")):
            if any(k in comment for k in pair):  # the comment's choice replaces the row's
                for k in pair:
                    out.pop(k, None)
        out.update(comment)
    return out


def job_task(job_id, waiting, avg_frame_s, submitted_s, values, default_due_h):
    """The task ``rank()`` reads for one job, and how its estimate was made (a few words)."""
    task = {"id": job_id}
    if "priority" in values:
        task["priority"] = values["priority"]
    else:
        task["weight"] = values.get("weight", 1.0)
    if "due" in values:
        task["due"] = values["due"]
    else:
        task["due"] = submitted_s + 3600.0 * values.get("due_after_h", default_due_h)
    if avg_frame_s > 0:
        task["estimate_s"] = waiting * avg_frame_s
        how = f"{waiting} waiting frames x {avg_frame_s:g} s (the job's average)"
    elif "frame_s" in values:
        task["estimate_s"] = waiting * values["frame_s"]
        how = f"{waiting} waiting frames x {values['frame_s']:g} s (frame_s)"
    elif "kind" in values:
        task["kind"] = values["kind"]
        task.update({k: v for k, v in values.items() if k not in KEYS})
        task.setdefault("frames", waiting)
        how = f"the duration model for kind {values['kind']!r}"
    else:
        return None, "no estimate: no frame has finished, and neither frame_s nor kind is mapped"
    return task, how
