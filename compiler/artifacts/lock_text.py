"""The text of a lock: exactly what ``json.dumps(document, indent=2, sort_keys=True,
ensure_ascii=False, allow_nan=False)`` gives, written several times faster.

With an ``indent`` the standard library encodes in pure Python through nested
generators, so every piece of text climbs back through one generator per level (40% of
``capc lock`` went there). :func:`lock_text` walks the document once, appending each
piece to one list, strings escaped by the standard library's C ``encode_basestring``.
Anything that writer does not handle the way ``json.dumps`` does (a key that is not a
string, a non-finite float, a type JSON has no form for, a cycle) makes
:func:`lock_text` hand the whole document to ``json.dumps``, so the result, or the
error, is always the standard library's own.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["lock_text"]

_INDENT = "  "


class _Unsupported(Exception):
    """A value this writer does not encode as ``json.dumps`` would."""


def lock_text(document: Any) -> str:
    """Return ``json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False,
    allow_nan=False)``, the same characters.

    Raises:
        ValueError: a non-finite float, or a circular reference (``json``'s own error).
        TypeError: a value JSON has no form for, or a key that cannot be one.
    """
    try:
        return _write(document)
    except (_Unsupported, RecursionError):
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False,
                          allow_nan=False)


def _write(document: Any) -> str:
    out: list[str] = []
    encode = json.encoder.encode_basestring
    append = out.append

    def value(item: Any, level: int) -> None:
        if isinstance(item, str):
            append(encode(item))
        elif item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif isinstance(item, int):
            append(int.__repr__(item))
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise _Unsupported
            append(float.__repr__(item))
        elif isinstance(item, dict):
            mapping(item, level)
        elif isinstance(item, list | tuple):
            sequence(item, level)
        else:
            raise _Unsupported

    def mapping(item: dict[Any, Any], level: int) -> None:
        if not item:
            append("{}")
            return
        if not all(isinstance(key, str) for key in item):
            raise _Unsupported
        inner = "\n" + _INDENT * (level + 1)
        separator = "{" + inner
        for key, child in sorted(item.items()):
            append(separator)
            append(encode(key))
            append(": ")
            value(child, level + 1)
            separator = "," + inner
        append("\n" + _INDENT * level + "}")

    def sequence(item: list[Any] | tuple[Any, ...], level: int) -> None:
        if not item:
            append("[]")
            return
        inner = "\n" + _INDENT * (level + 1)
        separator = "[" + inner
        for child in item:
            append(separator)
            value(child, level + 1)
            separator = "," + inner
        append("\n" + _INDENT * level + "]")

    value(document, 0)
    return "".join(out)
