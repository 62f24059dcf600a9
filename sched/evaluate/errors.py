"""The error classes of the benchmark, its verdict (sched.verdict) and its report (sched.report).

Both are :class:`sched.errors.SchedError` (a ``ValueError``): the library
raises them, and only the command line turns them into exit status 2.
"""

from sched.errors import SchedError


class BenchmarkError(SchedError):
    """Bad benchmark input (seeds, policies, files); the message names what and where."""


class ReportError(SchedError):
    """A benchmark file is missing, malformed or inconsistent with the others."""
