"""``sched deadline sync``: an AWS Deadline Cloud queue's waiting jobs, ordered by ``rank()``,
as job priorities (docs/deadline.md; optional extra ``deadline``: boto3).

Deadline Cloud gives a free worker to the job of the highest priority (0 to 100, 50 by
default) whose tasks it can run; among jobs of one priority the queue's scheduling
configuration decides (the earliest submitted first, by default). Priorities that decrease
along ``rank()``'s order make the queue start the jobs in that order.

The calls, all paginated or batched within the service model's limits:

* ``ListJobs`` (botocore's paginator, ``maxResults`` 100): every job of the queue with its
  lifecycle and task-run status, task counts by status, priority and submission time.
  ``SearchJobs`` would filter on the server, but pages by an item offset that stops at 10,000
  (the model's ``itemOffset`` maximum) where ``rank()`` takes 20,000 jobs, and it has no
  paginator: ``ListJobs`` reads a queue of any size, and the filter is the adapter's.
* ``BatchGetJob``, 100 jobs a call, for the waiting jobs only: their descriptions and
  parameters, which carry the jobs' own ``sched`` values (ListJobs returns neither); ``GetJob``,
  a job a call, with a botocore whose model has no batch operations (1.40.0's has none: BATCHES).
* ``SearchTasks``, one page of at most 100 tasks, for each waiting job with succeeded tasks
  whose count changed since the last sync (``task_times``: :mod:`sched.farms.task_times`, a
  file beside the decision log): the mean run time of the succeeded tasks among them, the
  job's measured seconds per task.

* ``ListQueueFleetAssociations`` and ``GetFleet``, without ``--machines``: the workers of the
  queue's active fleets, the GPUs ``rank()`` plans the jobs of frames on.

The per-job calls (SearchTasks, and GetJob on a botocore without the batch operations) run
``calls`` at a time (8 by default) on the one client, which botocore allows; their answers are
used in the jobs' order, so the result does not depend on which comes back first.
* ``BatchUpdateJob``, 100 jobs a call, the priorities that must change (its per-job errors
  are read: a call answered 200 may still have refused some); else ``UpdateJob`` a job.

A job is ranked when its lifecycle lets it run (created, or updated), its task-run status is
one that still runs tasks, nobody is suspending or cancelling it, and it has tasks waiting for
a worker (PENDING or READY): those are what a priority orders. Its estimate is its waiting
tasks times the measured mean, else the mapped ``task_s``, else the duration model's.

Its own ``sched`` values: parameters named ``sched_<key>`` (``sched_weight``, ``sched_due``,
...), and over them the description's lines ``sched: key=value key=value`` (editable after
submission, as an OpenCue comment is); then the mapping CSV, then the defaults
(:mod:`sched.farms.mapping`).

Priorities (:func:`sched.farms.adapter.new_priorities` with ``shared``, ``spread`` and
``middle``): non-increasing along the order, distinct while the ranked jobs are at most the
101 levels, spread over the range with the queue's default of 50 at the middle of the order;
beyond 101 jobs adjacent ones share a level. Only the jobs whose priority must change are set.

Errors: throttling is retried by botocore's standard retry mode (``AWS_MAX_ATTEMPTS``, else
3 attempts in all); a refused call (access denied, no such farm or queue), a network failure
or missing credentials is a :class:`DeadlineError`, one line naming the farm, queue or job. If
setting priorities fails part-way, the message says how many were set; a rerun converges.
"""

# size: the adapter's whole contract with the service in one place: which calls, in what order and
# batches, at what concurrency, and what each failure says
import uuid
from datetime import UTC, datetime

from sched.errors import MissingExtraError, SchedError, UsageError
from sched.farms import adapter, answers, mapping, task_times
from sched.farms.adapter import FarmError, FarmJob, SyncReport
from sched.farms.mapping import printable
from sched.limits import MAX_MACHINES, MAX_RANK_TASKS

