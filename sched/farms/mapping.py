"""How a render-farm job becomes a task for ``rank()``: its weight, due time and estimate
(docs/opencue.md, docs/deadline.md); shared by the farm adapters.

A job's fields, by precedence:

1. the job's own ``sched`` values: on OpenCue its latest comment whose subject is ``sched``
   (case aside), one ``key: value`` (or ``key=value``) a line; on Deadline Cloud its
   ``sched:`` description lines and ``sched_*`` parameters (:mod:`sched.farms.deadline`);
2. the first row of the mapping CSV (``--mapping FILE``, kept by production) whose ``job``
   pattern (shell-style, ``fnmatch``) matches the job's name (:class:`Mapping`: rows naming
   one job exactly are found by name, only the rows with a wildcard are tried in turn);
3. the defaults: weight 1, due ``default_due_h`` hours after the job's submission.

Keys (comment) and columns (CSV): ``weight`` (a number > 0) or ``priority`` (a class of
config ``scenario.priorities``); ``due`` (an ISO 8601 datetime; without a time zone, UTC)
or ``due_after_h`` (hours after the job's submission); ``frame_s`` (seconds a frame takes,
for a job none of whose frames has finished yet; ``task_s`` on Deadline Cloud, whose unit of
work is a task: the ``unit`` argument of the functions below); ``kind`` and the duration model's
features (for the calibration's model: ``sched.data.bench.calibration``). Other comment keys are
features. The estimate is the job's waiting frames (tasks) times its average frame time, else
times ``frame_s`` (``task_s``), else the duration model's estimate for its kind and features with
``frames`` = the waiting frames (tasks).

Limits: the numbers are bounded as ``rank()`` bounds them (``sched.limits``: a weight at most
MAX_WEIGHT, a frame time and ``due_after_h`` hours at most MAX_SECONDS), so a value ``rank()``
would refuse is refused here, at its line and column or as its job's comment.
"""

import fnmatch
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sched import files
from sched.errors import SchedError
from sched.formats import csv_input
from sched.limits import MAX_SECONDS, MAX_WEIGHT

#: Bytes of a mapping CSV (a row a job pattern: far smaller).
MAX_MAPPING_BYTES = 16 * 1024**2
#: Rows of a mapping CSV whose ``job`` has a wildcard (``*``, ``?``, ``[``): each is tried
#: against the name of every job it is not found for by name, so their count bounds a
#: sync's time (rows naming one job exactly are found in a dict, and any number is fine).
MAX_MAPPING_PATTERNS = 1000
#: Keys with a meaning of their own (OpenCue's, whose unit of work is a frame); any other
#: comment key is a feature of the duration model. :func:`keys` gives them for another unit.
KEYS = ("weight", "priority", "due", "due_after_h", "frame_s", "kind")


def keys(unit="frame"):
    """The keys with a meaning of their own for jobs counted in ``unit`` (``frame_s`` or ``task_s``)."""
    return tuple(f"{unit}_s" if k == "frame_s" else k for k in KEYS)


#: The subject of the job comments the adapter reads.
SUBJECT = "sched"


class MappingError(SchedError):
    """A mapping CSV or a job comment that cannot be read; the message names the row or job and field."""


@dataclass(frozen=True)
class Rule:
    """One row of the mapping CSV: the values it sets for the jobs its pattern matches."""

    pattern: str
    values: dict = field(default_factory=dict)
    #: where the rule comes from (``FILE: line N``), for the errors that name it
    where: str = field(default="", compare=False)


