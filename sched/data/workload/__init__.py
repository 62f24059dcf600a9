"""The queue's own history: read, fitted into a workload, replayed, split in time, and the
generator checked against it (``sched calibrate-workload``, ``sched replay``,
``sched fidelity``, docs/workload.md).

* ``history_io``: the file side of reading a history (opening, gzip, hashing, lines);
* ``history``: a history's records, one per submitted task, streamed;
* ``split``: the history in time: its fitted, validation and held-out days;
* ``workload_fit``: a workload fitted to a history (``sched calibrate-workload``);
* ``workload_output``: what ``sched calibrate-workload`` hands back (figure, files, lines);
* ``shape_fit``: what a real queue shows beyond the weekly profile (durations by class, their
  tails, day intensities), fitted for ``scenario.workload_model``;
* ``workload``: reading a workload file and drawing arrivals (durations, deadlines) from it;
* ``replay``: the history cut into windows, each a scenario with its real tasks;
* ``fidelity``: the validation days against scenarios generated from the fit;
* ``fidelity_record``: ``fidelity.json`` read back, every field its readers use checked;
* ``fidelity_text``: the fidelity record's sentences (the verdict, what the generator misses).
"""
