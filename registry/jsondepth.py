"""How deep a JSON text nests, found without parsing it: a module with no third-party imports.

Used on fetched payloads (:func:`registry.sources.bounds.check_depth`, with
``CAPC_MAX_JSON_DEPTH``) and on metadata files (:func:`registry.metadata.parse.read_bounded`,
with :data:`MAX_JSON_DEPTH_CAP`), so that a deeply nested text is refused with a message,
never a ``RecursionError``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_JSON_DEPTH_CAP", "json_depth_over"]

MAX_JSON_DEPTH_CAP = 512
"""The highest ``CAPC_MAX_JSON_DEPTH`` allowed. Beyond pydantic-core's 200 levels a payload
is parsed by :func:`json.loads`, which recurses once per level: under CPython's default
recursion limit of 1,000 it parsed at most 991 levels called from the top of the stack
and 891 with 100 frames above it (measured on CPython 3.11.7), so 512 leaves room for the
caller's frames. A ``RecursionError`` is still caught as a rejected payload."""

#: A JSON string; an unterminated one runs to the end of the body, so a body of escaped
#: quotes is one match, not one retry per quote (that retry was quadratic).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST = re.compile(rb"\[\]|\{\}")


def json_depth_over(payload: bytes, limit: int) -> bool:
    """Whether the JSON text ``payload`` nests arrays and objects deeper than ``limit``.

    Strings are blanked first (brackets inside them do not count); then each pass
    removes the innermost empty pairs, one level per pass, in C. A body that is not
    JSON, or is truncated, may leave unmatched brackets: those never count as depth.

    Args:
        payload: the body (any bytes).
        limit: the deepest nesting allowed.

    Returns:
        ``True`` when some value is nested more than ``limit`` levels deep.
    """
    brackets = _STRING.sub(b"", payload).translate(None, _NOT_BRACKET)
    # A run of more than `limit` openers then of as many closers is that deep: found in
    # one linear scan (peeling 200,000 levels one pass at a time took seconds).
    opened = re.compile(rb"[\[{]{%d}" % (limit + 1)).search(brackets)
    if opened and re.compile(rb"[\]}]{%d}" % (limit + 1)).search(brackets, opened.end()):
        return True
    for _ in range(limit):
        if not brackets:
            return False
        brackets, removed = _INNERMOST.subn(b"", brackets)
        if not removed:
            return False
    return _INNERMOST.search(brackets) is not None
