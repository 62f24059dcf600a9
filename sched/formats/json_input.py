"""The one JSON parser of every document the project reads (files, request bodies, API answers).

``parse(text, source, error)`` is ``json.loads`` with the checks a careful reader owes its
input, each refused with ``error`` naming ``source`` in one line:

* a key given twice in one object (``json.loads`` silently keeps the last value);
* ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON), and numbers beyond a float (``1e999``);
* nesting deeper than ``MAX_JSON_DEPTH`` levels;
* more than ``max_values`` values (objects, arrays and scalars), judged before any of the
  document is built by an upper bound counted at C speed (its commas, ``[`` and ``{``,
  plus one), so the memory a parse takes is bounded by the limit, not by the input's size.
"""

import gc
import json
import math
import re

import numpy as np

from sched.limits import MAX_JSON_DEPTH, SHOWN_CHARS


def value_bound(text):
    """An upper bound on the values of the JSON document ``text`` (commas, ``[`` and ``{``, plus one)."""
    if isinstance(text, (bytes, bytearray)):
        return text.count(b",") + text.count(b"[") + text.count(b"{") + 1
    return text.count(",") + text.count("[") + text.count("{") + 1


#: A JSON string, its escapes included (an unterminated one is left: its brackets only over-count).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def _depth(text):
    """The deepest running count of opening brackets over closing ones in ``text``."""
    codes = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    step = np.isin(codes, _OPEN).astype(np.int64) - np.isin(codes, _CLOSE)
    return int(np.cumsum(step).max(initial=0))


def _depth_ok(text):
    """Whether ``text`` nests at most MAX_JSON_DEPTH brackets deep (brackets in strings skipped).

    Before the parser, whose recursion would otherwise decide the limit (about 1,000), at C
    speed: the bracket count over the whole text bounds the depth from above (brackets inside
    strings count too); only past the limit are the strings removed and the count taken again."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH or _depth(text) <= MAX_JSON_DEPTH:
        return True
    return _depth(_STRING.sub("", text)) <= MAX_JSON_DEPTH


_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


class _Refused(ValueError):
    """Raised from the parser's hooks; carries the message (a ValueError, as json's own errors)."""


def unique_object(pairs):
    """``object_pairs_hook`` refusing a key given twice in one object: for a decoder of one's own
    (a JSON Lines reader's, whose bad line is a record, not the file's end)."""
    return _pairs(pairs)


def _pairs(pairs):
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise _Refused(f"key {key[:SHOWN_CHARS]!r} appears twice in one object")
        seen.add(key)
    return dict(pairs)


def _constant(name):
    raise _Refused(f"{name} is not JSON (numbers must be finite)")


def _float(literal):
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise _Refused(f"{literal[:SHOWN_CHARS]} is beyond a 64-bit float")
    return value


def is_number(x, integer=False, finite=False, minimum=None):
    """Whether a parsed JSON value is a number (an integer with ``integer``; a bool is neither),
    finite with ``finite``, and at least ``minimum`` when given: the type check of a field a reader
    formats or computes with."""
    if isinstance(x, bool) or not isinstance(x, int if integer else (int, float)):
        return False
    return bool((not finite or math.isfinite(x)) and (minimum is None or x >= minimum))


def parse(text, source, error, max_values=None, nan=False):
    """The JSON document ``text`` (str or UTF-8 bytes), checked as the module says, or ``error``.

    ``nan``: read ``NaN`` and ``Infinity`` as floats, for the files this project writes with
    them in fields no decision reads (a verdict's mean difference when no policy was late at
    all, a tau of constant totals); the reader then checks every field it uses is finite."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise error(f"{source}: not UTF-8 text (byte {exc.start} cannot be decoded)") from None
    if max_values is not None and value_bound(text) > max_values:
        raise error(
            f"{source}: more than {max_values} JSON values (sched.limits; counted as commas and brackets)"
        )
    if not _depth_ok(text):
        raise error(f"{source}: not valid JSON: nested more than {MAX_JSON_DEPTH} levels deep")
    # The cyclic garbage collector would rescan the growing document again and
    # again (a list of millions of small objects parses ten times slower).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return json.loads(
            text, object_pairs_hook=_pairs, parse_constant=None if nan else _constant, parse_float=_float
        )
    except _Refused as exc:
        raise error(f"{source}: not valid JSON: {exc}") from None
    except RecursionError:
        raise error(f"{source}: not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, integers too long to read
        raise error(f"{source}: not valid JSON: {str(exc).splitlines()[0][:200]}") from None
    finally:
        if enabled:
            gc.enable()
