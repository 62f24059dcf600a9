"""``sched opencue sync``: a show's pending OpenCue jobs, ordered by ``rank()``, as job priorities.

OpenCue books the waiting frames of the jobs with the highest priority first, so
priorities that strictly decrease along ``rank()``'s order make the farm start the jobs
in that order. What this cannot do (docs/opencue.md): OpenCue books frames of several
jobs at once on a farm's many hosts, so a priority orders jobs, not every frame.

Only jobs whose priority must change are changed (:func:`new_priorities`): the largest
set of jobs whose present priorities already decrease along the order, with room between
them for the jobs ranked between, keeps its priorities; the others get new ones in the
gaps. A second sync with nothing changed sets nothing.

One job never aborts a sync: each job's task is checked by ``rank()``'s own reading of a task
(:func:`sched.ranking.tasks.read_queue`, with the config's priority classes and duration model)
before the show is ranked, and a job it refuses is skipped with the reason, naming the job
(its name escaped by :func:`sched.farms.opencue_mapping.printable`, as every name the adapter
prints). The mapping's priority classes and kinds are checked the same way, before Cuebot is
called: a bad one refuses the CSV at its line. A show with more pending jobs than ``rank()``
takes (sched.limits.MAX_RANK_TASKS) is refused whole, with the count, before anything is set.

The client is the OpenCue Python client (``opencue-pycue``, optional extra ``opencue``).
"""

import math
import os
from dataclasses import dataclass, field

from sched.errors import MissingExtraError, SchedError, UsageError
from sched.farms import opencue_mapping as mapping
from sched.farms.opencue_mapping import printable
from sched.limits import MAX_RANK_TASKS, MAX_SECONDS
from sched.ranking.tasks import RankInputError, RankSetupError, read_queue
from sched.ranking.times import where

#: Priorities the adapter assigns, by default (OpenCue's default job priority is 1).
LOWEST, HIGHEST = 1, 100_000
#: The largest priority OpenCue holds (a job's priority is a 32-bit signed integer).
MAX_PRIORITY = 2**31 - 1
#: The longest timeout of a Cuebot call, in seconds (a day): gRPC fails a deadline some
#: 1e10 s away at once, which would read as a Cuebot that cannot be reached.
MAX_TIMEOUT_S = 86_400.0
#: Step between new priorities at either end of the order (room for later jobs).
STEP = 10


class OpenCueError(SchedError):
    """Cuebot cannot be reached or refuses a call, or a show has more jobs than can be
    ranked at once; the message names the host, show or job."""


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
        raise MissingExtraError.of("sched opencue", "opencue", exc) from exc
    return opencue


def connect(hosts=None, timeout_s=10.0):
    """The ``opencue`` module, connected to Cuebot at ``hosts`` (``HOST:PORT`` strings; None:
    pycue's own settings, ``CUEBOT_HOSTS`` or its config file)."""
    if not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise UsageError(
            f"timeout_s: expected a finite number > 0 and at most {MAX_TIMEOUT_S:g}, got {timeout_s}"
        )
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
    """Rank ``show``'s pending jobs and set their priorities (none with ``dry_run``); a SyncReport.

    ``rules``: the mapping (:func:`sched.farms.opencue_mapping.read_mapping`), or Rules in order.
    """
    import time

    from sched.ranking.ranker import decide

    lo, hi = bounds
    if not 0 <= lo < hi <= MAX_PRIORITY:  # a dry run says what the real one can set
        raise UsageError(f"bounds: expected 0 <= lowest < highest <= {MAX_PRIORITY}, got {lo}, {hi}")
    now = time.time() if now is None else float(now)
    check = _Check(config, now, machines)  # now, machines and config: the call's own errors
    rules = mapping.as_mapping(rules)
    check.rules(rules)  # a bad priority class or kind in the CSV: refused before Cuebot is called
    opencue = connect(hosts, timeout_s)
    report = SyncReport(show=show, dry_run=dry_run)
    try:
        jobs = opencue.api.getJobs(show=[show], include_finished=False)
    except _errors(opencue) as exc:
        raise OpenCueError(f"show {show!r}: cannot list its jobs ({_first_line(exc)})") from None
    from opencue_proto import job_pb2

    def waits(d):  # a job with nothing waiting to be booked: its priority orders nothing
        return d.state == job_pb2.PENDING and not d.is_paused and d.job_stats.waiting_frames > 0

    pending = sorted((j for j in jobs if waits(j.data)), key=lambda j: (j.name(), j.id()))
    if len(pending) > MAX_RANK_TASKS:  # at once: before a comment is read or a job checked
        raise OpenCueError(
            f"show {show!r}: {len(pending)} pending jobs with waiting frames, more than rank()'s "
            f"limit of {MAX_RANK_TASKS} (sched.limits.MAX_RANK_TASKS); no priority was set"
        )
    tasks, ranked_jobs, work = _job_tasks(opencue, pending, rules, check, default_due_h, report)
    tasks, ranked_jobs = _within_reach(tasks, ranked_jobs, work, check.latest, report)
    if not tasks:
        return report
    by_id = {job.data.id: job for job in ranked_jobs}
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
                    f"job {printable(job.data.name)}: cannot set its priority ({_first_line(exc)}); "
                    f"{done} of the sync's changes were made before"
                ) from None
        report.changes.append((job.data.name, before, after))
    return report


