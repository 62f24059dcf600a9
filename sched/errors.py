"""The project's error classes, in one place.

Every error the library raises on bad input is a ``SchedError``, a
``ValueError`` subclass whose message names the file, field or value at fault.
Library code raises; only the command line (``sched.cli``) turns these into a
one-line message and exit status 2.
"""


class SchedError(ValueError):
    """Bad input or settings: the message says which, in one line."""


class UsageError(SchedError):
    """Bad command-line arguments (or a library call's equivalent arguments)."""
