"""``sched opencue sync``: a show's pending OpenCue jobs, ordered by ``rank()``, as job priorities.

OpenCue books the waiting frames of the jobs with the highest priority first, so
priorities that strictly decrease along ``rank()``'s order make the farm start the jobs
in that order. What this cannot do (docs/opencue.md): OpenCue books frames of several
jobs at once on a farm's many hosts, so a priority orders jobs, not every frame.

Only jobs whose priority must change are changed (:func:`new_priorities`): the largest set
of jobs whose present priorities already decrease along the order, with room between them
for the jobs ranked between, keeps its priorities; the others get new ones in the gaps. A
second sync with nothing changed sets nothing.

One job never aborts a sync. A job gone from Cuebot between the listing and a call naming it
(finished and archived, or killed) is skipped, named, and the others are set. Each job's task
is checked by ``rank()``'s own reading of a task (:func:`sched.ranking.tasks.read_queue`, with
the config's priority classes and duration model) before the show is ranked, and a job it
refuses is skipped with the reason, naming the job (its name escaped by
:func:`sched.farms.mapping.printable`, as every name the adapter prints). The mapping's
priority classes and kinds are checked the same way, before Cuebot is called: a bad one refuses
the CSV at its line. A show with more pending jobs than ``rank()`` takes
(sched.limits.MAX_RANK_TASKS) is refused whole, with the count, before anything is set.

A Cuebot that refuses calls for a while (``UNAVAILABLE``, ``RESOURCE_EXHAUSTED``: busy,
restarting) is waited out: each call is made up to ``ATTEMPTS`` times, the waits doubling from
``BACKOFF_S`` (after pycue's own retries of ``UNAVAILABLE``). A count decides when to give up;
then the sync stops, naming the call and how many changes were made.

The checks, the ranking and the choice of priorities are :mod:`sched.farms.adapter`'s, shared
with the Deadline Cloud adapter; this module keeps the client's calls. The client is the
OpenCue Python client (``opencue-pycue``, optional extra ``opencue``).
"""

import math
import os
import re
import time

from sched.errors import MissingExtraError, UsageError
from sched.farms import adapter, answers, mapping
from sched.farms import hold as holds
from sched.farms.adapter import FarmError, FarmJob, SyncReport
from sched.farms.mapping import printable
from sched.limits import MAX_RANK_TASKS

#: Priorities the adapter assigns, by default (OpenCue's default job priority is 1).
LOWEST, HIGHEST = 1, 100_000
#: The largest priority OpenCue holds (a job's priority is a 32-bit signed integer).
MAX_PRIORITY = 2**31 - 1
#: The longest timeout of a Cuebot call, in seconds (a day): gRPC fails a deadline some
#: 1e10 s away at once, which would read as a Cuebot that cannot be reached.
MAX_TIMEOUT_S = 86_400.0
#: gRPC status codes of a Cuebot that refuses a call for now: the call is made again.
TRANSIENT = frozenset({"UNAVAILABLE", "RESOURCE_EXHAUSTED"})
#: Attempts of a call Cuebot refuses for now, and the first wait between two (seconds; it doubles):
#: 4 attempts wait 0.5 + 1 + 2 s, beyond pycue's own retries.
ATTEMPTS, BACKOFF_S = 4, 0.5


class OpenCueError(FarmError):
    """Cuebot cannot be reached or refuses a call, or a show has more jobs than can be
    ranked at once; the message names the host, show or job."""


