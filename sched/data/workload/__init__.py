"""The queue's own history: read, fitted into a workload, replayed, and split in time
(``sched calibrate-workload``, ``sched replay``, docs/workload.md).

* ``history_io``: the file side of reading a history (opening, gzip, hashing, lines);
* ``history``: a history's records, one per submitted task, streamed;
* ``split``: the history in time, its fitted span and its held-out last days;
* ``workload_fit``: a workload fitted to a history (``sched calibrate-workload``);
* ``workload_output``: what ``sched calibrate-workload`` hands back (figure, files, lines);
* ``workload``: reading a workload file and drawing arrivals from it;
* ``replay``: the history cut into windows, each a scenario with its real tasks.
"""
