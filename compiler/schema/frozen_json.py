"""Read-only JSON values and their canonical SHA-256.

:func:`freeze_json` turns nested dicts and lists into :class:`FrozenDict` and
:class:`FrozenList` (:func:`freeze_owned` does the same for a tree its caller drops,
reusing its containers), which refuse every mutation (``copy.deepcopy`` and
:func:`thaw_json` give plain, mutable containers back, one per place even where a
read-only child is shared); :func:`canonical_sha256`
hashes a JSON value independently of key order.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList", "canonical_sha256", "freeze_json", "freeze_owned",
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


def freeze_owned(value: Any) -> Any:
    """Return what :func:`freeze_json` returns, consuming ``value``: a JSON tree the caller
    built and drops (nothing else may hold any of its containers).

    Each plain ``dict`` and ``list`` has its children replaced by their frozen copies
    before it is copied itself, so every plain container is freed as soon as its frozen
    copy exists: the tree is never held twice, and the cyclic garbage collector, which
    runs in proportion to the containers alive, has about half as many to count
    (a projection of 10,000 fields: a third fewer collections, and no full one).

    Args:
        value: a JSON value built of plain dicts and lists; afterwards its containers
            hold frozen children, and it must not be used again.

    Returns:
        The same value built from :class:`FrozenDict` / :class:`FrozenList`.

    >>> freeze_owned({"a": [{"b": 1}]})
    {'a': [{'b': 1}]}
    """
    if type(value) is dict:
        plain_keys = True
        for key, item in value.items():  # values of existing keys only: no resize
            plain_keys = plain_keys and type(key) is str
            if type(item) not in _ATOMS:
                value[key] = freeze_owned(item)
        return FrozenDict(value if plain_keys else {str(k): v for k, v in value.items()})
    if type(value) is list:
        for index, item in enumerate(value):
            if type(item) not in _ATOMS:
                value[index] = freeze_owned(item)
        return FrozenList(value)
    return freeze_json(value)


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
