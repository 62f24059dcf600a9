"""What every render-farm adapter shares: jobs to tasks, ``rank()``'s order, and the
priorities that must change (docs/opencue.md, docs/deadline.md).

An adapter (``sched.farms.opencue``, ``sched.farms.deadline``) keeps only its client calls:
it reads the farm's waiting jobs as :class:`FarmJob`\\ s, hands them to :func:`rank_jobs`
(each job's task checked by ``rank()``'s own reading, :class:`Check`, so that one bad job is
skipped, not the whole sync; the plan kept within ``rank()``'s reach, :func:`within_reach`),
asks :func:`changes` which priorities must change (:func:`new_priorities`: the most present
priorities kept), and sets those.

Priorities: a farm whose priorities are many (OpenCue's 32-bit integers) gives each ranked job
its own, strictly decreasing along the order; a farm of few levels (Deadline Cloud's 0 to 100)
may hold more jobs than levels, and then adjacent ranked jobs share a level, at most
``ceil(n / levels)`` to a level (``per_level``), the farm ordering those its own way.
"""

import math
from collections import Counter
from dataclasses import dataclass, field

from sched.errors import SchedError
from sched.farms import mapping
from sched.farms.mapping import printable
from sched.limits import MAX_FRAMES, MAX_MACHINES, MAX_RANK_CHUNKS, MAX_SECONDS
from sched.ranking.tasks import RankInputError, RankSetupError, read_queue
from sched.ranking.times import where

#: Step between new priorities at an open end of the order, when ends are stepped (OpenCue):
#: room for later jobs above the first kept job and below the last.
STEP = 10


class FarmError(SchedError):
    """A farm cannot be reached or refuses a call, or its jobs cannot be given priorities;
    the message names the farm, queue, show or job."""


@dataclass
class FarmJob:
    """A waiting job as an adapter reads it, farm aside."""

    id: str
    name: str
    #: its present priority
    priority: int
    #: frames (tasks) still waiting to run: the work a priority can still order
    waiting: int
    #: seconds a frame (task) of it took on average, measured by the farm (0: none finished)
    avg_s: float
    #: its submission time, POSIX seconds
    submitted_s: float
    #: the farm's own object for it (a pycue Job, Deadline Cloud's BatchGetJob item)
    handle: object = None
    #: frames (tasks) of it running now: chunks that hold hosts (workers) and its limit
    running: int = 0
    #: the most hosts (workers) it may hold at once (0: no limit)
    max_gpus: int = 0


@dataclass
class SyncReport:
    """What a sync found and did."""

    #: what was ranked, in words (``show film``, ``farm F queue Q``)
    scope: str
    policy: str = ""
    why: str = ""
    #: job names in rank order
    ranked: list = field(default_factory=list)
    #: job ids in rank order
    ranked_ids: list = field(default_factory=list)
    #: (job name, priority before, priority after), in rank order; in a sync that failed
    #: part-way, the changes made before the failure
    changes: list = field(default_factory=list)
    #: job ids of ``changes``
    changed_ids: list = field(default_factory=list)
    #: (job name, reason) of waiting jobs left as they are
    skipped: list = field(default_factory=list)
    #: ids of ranked jobs gone from the farm before their priority was set (also in ``skipped``)
    gone_ids: list = field(default_factory=list)
    dry_run: bool = False
    #: a delayed rule's {job id: planned start} of the jobs it holds now (sched.farms.hold)
    held: dict = field(default_factory=dict)
    #: under a farm verdict's cap, {job id: the most frames (tasks) of it at once} (rank()'s limits)
    limits: dict = field(default_factory=dict)
    #: what went wrong without failing the sync (a decision-log record not written), one line each
    warnings: list = field(default_factory=list)


class Check:
    """rank()'s checks, one task at a time: a sync skips the job rank() would refuse rather
    than let it refuse the whole call."""

    def __init__(self, config, now, machines):
        from sched.ranking.ranker import _settings  # what decide() reads: priority classes, model

        self.settings = _settings(config)
        # the arguments, checked once, as decide() will: a bad one is the call's error (None:
        # the farm's count, asked later, all free now: planned from now, as one GPU)
        q = read_queue([], now, 1 if machines is None else machines, self.settings)
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
                    why = reason(exc, key).removeprefix(f"field {key}: ")
                    at = rule.where or f"rule {rule.pattern!r}"
                    raise mapping.MappingError(f"{at}: column {key}: {why}") from None

    def _class(self, name):
        self.task({"id": "priority", "priority": name, "due": self.now, "estimate_s": 1.0})

    def _kind(self, kind):
        if self.settings.calibration:  # without one, each job that needs the model says so
            self.task({"id": "kind", "weight": 1.0, "due": self.now, "kind": kind, "frames": 1})


