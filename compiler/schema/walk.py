"""Walking a JSON Schema: which keywords hold subschemas, and every schema below a node.

The keywords are those of Draft 2020-12 and 2019-09 (``additionalItems``, an ``items``
array) and draft-07 (``definitions``, the schema entries of ``dependencies``). Used by
the projection, the dialect checks and reply validation alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

__all__ = ["escape_pointer", "schema_slot", "subschemas", "walk_schema"]

_ONE_SCHEMA = frozenset({
    "items", "additionalProperties", "not", "propertyNames", "contains", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems",
})
_SCHEMA_LISTS = frozenset({"prefixItems", "anyOf", "oneOf", "allOf"})
_SCHEMA_MAPS = frozenset({
    "properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
})


def schema_slot(key: str, value: Any) -> Literal["one", "list", "map"] | None:
    """Say how keyword ``key`` holds subschemas: one, a list, a name map, or none (data).

    Args:
        key: a JSON Schema keyword.
        value: its value (``items`` may be a schema or, in older drafts, a list).

    Returns:
        ``"one"``, ``"list"``, ``"map"``, or ``None`` for data keywords such as
        ``enum``, ``const``, ``default`` or ``required``.

    >>> schema_slot("anyOf", []), schema_slot("enum", [])
    ('list', None)
    """
    if key in _ONE_SCHEMA and isinstance(value, Mapping | bool):
        return "one"
    if (key in _SCHEMA_LISTS or key == "items") and isinstance(value, list):
        return "list"
    if key in _SCHEMA_MAPS and isinstance(value, Mapping):
        return "map"
    if key == "dependencies" and isinstance(value, Mapping) and all(
        isinstance(item, Mapping | bool) for item in value.values()
    ):
        return "map"  # draft-07; a list entry there is a dependentRequired list, not a schema
    return None


def subschemas(node: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yield ``(relative path, subschema)`` for every schema-valued keyword of ``node``.

    Only keywords that hold schemas are followed (see :func:`schema_slot`); the
    walk is one level deep, callers recurse.

    Args:
        node: a JSON Schema object.

    Yields:
        The path segments from ``node`` to the subschema, and the subschema
        (a mapping or a boolean).

    >>> [p for p, _ in subschemas({"properties": {"a": {}}, "enum": [{}]})]
    [('properties', 'a')]
    """
    for key, value in node.items():
        slot = schema_slot(key, value)
        if slot == "one":
            yield (key,), value
        elif slot == "list":
            for index, item in enumerate(value):
                yield (key, str(index)), item
        elif slot == "map":
            for name, item in value.items():
                yield (key, name), item
        elif key == "dependencies" and isinstance(value, Mapping):  # schemas beside lists
            for name, item in value.items():
                if isinstance(item, Mapping | bool):
                    yield (key, name), item


def walk_schema(node: Any, pointer: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Yield ``(JSON Pointer, node)`` for ``node`` and every schema object below it.

    Args:
        node: a schema (booleans yield nothing).
        pointer: the RFC 6901 pointer of ``node`` itself.

    Yields:
        Each schema object with its pointer, parents before children.

    >>> [p for p, _ in walk_schema({"items": {"properties": {"a/b": {}}}})]
    ['', '/items', '/items/properties/a~1b']
    """
    stack: list[tuple[str, Any]] = [(pointer, node)]  # no recursion: any depth is walked
    while stack:
        at, current = stack.pop()
        if not isinstance(current, Mapping):
            continue
        yield at, current
        below = [(at + "".join("/" + escape_pointer(p) for p in path), sub)
                 for path, sub in subschemas(current)]
        stack.extend(reversed(below))


def escape_pointer(segment: str) -> str:
    """Escape one RFC 6901 JSON Pointer segment (``~`` -> ``~0``, ``/`` -> ``~1``).

    >>> escape_pointer("a/b~c")
    'a~1b~0c'
    """
    return segment.replace("~", "~0").replace("/", "~1")
