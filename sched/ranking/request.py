"""What a call to ``rank()`` arrives as: the bytes of ``sched rank``'s input, or of a
``POST /v1/rank`` body (``sched serve``), read bounded and checked.

One home for the reading, so that both ways in refuse the same input with the same
one-line message: at most ``sched.limits.MAX_RANK_BYTES`` bytes of UTF-8 JSON, nested
at most as deep as Python's JSON parser goes (about 1,000 levels), without ``NaN`` or
``Infinity`` (not JSON). Every refusal is a :class:`~sched.ranking.tasks.RankInputError`
naming the source (a file, standard input, the request body).
"""

import gc
import json
import math

from sched.limits import MAX_RANK_BYTES
from sched.ranking.tasks import RankInputError
from sched.sim import rules

#: The fields of a ``POST /v1/rank`` body; ``tasks`` is required.
BODY_FIELDS = ("now", "machines", "policy", "budget_ms", "explain", "tasks")

#: The longest budget_ms a call may give (a day): longer is no budget for a decision.
MAX_BUDGET_MS = 86_400_000.0

#: Policies a service call may name: no file path (a client does not choose which file the server reads).
_NAMED = ("auto", "atc-tuned", "plan", *rules.RULES)


def too_large(name):
    """The message for input over the byte limit."""
    return f"{name}: more than the limit of {MAX_RANK_BYTES} bytes (sched.limits.MAX_RANK_BYTES)"


def json_document(data, name):
    """The JSON document in ``data`` (bytes, at most ``MAX_RANK_BYTES + 1`` of them read),
    refused in one line naming ``name``."""
    if len(data) > MAX_RANK_BYTES:
        raise RankInputError(too_large(name))
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    except UnicodeDecodeError as exc:
        raise RankInputError(
            f"{name}: cannot read: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    # The cyclic garbage collector would rescan the growing document again and
    # again (a list of millions of small objects parses ten times slower).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise RankInputError(f"{name}: not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, integers too long to read
        raise RankInputError(f"{name}: not valid JSON: {str(exc).splitlines()[0][:200]}") from None
    finally:
        if enabled:
            gc.enable()


def _not_json(constant):
    raise RankInputError(f"{constant} is not JSON (numbers must be finite)")


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
    if not isinstance(policy, str) or not (policy in _NAMED or _is_seed_name(policy)):
        raise RankInputError(
            f"policy: unknown policy {policy!r:.60}; expected {', '.join(_NAMED)} or ppo-<seed> "
            f"(the service runs no policy file a call names)"
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


def _is_seed_name(policy):
    return policy.startswith("ppo-") and policy[4:].isascii() and policy[4:].isdecimal()


def _kind(value):
    return "null" if value is None else type(value).__name__
