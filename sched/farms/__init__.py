"""Render-farm adapters: a farm's pending work ordered by ``rank()``.

* ``adapter``: what the adapters share: jobs to tasks, ``rank()``'s order, the priorities
  that must change;
* ``answers``: what a farm's answers hold, checked once where they are read: a job listed
  twice counts once, a record with a bad number is skipped, named;
* ``mapping``: how a farm's job becomes a task (weight, due time, estimate): the mapping
  CSV and a job's own ``sched`` values;
* ``deadline``: ``sched deadline sync``, an AWS Deadline Cloud queue's waiting jobs as job
  priorities (optional extra ``deadline``: boto3; docs/deadline.md);
* ``deadline_queue``: the calls a sync makes on one queue, in what order, batches and concurrency;
* ``deadline_jobs``: what a Deadline job is to a sync: ranked or not, its own ``sched`` values;
* ``deadline_client``: the boto3 client and what its failures say;
* ``task_times``: the measured task times a sync keeps between runs (a job whose succeeded
  tasks did not change costs no call);
* ``hold``: a decision's holds and job limits on a farm (issue 60): held jobs paused or
  suspended, released when no longer held, behind options that are off by default;
* ``opencue``: ``sched opencue sync``, a show's pending OpenCue jobs as job priorities
  (optional extra ``opencue``, docs/opencue.md).
"""
