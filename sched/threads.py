"""Thread limits of the compiled core (numba) and torch, one ``--threads`` option.

Left alone, numba starts one thread per core and torch its own pool; several
jobs side by side (the workflow's shards, training seeds) then oversubscribe
the cores, and PPO's small batched forwards get slower, not faster. The
commands that run numba or torch work take ``--threads`` (default 1) and the
workflow passes each rule's ``threads`` (a training job: ``train.threads``; its
rule's ``threads`` only reserves cores, see ``cores()`` in
``workflow/rules/common.smk``). Greedy PPO rollouts (benchmark, demo,
rank) use no torch at all: they run the compiled decision (``sched.learn.policy.kernel``).

Results never depend on the machine's CPU count (issue 45). torch gets exactly ``--threads``,
the config's count, even on fewer usable CPUs: MKL's reproducible mode (``sched.evidence.determinism``)
holds for a fixed thread count, and a split reduction's order follows the count. numba and the
Python-level workers get at most the usable CPUs: they run independent units (scenarios,
candidates) side by side, each computed whole by one thread and combined in a fixed order, so
their count changes the speed, never a bit.
"""

import os

from sched.errors import UsageError


def add_option(parser):
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads for the compiled core and torch (default: %(default)s; "
        "the workflow passes the rule's threads)",
    )


def usable_cpus():
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: The threads the last :func:`apply` allowed (1 before any): what Python-level workers use,
#: such as the planner's scenarios run side by side (``sched.evaluate.runs``).
_allowed = 1


def allowed():
    """The threads the command was given (``--threads``, at most the usable CPUs)."""
    return _allowed


def apply(threads, torch=False):
    """Give torch (when ``torch``) exactly ``threads`` threads, with its deterministic
    algorithms; numba and the workers ``threads`` at most the usable CPUs (``snakemake -j4`` on a
    2-core machine gives a job 4 threads it cannot use; they would only slow it)."""
    global _allowed
    if threads is None or threads < 1:
        raise UsageError(f"--threads: must be >= 1, got {threads}")
    import numba

    n = min(int(threads), usable_cpus())
    _allowed = n
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    if torch:
        import torch as _torch

        _torch.set_num_threads(int(threads))
        _torch.use_deterministic_algorithms(True)
