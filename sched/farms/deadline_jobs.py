"""What an AWS Deadline Cloud job is to ``sched deadline sync`` (:mod:`sched.farms.deadline`):
its priority range, whether it is ranked, and its own ``sched`` values.

A job is ranked when its lifecycle lets it run (created, or updated), its task-run status is
one that still runs tasks, nobody is suspending or cancelling it, and it has tasks waiting for
a worker (PENDING or READY): those are what a priority orders. Its estimate is its waiting
tasks times the measured mean, else the mapped ``task_s``, else the duration model's.

Its own ``sched`` values: parameters named ``sched_<key>`` (``sched_weight``, ``sched_due``,
...), and over them the description's lines ``sched: key=value key=value`` (editable after
submission, as an OpenCue comment is); then the mapping CSV, then the defaults
(:mod:`sched.farms.mapping`).
"""

from sched.farms import mapping
from sched.farms.adapter import FarmJob
from sched.farms.mapping import printable
from sched.limits import MAX_MACHINES

#: Deadline Cloud's job priorities (the service model's JobPriority) and a new job's default.
LOWEST, HIGHEST, DEFAULT = 0, 100, 50
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


def waits(summary, mine=frozenset()):
    """Whether a ListJobs summary is of a job the sync ranks: live, running, not being stopped,
    with tasks waiting for a worker; or suspended by this adapter's hold (its id in ``mine``,
    the hold state file: ranked, so that it is released in time), its suspended tasks waiting."""
    counts = summary.get("taskRunStatusCounts") or {}
    held = summary.get("jobId") in mine
    status = RUNNABLE + ("SUSPENDED",) if held else RUNNABLE
    return (
        summary.get("lifecycleStatus") in LIVE
        and summary.get("taskRunStatus") in status
        and summary.get("targetTaskRunStatus") in (TARGETS + ("SUSPENDED",) if held else TARGETS)
        and sum(counts.get(k, 0) for k in _waiting(held)) > 0
    )


def _waiting(held):
    """The task-run statuses of a job's waiting tasks (with SUSPENDED: a job the adapter held)."""
    return WAITING + ("SUSPENDED",) if held else WAITING


def farm_job(summary, item, avg, held=False):
    """The FarmJob of a job: its ListJobs ``summary``, its BatchGetJob (GetJob) ``item``, the mean
    seconds ``avg`` of its succeeded tasks (0: none); ``held``: suspended by the adapter's hold."""
    counts = summary.get("taskRunStatusCounts") or {}
    waiting = sum(counts.get(k, 0) for k in _waiting(held))
    running = sum(max(0, counts.get(k, 0)) for k in HOLDING)
    limit = summary.get("maxWorkerCount")
    limit = limit if isinstance(limit, int) and 1 <= limit <= MAX_MACHINES else 0  # -1: none
    submitted = summary["createdAt"].timestamp()
    return FarmJob(
        summary["jobId"], summary["name"], summary["priority"], waiting, avg, submitted, item,
        running=running, max_gpus=limit,
    )  # fmt: skip


def own_values(job):
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
