"""The calls ``sched deadline sync`` (:mod:`sched.farms.deadline`) makes on one queue, each
failure a :class:`~sched.farms.deadline_client.DeadlineError` naming its place.

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
* ``BatchUpdateJob``, 100 jobs a call, the priorities that must change (its per-job errors
  are read: a call answered 200 may still have refused some); else ``UpdateJob`` a job. If
  setting priorities fails part-way, the message says how many were set; a rerun converges.

The per-job calls (SearchTasks, and GetJob on a botocore without the batch operations) run
``calls`` at a time (8 by default) on the one client, which botocore allows; their answers are
used in the jobs' order, so the result does not depend on which comes back first.
"""

from sched.farms import adapter, answers
from sched.farms.deadline_client import (
    UNREADABLE,
    DeadlineError,
    failures,
    first_line,
    one_line,
    refusal,
    throttled,
)
from sched.farms.deadline_jobs import HIGHEST, LOWEST, farm_job, waits
from sched.farms.mapping import printable
from sched.limits import MAX_MACHINES, MAX_RANK_TASKS

#: Jobs a BatchGetJob or BatchUpdateJob call takes (the model's maximum of its list).
BATCH = 100
#: The batch operations, used when the installed botocore's model has them (1.40.0's has not):
#: else GetJob and UpdateJob, one job a call.
BATCHES = ("BatchGetJob", "BatchUpdateJob")
#: Jobs a ListJobs page and tasks a SearchTasks page hold, at most (the model's maximum).
PAGE = 100
#: Per-job calls in flight at once, by default (``--calls``), and at most.
CALLS, MAX_CALLS = 8, 64


class Queue:
    """The calls the sync makes on one queue, each failure a DeadlineError naming its place."""

    def __init__(self, client, farm_id, queue_id, calls=CALLS):
        self.client, self.farm, self.queue, self.calls = client, farm_id, queue_id, calls
        self.where = f"farm {printable(farm_id)} queue {printable(queue_id)}"
        self.batched = set(BATCHES) <= set(client.meta.service_model.operation_names)
        #: {job id: (succeeded tasks, mean seconds)}: read from the task-times file, and measured
        self.known, self.measured = {}, {}
        #: ids of the jobs this adapter suspended (its hold state file): ranked while suspended
        self.mine = set()

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
        except failures() as exc:
            raise DeadlineError(f"{what} ({first_line(exc)})", throttled=throttled(exc)) from None
        except UNREADABLE as exc:  # botocore's parser refused a field (a priority "abc"), or none is there
            raise DeadlineError(
                f"{what} (its answer cannot be read: {one_line(exc) or type(exc).__name__})"
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
        mine = self.mine
        waiting = answers.deadline_waiting(
            summaries, lambda s: waits(s, mine), (LOWEST, HIGHEST), self.where, report
        )
        waiting.sort(key=lambda s: (s["name"], s["jobId"]))
        if len(waiting) > MAX_RANK_TASKS:  # at once: before a job is read or checked
            raise DeadlineError(
                f"{self.where}: {len(waiting)} jobs with waiting tasks, more than rank()'s limit of "
                f"{MAX_RANK_TASKS} (sched.limits.MAX_RANK_TASKS); no priority was set"
            )
        details = self._details(waiting, report) if self.batched else self._each(waiting, report)
        waiting = [s for s in waiting if s["jobId"] in details]
        means = self._task_means(waiting, report)
        return [
            farm_job(s, details[s["jobId"]], means.get(s["jobId"], 0.0), s["jobId"] in mine) for s in waiting
        ]

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
                    why = refusal(failed[s["jobId"]])
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
                why = first_line(exc)
                raise DeadlineError(
                    f"{self.where}: cannot read its jobs ({why})", throttled=throttled(exc)
                ) from None
            return None, first_line(exc)
        except (botocore.exceptions.BotoCoreError, *UNREADABLE) as exc:
            raise DeadlineError(f"{self.where}: cannot read its jobs ({first_line(exc)})") from None

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
                except failures() + UNREADABLE as exc:
                    raise self._partly(report, planned, job.name, first_line(exc)) from None
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
            except failures() + UNREADABLE as exc:
                raise self._partly(report, planned, chunk[0][0].name, first_line(exc)) from None
            failed = {e.get("jobId"): e for e in got.get("errors") or [] if isinstance(e, dict)}
            for job, before, after in chunk:
                e = failed.get(job.id)
                if e is not None and e.get("code") == "ResourceNotFoundException":
                    # gone since the listing (finished, deleted); the whole call's 404 (the queue
                    # gone) still stops the sync
                    adapter.skip_gone(report, job, "the queue", refusal(e))
                    del failed[job.id]
                elif e is None:
                    report.changes.append((job.name, before, after))
                    report.changed_ids.append(job.id)
            if failed:  # named by the first of ours it refused (an id not asked for, as it is)
                job = next((j for j, _, _ in chunk if j.id in failed), None)
                e = failed[job.id] if job else next(iter(failed.values()))
                name = job.name if job else str(e.get("jobId") or "a job it did not name")
                raise self._partly(report, planned, name, refusal(e))

    def _partly(self, report, planned, name, why):
        return DeadlineError(
            f"{self.where}: job {printable(name)}: cannot set its priority ({why}); "
            f"{len(report.changes)} of the sync's {len(planned)} changes were made, a rerun makes the rest"
        )