#: Deadline Cloud's job priorities (the service model's JobPriority) and a new job's default.
LOWEST, HIGHEST, DEFAULT = 0, 100, 50
#: Jobs a BatchGetJob or BatchUpdateJob call takes (the model's maximum of its list).
BATCH = 100
#: The batch operations, used when the installed botocore's model has them (1.40.0's has not):
#: else GetJob and UpdateJob, one job a call.
BATCHES = ("BatchGetJob", "BatchUpdateJob")
#: Jobs a ListJobs page and tasks a SearchTasks page hold, at most (the model's maximum).
PAGE = 100
#: Per-job calls in flight at once, by default (``--calls``), and at most.
CALLS, MAX_CALLS = 8, 64
#: Task-run statuses of tasks waiting for a worker: what a priority orders.
WAITING = ("PENDING", "READY")
#: Task-run statuses of tasks that hold a worker: a job's running chunks.
HOLDING = ("ASSIGNED", "SCHEDULED", "STARTING", "RUNNING")
#: Task-run statuses of a job that still runs tasks (not SUSPENDED, NOT_COMPATIBLE, or done).
RUNNABLE = ("PENDING", "READY", "ASSIGNED", "SCHEDULED", "STARTING", "RUNNING", "INTERRUPTING")
#: Lifecycle statuses of a job whose tasks can run (not being created, uploading, failed, archived).
LIVE = ("CREATE_COMPLETE", "UPDATE_IN_PROGRESS", "UPDATE_FAILED", "UPDATE_SUCCEEDED")
#: Target task-run statuses that leave a job running (others: being suspended, cancelled, ...).
TARGETS = (None, "READY", "PENDING")
#: Prefix of a job parameter carrying a ``sched`` value (``sched_weight``).
PARAMETER = "sched_"
#: Start of a description line carrying ``sched`` values (``sched: weight=4 due_after_h=6``).
TAG = "sched:"


class DeadlineError(FarmError):
    """Deadline Cloud cannot be reached or refuses a call, or a queue has more jobs than can
    be ranked at once; the message names the farm, queue or job. ``throttled``: the call was
    still throttled after botocore's retries."""

    def __init__(self, message, throttled=False):
        super().__init__(message)
        self.throttled = throttled


def connect(region=None, endpoint_url=None):
    """A boto3 Deadline Cloud client: credentials from boto3's chain, botocore's standard retry
    mode (throttling and transient errors retried; ``AWS_MAX_ATTEMPTS``, else 3 attempts).

    With ``endpoint_url`` the service's host prefixes (``management.``) are not prepended to
    it: the URL names the endpoint as it is (a local or recorded one)."""
    try:
        import boto3
        import botocore.exceptions
        from botocore.config import Config
    except ImportError as exc:
        raise MissingExtraError.of("sched deadline", "deadline", exc) from exc
    config = Config(retries={"mode": "standard"}, inject_host_prefix=endpoint_url is None)
    try:
        # a session of its own: boto3's default one keeps the credentials it first found
        session = boto3.session.Session()
        return session.client("deadline", region_name=region, endpoint_url=endpoint_url, config=config)
    except (botocore.exceptions.BotoCoreError, ValueError) as exc:  # no region, a bad URL
        raise DeadlineError(f"Deadline Cloud client: {_first_line(exc)}") from None


