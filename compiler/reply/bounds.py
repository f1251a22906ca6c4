"""Bounds a reply must meet before anything validates it, shared by both reply readers.

:func:`compiler.reply.parse.parse_reply` (pydantic) and the lock reader's JSON Schema
path (:meth:`compiler.artifacts.lockfile.LockedRequest.parse_reply` with
``contract=False``) both call :func:`check_text` on the reply text and
:func:`check_data` on the parsed value, so the same figures hold whichever path runs:

* :data:`MAX_REPLY_DEPTH` levels of nesting, counted from the text in one pass (pydantic's
  JSON parser stops at about 200, ``json.loads`` raises ``RecursionError`` near 1,000);
* :data:`MAX_ERROR_WORK`: the reply's values times the contract's *fan-out*
  (:func:`fan_out`), an upper bound on the errors validation can build;
* no ``NaN`` or ``Infinity`` (not JSON; reported at the value's path);
* under ``regex_engine="python-re"``, when the schema has any pattern
  (:func:`has_patterns`), no string or key longer than :data:`MAX_PYTHON_RE_CHARS`
  characters (a backtracking engine's time grows with it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from compiler.errors import ReplyValidationError
from compiler.schema.walk import walk_schema

__all__ = ["MAX_ERRORS_READ", "MAX_ERROR_WORK", "MAX_PYTHON_RE_CHARS", "MAX_REPLY_DEPTH",
           "check_data", "check_depth", "check_text", "fan_out", "has_patterns", "json_path"]

MAX_REPLY_DEPTH = 128
"""The deepest nesting of arrays and objects a reply may have (``[[1]]`` is 2 levels)."""

MAX_PYTHON_RE_CHARS = 10_000
"""The longest string (or object key), in characters, a reply may hold when the contract
runs its patterns with Python's ``re`` (``regex_engine="python-re"``): a pattern the
rule of :mod:`compiler.guards.regex_shape` admits may still take time quadratic in the
string's length (``^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$``: 3.4 s on 32,000 characters)."""

MAX_ERROR_WORK = 2_000_000
"""The most ``values x fan-out`` a reply may reach before it is validated: a union tries
each branch on a value and keeps every branch's errors, so ``list[Union[M0..M29]]`` (5
fields each) turns 20,000 items ``{}`` into 3,000,000 errors (14.7 s, 3.4 GB; pydantic
builds errors at about 1.3 microseconds each, so this bound is about 2.6 s)."""