def new_priorities(current, lowest=LOWEST, highest=HIGHEST):
    """Priorities strictly decreasing along the rank order, within [lowest, highest], that keep
    as many of ``current`` (the present priorities, in rank order) as can be kept: OpenCue's
    choice of :func:`sched.farms.adapter.new_priorities` (new ones ``STEP`` apart at the ends)."""
    return adapter.new_priorities(current, lowest, highest)


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
    machines=None,
    policy="auto",
    config=None,
    default_due_h=24.0,
    bounds=(LOWEST, HIGHEST),
    timeout_s=10.0,
    hold=None,
    limits=False,
):
    """Rank ``show``'s pending jobs and set their priorities (none with ``dry_run``); a SyncReport.

    ``rules``: the mapping (:func:`sched.farms.mapping.read_mapping`), or Rules in order;
    ``machines``: rank()'s GPUs (None: the show's hosts up and open, :func:`_host_count`, else one).
    ``hold`` (a state file), ``limits``: :func:`_holds_and_limits`; a job this adapter paused is ranked.
    """
    mine = set(holds.read_state(hold)) if hold is not None else set()  # a bad file: before Cuebot
    lo, hi = bounds
    if not 0 <= lo < hi <= MAX_PRIORITY:  # a dry run says what the real one can set
        raise UsageError(f"bounds: expected 0 <= lowest < highest <= {MAX_PRIORITY}, got {lo}, {hi}")
    now = time.time() if now is None else float(now)
    # now, machines, config and the CSV's classes and kinds: refused before Cuebot is called
    check, rules = adapter.prepare(rules, config, now, machines)
    opencue = connect(hosts, timeout_s)
    report = SyncReport(scope=f"show {printable(show)}", dry_run=dry_run)
    try:
        jobs = _call(opencue, opencue.api.getJobs, show=[show], include_finished=False)
    except _errors(opencue) as exc:
        raise OpenCueError(f"show {show!r}: cannot list its jobs ({_first_line(exc)}){_after(exc)}") from None
    from opencue_proto import job_pb2

    def waits(d):  # nothing waiting: nothing to order (a bad count goes on, named); ``mine``: ranked
        free = not d.is_paused or d.id in mine
        return d.state == job_pb2.PENDING and free and d.job_stats.waiting_frames != 0

    # a job listed twice (a Cuebot repeating itself) is ranked once, the repeat a warning
    jobs = answers.unique(jobs, lambda j: j.data.id, f"show {printable(show)}: GetJobs", report.warnings)
    pending = sorted((j for j in jobs if waits(j.data)), key=lambda j: (j.name(), j.id()))
    if len(pending) > MAX_RANK_TASKS:  # at once: before a comment is read or a job checked
        raise OpenCueError(
            f"show {show!r}: {len(pending)} pending jobs with waiting frames, more than rank()'s "
            f"limit of {MAX_RANK_TASKS} (sched.limits.MAX_RANK_TASKS); no priority was set"
        )
    farm_jobs = [_farm_job(j) for j in pending]
    hosts_up = _host_count(opencue, show, report) if machines is None and farm_jobs else None
    ranked = adapter.rank_jobs(
        farm_jobs,
        rules,
        lambda fj: _comment(opencue, fj.handle),
        check,
        report,
        policy=policy,
        machines=machines,
        config=config,
        default_due_h=default_due_h,
        farm_count=hosts_up,
    )
    for job, before, after in adapter.changes(ranked, lo, hi):
        if not dry_run:
            try:
                _call(opencue, job.handle.setPriority, int(after))
            except _errors(opencue) as exc:
                if _gone(exc):
                    adapter.skip_gone(report, job, "Cuebot", _first_line(exc))
                    continue
                done = len(report.changes)
                raise OpenCueError(
                    f"job {printable(job.name)}: cannot set its priority ({_first_line(exc)}){_after(exc)}; "
                    f"{done} of the sync's changes were made before, a rerun makes the rest"
                ) from None
        report.changes.append((job.name, before, after))
        report.changed_ids.append(job.id)

    _holds_and_limits(opencue, report, ranked, (hold, limits), dry_run)
    return report


def _holds_and_limits(opencue, report, ranked, options, dry_run):
    """:func:`sched.farms.hold.sync_farm` with pycue's calls (pause, resume, max cores), each
    retried as every call is; one Cuebot refuses is an OpenCueError naming the job. ``options``:
    (the hold state file or None: a delayed rule's held jobs paused, released when no longer
    held; whether to set each job's max cores to its limit, one core a frame)."""

    def made(what, fn, job, *a):
        try:
            _call(opencue, fn, *a)
        except _errors(opencue) as exc:
            why = f"{_first_line(exc)}{_after(exc)}"
            raise OpenCueError(f"job {printable(job.name)}: cannot {what} ({why})") from None

    calls = (
        lambda j: made("pause it", j.handle.pause, j),
        lambda j: made("resume it", j.handle.resume, j),
        lambda j, cap: made("set its max cores", holds.opencue_limit, j, j, cap),
    )
    holds.sync_farm(report, ranked, options, calls, dry_run)