def sync(farm_id, queue_id, rules=(), dry_run=False, now=None, client=None, **kw):
    """Rank the queue's waiting jobs and set their priorities (none with ``dry_run``); a SyncReport.

    ``rules``: the mapping (:func:`sched.farms.mapping.read_mapping` with unit ``task``), or
    Rules in order; ``client``: a boto3 Deadline Cloud client (None: :func:`connect` with
    ``region`` and ``endpoint_url``). ``kw``: ``machines``, ``policy``, ``config``,
    ``default_due_h`` (as ``sched.farms.opencue.sync``), ``bounds`` (lowest, highest), ``middle``
    (the level at the middle of the order), ``decision_log`` (a DecisionLog: one record of what
    was set, also when setting fails part-way), ``calls`` (per-job calls at once, :data:`CALLS`),
    ``task_times`` (the path of the measured task times kept between syncs, or None).
    """
    import time

    lo, hi = kw.get("bounds", (LOWEST, HIGHEST))
    middle = kw.get("middle", DEFAULT)
    if not (LOWEST <= lo < hi <= HIGHEST and lo <= middle <= hi):  # a dry run says what the real one can set
        raise UsageError(
            f"bounds: expected {LOWEST} <= lowest < highest <= {HIGHEST} with the middle between, "
            f"got {lo}, {hi}, middle {middle}"
        )
    now = time.time() if now is None else float(now)
    machines, config = kw.get("machines"), kw.get("config")
    check, rules = adapter.prepare(rules, config, now, machines)  # before the service is called
    calls = kw.get("calls", CALLS)
    if not (isinstance(calls, int) and 1 <= calls <= MAX_CALLS):
        raise UsageError(f"calls: expected 1 to {MAX_CALLS} per-job calls at once, got {calls!r}")
    client = client or connect(kw.get("region"), kw.get("endpoint_url"))
    queue = _Queue(client, farm_id, queue_id, calls)
    report = SyncReport(scope=f"farm {printable(farm_id)} queue {printable(queue_id)}", dry_run=dry_run)
    path, keep = kw.get("task_times"), False
    if path is not None:  # kept only over a task-times file (or where none is), and not by a dry run
        queue.known, warning, keep = task_times.load(path, farm_id, queue_id)
        report.warnings += [warning] if warning else []
    jobs = queue.waiting_jobs(report)
    if keep and not dry_run:  # a cache: one that cannot be written costs the next sync its calls, no more
        try:
            task_times.write(path, farm_id, queue_id, queue.measured)
        except SchedError as exc:
            report.warnings.append(f"{exc}; the task times measured are not kept")
    workers = queue.worker_count(report) if machines is None and jobs else None
    ranked = adapter.rank_jobs(
        jobs,
        rules,
        _own_values,
        check,
        report,
        policy=kw.get("policy", "auto"),
        machines=machines,
        config=config,
        default_due_h=kw.get("default_due_h", 24.0),
        unit="task",
        whole="queue",
        farm_count=workers,
    )
    planned = adapter.changes(ranked, lo, hi, shared=True, spread=True, middle=middle)
    log, error = kw.get("decision_log"), None
    try:
        if dry_run:
            for job, before, after in planned:
                report.changes.append((job.name, before, after))
                report.changed_ids.append(job.id)
        else:
            queue.set_priorities(planned, report)
    except DeadlineError as exc:
        error = str(exc)
        raise
    finally:
        if log is not None and not log.write(_record(report, farm_id, queue_id, planned, error)):
            report.warnings.append(f"decision log {log.path}: this sync's record could not be written")
    return report


