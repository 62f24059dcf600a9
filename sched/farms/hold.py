"""Holding a job and a job's parallelism limit on the farm (issue 60), behind options that are off
by default (docs/opencue.md, docs/deadline.md "Holding jobs and limits").

**Holds.** With a delayed rule (``sched.ranking.hold``), ``rank()``'s decision names the tasks it
holds now (``Decision.held``: id -> planned start). A sync with holds on makes the farm keep those
jobs from starting: OpenCue pauses the job (``Job.pause()``; ``Job.resume()`` releases it);
Deadline Cloud suspends its tasks (``UpdateJob`` with ``targetTaskRunStatus`` ``SUSPENDED``;
``READY`` releases them). The adapter releases only the jobs it held itself: the ids it held are
kept in a state file (``--hold FILE``, JSON ``{"held": [ids]}``), never a job paused or suspended
by someone else. A job held at one sync and not at the next (the delayed rule starts it, or it
left the queue) is released at the next.

**Limits.** When the decision followed a farm verdict shipping ``atc-tuned-cap``
(``sched.sim.farm_limits``), each job runs at most ``cap`` chunks at once; the adapter may set
it (``--limits``): OpenCue's job max cores (``Job.setMaxCores(cap x cores a frame books)``),
Deadline Cloud's ``maxWorkerCount``. Only jobs whose limit differs are updated.
"""

import json
import os

from sched import files
from sched.errors import SchedError


class HoldError(SchedError):
    """A hold state file that cannot be read or written; the message names it."""


def read_state(path):
    """The ids the adapter held at its last sync (an absent file: none)."""
    if path is None or not os.path.exists(path):
        return []
    from sched.formats import json_input

    data = json_input.parse(files.read_text(path, HoldError), path, HoldError)
    held = data.get("held") if isinstance(data, dict) else None
    if not isinstance(held, list) or not all(isinstance(i, str) for i in held):
        raise HoldError(f"{path}: field held: expected a list of job ids")
    return held


def write_state(path, held):
    files.write_text(path, json.dumps({"held": sorted(held)}, indent=1) + "\n")


def plan_holds(held_now, before, present):
    """(ids to hold, ids to release): hold what the decision holds and is not held yet; release
    what this adapter held before and the decision no longer holds (``present``: the ids on the
    farm now; a job gone is forgotten, not released)."""
    now, before = set(held_now), set(before)
    return sorted(now - before), sorted(i for i in before - now if i in present)


def sync_holds(state, held_now, jobs_by_id, hold, release, report, dry_run=False):
    """Apply the decision's holds: ``hold(job)``, ``release(job)`` (the farm's calls) on the
    FarmJobs ``jobs_by_id``; notes in ``report.warnings``; the state file ``state`` rewritten with
    what is held after it. Returns (held, released) ids."""
    before = read_state(state)
    to_hold, to_release = plan_holds(held_now, before, jobs_by_id)
    held = (set(before) & set(jobs_by_id)) - set(to_release)
    if not dry_run:
        for i in to_release:
            release(jobs_by_id[i])
            held.discard(i)
        for i in to_hold:
            if i in jobs_by_id:
                hold(jobs_by_id[i])
                held.add(i)
        write_state(state, held)
    report.warnings += [f"held by the delayed rule: {i}" for i in to_hold]
    report.warnings += [f"released: {i}" for i in to_release]
    return to_hold, to_release


# --------------------------------------------------------------------------- OpenCue


def opencue_hold(job):
    job.handle.pause()


def opencue_release(job):
    job.handle.resume()


def opencue_limit(job, cap, cores_per_frame=1):
    """Set the job's max cores to ``cap`` frames of ``cores_per_frame`` cores (0, or already so: no
    change)."""
    want = int(cap) * int(cores_per_frame)
    if cap > 0 and getattr(getattr(job.handle, "data", None), "max_cores", None) != want:
        job.handle.setMaxCores(want)


def sync_farm(report, ranked, options, calls, dry_run=False):
    """A sync's holds and limits on its ranked FarmJobs, each behind its option (``options``: (the
    hold state file or None, whether to set limits)); ``calls``: the farm's (hold, release,
    limit). Limits are set where they differ (:func:`opencue_limit`, :func:`deadline_calls`), and
    only under a farm verdict's cap (``report.limits``); a dry run calls nothing, writes nothing."""
    state, limits = options
    do_hold, do_release, limit = calls
    by_id = {j.id: j for j in ranked}
    if state is not None:
        sync_holds(state, report.held, by_id, do_hold, do_release, report, dry_run)
    if limits:
        for jid, cap in report.limits.items():
            if jid in by_id and not dry_run:
                limit(by_id[jid], cap)
        if report.limits:
            report.warnings.append(f"job limits (--limits): {len(report.limits)} jobs, each its own")


# --------------------------------------------------------------------------- Deadline Cloud


def deadline_calls(client, farm_id, queue_id):
    """(hold, release, limit(job, cap)) on a Deadline Cloud queue (boto3 ``deadline`` client)."""

    from sched.farms.deadline_client import DeadlineError, first_line

    def update(job, what, **change):
        import botocore.exceptions

        try:
            client.update_job(farmId=farm_id, queueId=queue_id, jobId=job.id, **change)
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as exc:
            raise DeadlineError(f"job {job.id}: cannot {what} ({first_line(exc)})") from None

    def status(job, value):
        update(job, f"set its tasks {value}", targetTaskRunStatus=value)

    def limit(job, cap):
        if cap > 0 and job.max_gpus != cap:
            update(job, "set its maxWorkerCount", maxWorkerCount=int(cap))

    return (lambda job: status(job, "SUSPENDED")), (lambda job: status(job, "READY")), limit
