"""Rewrites of one schema node that the projector applies, with no state of their own.

:mod:`compiler.schema.projector` calls them while it walks a contract's schema: laying the
siblings of a ``$ref`` over its target when the reference is inlined, and telling a bare
union apart from a node with constraints of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.errors import ProjectionError
from compiler.schema.dialects import Dialect

__all__ = ["ANNOTATIONS", "is_pure_union", "merge_ref_siblings"]

ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    "$comment",
})
"""JSON Schema keywords that annotate a schema and constrain nothing."""


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