class _Queue:
    """The calls the sync makes on one queue, each failure a DeadlineError naming its place."""

    def __init__(self, client, farm_id, queue_id, calls=CALLS):
        self.client, self.farm, self.queue, self.calls = client, farm_id, queue_id, calls
        self.where = f"farm {printable(farm_id)} queue {printable(queue_id)}"
        self.batched = set(BATCHES) <= set(client.meta.service_model.operation_names)
        #: {job id: (succeeded tasks, mean seconds)}: read from the task-times file, and measured
        self.known, self.measured = {}, {}

    def _map(self, fn, items):
        """``fn`` over ``items``, ``calls`` at a time on the one client, answers in ``items``' order.
        A call still throttled after botocore's retries is made again once the others are done,
        one at a time (the concurrency is what a throttling service pushes back on); then the
        first failure, in ``items``' order, is raised."""
        if self.calls == 1 or len(items) < 2:
            return [fn(x) for x in items]
        from concurrent.futures import ThreadPoolExecutor

        def attempt(x):
            try:
                return fn(x), None
            except DeadlineError as exc:
                return None, exc

        with ThreadPoolExecutor(max_workers=self.calls) as pool:
            done = list(pool.map(attempt, items))
        out = []
        for x, (value, exc) in zip(items, done):
            if exc is not None and not exc.throttled:
                raise exc
            out.append(fn(x) if exc is not None else value)
        return out

    def _call(self, what, fn, **params):
        try:
            return fn(**params)
        except _errors() as exc:
            raise DeadlineError(f"{what} ({_first_line(exc)})", throttled=_throttled(exc)) from None
        except UNREADABLE as exc:  # botocore's parser refused a field (a priority "abc"), or none is there
            raise DeadlineError(
                f"{what} (its answer cannot be read: {_line(exc) or type(exc).__name__})"
            ) from None

    def waiting_jobs(self, report):
        """The queue's waiting jobs as FarmJobs, by name; each that cannot be read is skipped
        into ``report``."""
        pages = self.client.get_paginator("list_jobs").paginate(
            farmId=self.farm, queueId=self.queue, PaginationConfig={"PageSize": PAGE}
        )
        summaries = self._call(
            f"{self.where}: cannot list its jobs", lambda: [j for p in pages for j in p["jobs"]]
        )
        waiting = answers.deadline_waiting(summaries, waits, (LOWEST, HIGHEST), self.where, report)
        waiting.sort(key=lambda s: (s["name"], s["jobId"]))
        if len(waiting) > MAX_RANK_TASKS:  # at once: before a job is read or checked
            raise DeadlineError(
                f"{self.where}: {len(waiting)} jobs with waiting tasks, more than rank()'s limit of "
                f"{MAX_RANK_TASKS} (sched.limits.MAX_RANK_TASKS); no priority was set"
            )
        details = self._details(waiting, report) if self.batched else self._each(waiting, report)
        waiting = [s for s in waiting if s["jobId"] in details]
        means = self._task_means(waiting, report)
        return [self._job(s, details[s["jobId"]], means.get(s["jobId"], 0.0)) for s in waiting]

    def _task_means(self, waiting, report):
        """{job id: mean seconds per succeeded task} of the jobs of ``waiting`` with succeeded
        tasks: from ``known`` where the count is the same, else measured (SearchTasks)."""
        done = [(s, int((s.get("taskRunStatusCounts") or {}).get("SUCCEEDED", 0))) for s in waiting]
        done = [(s, n) for s, n in done if n > 0]
        todo = [s for s, n in done if self.known.get(s["jobId"], (None,))[0] != n]
        fresh = {}
        for s, (mean, notes) in zip(todo, self._map(self._mean_task_s, todo)):
            fresh[s["jobId"]] = mean
            report.warnings += notes  # in the jobs' order, whichever answer came first
        # a job not measured now has its count in ``known``: its mean is the one kept
        self.measured = {
            s["jobId"]: (n, fresh[s["jobId"]] if s["jobId"] in fresh else self.known[s["jobId"]][1])
            for s, n in done
        }
        return {jid: mean for jid, (_n, mean) in self.measured.items()}

    def _details(self, waiting, report):
        """BatchGetJob's item of each job of ``waiting``, by id; one it refuses is skipped."""
        details = {}
        for k in range(0, len(waiting), BATCH):
            chunk = waiting[k : k + BATCH]
            ids = [{"farmId": self.farm, "queueId": self.queue, "jobId": s["jobId"]} for s in chunk]
            got = self._call(
                f"{self.where}: cannot read its jobs", self.client.batch_get_job, identifiers=ids
            )
            items = [j for j in got.get("jobs") or [] if isinstance(j, dict)]
            items = answers.unique(
                items, lambda j: j.get("jobId"), f"{self.where}: BatchGetJob", report.warnings
            )
            asked = {s["jobId"] for s in chunk}
            details.update({j["jobId"]: j for j in items if j.get("jobId") in asked})
            failed = {e.get("jobId"): e for e in got.get("errors") or [] if isinstance(e, dict)}
            for s in chunk:
                if s["jobId"] in failed:
                    why = _refusal(failed[s["jobId"]])
                elif s["jobId"] not in details:  # neither its item nor an error: named, not lost
                    why = "BatchGetJob answered neither the job nor an error for it"
                else:
                    continue
                report.skipped.append((s["name"], f"job {printable(s['name'])}: cannot read it ({why})"))
        return details

    def _each(self, waiting, report):
        """GetJob's answer for each job of ``waiting``, by id; one gone since it was listed is skipped."""
        details = {}
        for s, (item, gone) in zip(waiting, self._map(self._get_job, waiting)):
            if gone is None:
                details[s["jobId"]] = item
            else:
                report.skipped.append((s["name"], f"job {printable(s['name'])}: cannot read it ({gone})"))
        return details

    def _get_job(self, summary):
        """(GetJob's answer, None), or (None, why) for a job gone since it was listed."""
        import botocore.exceptions

        try:
            return self.client.get_job(farmId=self.farm, queueId=self.queue, jobId=summary["jobId"]), None
        except botocore.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                why = _first_line(exc)
                raise DeadlineError(
                    f"{self.where}: cannot read its jobs ({why})", throttled=_throttled(exc)
                ) from None
            return None, _first_line(exc)
        except (botocore.exceptions.BotoCoreError, *UNREADABLE) as exc:
            raise DeadlineError(f"{self.where}: cannot read its jobs ({_first_line(exc)})") from None

    def _job(self, summary, item, avg):
        counts = summary.get("taskRunStatusCounts") or {}
        waiting = sum(counts.get(k, 0) for k in WAITING)
        running = sum(max(0, counts.get(k, 0)) for k in HOLDING)
        limit = summary.get("maxWorkerCount")
        limit = limit if isinstance(limit, int) and 1 <= limit <= MAX_MACHINES else 0  # -1: none
        submitted = summary["createdAt"].timestamp()
        return FarmJob(
            summary["jobId"], summary["name"], summary["priority"], waiting, avg, submitted, item,
            running=running, max_gpus=limit,
        )  # fmt: skip

    def worker_count(self, report):
        """The workers of the queue's fleets (ListQueueFleetAssociations, then GetFleet's
        ``workerCount`` of each fleet associated ACTIVE); None without any, or when a call is
        refused (a warning: the plan is then on one GPU)."""
        try:
            fleets, token = [], None
            while True:
                page = self._call(
                    f"{self.where}: cannot list its fleets", self.client.list_queue_fleet_associations,
                    farmId=self.farm, queueId=self.queue, **({"nextToken": token} if token else {}),
                )  # fmt: skip
                fleets += [
                    a["fleetId"]
                    for a in page.get("queueFleetAssociations") or []
                    if a.get("status") == "ACTIVE"
                ]
                token = page.get("nextToken")
                if not token:
                    break
            counts = [
                self._call(f"{self.where}: cannot read fleet {printable(f)}", self.client.get_fleet,
                           farmId=self.farm, fleetId=f).get("workerCount")
                for f in dict.fromkeys(fleets)
            ]  # fmt: skip
        except DeadlineError as exc:
            report.warnings.append(f"{exc}; planned on one GPU (give --machines)")
            return None
        total = sum(c for c in counts if isinstance(c, int) and c > 0)
        return min(total, MAX_MACHINES) or None

    def _mean_task_s(self, summary):
        """(The mean run time of the succeeded tasks among the first page of the job's tasks (0:
        none), the warnings of that answer: a task listed twice, a task with unreadable times)."""
        got = self._call(
            f"{self.where}: job {printable(summary['name'])}: cannot read its tasks",
            self.client.search_tasks,
            farmId=self.farm,
            queueIds=[self.queue],
            jobId=summary["jobId"],
            itemOffset=0,
            pageSize=PAGE,
        )
        return answers.mean_task_s(got, f"{self.where}: job {printable(summary['name'])}: SearchTasks")

    def set_priorities(self, planned, report):
        """BatchUpdateJob for ``planned`` ((job, before, after)), 100 jobs a call (else UpdateJob,
        one a call); each change made goes into ``report`` before the next call, so that a
        failure says how many were."""
        if not self.batched:
            for job, before, after in planned:
                try:
                    self.client.update_job(
                        farmId=self.farm, queueId=self.queue, jobId=job.id, priority=int(after)
                    )
                except _errors() + UNREADABLE as exc:
                    raise self._partly(report, planned, job.name, _first_line(exc)) from None
                report.changes.append((job.name, before, after))
                report.changed_ids.append(job.id)
            return
        for k in range(0, len(planned), BATCH):
            chunk = planned[k : k + BATCH]
            items = [
                {"farmId": self.farm, "queueId": self.queue, "jobId": j.id, "priority": int(after)}
                for j, _, after in chunk
            ]
            try:
                got = self.client.batch_update_job(jobs=items)
            except _errors() + UNREADABLE as exc:
                raise self._partly(report, planned, chunk[0][0].name, _first_line(exc)) from None
            failed = {e.get("jobId"): e for e in got.get("errors") or [] if isinstance(e, dict)}
            for job, before, after in chunk:
                e = failed.get(job.id)
                if e is not None and e.get("code") == "ResourceNotFoundException":
                    # gone since the listing (finished, deleted); the whole call's 404 (the queue
                    # gone) still stops the sync
                    adapter.skip_gone(report, job, "the queue", _refusal(e))
                    del failed[job.id]
                elif e is None:
                    report.changes.append((job.name, before, after))
                    report.changed_ids.append(job.id)
            if failed:  # named by the first of ours it refused (an id not asked for, as it is)
                job = next((j for j, _, _ in chunk if j.id in failed), None)
                e = failed[job.id] if job else next(iter(failed.values()))
                name = job.name if job else str(e.get("jobId") or "a job it did not name")
                raise self._partly(report, planned, name, _refusal(e))

    def _partly(self, report, planned, name, why):
        return DeadlineError(
            f"{self.where}: job {printable(name)}: cannot set its priority ({why}); "
            f"{len(report.changes)} of the sync's {len(planned)} changes were made, a rerun makes the rest"
        )