def reason(exc, task_id):
    """rank()'s message for the task ``task_id``, without the task's id (the caller names it)."""
    text, head = str(exc), f"{where(task_id, 0)}: "
    return text[len(head) :] if text.startswith(head) else text


def prepare(rules, config, now, machines):
    """(Check, Mapping): the call's own arguments and the mapping's priority classes and kinds,
    checked before the farm is called (a bad one is the call's error, at its line)."""
    check = Check(config, now, machines)
    rules = mapping.as_mapping(rules)
    check.rules(rules)
    return check, rules


def job_tasks(jobs, rules, own_values, check, default_due_h, report, unit="frame"):
    """(tasks, their jobs, their planned estimates) of the FarmJobs that rank() can read; each
    other job is skipped into ``report``, with the reason naming it (a number of the farm's
    answer out of bounds: :func:`sched.farms.answers.job_problem`). ``own_values(job)``: the
    job's own checked ``sched`` values (None without any; a MappingError skips the job)."""
    from sched.farms.answers import job_problem

    tasks, ranked_jobs, work = [], [], []
    for job in jobs:
        problem = job_problem(job, unit)  # the farm's own numbers, before anything uses them
        if problem is not None:
            report.skipped.append((job.name, problem))
            continue
        try:
            values = mapping.job_values(job.name, own_values(job), rules)
            task, how = mapping.job_task(
                job.id, job.waiting, job.avg_s, job.submitted_s, values, default_due_h, unit
            )
        except mapping.MappingError as exc:
            task, how = None, str(exc)
        if task is not None:
            try:
                estimate = check.task(task)
            except RankSetupError:  # the files rank() reads, not this job: the whole sync fails
                raise
            except RankInputError as exc:  # rank() would refuse the whole call for this job
                task, how = None, f"job {printable(job.name)}: {reason(exc, job.id)}"
        if task is None:
            report.skipped.append((job.name, how))
            continue
        tasks.append(task)
        ranked_jobs.append(job)
        work.append(estimate)
    cap = max(1, min(MAX_FRAMES, MAX_RANK_CHUNKS // max(1, len(tasks))))
    return [frames_task(t, e, j, cap) for t, e, j in zip(tasks, work, ranked_jobs)], ranked_jobs, work


def frames_task(task, estimate, job, cap=MAX_FRAMES):
    """The job of frames rank() plans for ``job`` (issue 59; docs/opencue.md): its waiting frames
    (tasks), each a chunk, of ``estimate`` seconds in all (the estimate its whole-task reading
    gave: the model's, from its features, included), its running ones and its host limit. A job
    of more than ``cap`` waiting frames is planned as ``cap`` chunks of the same work in all."""
    out = {k: v for k, v in task.items() if k in ("id", "weight", "priority", "due")}
    out.update(estimate_s=estimate, frames=min(job.waiting, cap), chunk_frames=1)
    if job.running > 0:
        out["running"] = job.running
    if job.max_gpus > 0:
        out["max_gpus"] = job.max_gpus
    return out


def fit_running(tasks, free_now, report):
    """The tasks with their running chunks cut to the ``free_now`` GPUs (task order): a farm may
    report more running frames than the hosts rank() is given (a host running several frames, a
    smaller --machines); rank() refuses that, so the excess is not planned, with a warning."""
    total = sum(t.get("running", 0) for t in tasks)
    if total <= free_now:
        return tasks
    report.warnings.append(
        f"{total} frames (tasks) running, more than the {free_now} GPUs planned (--machines, else the "
        f"farm's count): {free_now} of them hold GPUs in the plan"
    )
    left, out = free_now, []
    for t in tasks:
        r = min(t.get("running", 0), left)
        left -= r
        out.append({**{k: v for k, v in t.items() if k != "running"}, **({"running": r} if r else {})})
    return out


def within_reach(tasks, jobs, work, latest, report, whole="show"):
    """The tasks and jobs whose plan ends within MAX_SECONDS, as rank() requires: every job
    fits alone (checked), but their total may not; then the jobs of the largest estimates are
    skipped, noted in ``report``, until the rest fits (``whole``: the show, the queue)."""
    total = math.fsum(work)
    if latest + total <= MAX_SECONDS:
        return tasks, jobs
    drop = set()
    for k in sorted(range(len(tasks)), key=lambda k: -work[k]):
        drop.add(k)
        total -= work[k]
        report.skipped.append(
            (
                jobs[k].name,
                f"job {printable(jobs[k].name)}: estimate {work[k]:.6g} s: with the {whole}'s "
                f"other jobs the plan would end beyond {MAX_SECONDS:g} s (sched.limits.MAX_SECONDS); "
                "the largest estimates are left out",
            )
        )
        if latest + total <= MAX_SECONDS:
            break
    keep = [k for k in range(len(tasks)) if k not in drop]
    return [tasks[k] for k in keep], [jobs[k] for k in keep]


def rank_jobs(jobs, rules, own_values, check, report, *, policy, machines, config, default_due_h, **kw):
    """The FarmJobs ``rank()`` can read, in its order (``report`` gets the policy, the order and
    the skipped jobs); ``kw``: ``unit`` (of :func:`job_tasks`), ``whole`` (of :func:`within_reach`),
    ``farm_count`` (the farm's hosts or workers, None: not reported): the GPUs when ``machines`` is
    None; without it, the hosts the jobs' running frames hold, else one."""
    from sched.ranking.ranker import decide

    unit, whole = kw.get("unit", "frame"), kw.get("whole", "show")
    tasks, ranked_jobs, work = job_tasks(jobs, rules, own_values, check, default_due_h, report, unit)
    tasks, ranked_jobs = within_reach(tasks, ranked_jobs, work, check.latest, report, whole)
    if not tasks:
        return []
    by_id = {job.id: job for job in ranked_jobs}
    if machines is None:  # the farm's count, else the hosts its running frames hold, else one
        machines = kw.get("farm_count") or max(1, min(MAX_MACHINES, sum(t.get("running", 0) for t in tasks)))
    free = read_queue([], check.now, machines, check.settings).machine_free
    tasks = fit_running(tasks, int((free <= check.now).sum()), report)
    decision = decide(tasks, now=check.now, policy=policy, machines=machines, config=config)
    report.policy, report.why, report.held = decision.policy, decision.why, dict(decision.held or {})
    report.limits = dict(decision.limits or {})
    ranked = [by_id[i] for i in decision.ids]
    report.ranked = [j.name for j in ranked]
    report.ranked_ids = [j.id for j in ranked]
    return ranked


def skip_gone(report, job, place, why):
    """Note in ``report`` that ``job`` (ranked) left ``place`` (Cuebot, the queue) before its
    priority was set: skipped, named with ``why``. The others are still set: their priorities
    decrease along the order without it."""
    report.skipped.append(
        (
            job.name,
            f"job {printable(job.name)}: gone from {place} before its priority was set ({why}); "
            "the others are set",
        )
    )
    report.gone_ids.append(job.id)


def changes(ranked, lowest, highest, **kw):
    """(job, priority before, priority after) of each ranked job whose priority must change,
    in rank order; ``kw``: those of :func:`new_priorities`."""
    current = [j.priority for j in ranked]
    new = new_priorities(current, lowest, highest, **kw)
    return [(j, before, after) for j, before, after in zip(ranked, current, new) if before != after]


def new_priorities(current, lowest, highest, shared=False, spread=False, middle=None):
    """Priorities decreasing along the rank order, within [lowest, highest], that keep as many
    of ``current`` (the present priorities, in rank order) as can be kept.

    ``shared`` False: strictly decreasing (more jobs than priorities: a FarmError). ``shared``
    True: non-increasing, distinct while the jobs are no more than the levels, else adjacent
    jobs share a level, at most ``k = ceil(n / levels)`` to one: each level is seen as k slots,
    the jobs at one level taking its slots from the top in rank order, and the slots are given
    strictly decreasing priorities. ``spread``: new priorities are spread evenly between their
    kept neighbours and the range's ends (else ``STEP`` apart at the open ends). ``middle``:
    among the choices that keep as many, the one nearest an even spread with ``middle`` at the
    middle of the order (None: the highest kept priorities)."""
    n, levels = len(current), highest - lowest + 1
    k = max(1, -(-n // levels)) if shared else 1
    if n > levels * k:
        raise FarmError(f"{n} jobs cannot have distinct priorities between {lowest} and {highest}")
    if k == 1:
        slots, lo, hi = list(current), lowest, highest
    else:
        seen, slots = Counter(), []
        for p in current:  # the jobs beyond k at one level share its lowest slot: not all keepable
            slots.append(p * k + max(0, k - 1 - seen[p]))
            seen[p] += 1
        lo, hi = lowest * k, highest * k + k - 1
    mid = None if middle is None else middle * k + (k - 1) // 2
    out = _strictly_decreasing(slots, lo, hi, spread, _ideal(n, lo, hi, mid))
    return out if k == 1 else [v // k for v in out]


def _ideal(n, lo, hi, mid):
    """Where an even spread of ``n`` jobs over [lo, hi] with ``mid`` at the middle puts each
    (None without ``mid``)."""
    if mid is None:
        return None
    c = (n - 1) / 2
    return [
        mid + (hi + 1 - mid) * (c - r) / (c + 1) if r < c else mid - (mid - lo + 1) * (r - c) / (n - c)
        for r in range(n)
    ]


def _longest_chain(current, lowest, highest, cost):
    """(best, total, prev) of the longest chains of keepable jobs: ``best[j]`` jobs ending at
    job j (0: j cannot keep its priority), of least ``total`` cost among those, its kept
    predecessor ``prev[j]`` (-1: none), the first such among equals.

    Kept neighbours i < j need p[i] - p[j] >= j - i, that is a[i] >= a[j] with a = p + index;
    a kept job needs room for the jobs above it (highest - p >= index) and within the range.
    Each j takes the best (length, -total, -i) over the i before it with a[i] >= a[j]: a
    Fenwick tree over the a values in decreasing order holds those maxima, O(n log n), where
    comparing every pair took minutes for rank()'s 20,000 jobs."""
    n = len(current)
    best, total, prev = [0] * n, [0.0] * n, [-1] * n
    a = [p + j for j, p in enumerate(current)]
    rank = {v: r + 1 for r, v in enumerate(sorted(set(a), reverse=True))}  # 1: the largest a
    tree = [(0, 0.0, 1)] * (len(rank) + 1)  # (length, -total, -index); (0, ...): none
    for j, pj in enumerate(current):
        if not (lowest <= pj <= highest and highest - pj >= j):
            continue
        r, top = rank[a[j]], (0, 0.0, 1)
        while r > 0:  # the best over the a values >= a[j]
            top = max(top, tree[r])
            r -= r & -r
        length, neg_total, neg_i = top
        best[j], total[j], prev[j] = length + 1, -neg_total + cost[j], -neg_i if length else -1
        item, r = (best[j], -total[j], -j), rank[a[j]]
        while r < len(tree):
            if item > tree[r]:
                tree[r] = item
            r += r & -r
    return best, total, prev


def _strictly_decreasing(current, lowest, highest, spread, ideal):
    """:func:`new_priorities` with one job to a priority: the longest chain of keepable jobs
    (among the longest, the nearest ``ideal``), the others in the gaps."""
    n = len(current)
    cost = [0.0] * n if ideal is None else [abs(p - q) for p, q in zip(current, ideal)]
    best, total, prev = _longest_chain(current, lowest, highest, cost)
    ends = [j for j in range(n) if best[j] and current[j] - lowest >= n - 1 - j]
    kept = []
    if ends:
        j = max(ends, key=lambda e: (best[e], -total[e], -e))
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
        if not spread and (a == -1 or b == n):  # an open end: a small step, from the kept neighbour
            step = max(1, min(STEP, (upper - lower) // (m + 1)))
            vals = (
                [lower + step * (m - k) for k in range(m)]
                if a == -1
                else [upper - step * (k + 1) for k in range(m)]
            )
        else:  # between two kept jobs (or a kept job and the range's end): spread evenly
            vals = [lower + ((upper - lower) * (m - k)) // (m + 1) for k in range(m)]
        out[a + 1 : b] = vals
    return out
