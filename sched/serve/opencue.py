"""``sched opencue sync``: a show's pending OpenCue jobs, ordered by ``rank()``, as job priorities.

OpenCue books the waiting frames of the jobs with the highest priority first, so
priorities that strictly decrease along ``rank()``'s order make the farm start the jobs
in that order. What this cannot do (docs/opencue.md): OpenCue books frames of several
jobs at once on a farm's many hosts, so a priority orders jobs, not every frame.

Only jobs whose priority must change are changed (:func:`new_priorities`): the largest
set of jobs whose present priorities already decrease along the order, with room between
them for the jobs ranked between, keeps its priorities; the others get new ones in the
gaps. A second sync with nothing changed sets nothing.

The client is the OpenCue Python client (``opencue-pycue``, optional extra ``opencue``).
"""

import os
from dataclasses import dataclass, field

from sched.errors import MissingExtraError, SchedError
from sched.serve import opencue_mapping as mapping

#: Priorities the adapter assigns, by default (OpenCue's default job priority is 1).
LOWEST, HIGHEST = 1, 100_000
#: Step between new priorities at either end of the order (room for later jobs).
STEP = 10


class OpenCueError(SchedError):
    """Cuebot cannot be reached or refuses a call; the message names the host or job."""


@dataclass
class SyncReport:
    """What a sync found and did."""

    show: str
    policy: str = ""
    why: str = ""
    #: job names in rank order
    ranked: list = field(default_factory=list)
    #: (job name, priority before, priority after), in rank order
    changes: list = field(default_factory=list)
    #: (job name, reason) of pending jobs left as they are
    skipped: list = field(default_factory=list)
    dry_run: bool = False


def _client():
    try:
        import opencue
    except ImportError as exc:
        raise MissingExtraError(
            f"sched opencue needs the optional extra opencue ({exc.name} is missing): "
            f"pip install 'render-queue-sched[opencue]'"
        ) from exc
    return opencue


def connect(hosts=None, timeout_s=10.0):
    """The ``opencue`` module, connected to Cuebot at ``hosts`` (``HOST:PORT`` strings; None:
    pycue's own settings, ``CUEBOT_HOSTS`` or its config file)."""
    opencue = _client()
    opencue.Cuebot.setTimeout(timeout_s)  # pycue passes it to gRPC, which reads seconds
    where = ", ".join(hosts) if hosts else os.environ.get("CUEBOT_HOSTS") or "pycue's configured facility"
    try:
        if hosts:
            opencue.Cuebot.setHosts(list(hosts))
        else:  # $CUEBOT_HOSTS, else the facility of pycue's config; it connects
            opencue.Cuebot.init()
    except _errors(opencue) as exc:
        raise OpenCueError(f"Cuebot at {where}: cannot connect ({_first_line(exc)})") from None
    return opencue


def sync(
    show,
    rules=(),
    dry_run=False,
    hosts=None,
    now=None,
    machines=1,
    policy="auto",
    config=None,
    default_due_h=24.0,
    bounds=(LOWEST, HIGHEST),
    timeout_s=10.0,
):
    """Rank ``show``'s pending jobs and set their priorities (none with ``dry_run``); a SyncReport."""
    import time

    from sched.serve.ranker import decide

    opencue = connect(hosts, timeout_s)
    now = time.time() if now is None else float(now)
    report = SyncReport(show=show, dry_run=dry_run)
    try:
        jobs = opencue.api.getJobs(show=[show], include_finished=False)
    except _errors(opencue) as exc:
        raise OpenCueError(f"show {show!r}: cannot list its jobs ({_first_line(exc)})") from None
    tasks, by_id = [], {}
    from opencue_proto import job_pb2

    for job in sorted(jobs, key=lambda j: (j.name(), j.id())):
        d = job.data
        if d.state != job_pb2.PENDING or d.is_paused or d.job_stats.waiting_frames <= 0:
            continue  # nothing of it waits to be booked: its priority orders nothing
        try:
            values = mapping.job_values(d.name, _comment(opencue, job), rules)
            task, how = mapping.job_task(
                d.id,
                d.job_stats.waiting_frames,
                d.job_stats.avg_frame_sec,
                d.start_time,
                values,
                default_due_h,
            )
        except mapping.MappingError as exc:
            task, how = None, str(exc)
        if task is None:
            report.skipped.append((d.name, how))
            continue
        tasks.append(task)
        by_id[d.id] = job
    if not tasks:
        return report
    decision = decide(tasks, now=now, policy=policy, machines=machines, config=config)
    report.policy, report.why = decision.policy, decision.why
    ranked = [by_id[i] for i in decision.ids]
    report.ranked = [j.data.name for j in ranked]
    current = [j.data.priority for j in ranked]
    new = new_priorities(current, *bounds)
    for job, before, after in zip(ranked, current, new):
        if before == after:
            continue
        if not dry_run:
            try:
                job.setPriority(int(after))
            except _errors(opencue) as exc:
                done = len(report.changes)
                raise OpenCueError(
                    f"job {job.data.name}: cannot set its priority ({_first_line(exc)}); "
                    f"{done} of the sync's changes were made before"
                ) from None
        report.changes.append((job.data.name, before, after))
    return report


