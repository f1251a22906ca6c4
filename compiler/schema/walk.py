"""Walking a JSON Schema: which keywords hold subschemas, every schema below a node, and
where a local reference leads (:class:`LocalRefs`).

The keywords are those of Draft 2020-12 and 2019-09 (``additionalItems``, an ``items``
array) and draft-07 (``definitions``, the schema entries of ``dependencies``). Used by
the projection, the dialect checks and reply validation alike.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from compiler.errors import ProjectionError

__all__ = ["LocalRefs", "escape_pointer", "iter_schemas", "may_hold_true", "push_subschemas",
           "schema_slot", "subschemas", "walk_schema"]

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

    Linear in the size of the schema: no recursion (any depth is walked), two flat
    stacks, one pointer string per subschema and no other object per node.

    Args:
        node: a schema (booleans yield nothing).
        pointer: the RFC 6901 pointer of ``node`` itself.

    Yields:
        Each schema object with its pointer, parents before children, in the order
        :func:`subschemas` gives.

    >>> [p for p, _ in walk_schema({"items": {"properties": {"a/b": {}}}})]
    ['', '/items', '/items/properties/a~1b']
    """
    nodes: list[Any] = [node]
    pointers: list[str] = [pointer]
    while nodes:
        current = nodes.pop()
        at = pointers.pop()
        if isinstance(current, Mapping):
            yield at, current
            mark = len(nodes)
            _append_subschemas(current, nodes, pointers, at, _NO_SKIP)
            if len(nodes) - mark > 1:  # popped last first: reverse this node's children
                nodes[mark:] = nodes[mark:][::-1]
                pointers[mark:] = pointers[mark:][::-1]


def iter_schemas(node: Any, skip: frozenset[str] = frozenset()) -> Iterator[Mapping[str, Any]]:
    """Yield ``node`` and every schema object below it in :func:`walk_schema`'s order,
    without pointers (for checks that name no place).

    Args:
        node: a schema (booleans yield nothing).
        skip: keywords not descended into, at any level (``{"$defs", "definitions"}``:
            only the schemas that apply to the value itself).

    Yields:
        Each schema object, parents before children.

    >>> [sorted(n) for n in iter_schemas({"items": {"type": "integer"}, "$defs": {"A": {}}},
    ...                                  frozenset({"$defs"}))]
    [['$defs', 'items'], ['type']]
    """
    nodes: list[Any] = [node]
    while nodes:
        current = nodes.pop()
        if isinstance(current, Mapping):
            yield current
            mark = len(nodes)
            _append_subschemas(current, nodes, None, "", skip)
            if len(nodes) - mark > 1:
                nodes[mark:] = nodes[mark:][::-1]


def push_subschemas(node: Mapping[str, Any], stack: list[Any],
                    skip: frozenset[str] = frozenset()) -> None:
    """Append the subschemas of ``node`` to ``stack`` in :func:`subschemas` order, without
    their paths (a walk that pops them visits the last child first).

    Args:
        node: a JSON Schema object.
        stack: where the subschemas (mappings, booleans, and whatever else a schema list
            or map holds) are appended.
        skip: keywords whose subschemas are left out.

    >>> found = []
    >>> push_subschemas({"anyOf": [{"type": "null"}, True], "enum": [{}]}, found)
    >>> found
    [{'type': 'null'}, True]
    """
    _append_subschemas(node, stack, None, "", skip)


_ONE, _LIST, _MAP, _DEPENDENCIES = 1, 2, 3, 4
_SLOT = {
    **dict.fromkeys(_ONE_SCHEMA, _ONE), **dict.fromkeys(_SCHEMA_LISTS, _LIST),
    **dict.fromkeys(_SCHEMA_MAPS, _MAP), "dependencies": _DEPENDENCIES,
}
_NO_SKIP: frozenset[str] = frozenset()


