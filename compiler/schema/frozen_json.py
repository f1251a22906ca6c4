"""Read-only JSON values and their canonical SHA-256.

:func:`freeze_json` turns nested dicts and lists into :class:`FrozenDict` and
:class:`FrozenList`, which refuse every mutation (``copy.deepcopy`` and
:func:`thaw_json` give plain, mutable containers back, one per place even where a
read-only child is shared); :func:`canonical_sha256`
hashes a JSON value independently of key order, and :func:`indent_json` writes
``json.dumps(value, indent=2, ensure_ascii=False)``'s text faster.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList", "canonical_sha256", "freeze_json", "indent_json",
           "thaw_json"]


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError("this JSON value is read-only; use copy.deepcopy() for a mutable copy")


class FrozenDict(dict[str, Any]):
    """A JSON object that refuses mutation (still a ``dict`` for ``json`` and ``jsonschema``)."""

    __slots__ = ()
    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: _deep_copy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (thaw_json(self),))


class FrozenList(list[Any]):
    """A JSON array that refuses mutation (still a ``list`` for ``json`` and ``jsonschema``)."""

    __slots__ = ()
    __setitem__ = _refuse
    __delitem__ = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse
    append = _refuse
    clear = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    reverse = _refuse
    sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [_deep_copy(value, memo) for value in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (thaw_json(self),))


def _deep_copy(value: Any, memo: dict[int, Any]) -> Any:
    """A child's deep copy: a read-only child may be shared (a projection's one
    ``{"type": "null"}``), so each place gets a plain copy of its own, never the memo's."""
    if type(value) is FrozenDict or type(value) is FrozenList:
        return value.__deepcopy__(memo)
    return copy.deepcopy(value, memo)


def freeze_json(value: Any) -> Any:
    """Return a deep, read-only copy of a JSON value (new containers, never aliases).

    Args:
        value: a JSON-compatible value (dicts with string keys, lists, tuples, scalars).

    Returns:
        The same value built from :class:`FrozenDict` / :class:`FrozenList`.

    >>> frozen = freeze_json({"a": [1]})
    >>> frozen["a"].append(2)
    Traceback (most recent call last):
    TypeError: this JSON value is read-only; use copy.deepcopy() for a mutable copy
    """
    if isinstance(value, Mapping):
        return FrozenDict({str(key): item if type(item) in _ATOMS else freeze_json(item)
                           for key, item in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList([item if type(item) in _ATOMS else freeze_json(item) for item in value])
    return value


_ATOMS = frozenset({str, int, float, bool, type(None)})  # returned as they are


def thaw_json(value: Any) -> Any:
    """Return a deep, plain (mutable) copy of a JSON value.

    Args:
        value: a JSON value, frozen or not.

    Returns:
        The same value built from plain ``dict`` and ``list``.
    """
    if isinstance(value, Mapping):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw_json(item) for item in value]
    return value


def canonical_sha256(value: Any) -> str:
    """Return the hex SHA-256 of a JSON value in canonical form.

    The canonical form is ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` encoded as UTF-8, so key order and whitespace never matter.

    Args:
        value: a JSON value.

    Returns:
        64 lowercase hex digits.

    >>> canonical_sha256({"b": 1, "a": 2}) == canonical_sha256({"a": 2, "b": 1})
    True
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Unsupported(Exception):
    """A value :func:`indent_json` leaves to ``json.dumps``."""


def indent_json(value: Any) -> str:
    """Return ``json.dumps(value, indent=2, ensure_ascii=False)``, the same characters.

    One walk appends the pieces to a list (strings escaped by the encoder ``json`` uses)
    instead of the standard library's pure-Python indent encoder, whose pieces climb
    back through one generator per level; a read-only container met again at the same
    depth (a projection's shared ``anyOf`` lists) is written once and its text reused.
    A value it does not write as ``json.dumps`` would (a key that is not a string, a
    number that is not an exact ``int`` or a finite ``float``, any other type, a cycle,
    nesting too deep) sends the whole value to ``json.dumps``, so the text or the error
    is always the standard library's.

    >>> print(indent_json({"a": [1, None, {}], "b": "é"}))
    {
      "a": [
        1,
        null,
        {}
      ],
      "b": "é"
    }
    """
    out: list[str] = []
    try:
        _write_indented(value, out)
    except (_Unsupported, RecursionError):
        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(out)


def _write_indented(document: Any, out: list[str]) -> None:
    encode = json.encoder.encode_basestring
    append = out.append
    starts: dict[int, int] = {}  # id(container) * 1024 + depth -> first piece, last piece
    ends: dict[int, int] = {}
    texts: dict[int, str] = {}

    def write(item: Any, level: int) -> None:
        kind = type(item)
        if kind is str:
            append(encode(item))
        elif item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif kind is int:
            append(int.__repr__(item))
        elif kind is float:
            if item != item or item in (_INF, -_INF):
                raise _Unsupported
            append(float.__repr__(item))
        elif kind is FrozenDict or kind is FrozenList:
            key = id(item) * 1024 + level
            text = texts.get(key)
            if text is None and key in ends:
                text = texts[key] = "".join(out[starts[key]:ends[key]])
            if text is not None:
                append(text)
                return
            starts[key] = len(out)
            container(item, level, kind is FrozenDict)
            ends[key] = len(out)
        elif kind is dict or kind is list or kind is tuple:
            container(item, level, kind is dict)
        else:
            raise _Unsupported

    def container(item: Any, level: int, mapping: bool) -> None:
        if not item:
            append("{}" if mapping else "[]")
            return
        inner = "\n" + "  " * (level + 1)
        append("{" + inner if mapping else "[" + inner)
        separator = "," + inner
        first = True
        for entry in item.items() if mapping else item:
            if first:
                first = False
            else:
                append(separator)
            if mapping:
                name, entry = entry
                if type(name) is not str:
                    raise _Unsupported
                append(encode(name))
                append(": ")
            write(entry, level + 1)
        append("\n" + "  " * level + ("}" if mapping else "]"))

    write(document, 0)


_INF = float("inf")