class Mapping:
    """Rules in file order, looked up by job name: the first rule whose pattern matches.

    A pattern without a wildcard names one job: such rules are found in ``names`` (name ->
    position of its first rule); only the rules of ``patterns`` ((position, compiled
    matcher), at most MAX_MAPPING_PATTERNS) are tried in turn, those before the named one.
    """

    def __init__(self, rules=()):
        self.rules, self.names, self.patterns = [], {}, []
        for rule in rules:
            self.add(rule)

    def add(self, rule):
        pos = len(self.rules)
        if any(c in rule.pattern for c in "*?["):
            if len(self.patterns) == MAX_MAPPING_PATTERNS:
                raise MappingError(
                    f"{rule.where or 'rules'}: more than {MAX_MAPPING_PATTERNS} rows whose job has a "
                    "wildcard (*, ?, [...]; sched.farms.mapping.MAX_MAPPING_PATTERNS): each is "
                    "tried against every job; name jobs exactly in the others"
                )
            # fnmatch.fnmatchcase's own matcher, compiled once rather than looked up per call
            self.patterns.append((pos, re.compile(fnmatch.translate(rule.pattern)).match))
        else:
            self.names.setdefault(rule.pattern, pos)
        self.rules.append(rule)

    def first(self, name):
        """The first rule that matches job ``name`` (without the white space around it, as the
        patterns are read: :func:`sched.formats.csv_input.normal_id`), or None."""
        name = csv_input.normal_id(name)
        named = self.names.get(name, len(self.rules))
        for pos, match in self.patterns:
            if pos > named:
                break
            if match(name) is not None:
                return self.rules[pos]
        return self.rules[named] if named < len(self.rules) else None

    def __iter__(self):
        return iter(self.rules)

    def __len__(self):
        return len(self.rules)


def as_mapping(rules):
    """``rules`` (a Mapping, or Rules in order) as a Mapping."""
    return rules if isinstance(rules, Mapping) else Mapping(rules)


def read_mapping(path, unit="frame"):
    """The rules of the mapping CSV ``path``, in file order: a :class:`Mapping` (its columns:
    ``job`` and any of :func:`keys` of ``unit``).

    Lines may end in LF, CRLF or CR; a record is one line (``sched.formats.csv_input``), blank lines
    are skipped. Refused naming the file and line: a line that is no CSV record (a quoted
    field left open: a stray quote, text after a closing quote, a NUL byte, a field over the
    csv module's limit, 131,072 characters), a column given twice, an unknown or missing
    column, more fields than columns, a bad value (:func:`check_values`), more than
    MAX_MAPPING_PATTERNS rows with a wildcard.
    """
    text = files.read_text(path, MappingError, MAX_MAPPING_BYTES)
    return _rules(csv_input.line_records(text), path, unit)


def _rules(records, path, unit):
    cols, out, checked = None, Mapping(), {}
    for line, record in records:
        if isinstance(record, csv_input.BadLine):
            raise MappingError(f"{path}: line {line}: {record}")
        if cols is None:
            cols = record
            _check_columns(cols, path, line, unit)
            continue
        if len(record) > len(cols):
            raise MappingError(f"{path}: line {line}: more fields than columns")
        row = dict(zip(cols, record))
        pattern = csv_input.normal_id(row.pop("job", ""))  # a short row may end before its job field
        if not pattern:
            raise MappingError(f"{path}: line {line}: column job: empty")
        where = f"{path}: line {line}"
        values = {k: v.strip() for k, v in row.items() if v.strip()}
        key = tuple(values.items())
        if key not in checked:  # the rows of a long CSV mostly repeat a few values: checked once
            checked[key] = check_values(values, where, unit=unit)
        out.add(Rule(pattern, checked[key], where))
    if cols is None:
        raise MappingError(f"{path}: column job: missing (the job-name pattern of each row)")
    return out


def _check_columns(cols, path, line, unit):
    files.check_header(cols, path, line, MappingError)
    if "job" not in cols:
        raise MappingError(f"{path}: column job: missing (the job-name pattern of each row)")
    known = keys(unit)
    unknown = [c for c in cols if c != "job" and c not in known]
    if unknown:
        raise MappingError(
            f"{path}: column {unknown[0]!r}: unknown; expected job and any of {', '.join(known)}"
        )


def comment_values(message, where, unit="frame"):
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
    return check_values(values, where, features=True, unit=unit)