def waits(summary):
    """Whether a ListJobs summary is of a job the sync ranks: live, running, not being stopped,
    with tasks waiting for a worker."""
    counts = summary.get("taskRunStatusCounts") or {}
    return (
        summary.get("lifecycleStatus") in LIVE
        and summary.get("taskRunStatus") in RUNNABLE
        and summary.get("targetTaskRunStatus") in TARGETS
        and sum(counts.get(k, 0) for k in WAITING) > 0
    )


def _own_values(job):
    """The job's own ``sched`` values: its ``sched_*`` parameters, its description's ``sched:``
    lines over them (None without any); a MappingError naming the job and the value."""
    item, where = job.handle, f"job {printable(job.name)}"
    found, parameters, description = {}, item.get("parameters") or {}, item.get("description") or ""
    if not (isinstance(parameters, dict) and isinstance(description, str)):
        raise mapping.MappingError(f"{where}: parameters, description: expected a map and a string")
    for key, value in parameters.items():
        if not str(key).lower().startswith(PARAMETER):
            continue
        kinds = ("string", "float", "int", "path")
        text = next((value[t] for t in kinds if t in value), None) if isinstance(value, dict) else None
        if not isinstance(text, str):
            raise mapping.MappingError(f"{where}: parameter {printable(key)}: expected a string or number")
        found[key[len(PARAMETER) :].lower()] = text
    params = mapping.check_values(found, f"{where}: parameters", features=True, unit="task")
    found = {}
    for n, raw in enumerate(description.splitlines(), start=1):
        line = raw.strip()
        if not line[: len(TAG)].lower() == TAG:
            continue
        for pair in line[len(TAG) :].replace(";", " ").split():
            key, sep, value = pair.partition("=")
            if not (sep and key and value):
                raise mapping.MappingError(
                    f"{where}: description line {n}: expected key=value, got {pair[:60]!r}"
                )
            found[key.lower()] = value
    described = mapping.check_values(found, f"{where}: description", features=True, unit="task")
    return mapping.overlay(params, described) or None


