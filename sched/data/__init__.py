"""Data: what a scenario is made of, and the two fits that calibrate it.

* ``scenario``: scenarios: generate them from a seed, read and validate them, write them;
* ``schedule``: a scenario's schedule table and its summary numbers;
* ``model``: the scenario model, everything a generated scenario depends on, read from the config once;
* ``distributions``: the task kinds' duration distributions, their means and samplers;
* ``machines``: the GPUs of a farm, how many and how fast (their parser: ``sched.formats``);
* ``objective``: tardiness and total weighted tardiness of a schedule, defined once;
* ``chunked``: jobs of frames: the optional chunk columns of a scenario and its per-chunk schedule;
* ``jobs``: generated jobs of frames (``scenario.chunks``): frames per job, frames x time per frame;
* ``frames_fit``: frames per job and time per frame fitted to the bench logs' or a history's frames.

Subpackages: ``bench`` (task durations calibrated from GPU bench logs, ``sched calibrate``)
and ``workload`` (the queue's own history: its workload fit, its replay and its held-out days).
"""
