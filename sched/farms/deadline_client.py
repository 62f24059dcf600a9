"""The boto3 client of ``sched deadline sync`` (:mod:`sched.farms.deadline`) and what its failures say.

:func:`connect` builds the client: credentials from boto3's chain, botocore's standard retry
mode (throttling and transient errors retried; ``AWS_MAX_ATTEMPTS``, else 3 attempts in all).
A refused call (access denied, no such farm or queue), a network failure, missing credentials
or an answer botocore cannot read is a :class:`DeadlineError`, one line naming the farm, queue
or job, with the service's error code and message (:func:`first_line`).
"""

from sched.errors import MissingExtraError
from sched.farms.adapter import FarmError
from sched.farms.mapping import printable


class DeadlineError(FarmError):
    """Deadline Cloud cannot be reached or refuses a call, or a queue has more jobs than can
    be ranked at once; the message names the farm, queue or job. ``throttled``: the call was
    still throttled after botocore's retries."""

    def __init__(self, message, throttled=False):
        super().__init__(message)
        self.throttled = throttled


def connect(region=None, endpoint_url=None):
    """A boto3 Deadline Cloud client: credentials from boto3's chain, botocore's standard retry
    mode (throttling and transient errors retried; ``AWS_MAX_ATTEMPTS``, else 3 attempts).

    With ``endpoint_url`` the service's host prefixes (``management.``) are not prepended to
    it: the URL names the endpoint as it is (a local or recorded one)."""
    try:
        import boto3
        import botocore.exceptions
        from botocore.config import Config
    except ImportError as exc:
        raise MissingExtraError.of("sched deadline", "deadline", exc) from exc
    config = Config(retries={"mode": "standard"}, inject_host_prefix=endpoint_url is None)
    try:
        # a session of its own: boto3's default one keeps the credentials it first found
        session = boto3.session.Session()
        return session.client("deadline", region_name=region, endpoint_url=endpoint_url, config=config)
    except (botocore.exceptions.BotoCoreError, ValueError) as exc:  # no region, a bad URL
        raise DeadlineError(f"Deadline Cloud client: {first_line(exc)}") from None


def refusal(error):
    """A per-job error item of a batch call (BatchGetJob, BatchUpdateJob) in a few words."""
    return f"{printable(str(error.get('code')))}: {one_line(error.get('message') or '')}"


#: What botocore's parser raises on an answer it cannot read (a priority "abc", a time "garbage"),
#: and what reading an answer without a field it must have raises.
UNREADABLE = (KeyError, TypeError, ValueError, RuntimeError, OverflowError)


def failures():
    """What a boto3 call raises when the service or the way to it fails."""
    import botocore.exceptions

    return (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError)


#: The error codes of a throttled call (botocore's standard mode retries these first).
THROTTLES = ("ThrottlingException", "TooManyRequestsException", "Throttling", "RequestLimitExceeded")


def throttled(exc):
    """Whether a failed call was throttled (one of :data:`THROTTLES`)."""
    response = getattr(exc, "response", None)
    return isinstance(response, dict) and (response.get("Error") or {}).get("Code") in THROTTLES


def first_line(exc):
    """A failed call in a few words: the service's error code and message, else botocore's."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and response.get("Error"):
        err = response["Error"]
        code, message = err.get("Code") or type(exc).__name__, one_line(err.get("Message") or "")
        return printable(f"{code}: {message}" if message else code)
    return one_line(str(exc)) or type(exc).__name__


def one_line(text):
    """The first line of ``text``, printable (empty for none)."""
    lines = str(text).strip().splitlines()
    return printable(lines[0]) if lines else ""