def _record(report, farm_id, queue_id, planned, error):
    """The decision-log record of a sync (the format of ``sched serve --decision-log``'s lines,
    with the sync's own fields): what it ranked, meant to set and set."""
    return {
        "decision_id": uuid.uuid4().hex,
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "command": "deadline sync",
        "farm_id": farm_id,
        "queue_id": queue_id,
        "order": report.ranked_ids,
        "policy": report.policy,
        "why": report.why,
        "dry_run": report.dry_run,
        "planned": [{"job_id": j.id, "name": j.name, "from": b, "to": a} for j, b, a in planned],
        "set": []
        if report.dry_run
        else [
            {"job_id": i, "name": n, "from": b, "to": a}
            for i, (n, b, a) in zip(report.changed_ids, report.changes)
        ],
        "skipped": [{"name": n, "reason": r} for n, r in report.skipped],
        "error": error,
    }


def _refusal(error):
    """A per-job error item of a batch call (BatchGetJob, BatchUpdateJob) in a few words."""
    return f"{printable(str(error.get('code')))}: {_line(error.get('message') or '')}"


#: What botocore's parser raises on an answer it cannot read (a priority "abc", a time "garbage"),
#: and what reading an answer without a field it must have raises.
UNREADABLE = (KeyError, TypeError, ValueError, RuntimeError, OverflowError)


def _errors():
    """What a boto3 call raises when the service or the way to it fails."""
    import botocore.exceptions

    return (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError)


#: The error codes of a throttled call (botocore's standard mode retries these first).
THROTTLES = ("ThrottlingException", "TooManyRequestsException", "Throttling", "RequestLimitExceeded")


def _throttled(exc):
    response = getattr(exc, "response", None)
    return isinstance(response, dict) and (response.get("Error") or {}).get("Code") in THROTTLES


def _first_line(exc):
    """A failed call in a few words: the service's error code and message, else botocore's."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and response.get("Error"):
        err = response["Error"]
        code, message = err.get("Code") or type(exc).__name__, _line(err.get("Message") or "")
        return printable(f"{code}: {message}" if message else code)
    return _line(str(exc)) or type(exc).__name__


def _line(text):
    lines = str(text).strip().splitlines()
    return printable(lines[0]) if lines else ""
