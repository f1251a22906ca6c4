"""Checks of a JSON Schema against a dialect: references, recursion, size, shape.

:func:`recursive_refs` finds the references that recurse; :func:`measure` and
:func:`limit_violations` compare a schema's size with a dialect's limits;
:func:`untyped_schemas` lists subschemas that say nothing about their value; and
:func:`check_dialect` runs every check of a :class:`~compiler.schema.dialects.Dialect`. The
projection (:mod:`compiler.schema.projection`) runs :func:`check_dialect` on every result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.errors import ProjectionError
from compiler.metaschema.draft2020 import meta_schema_error
from compiler.schema.dialects import Dialect
from compiler.schema.frozen_json import FrozenDict, FrozenList
from compiler.schema.walk import (
    LocalRefs,
    escape_pointer,
    iter_schemas,
    may_hold_true,
    push_subschemas,
    subschemas,
    walk_schema,
)

__all__ = [
    "SchemaStats",
    "check_dialect",
    "is_object_schema",
    "limit_violations",
    "measure",
    "recursive_refs",
    "untyped_schemas",
    "verify_projected",
]

_DEFS = frozenset({"$defs", "definitions"})


# --------------------------------------------------------------------------- references


def _refs_used(node: Any) -> list[str]:
    """Return the ``$ref`` values in ``node``, not looking inside ``$defs``/``definitions``."""
    found: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if not isinstance(current, Mapping):
            continue
        ref = current.get("$ref")
        if isinstance(ref, str):
            found.append(ref)
        push_subschemas(current, stack, _DEFS)
    return found


def recursive_refs(schema: Mapping[str, Any], refs: LocalRefs | None = None) -> frozenset[str]:
    """Return the references reachable from the root that lie on a cycle (true recursion).

    A definition used twice (``x_axis: Axis``, ``y_axis: Axis``) is not a cycle.

    Args:
        schema: a root schema with local references.
        refs: a resolver for ``schema``, to share its memo; built if omitted.

    Returns:
        The ``$ref`` strings that can reach themselves.

    Raises:
        ProjectionError: a reference is external or points nowhere.

    >>> node = {"properties": {"kids": {"items": {"$ref": "#/$defs/N"}}}}
    >>> sorted(recursive_refs({"$defs": {"N": node}, "$ref": "#/$defs/N"}))
    ['#/$defs/N']
    """
    refs = refs or LocalRefs(schema)
    edges: dict[str, list[str]] = {}
    frontier = _refs_used(schema)
    while frontier:
        ref = frontier.pop()
        if ref not in edges:
            edges[ref] = _refs_used(refs.lookup(ref))
            frontier.extend(edges[ref])
    cyclic = set()
    for start in edges:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            ref = stack.pop()
            if ref == start:
                cyclic.add(start)
                break
            if ref not in seen:
                seen.add(ref)
                stack.extend(edges[ref])
    return frozenset(cyclic)


# --------------------------------------------------------------------------- size and checks


def is_object_schema(node: Mapping[str, Any]) -> bool:
    """Return whether ``node`` describes a JSON object (``type`` object or ``properties``)."""
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or (
        "properties" in node
    )


@dataclass(frozen=True)
class SchemaStats:
    """Sizes of a schema, in the units the dialect limits use.

    Attributes:
        properties: object properties in the whole schema (count).
        depth: levels of nested objects, following references once (root object = 1).
        enum_values: ``enum`` values across the schema (count).
        total_chars: characters of property names, definition names, enum and const values.
    """

    properties: int
    depth: int
    enum_values: int
    total_chars: int


def _value_chars(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def measure(schema: Mapping[str, Any], refs: LocalRefs | None = None) -> SchemaStats:
    """Measure ``schema`` for the dialect limits.

    Args:
        schema: a root schema.
        refs: a resolver for ``schema``; built if omitted.

    Returns:
        The counts in :class:`SchemaStats`.

    Raises:
        ProjectionError: a reference is external or points nowhere.
    """
    refs = refs or LocalRefs(schema)
    properties = enum_values = chars = 0
    for container in ("$defs", "definitions") if isinstance(schema, Mapping) else ():
        defs = schema.get(container)  # the root's definitions only
        if isinstance(defs, Mapping):
            chars += sum(len(name) for name in defs)
    for node in iter_schemas(schema):
        props = node.get("properties")
        if isinstance(props, Mapping):
            properties += len(props)
            chars += sum(len(name) for name in props)
        enum = node.get("enum")
        if isinstance(enum, list):
            enum_values += len(enum)
            chars += sum(_value_chars(v) for v in enum)
        if "const" in node:
            chars += _value_chars(node["const"])
    depth_of: dict[str, int] = {}

    def depth(node: Any, active: frozenset[str]) -> int:
        if not isinstance(node, Mapping):
            return 0
        best = 0
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in active:
            if ref not in depth_of:
                depth_of[ref] = depth(refs.lookup(ref), active | {ref})
            best = depth_of[ref]
        below: list[Any] = []
        push_subschemas(node, below, _DEFS)
        for sub in below:
            best = max(best, depth(sub, active))
        return best + (1 if is_object_schema(node) else 0)

    return SchemaStats(properties, depth(schema, frozenset()), enum_values, chars)


def limit_violations(
    schema: Mapping[str, Any], dialect: Dialect, refs: LocalRefs | None = None
) -> list[str]:
    """Return one sentence per size limit of ``dialect`` that ``schema`` exceeds.

    Args:
        schema: a root schema.
        dialect: the dialect whose limits apply.
        refs: a resolver for ``schema``; built if omitted.

    Returns:
        Sentences such as ``"the schema nests 12 object levels; openai-strict allows
        at most 10"``; empty when every limit holds.
    """
    stats = measure(schema, refs)
    checks: list[tuple[int, int | None, str]] = [
        (stats.properties, dialect.max_properties, "has {n} object properties"),
        (stats.depth, dialect.max_depth, "nests {n} object levels"),
        (stats.enum_values, dialect.max_enum_values, "has {n} enum values"),
        (stats.total_chars, dialect.max_total_chars,
         "has {n} characters of names, enum and const values"),
    ]
    return [
        f"the schema {what.format(n=n)}; {dialect.name} allows at most {limit}"
        for n, limit, what in checks
        if limit is not None and n > limit
    ]


_SAYS_WHAT = ("type", "enum", "const", "anyOf", "$ref")


def untyped_schemas(schema: Mapping[str, Any]) -> list[str]:
    """List the schemas in ``schema`` that accept any JSON value.

    A schema object naming none of ``type``, ``enum``, ``const``, ``anyOf`` or
    ``$ref`` (pydantic's ``Any`` gives ``{}``), the ``true`` schema (except as
    ``additionalProperties``, which the open-object rule covers), and an array
    without ``items`` (a tuple whose ``prefixItems`` were dropped) say nothing a
    provider could enforce.

    Args:
        schema: a root schema.

    Returns:
        One sentence per such schema, each naming its JSON Pointer.

    >>> schema = {"type": "object", "properties": {"a": {}, "b": {"type": "array"}}}
    >>> for line in untyped_schemas(schema):
    ...     print(line)
    /properties/a: accepts any JSON value (no type, enum, const, anyOf or $ref)
    /properties/b: an array without items accepts any item
    """
    found: list[str] = []
    for node in iter_schemas(schema):  # first without pointers: most schemas have none
        if _maybe_untyped(node):
            break
    else:
        return found
    for pointer, node in walk_schema(schema):
        at = pointer or "/"
        if not any(key in node for key in _SAYS_WHAT):
            found.append(f"{at}: accepts any JSON value (no type, enum, const, anyOf or $ref)")
        kind = node.get("type")
        if (kind == "array" or (isinstance(kind, list) and "array" in kind)) and (
            "items" not in node
        ):
            found.append(f"{at}: an array without items accepts any item")
        for path, sub in subschemas(node) if may_hold_true(node) else ():
            if sub is True and path != ("additionalProperties",):
                where = pointer + "".join("/" + escape_pointer(segment) for segment in path)
                found.append(f"{where}: the 'true' schema accepts any JSON value")
    return found


def _maybe_untyped(node: Mapping[str, Any]) -> bool:
    """Whether :func:`untyped_schemas` may find something at ``node`` (conservative)."""
    if "type" not in node and not ("enum" in node or "const" in node or "anyOf" in node
                                   or "$ref" in node):
        return True
    kind = node.get("type")
    return ((kind == "array" or (isinstance(kind, list) and "array" in kind))
            and "items" not in node) or may_hold_true(node)


def check_dialect(schema: Mapping[str, Any], dialect: Dialect) -> list[str]:
    """List every way ``schema`` breaks the rules of ``dialect``.

    Checked: root rules, closed objects, every property required, only allowed
    keywords, formats and ``minItems`` values, no ``oneOf`` where it becomes
    ``anyOf``, no ``$ref`` without reference support (nor keywords beside one where
    the dialect forbids them), no recursion without recursion support, schemas that
    accept any value where every schema must be typed, and the size limits.

    Args:
        schema: a (projected) root schema.
        dialect: the dialect to check against.

    Returns:
        One sentence per violation, each naming the JSON Pointer; empty = conforms.

    Raises:
        ProjectionError: a reference is external or points nowhere.

    >>> from compiler.schema.dialects import DIALECTS
    >>> check_dialect({"type": "object", "properties": {}}, DIALECTS["openai-strict"])
    ["/: object without 'additionalProperties: false'"]
    """
    problems = _rule_problems(schema, dialect)
    if dialect.typed_schemas:
        problems.extend(untyped_schemas(schema))
    refs = LocalRefs(schema)
    if not dialect.supports_recursion:
        cyclic = sorted(recursive_refs(schema, refs))
        problems.extend(f"{ref}: recursive reference" for ref in cyclic)
    problems.extend(limit_violations(schema, dialect, refs))
    return problems


def _rule_problems(schema: Mapping[str, Any], dialect: Dialect) -> list[str]:
    """The root rules and each node's rules (:func:`check_dialect` without the checks a
    projection reports as blockers: untyped schemas, recursion, size limits)."""
    problems: list[str] = []
    if dialect.root_must_be_object and schema.get("type") != "object":
        problems.append("/: the root must be 'type: object'")
    if not dialect.root_anyof_allowed and ("anyOf" in schema or "oneOf" in schema):
        problems.append("/: the root must not be a union (anyOf/oneOf)")
    for node in iter_schemas(schema):  # first without pointers: a conforming schema has none
        if next(_node_problems("", node, dialect), None) is not None:
            break
    else:
        return problems
    for pointer, node in walk_schema(schema):
        at = pointer or "/"
        problems.extend(_node_problems(at, node, dialect))
    return problems


def _node_problems(at: str, node: Mapping[str, Any], dialect: Dialect) -> Iterator[str]:
    if dialect.keywords is not None:
        for key in node:
            if key not in dialect.keywords:
                yield f"{at}: keyword {key!r} is not supported"
    if not dialect.supports_ref and "$ref" in node:
        yield f"{at}: '$ref' is not supported"
    if not dialect.ref_siblings and "$ref" in node and len(node) > 1:
        others = ", ".join(sorted(key for key in node if key != "$ref"))
        yield f"{at}: keywords beside '$ref' are not supported ({others})"
    if dialect.oneof_as_anyof and "oneOf" in node:
        yield f"{at}: 'oneOf' must be 'anyOf'"
    fmt = node.get("format")
    if fmt is not None and dialect.string_formats is not None and fmt not in dialect.string_formats:
        yield f"{at}: format {fmt!r} is not supported"
    min_items = node.get("minItems")
    if min_items is not None and dialect.min_items_values is not None and (
        min_items not in dialect.min_items_values
    ):
        yield f"{at}: minItems {min_items} is not supported"
    if not is_object_schema(node):
        return
    if dialect.closed_objects and node.get("additionalProperties") is not False:
        yield f"{at}: object without 'additionalProperties: false'"
    props = node.get("properties")
    if dialect.all_required and isinstance(props, Mapping):
        listed = node.get("required", ())
        required = set(listed) if isinstance(listed, list | tuple) else listed  # O(1) lookups
        missing = [name for name in props if name not in required]
        if missing:
            yield f"{at}: properties not required: {', '.join(missing)}"


def verify_projected(schema: Mapping[str, Any], dialect: Dialect, blockers: list[str]) -> None:
    """Check a projected schema against the JSON Schema meta-schema (draft 2020-12) and,
    when nothing blocks enforcement, the dialect's own rules.

    The meta-schema check is :func:`compiler.metaschema.draft2020.meta_schema_error`
    (``FrozenDict`` and ``FrozenList`` read as ``dict`` and ``list``).
    Of :func:`check_dialect`, only the root and per-node rules run: its other checks
    (untyped schemas, recursion, size limits) are blockers themselves, found on this
    same schema by the projector, so with no blocker they are known to pass.

    Args:
        schema: the projected schema.
        dialect: the dialect it was projected into.
        blockers: the projection's blockers (including every untyped schema, recursive
            reference and size limit of ``schema`` where ``dialect`` forbids them); with
            any, breaking the dialect's rules is expected (the schema is then for display
            only) and they are not checked.

    Raises:
        ProjectionError: the schema is not valid JSON Schema, or breaks the dialect's
            rules although nothing blocks enforcement (a bug in a rewrite step).
    """
    error = meta_schema_error(schema, (FrozenDict, FrozenList))
    if error is not None:
        raise ProjectionError(
            f"internal error: the {dialect.name} projection is not valid JSON Schema {error}")
    problems = [] if blockers else _rule_problems(schema, dialect)
    if problems:
        raise ProjectionError(
            f"internal error: the {dialect.name} projection breaks the dialect's rules: "
            + "; ".join(problems)
        )