def _append_subschemas(node: Mapping[str, Any], nodes: list[Any], pointers: list[str] | None,
                       at: str, skip: frozenset[str]) -> None:
    """Append the subschemas of ``node`` in :func:`subschemas` order (and, given
    ``pointers``, their pointers below ``at``)."""
    for key, value in node.items():
        slot = _SLOT.get(key)
        if slot is None or key in skip:
            continue
        if slot == _ONE and key == "items" and isinstance(value, list):
            slot = _LIST
        if slot == _ONE:
            if isinstance(value, Mapping | bool):
                nodes.append(value)
                if pointers is not None:
                    pointers.append(f"{at}/{key}")
        elif slot == _LIST:
            if isinstance(value, list):
                nodes.extend(value)
                if pointers is not None:
                    pointers.extend([f"{at}/{key}/{index}" for index in range(len(value))])
        elif isinstance(value, Mapping) and slot == _MAP:
            nodes.extend(value.values())
            if pointers is not None:
                prefix = f"{at}/{key}/"
                pointers.extend([prefix + escape_pointer(name) for name in value])
        elif isinstance(value, Mapping):  # dependencies: schemas beside dependentRequired lists
            for name, item in value.items():
                if isinstance(item, Mapping | bool):
                    nodes.append(item)
                    if pointers is not None:
                        pointers.append(f"{at}/{key}/{escape_pointer(name)}")


def may_hold_true(node: Mapping[str, Any]) -> bool:
    """Whether some subschema of ``node`` may be the ``true`` schema: ``False`` means
    certainly none is, so a caller looking for one need not call :func:`subschemas`.

    >>> may_hold_true({"properties": {"a": {}}}), may_hold_true({"items": True})
    (False, True)
    """
    for key, value in node.items():
        if value is True:
            return True
        if isinstance(value, list | Mapping) and (schema_slot(key, value) or key == "dependencies"):
            items = value.values() if isinstance(value, Mapping) else value
            if any(item is True for item in items):
                return True
    return False


def escape_pointer(segment: str) -> str:
    """Escape one RFC 6901 JSON Pointer segment (``~`` -> ``~0``, ``/`` -> ``~1``).

    >>> escape_pointer("a/b~c")
    'a~1b~0c'
    """
    return segment.replace("~", "~0").replace("/", "~1")


_BASE_URI = "https://capability-compiler.invalid/contract.json"  # never fetched


class LocalRefs:
    """Resolve local ``$ref`` values of one schema with ``referencing`` (memoised).

    Args:
        schema: the root schema the references point into.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        # the resolver is built on the first lookup, so a schema without $ref never
        # imports referencing (15-20 ms of a cold capc compile)
        self._schema = schema
        self._resolver: Any = None
        self._seen: dict[str, Any] = {}

    def lookup(self, ref: str) -> Any:
        """Return the schema ``ref`` points to.

        Args:
            ref: a ``$ref`` value such as ``"#/$defs/Item"``.

        Returns:
            The target schema (a mapping or a boolean).

        Raises:
            ProjectionError: ``ref`` is external (does not start with ``#``) or
                points nowhere.
        """
        if ref in self._seen:
            return self._seen[ref]
        if not ref.startswith("#"):
            raise ProjectionError(
                f"external $ref {ref!r} is not supported: a contract schema must be "
                "self-contained (local '#/...' references only)"
            )
        if self._resolver is None:
            from referencing import Registry  # imported with the first $ref looked up
            from referencing.jsonschema import DRAFT202012

            resource = DRAFT202012.create_resource(self._schema)
            registry: Registry[Any] = Registry().with_resource(_BASE_URI, resource)
            self._resolver = registry.resolver(base_uri=_BASE_URI)
        from referencing.exceptions import Unresolvable

        try:
            target = self._resolver.lookup(ref).contents
        except Unresolvable as exc:
            raise ProjectionError(f"$ref {ref!r} points nowhere in the schema") from exc
        self._seen[ref] = target
        return target
