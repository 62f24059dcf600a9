"""``sched deadline sync``: an AWS Deadline Cloud queue's waiting jobs, ordered by ``rank()``,
as job priorities (docs/deadline.md; optional extra ``deadline``: boto3).

Deadline Cloud gives a free worker to the job of the highest priority (0 to 100, 50 by
default) whose tasks it can run; among jobs of one priority the queue's scheduling
configuration decides (the earliest submitted first, by default). Priorities that decrease
along ``rank()``'s order make the queue start the jobs in that order.

A sync reads the queue (:mod:`sched.farms.deadline_queue`: which calls, in what order and
batches, at what concurrency), keeps the jobs it ranks with their own ``sched`` values
(:mod:`sched.farms.deadline_jobs`), ranks them (:func:`sched.farms.adapter.rank_jobs`), sets
the priorities that must change, and logs one record of it. The client and what its failures
say: :mod:`sched.farms.deadline_client`.

Priorities (:func:`sched.farms.adapter.new_priorities` with ``shared``, ``spread`` and
``middle``): non-increasing along the order, distinct while the ranked jobs are at most the
101 levels, spread over the range with the queue's default of 50 at the middle of the order;
beyond 101 jobs adjacent ones share a level. Only the jobs whose priority must change are set.
"""

import uuid
from datetime import UTC, datetime

from sched.errors import SchedError, UsageError
from sched.farms import adapter, deadline_client, task_times
from sched.farms.adapter import SyncReport
from sched.farms.deadline_client import DeadlineError
from sched.farms.deadline_jobs import DEFAULT, HIGHEST, LOWEST, own_values
from sched.farms.deadline_queue import CALLS, MAX_CALLS, Queue
from sched.farms.mapping import printable


def sync(farm_id, queue_id, rules=(), dry_run=False, now=None, client=None, **kw):
    """Rank the queue's waiting jobs and set their priorities (none with ``dry_run``); a SyncReport.

    ``rules``: the mapping (:func:`sched.farms.mapping.read_mapping` with unit ``task``), or
    Rules in order; ``client``: a boto3 Deadline Cloud client (None: :func:`deadline_client.connect`
    with ``region`` and ``endpoint_url``). ``kw``: ``machines``, ``policy``, ``config``,
    ``default_due_h`` (as ``sched.farms.opencue.sync``), ``bounds`` (lowest, highest), ``middle``
    (the level at the middle of the order), ``decision_log`` (a DecisionLog: one record of what
    was set, also when setting fails part-way), ``calls`` (per-job calls at once,
    :data:`sched.farms.deadline_queue.CALLS`),
    ``task_times`` (the path of the measured task times kept between syncs, or None), ``hold`` (the
    hold state file, :mod:`sched.farms.hold`; None: no holds: a delayed rule's held jobs suspended,
    released when no longer held; a job this adapter suspended is still ranked), ``limits`` (each
    job's ``maxWorkerCount`` set to a farm verdict's limit).
    """
    import time

    from sched.farms import hold as holds

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
    client = client or deadline_client.connect(kw.get("region"), kw.get("endpoint_url"))
    queue = Queue(client, farm_id, queue_id, calls)
    queue.mine = set(holds.read_state(kw.get("hold"))) if kw.get("hold") is not None else set()
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
        own_values,
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
        options = (kw.get("hold"), kw.get("limits", False))
        holds.sync_farm(report, ranked, options, holds.deadline_calls(client, farm_id, queue_id), dry_run)
    except DeadlineError as exc:
        error = str(exc)
        raise
    finally:
        if log is not None and not log.write(_record(report, farm_id, queue_id, planned, error)):
            report.warnings.append(f"decision log {log.path}: this sync's record could not be written")
    return report


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
