"""The project's error classes, in one place.

Every error the library raises on bad input is a ``SchedError``, a
``ValueError`` subclass whose message names the file, field or value at fault.
Library code raises; only the command line (``sched.cli``) turns these into a
one-line message and exit status 2.
"""

from sched.limits import SHOWN_CHARS


def shorten(value, limit=SHOWN_CHARS):
    """``repr(value)`` cut to ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SchedError(ValueError):
    """Bad input or settings: the message says which, in one line."""


class UsageError(SchedError):
    """Bad command-line arguments (or a library call's equivalent arguments)."""


class InternalError(SchedError):
    """A check of the library's own invariants failed: a bug, not bad input; the message says which."""


class MissingExtraError(SchedError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it.

    Also an ``ImportError``, so ``except ImportError`` (and ``pytest.importorskip``) catch it.
    """

    @classmethod
    def of(cls, command, extra, exc):
        """The error for ``command`` (``sched serve``) whose ``extra`` is missing, from the
        ImportError ``exc``: ``raise MissingExtraError.of("sched serve", "serve", exc) from exc``."""
        return cls(
            f"{command} needs the optional extra {extra} ({exc.name} is missing): "
            f"pip install 'render-queue-sched[{extra}]'"
        )
