"""``rank()`` of a call holding jobs of frames (issue 59): a render farm's jobs, cut into chunks.

* ``frames``: a task's fields of a job of frames (frames, frame_s, running, max_gpus, ...);
* ``plan``: the order of such a call, the rule's forward plan on the chunked model;
* ``learned``: the learned farm policy a farm verdict ships: its record checked, its greedy plan.
"""
