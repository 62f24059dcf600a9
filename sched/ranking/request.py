"""What a call to ``rank()`` arrives as: the bytes of ``sched rank``'s input, or of a
``POST /v1/rank`` body (``sched serve``), read bounded and checked.

One home for the reading, so that both ways in refuse the same input with the same
one-line message: at most ``sched.limits.MAX_RANK_BYTES`` bytes of UTF-8 JSON
(``sched.formats.json_input``: nested at most ``MAX_JSON_DEPTH`` levels, without ``NaN`` or
``Infinity``, without a key given twice in one object), of at most
``sched.limits.MAX_RANK_JSON_VALUES`` values, counted before any is built: the memory a
call's parse takes is bounded by the limit, not by the size of what it ignores. Every
refusal is a :class:`~sched.ranking.tasks.RankInputError` naming the source (a file,
standard input, the request body).
"""

import math

from sched.errors import shorten
from sched.formats import json_input
from sched.limits import MAX_RANK_BYTES, MAX_RANK_JSON_VALUES, MAX_SEED_DIGITS
from sched.ranking.tasks import RankInputError
from sched.sim import rules

#: The fields of a ``POST /v1/rank`` body; ``tasks`` is required.
BODY_FIELDS = ("now", "machines", "policy", "budget_ms", "explain", "tasks")

#: The longest budget_ms a call may give (a day): longer is no budget for a decision.
MAX_BUDGET_MS = 86_400_000.0

#: Policies a service call may name: no file path (a client does not choose which file the server reads).
_NAMED = ("auto", "atc-tuned", "plan", *rules.RULES, *rules.WAIT_RULES)


def too_large(name):
    """The message for input over the byte limit."""
    return f"{name}: more than the limit of {MAX_RANK_BYTES} bytes (sched.limits.MAX_RANK_BYTES)"


def json_document(data, name):
    """The JSON document in ``data`` (bytes, at most ``MAX_RANK_BYTES + 1`` of them read),
    refused in one line naming ``name``."""
    if len(data) > MAX_RANK_BYTES:
        raise RankInputError(too_large(name))
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RankInputError(
                f"{name}: cannot read: not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None
    return json_input.parse(data, name, RankInputError, max_values=MAX_RANK_JSON_VALUES)


def task_list(data, name):
    """``sched rank``'s input: the JSON list of task objects in ``data``."""
    doc = json_document(data, name)
    if not isinstance(doc, list):
        raise RankInputError(f"{name}: expected a JSON list of task objects, got {type(doc).__name__}")
    return doc


def rank_body(data, name="request body"):
    """A ``POST /v1/rank`` body as the keyword arguments of ``decide()`` (docs/serve.md).

    ``tasks`` is the list ``sched rank`` reads; ``now``, ``machines``, ``policy``,
    ``budget_ms`` and ``explain`` mean what they mean there. Two things a command-line
    user may do and a client may not: name a policy file, or a machines CSV (the
    service reads no file a call names).
    """
    doc = json_document(data, name)
    if not isinstance(doc, dict):
        raise RankInputError(f"{name}: expected a JSON object with field tasks, got {type(doc).__name__}")
    unknown = sorted(set(doc) - set(BODY_FIELDS))
    if unknown:
        raise RankInputError(f"{name}: unknown field {unknown[0]!r}; expected {', '.join(BODY_FIELDS)}")
    if "tasks" not in doc:
        raise RankInputError(f"{name}: field tasks: missing (the JSON list of task objects)")
    tasks = doc["tasks"]
    if not isinstance(tasks, list):
        raise RankInputError(f"{name}: field tasks: expected a JSON list of task objects, got {_kind(tasks)}")
    policy = doc.get("policy")
    policy = "auto" if policy is None else policy
    if not isinstance(policy, str) or not (policy in _NAMED or is_seed_name(policy)):
        raise RankInputError(
            f"policy: unknown policy {shorten(policy)}; expected {', '.join(_NAMED)} or ppo-<seed> "
            f"(a seed of at most {MAX_SEED_DIGITS} digits; "
            f"the service runs no policy file a call names)"
        )
    explain = doc.get("explain", False)
    if not isinstance(explain, bool):
        raise RankInputError(f"{name}: field explain: expected true or false, got {explain!r:.40}")
    budget = doc.get("budget_ms")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))):
        raise RankInputError(f"budget_ms: expected a number of milliseconds, got {budget!r:.40}")
    if isinstance(budget, float) and not math.isfinite(budget):
        raise RankInputError(f"budget_ms: expected a finite number, got {budget!r}")
    if budget is not None and not 0 < budget <= MAX_BUDGET_MS:  # (an int beyond any float, too)
        raise RankInputError(
            f"budget_ms: expected a number of milliseconds from 0 to {MAX_BUDGET_MS:g}, got {budget!r:.40}"
        )
    return {
        "tasks": tasks,
        "now": doc.get("now"),
        "machines": _machines(doc.get("machines", 1)),
        "policy": policy,
        "budget_ms": budget,
        "explain": explain,
    }


def _machines(value):
    """``machines`` as ``rank()`` reads it, less a CSV path: a count, a spec or a list."""
    from sched.data.machines import is_spec

    if value is None:
        return 1
    if isinstance(value, str) and not is_spec(value.strip()):
        raise RankInputError(
            f"machines: expected a count of GPUs, a spec NxSPEED[,NxSPEED...] or a list, got {value!r:.60} "
            f"(the service reads no machines CSV)"
        )
    return value


def is_seed_name(policy):
    """Whether ``policy`` is ``ppo-<seed>``: at most MAX_SEED_DIGITS ASCII digits (a longer
    number names no trained policy, and is never turned into an integer or a path)."""
    digits = policy[4:]
    return (
        policy.startswith("ppo-")
        and 0 < len(digits) <= MAX_SEED_DIGITS
        and digits.isascii()
        and digits.isdecimal()
    )


def _kind(value):
    return "null" if value is None else type(value).__name__