#: The numbers, with their least and largest values and the limit that sets the largest:
#: rank()'s (sched.limits), so that a value it would refuse is refused at its row or comment.
_NUMBERS = {
    "weight": (math.ulp(0.0), MAX_WEIGHT, "sched.limits.MAX_WEIGHT"),
    "due_after_h": (0.0, MAX_SECONDS / 3600.0, "sched.limits.MAX_SECONDS in hours"),  # 0: due on submission
    "frame_s": (math.ulp(0.0), MAX_SECONDS, "sched.limits.MAX_SECONDS"),
    "task_s": (math.ulp(0.0), MAX_SECONDS, "sched.limits.MAX_SECONDS"),
}


def check_values(values, where, features=False, unit="frame"):
    """``values`` (strings) as typed values; refused naming ``where`` and the key. ``features``:
    keys other than :func:`keys` of ``unit`` are features of the duration model, not errors."""
    out, known = {}, keys(unit)
    for key, text in values.items():
        if key in _NUMBERS and key in known:
            v = _number(text)
            if v is None:
                raise MappingError(f"{where}: {key}: expected a number, got {text[:40]!r}")
            least, most, limit = _NUMBERS[key]
            if not (math.isfinite(v) and least <= v <= most):
                sign = ">= 0" if key == "due_after_h" else "> 0"
                raise MappingError(
                    f"{where}: {key}: expected a finite number {sign} and at most {most:g} "
                    f"({limit}), got {text[:40]!r}"
                )
            out[key] = v
        elif key == "due":
            out[key] = posix_seconds(text, f"{where}: due")
        elif key in ("priority", "kind"):
            out[key] = text
        elif features:
            out[key] = _feature(text)
        else:
            raise MappingError(f"{where}: {key}: unknown key; expected one of {', '.join(known)}")
    if "weight" in out and "priority" in out:
        raise MappingError(f"{where}: weight and priority: give one of them")
    if "due" in out and "due_after_h" in out:
        raise MappingError(f"{where}: due and due_after_h: give one of them")
    return out


def _number(value):
    """A number given as one (a farm's typed parameter), or text in ASCII as a scenario's numbers
    (:func:`sched.formats.csv_input.number`: not ``1_000``, not ``١٢``); None otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return math.inf
    return csv_input.number(value)


def _feature(text):
    v = _number(text)
    return v if v is not None and math.isfinite(v) else text


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
    """The values that hold for job ``name``: its own ``sched`` values over the first matching
    rule's (``comment``: the job's checked values, or None; ``rules``: a Mapping, or Rules
    in order)."""
    rule = as_mapping(rules).first(name)
    return overlay(rule.values if rule is not None else {}, comment)


def overlay(base, top):
    """``top``'s values over ``base``'s (neither changed): a choice of ``top`` between ``weight``
    and ``priority``, or ``due`` and ``due_after_h``, replaces ``base``'s choice."""
    out = dict(base)
    if top:
        for pair in (("weight", "priority"), ("due", "due_after_h")):
            if any(k in top for k in pair):
                for k in pair:
                    out.pop(k, None)
        out.update(top)
    return out


def job_task(job_id, waiting, avg_frame_s, submitted_s, values, default_due_h, unit="frame"):
    """The task ``rank()`` reads for one job, and how its estimate was made (a few words):
    ``waiting`` frames (``unit`` task: tasks) of ``avg_frame_s`` seconds each, measured (0: none
    has finished), else of the mapped ``frame_s`` (``task_s``), else the duration model's."""
    own = f"{unit}_s"
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
        how = f"{waiting} waiting {unit}s x {avg_frame_s:g} s (the job's average)"
    elif own in values:
        task["estimate_s"] = waiting * values[own]
        how = f"{waiting} waiting {unit}s x {values[own]:g} s ({own})"
    elif "kind" in values:
        task["kind"] = values["kind"]
        task.update({k: v for k, v in values.items() if k not in keys(unit)})
        task.setdefault("frames", waiting)
        how = f"the duration model for kind {values['kind']!r}"
    else:
        return None, f"no estimate: no {unit} has finished, and neither {own} nor kind is mapped"
    return task, how


def printable(text):
    """``text`` with its characters that are not printable (new lines, other control and
    format characters) and its backslashes escaped as Python writes them: a job's name as
    output shows it, on one line, with nothing it could forge (``a\\nset b`` stays one line)."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in text)
