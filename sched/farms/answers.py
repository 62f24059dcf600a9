"""What a render farm's answers hold, checked once where an adapter reads them (issue 58).

A farm's listing may name one job twice (a job that moved between two pages of a paginated
listing, a server that repeats itself): :func:`unique` keeps the first of each id and says
which were repeated, once per id, so that a job is ranked once and the sync goes on.

A record's numbers are checked for everything its readers use: Deadline Cloud's job summaries
(:func:`deadline_summary`: the task counts, the priority, the submission time, the name) and
task times (:func:`task_seconds`); every adapter's :class:`sched.farms.adapter.FarmJob`
(:func:`job_problem`: priority, waiting work, measured time, submission time). A record that
fails is skipped, named with its field and value, and counted in the sync's report, never
dropped silently and never the whole sync's failure.
"""

import math
from datetime import datetime

from sched.errors import shorten
from sched.farms.mapping import printable
from sched.limits import MAX_FARM_COUNT, MAX_SECONDS


def unique(items, key, what, warnings):
    """``items`` with the first of each ``key(item)`` kept, in their order; each key listed more
    than once adds one line to ``warnings`` (``what``: the listing, in words)."""
    seen, out = {}, []
    for item in items:
        k = key(item)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] == 1:
            out.append(item)
    for k, n in seen.items():
        if n > 1:
            warnings.append(f"{what} listed {printable(str(k))[:80]} {n} times; it counts once")
    return out


def whole(value, least=0, most=MAX_FARM_COUNT):
    """Whether ``value`` is a whole number (not a bool) within ``least`` and ``most``."""
    return type(value) is int and least <= value <= most


def seconds(value, least=0.0, most=MAX_SECONDS):
    """Whether ``value`` is a finite number (not a bool) of seconds within ``least`` and ``most``."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and least <= value <= most
    )


def _got(value):
    return shorten(value)


def deadline_counts(summary):
    """The reason a ListJobs summary's ``taskRunStatusCounts`` cannot be read (None: it can):
    each a whole number within 0 and MAX_FARM_COUNT."""
    counts = summary.get("taskRunStatusCounts")
    if counts is None:
        return None
    if not isinstance(counts, dict):
        return f"taskRunStatusCounts: expected a map of task counts, got {_got(counts)}"
    for status, n in counts.items():
        if not whole(n):
            return (
                f"taskRunStatusCounts.{printable(str(status))[:40]}: expected a whole number within 0 "
                f"and {MAX_FARM_COUNT} (sched.limits.MAX_FARM_COUNT), got {_got(n)}"
            )
    return None


def deadline_summary(summary, lowest, highest):
    """The reason a waiting job's ListJobs summary cannot be ranked (None: it can): its name a
    string, its priority a whole number within the service's range, its creation a datetime
    within MAX_SECONDS of 1970."""
    if not isinstance(summary.get("name"), str):
        return f"name: expected a string, got {_got(summary.get('name'))}"
    if not whole(summary.get("priority"), lowest, highest):
        return (
            f"priority: expected a whole number within {lowest} and {highest}, got "
            f"{_got(summary.get('priority'))}"
        )
    created = summary.get("createdAt")
    if not (isinstance(created, datetime) and seconds(created.timestamp(), -MAX_SECONDS)):
        return f"createdAt: expected a time, got {_got(created)}"
    return None


def deadline_waiting(summaries, waits, bounds, where, report):
    """The ListJobs summaries of the jobs a sync ranks (``waits(summary)``), each job once (the
    first listing kept, a repeat one warning); one whose fields cannot be read is skipped into
    ``report``, named by its id (or its place in the listing) and the field."""
    out = []
    for k, s in enumerate(summaries, start=1):
        jid = s.get("jobId") if isinstance(s, dict) else None
        if isinstance(jid, str) and jid:
            out.append(s)
        else:
            report.skipped.append(
                (f"ListJobs item {k}", f"{where}: ListJobs item {k}: jobId: expected an id")
            )
    waiting = []
    for s in unique(out, lambda s: s["jobId"], f"{where}: ListJobs", report.warnings):
        why = deadline_counts(s)
        if why is None and waits(s):
            why = deadline_summary(s, *bounds)
            if why is None:
                waiting.append(s)
        if why is not None:
            name = s["name"] if isinstance(s.get("name"), str) else s["jobId"]
            report.skipped.append((name, f"job {printable(name)} ({printable(s['jobId'])}): {why}"))
    return waiting


def mean_task_s(answer, where):
    """(The mean run time of the succeeded tasks of a SearchTasks ``answer`` (0: none), the
    warnings it gives: a task listed twice, succeeded tasks with unreadable times left out)."""
    notes = []
    tasks = [t for t in answer.get("tasks") or [] if isinstance(t, dict)]
    times, bad = [], []
    for t in unique(tasks, lambda t: t.get("taskId"), where, notes):
        if t.get("runStatus") == "SUCCEEDED" and t.get("startedAt") and t.get("endedAt"):
            s, why = task_seconds(t)
            if why is not None:
                bad.append(f"task {printable(str(t.get('taskId')))[:60]}: {why}")
            elif s > 0:
                times.append(s)
    if bad:
        notes.append(f"{where}: {len(bad)} succeeded tasks left out of its mean (the first: {bad[0]})")
    return (math.fsum(times) / len(times) if times else 0.0), notes


def task_seconds(task):
    """(seconds, None) of a succeeded task of a SearchTasks answer, or (None, the reason)."""
    start, end = task.get("startedAt"), task.get("endedAt")
    if not (isinstance(start, datetime) and isinstance(end, datetime)):
        return None, f"startedAt, endedAt: expected two times, got {_got(start)}, {_got(end)}"
    s = (end - start).total_seconds()
    if not seconds(s):
        return None, f"endedAt - startedAt: {s:g} s, expected within 0 and {MAX_SECONDS:g}"
    return s, None


def job_problem(job, unit="frame"):
    """The reason a FarmJob cannot be ranked (None: it can): its numbers as the adapter read
    them from the farm, each named (``unit``: frame or task)."""
    checks = (
        ("priority", job.priority, whole(job.priority, -MAX_FARM_COUNT), f"within +-{MAX_FARM_COUNT}"),
        (f"waiting {unit}s", job.waiting, whole(job.waiting), f"within 0 and {MAX_FARM_COUNT}"),
        (f"average {unit} time", job.avg_s, seconds(job.avg_s), f"s within 0 and {MAX_SECONDS:g}"),
        (
            "submission time",
            job.submitted_s,
            seconds(job.submitted_s, -MAX_SECONDS),
            f"s within +-{MAX_SECONDS:g} of 1970",
        ),
    )
    for field, value, ok, expected in checks:
        if not ok:
            return (
                f"job {printable(job.name)}: {field}: expected a finite number {expected} "
                f"(sched.limits), got {_got(value)}; the farm's answer is not used"
            )
    return None
