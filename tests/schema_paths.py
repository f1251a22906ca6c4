"""Walk a published JSON Schema and list its documented key paths (test helper)."""

from __future__ import annotations

from typing import Any


def key_paths(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """Return ``(dotted path, description)`` for every property, ``<key>`` for map keys."""
    defs = schema.get("$defs", {})
    out: list[tuple[str, str]] = []

    def walk(node: dict[str, Any], prefix: str, seen: frozenset[str]) -> None:
        ref = node.get("$ref")
        if ref is not None:
            name = ref.rsplit("/", 1)[-1]
            if name in seen:
                return
            walk(defs[name], prefix, seen | {name})
            return
        for alt in node.get("anyOf", []) + node.get("oneOf", []):
            walk(alt, prefix, seen)
        for key, sub in node.get("properties", {}).items():
            out.append((prefix + key, sub.get("description", "")))
            walk(sub, prefix + key + ".", seen)
        maps = list(node.get("patternProperties", {}).values())
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            maps.append(extra)
        for sub in maps:
            walk(sub, prefix + "<key>.", seen)

    walk(schema, "", frozenset())
    return out
