"""What ``sched serve`` tells a client when a call is not decided, and what it never tells one.

* :func:`refusal`: the status and one-line message of an exception met while deciding a call.
  A :class:`~sched.errors.SchedError` (the input's refusal, naming the field) and any other
  ``ValueError`` raised while checking the input are the client's: 400 with the message.
  Anything else is the service's own fault: 500 with a fixed message, and a log line with
  the traceback on the ``sched.serve`` logger (never a 500 without one).
* :func:`public`: a message with no absolute path of the server's: a path under the service's
  folders (the config's folder, the working folder) is shown relative to it, any other by
  its file name. Every ``why``, ``error`` and ``reason`` sent to a client goes through it;
  the decision log, the operator's, keeps the paths whole.
"""

import logging
import os
import re

from sched.errors import SchedError
from sched.ranking.tasks import RankSetupError

log = logging.getLogger("sched.serve")

#: An absolute path in a message: a "/" that does not follow a word (nor a URL's "scheme:"), up to a
#: space or a quote.
_ABSOLUTE = re.compile(r"(?<![\w.~/:-])/[^\s'\"`,;()\[\]{}<>]+")

#: The message of a 500 (the log has the rest).
INTERNAL = "internal error: the call could not be decided; the service's log has the details"


def roots(config):
    """The folders whose paths are shown relative to them: the config file's, the working folder."""
    out = []
    if config is not None and isinstance(config, (str, os.PathLike)):
        out.append(os.path.dirname(os.path.abspath(config)))
    out.append(os.getcwd())
    return sorted({os.path.normpath(r) for r in out if r and r != os.sep}, key=len, reverse=True)


def public(text, folders):
    """``text`` with each absolute path relative to the first of ``folders`` it lies in
    (longest first), else reduced to its file name."""
    for folder in folders:
        text = text.replace(folder + os.sep, "")
    return _ABSOLUTE.sub(lambda m: os.path.basename(m.group(0).rstrip(".:")) + _tail(m.group(0)), text)


def public_records(records, folders):
    """The explain rows with their ``why`` through :func:`public` (one text for many rows: once each)."""
    shown = {}
    for rec in records:
        why = rec.get("why")
        if isinstance(why, str):
            if why not in shown:
                shown[why] = public(why, folders)
            rec["why"] = shown[why]
    return records


def _tail(path):
    """The sentence's own punctuation after a path (a final "." or ":"), kept."""
    return path[len(path.rstrip(".:")) :]


def refusal(exc):
    """(status, one-line message) for ``exc``, met while deciding a call (docstring above)."""
    if isinstance(exc, SchedError) and not isinstance(exc, RankSetupError):
        return 400, one_line(exc)
    if isinstance(exc, ValueError) and not isinstance(exc, RankSetupError):
        # a check the library missed (it raised a plain ValueError, not a SchedError naming the
        # field): still the input's fault, said in one line, and logged for the operator to report
        text = one_line(exc)
        log.warning("sched serve: a call refused by an unchecked %s: %s", type(exc).__name__, text)
        return 400, f"request body: cannot be decided: {text}"
    log.error("sched serve: a call failed: %s: %s", type(exc).__name__, one_line(exc), exc_info=exc)
    return 500, INTERNAL


def one_line(exc):
    """The first line of ``exc``'s message (its type's name when it has none)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