def _job_tasks(opencue, pending, rules, check, default_due_h, report):
    """(tasks, their jobs, their planned estimates) of the pending jobs that rank() can read;
    each other job is skipped into ``report``, with the reason naming it."""
    tasks, ranked_jobs, work = [], [], []
    for job in pending:
        d = job.data
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
        if task is not None:
            try:
                estimate = check.task(task)
            except RankSetupError:  # the files rank() reads, not this job: the whole sync fails
                raise
            except RankInputError as exc:  # rank() would refuse the whole call for this job
                task, how = None, f"job {printable(d.name)}: {_reason(exc, d.id)}"
        if task is None:
            report.skipped.append((d.name, how))
            continue
        tasks.append(task)
        ranked_jobs.append(job)
        work.append(estimate)
    return tasks, ranked_jobs, work


def _comment(opencue, job):
    """The values of the job's latest ``sched`` comment (None without one)."""
    if not job.data.has_comment:
        return None
    try:
        comments = job.getComments()
    except _errors(opencue) as exc:
        raise OpenCueError(
            f"job {printable(job.data.name)}: cannot read its comments ({_first_line(exc)})"
        ) from None
    mine = [c for c in comments if c.subject().strip().lower() == mapping.SUBJECT]
    if not mine:
        return None
    latest = max(mine, key=lambda c: c.data.timestamp)
    return mapping.comment_values(
        latest.message(), f"job {printable(job.data.name)}: comment {mapping.SUBJECT!r}"
    )


class _Check:
    """rank()'s checks, one task at a time: a sync skips the job rank() would refuse rather
    than let it refuse the whole call."""

    def __init__(self, config, now, machines):
        from sched.ranking.ranker import _settings  # what decide() reads: priority classes, model

        self.settings = _settings(config)
        # the arguments, checked once, as decide() will: a bad one is the call's error
        q = read_queue([], now, machines, self.settings)
        self.now = now
        #: when the last machine is free (or now): every job starts by then plus the work before it
        self.latest = max(now, float(q.machine_free.max()))

    def task(self, task):
        """The task's planned estimate, or the RankInputError rank() would raise for it."""
        return float(read_queue([task], self.now, 1, self.settings).estimate[0])

    def rules(self, rules):
        """Each priority class and kind of the mapping's rules, as rank() reads it: a MappingError
        naming the first rule (its file and line) with one rank() would refuse."""
        seen = set()
        for rule in rules:
            for key, probe in (("priority", self._class), ("kind", self._kind)):
                v = rule.values.get(key)
                if v is None or (key, v) in seen:
                    continue
                seen.add((key, v))
                try:
                    probe(v)
                except RankInputError as exc:
                    why = _reason(exc, key).removeprefix(f"field {key}: ")
                    at = rule.where or f"rule {rule.pattern!r}"
                    raise mapping.MappingError(f"{at}: column {key}: {why}") from None

    def _class(self, name):
        self.task({"id": "priority", "priority": name, "due": self.now, "estimate_s": 1.0})

    def _kind(self, kind):
        if self.settings.calibration:  # without one, each job that needs the model says so
            self.task({"id": "kind", "weight": 1.0, "due": self.now, "kind": kind, "frames": 1})


def _reason(exc, task_id):
    """rank()'s message for the task ``task_id``, without the task's id (the caller names it)."""
    text, head = str(exc), f"{where(task_id, 0)}: "
    return text[len(head) :] if text.startswith(head) else text


def _within_reach(tasks, jobs, work, latest, report):
    """The tasks and jobs whose plan ends within MAX_SECONDS, as rank() requires: every job
    fits alone (checked), but their total may not; then the jobs of the largest estimates are
    skipped, noted in ``report``, until the rest fits."""
    total = math.fsum(work)
    if latest + total <= MAX_SECONDS:
        return tasks, jobs
    drop = set()
    for k in sorted(range(len(tasks)), key=lambda k: -work[k]):
        drop.add(k)
        total -= work[k]
        report.skipped.append(
            (
                jobs[k].data.name,
                f"job {printable(jobs[k].data.name)}: estimate {work[k]:.6g} s: with the show's "
                f"other jobs the plan would end beyond {MAX_SECONDS:g} s (sched.limits.MAX_SECONDS); "
                "the largest estimates are left out",
            )
        )
        if latest + total <= MAX_SECONDS:
            break
    keep = [k for k in range(len(tasks)) if k not in drop]
    return [tasks[k] for k in keep], [jobs[k] for k in keep]


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
        # a gRPC error: its status and details (Cuebot's, which may quote a job's name)
        details = (exc.details() or "").strip().splitlines()
        return printable(f"{exc.code().name}: {details[0]}" if details else exc.code().name)
    lines = str(exc).strip().splitlines()
    return printable(lines[0]) if lines else type(exc).__name__
