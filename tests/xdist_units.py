"""The test command's units of work across its pytest-xdist workers (``-n 2 --dist loadgroup``).

A unit of work runs whole in one worker, in collection order:
  - a test module, so that its module-scoped fixtures are set up once (xdist's ``loadscope``);
  - the readers of one background run (tests/background_runs.py), which conftest.py puts in the
    xdist group named after the run: they edit or write into that run's folders, so they run in
    one worker, one after the other, as they did in one process;
  - a reader of a run in :data:`tests.background_runs.SOLO` (group ``solo-<run>``), alone: it
    only reads what the run made, so the readers spread over the workers.

Units are handed out in collection order (conftest.py puts the readers last, in the order their
runs end), not xdist's largest-first: a reader's unit would otherwise go first and hold a worker
while its run works.
"""

from xdist.scheduler import LoadScopeScheduling


def scope_of(nodeid):
    """The unit of work of the test ``nodeid`` (with xdist's ``@group`` suffix when grouped)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):  # a group; an '@' inside a parameter is not one
        test, _, group = nodeid.rpartition("@")
        return test if group.startswith("solo-") else group
    return nodeid.split("::", 1)[0]


class ModulesAndRuns(LoadScopeScheduling):
    """xdist's scope scheduling with :func:`scope_of`'s units, in collection order."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        config.option.loadscopereorder = False  # collection order (read by LoadScopeScheduling.schedule)

    def _split_scope(self, nodeid):
        return scope_of(nodeid)