MAX_ERRORS_READ = 100_000
"""The most errors read back from a failed validation to list the first ones (reading one
back costs about 7 microseconds, so about 0.7 s at this bound); past it only the count
is reported, at ``$``."""

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_NON_FINITE = re.compile(r"NaN|Infinity")
# a number that may read as infinity: an exponent of 3+ digits (1e999), or 309+ digits
_HUGE = re.compile(r"\d[eE][+-]?0*[1-9]\d{2}|\d{309}")
_BRACKET = re.compile(r"[\[\]{}]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CAP = 10**12


def check_text(text: str, *, python_re: bool, fan: int, values: int) -> bool:
    """Check the bounds that the text alone shows; return whether :func:`check_data` has
    anything to look for (a non-finite number: ``NaN``, ``Infinity``, or a number that
    overflows a float to infinity such as ``1e999``; or a long string under python-re).

    Raises:
        ReplyValidationError: at ``$``, nesting over :data:`MAX_REPLY_DEPTH`, or
            ``values x fan`` over :data:`MAX_ERROR_WORK`.
    """
    bare = check_depth(text)
    if fan > 1 and values * fan > MAX_ERROR_WORK:
        raise ReplyValidationError([("$", (
            f"Reply holds about {values:,} JSON values and the contract's unions let each "
            f"produce up to {fan:,} errors: more than the {MAX_ERROR_WORK:,} validated "
            "(compiler.reply.bounds.MAX_ERROR_WORK); it was not validated: ask for a "
            "shorter answer, or use a discriminated union (Field(discriminator=...))"))])
    long_string = python_re and any(
        m.end() - m.start() > MAX_PYTHON_RE_CHARS for m in _STRING.finditer(text))
    return long_string or _NON_FINITE.search(bare) is not None or (
        _HUGE.search(bare) is not None)


def check_depth(text: str) -> str:
    """Refuse a reply nested deeper than :data:`MAX_REPLY_DEPTH` (checked before the
    values limit, so a deep reply is named as such); return the text with its strings
    emptied.

    Raises:
        ReplyValidationError: at ``$``, ``Reply nests N levels deep ...``.
    """
    bare = _STRING.sub('""', text)
    depth = deepest = 0
    if bare.count("[") + bare.count("{") > MAX_REPLY_DEPTH:  # else it cannot nest deeper
        for mark in _BRACKET.finditer(bare):
            depth += 1 if mark.group() in "[{" else -1
            deepest = max(deepest, depth)
    if deepest > MAX_REPLY_DEPTH:
        raise ReplyValidationError([("$", (
            f"Reply nests {deepest:,} levels deep, more than the {MAX_REPLY_DEPTH} "
            "accepted (compiler.reply.bounds.MAX_REPLY_DEPTH); it was not validated: ask "
            "for a flatter answer"))])
    return bare


def check_data(data: Any, *, python_re: bool, where: str = "$") -> None:
    """Refuse non-finite numbers, and long strings or keys under python-re, by path.

    Raises:
        ReplyValidationError: one entry per value found (at most 50), at its path
            (``$.a[0]``); the value is never quoted.
    """
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [(where, data)]
    while stack and len(found) < 50:
        at, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            found.append((at, "NaN and Infinity are not JSON numbers; a finite number is "
                              "expected"))
        elif isinstance(item, str) and python_re and len(item) > MAX_PYTHON_RE_CHARS:
            found.append((at, _too_long(len(item), "String")))
        elif isinstance(item, dict):
            for key, value in item.items():
                if python_re and len(key) > MAX_PYTHON_RE_CHARS:
                    found.append((f"{at}[*]", _too_long(len(key), "Key")))
                    continue
                stack.append((json_path(at, key), value))
        elif isinstance(item, list):
            stack.extend((f"{at}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    if found:
        raise ReplyValidationError(found)


def _too_long(length: int, what: str) -> str:
    return (f"{what} is {length:,} characters, more than the {MAX_PYTHON_RE_CHARS:,} a "
            "python-re pattern is run on (compiler.reply.bounds.MAX_PYTHON_RE_CHARS); "
            "use pydantic's default regex engine, or raise the limit")


def json_path(path: str, key: str) -> str:
    """``path`` followed by one object key (``$.a``, ``$['b c']``)."""
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    return path + "['" + key.replace("\\", "\\\\").replace("'", "\\'") + "']"


_PATTERNED: dict[str, bool] = {}


def has_patterns(sha256: str, schema: Mapping[str, Any]) -> bool:
    """Whether the schema holds any ``pattern`` or ``patternProperties`` (once per hash):
    without one, no string is matched, so the python-re length bound does not apply."""
    found = _PATTERNED.get(sha256)
    if found is None:
        found = _PATTERNED[sha256] = any(
            "pattern" in node or "patternProperties" in node for _, node in walk_schema(schema))
    return found


_FANS: dict[str, int] = {}


def fan_out(sha256: str, schema: Mapping[str, Any]) -> int:
    """How many errors one reply value can produce at most under the contract's schema,
    computed once per schema hash. An object can miss each of its properties; a union
    (``anyOf``/``oneOf`` without a ``discriminator``) tries every branch and keeps every
    branch's errors, so its fan-out is the sum of its branches' (nested unions multiply);
    the largest over the schema. ``list[Union[M0..M29]]`` of 5 fields each: 150."""
    found = _FANS.get(sha256)
    if found is None:
        defs = {f"#/{k}/{n}": s for k in ("$defs", "definitions")
                for n, s in (schema.get(k) or {}).items() if isinstance(s, Mapping)}
        found = _FANS[sha256] = max(1, _fan(schema, defs, set(), 0))
    return found


def _fan(node: Any, defs: Mapping[str, Any], active: set[str], depth: int) -> int:
    if not isinstance(node, Mapping) or depth > 64:
        return 1
    best = 1
    ref = node.get("$ref")
    if isinstance(ref, str) and ref in defs and ref not in active:
        active.add(ref)
        best = _fan(defs[ref], defs, active, depth + 1)
        active.discard(ref)
    props = node.get("properties")
    if isinstance(props, Mapping):
        best = max(best, len(props), *(_fan(v, defs, active, depth + 1)
                                       for v in props.values()))
    for key in ("items", "additionalProperties", "contains"):
        best = max(best, _fan(node.get(key), defs, active, depth + 1))
    for key in ("prefixItems", "allOf"):
        for sub in node.get(key) or ():
            best = max(best, _fan(sub, defs, active, depth + 1))
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list) and branches:
            fans = [_fan(b, defs, active, depth + 1) for b in branches]
            tagged = node.get("discriminator") is not None  # one branch is tried
            best = max(best, max(fans) if tagged else min(_CAP, sum(fans)))
    return best