def _comment(opencue, job):
    """The values of the job's latest ``sched`` comment (None without one)."""
    if not job.data.has_comment:
        return None
    try:
        comments = job.getComments()
    except _errors(opencue) as exc:
        raise OpenCueError(f"job {job.data.name}: cannot read its comments ({_first_line(exc)})") from None
    mine = [c for c in comments if c.subject().strip().lower() == mapping.SUBJECT]
    if not mine:
        return None
    latest = max(mine, key=lambda c: c.data.timestamp)
    return mapping.comment_values(latest.message(), f"job {job.data.name}: comment {mapping.SUBJECT!r}")


def new_priorities(current, lowest=LOWEST, highest=HIGHEST):
    """Priorities strictly decreasing along the rank order, within [lowest, highest], that keep
    as many of ``current`` (the present priorities, in rank order) as can be kept."""
    n = len(current)
    if n > highest - lowest + 1:
        raise OpenCueError(f"{n} jobs cannot have distinct priorities between {lowest} and {highest}")
    # Longest chain of keepable jobs: p[i] - p[j] >= j - i between kept neighbours, room for
    # the jobs above the first (highest - p >= i) and below the last (p - lowest >= n - 1 - i).
    best, prev = [0] * n, [-1] * n
    for j, pj in enumerate(current):
        if not (lowest <= pj <= highest and highest - pj >= j):
            continue
        best[j] = 1
        for i in range(j):
            if best[i] and current[i] - pj >= j - i and best[i] + 1 > best[j]:
                best[j], prev[j] = best[i] + 1, i
    ends = [j for j in range(n) if best[j] and current[j] - lowest >= n - 1 - j]
    kept = []
    if ends:
        j = max(ends, key=lambda k: (best[k], -k))
        while j >= 0:
            kept.append(j)
            j = prev[j]
        kept.reverse()
    out = list(current)
    anchors = [(-1, highest + 1)] + [(k, current[k]) for k in kept] + [(n, lowest - 1)]
    for (a, upper), (b, lower) in zip(anchors, anchors[1:]):
        m = b - a - 1
        if m == 0:
            continue
        if a == -1 or b == n:  # an open end: a small step, from the kept neighbour
            step = max(1, min(STEP, (upper - lower) // (m + 1)))
            vals = (
                [lower + step * (m - k) for k in range(m)]
                if a == -1
                else [upper - step * (k + 1) for k in range(m)]
            )
        else:  # between two kept jobs: spread evenly
            vals = [lower + ((upper - lower) * (m - k)) // (m + 1) for k in range(m)]
        out[a + 1 : b] = vals
    return out


def _errors(opencue):
    """What a pycue call raises when Cuebot fails it (its own exceptions, or gRPC's)."""
    import grpc

    return (opencue.exception.CueException, grpc.RpcError)


def _first_line(exc):
    if callable(getattr(exc, "code", None)) and callable(getattr(exc, "details", None)):
        return f"{exc.code().name}: {exc.details()}"  # a gRPC error: its status and details
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