def _call(opencue, fn, *args, **kw):
    """``fn(*args, **kw)``, made again while Cuebot refuses it for now (:data:`TRANSIENT`), up to
    :data:`ATTEMPTS` times; the last refusal is raised with its ``attempts`` noted."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return fn(*args, **kw)
        except _errors(opencue) as exc:
            if not _transient(opencue, exc) or attempt == ATTEMPTS:
                exc.sched_attempts = attempt
                raise
            time.sleep(BACKOFF_S * 2 ** (attempt - 1))


def _code(exc):
    """The gRPC status code's name of a failed call (None if it has none)."""
    code = getattr(exc, "code", None)
    if callable(code):
        return code().name
    # pycue's api functions raise a code they do not map as CueException("... StatusCode.X : ...")
    found = re.search(r"\bStatusCode\.([A-Z_]+)\b", str(exc))
    return found.group(1) if found else None


def _transient(opencue, exc):
    return _code(exc) in TRANSIENT or isinstance(exc, opencue.exception.ConnectionException)


def _gone(exc):
    """Cuebot no longer holds the job (pycue's EntityNotFoundException, or gRPC's NOT_FOUND)."""
    return _code(exc) == "NOT_FOUND" or type(exc).__name__ == "EntityNotFoundException"


def _after(exc):
    attempts = getattr(exc, "sched_attempts", 1)
    return f" after {attempts} attempts" if attempts > 1 else ""


def _farm_job(job):
    d = job.data
    stats = d.job_stats
    return FarmJob(
        d.id, d.name, d.priority, stats.waiting_frames, stats.avg_frame_sec, d.start_time, job,
        running=max(0, stats.running_frames),
    )  # fmt: skip


def _host_count(opencue, show, report):
    """The show's hosts: those up and open (not locked) in the allocations it subscribes to
    (``Show.getSubscriptions``, ``getHosts(alloc=...)``); None when it has none, or when Cuebot
    does not answer (a warning: the plan is then on one GPU)."""
    from opencue_proto import host_pb2

    try:
        subs = _call(opencue, _call(opencue, opencue.api.findShow, show).getSubscriptions)
        allocs = sorted({s.data.allocation_name for s in subs})
        hosts = _call(opencue, opencue.api.getHosts, alloc=allocs) if allocs else []
    except _errors(opencue) as exc:
        report.warnings.append(
            f"show {printable(show)}: cannot count its hosts ({_first_line(exc)}); planned on one "
            "GPU (give --machines)"
        )
        return None
    up = sum(1 for h in hosts if h.data.state == host_pb2.UP and h.data.lock_state == host_pb2.OPEN)
    return up or None


def _comment(opencue, job):
    """The values of the job's latest ``sched`` comment (None without one)."""
    if not job.data.has_comment:
        return None
    try:
        comments = _call(opencue, job.getComments)
    except _errors(opencue) as exc:
        if _gone(exc):  # a MappingError skips the job, named; the others are ranked
            raise mapping.MappingError(
                f"job {printable(job.data.name)}: gone from Cuebot before its comments were read "
                f"({_first_line(exc)})"
            ) from None
        raise OpenCueError(
            f"job {printable(job.data.name)}: cannot read its comments ({_first_line(exc)}){_after(exc)}"
        ) from None
    mine = [c for c in comments if c.subject().strip().lower() == mapping.SUBJECT]
    if not mine:
        return None
    latest = max(mine, key=lambda c: c.data.timestamp)
    return mapping.comment_values(
        latest.message(), f"job {printable(job.data.name)}: comment {mapping.SUBJECT!r}"
    )


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
