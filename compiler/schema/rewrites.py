"""Rewrites of one schema node that the projector applies, with no state of their own.

:mod:`compiler.schema.projector` calls them while it walks a contract's schema: laying the
siblings of a ``$ref`` over its target when the reference is inlined, telling a bare
union apart from a node with constraints of its own, and making an optional property
nullable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from compiler.errors import ProjectionError
from compiler.schema.dialects import Dialect
from compiler.schema.frozen_json import FrozenDict, FrozenList

__all__ = [
    "ANNOTATIONS", "NULL_SCHEMA", "ONLY_REMOVED", "accepts_null", "is_pure_union",
    "merge_ref_siblings", "nullable",
]

ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment",
})
"""JSON Schema keywords that annotate a schema and constrain nothing."""

ONLY_REMOVED = ANNOTATIONS | {"$schema", "$vocabulary", "$defs", "definitions"}
"""Keywords removed without a note in the description: annotations, and keywords that
say nothing about the value itself (the meta-schema, a container of definitions)."""


def merge_ref_siblings(node: Mapping[str, Any], target: Any, ptr: str) -> Any:
    """Return ``target`` with the sibling keys of ``node`` (minus ``$ref``) laid over it."""
    siblings = {key: value for key, value in node.items() if key != "$ref"}
    if target is True or (isinstance(target, Mapping) and not target):
        return siblings
    if not isinstance(target, Mapping):
        raise ProjectionError(f"{ptr or '/'}: cannot inline a reference to the 'false' schema")
    merged = dict(target)
    for key, value in siblings.items():
        if key in merged and merged[key] != value and key not in ANNOTATIONS:
            raise ProjectionError(
                f"{ptr or '/'}: cannot inline the reference: {key!r} is set both beside it "
                "and in its target"
            )
        merged[key] = value
    return merged


def is_pure_union(node: Mapping[str, Any], dialect: Dialect) -> bool:
    """Return whether ``node`` is only an ``anyOf`` (or a rewritten ``oneOf``) plus annotations."""
    union = {"anyOf", "oneOf"} if dialect.oneof_as_anyof else {"anyOf"}
    rest = set(node) - ANNOTATIONS
    return len(rest) == 1 and rest <= union


def accepts_null(node: Any, lookup: Callable[[str], Any], depth: int = 0) -> bool:
    """Return whether ``node`` (a contract subschema) already accepts JSON ``null``.

    ``lookup`` resolves a local ``$ref`` (:meth:`compiler.schema.walk.LocalRefs.lookup`).
    """
    if isinstance(node, bool):
        return node
    if not isinstance(node, Mapping) or depth > 32:
        return False
    ref = node.get("$ref")
    if isinstance(ref, str) and not accepts_null(lookup(ref), lookup, depth + 1):
        return False
    kind = node.get("type")
    if kind is not None and kind != "null" and not (isinstance(kind, list) and "null" in kind):
        return False
    if "enum" in node and None not in node["enum"]:
        return False
    if "const" in node and node["const"] is not None:
        return False
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list) and not any(
            accepts_null(branch, lookup, depth + 1) for branch in node[key]
        ):
            return False
    if isinstance(node.get("allOf"), list):
        return all(accepts_null(branch, lookup, depth + 1) for branch in node["allOf"])
    return True


NULL_SCHEMA = FrozenDict(type="null")
"""The ``{"type": "null"}`` branch every nullable property gets: one read-only object,
shared by every projection (one tracked object less per optional property)."""


def nullable(inner: Any, shared: dict[tuple[str, str], FrozenList] | None = None) -> FrozenDict:
    """Return ``{"anyOf": [inner, {"type": "null"}]}``, the title and description moved out,
    read-only: ``inner`` is a boolean or a plain ``dict`` whose values are read-only
    already (the projector's node before it is frozen); every container of the result is
    a :class:`~compiler.schema.frozen_json.FrozenDict` / ``FrozenList``, and the null
    branch is :data:`NULL_SCHEMA`.

    Args:
        inner: the projected property.
        shared: the projection's table of ``anyOf`` lists whose first branch is one
            keyword with a string value (``[{"type": "integer"}, {"type": "null"}]``),
            keyed by that keyword and value: such a list is made once per projection and
            shared by every property it fits (read-only, so sharing is invisible; a deep
            copy gives each place its own). ``None``: nothing is shared.
    """
    if not isinstance(inner, dict):
        return FrozenDict(anyOf=FrozenList([inner, NULL_SCHEMA]))
    notes = {key: inner[key] for key in ("title", "description") if key in inner}
    core = {key: value for key, value in inner.items() if key not in notes} if notes else inner
    if shared is None or len(core) != 1:
        return FrozenDict({"anyOf": FrozenList([FrozenDict(core), NULL_SCHEMA]), **notes})
    ((keyword, value),) = core.items()
    if type(value) is not str:
        return FrozenDict({"anyOf": FrozenList([FrozenDict(core), NULL_SCHEMA]), **notes})
    branches = shared.get((keyword, value))
    if branches is None:
        branches = shared[(keyword, value)] = FrozenList([FrozenDict(core), NULL_SCHEMA])
    return FrozenDict({"anyOf": branches, **notes})
