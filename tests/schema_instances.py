"""A small bounded instance generator and the admission oracle of the projection tests.

:func:`candidates` reads a JSON Schema and returns a few values shaped after it
(every property, only the required ones, extra keys where the object is open, tuples,
each branch of a union, boundary numbers, strings that match the patterns the schema
generator uses). Each comes paired with the *reply* a provider would send for it under
a dialect that makes every property required (an omitted optional property is sent as
``null``, which :func:`compiler.reply.parse.parse_reply` turns back into "absent").
Candidates are not guaranteed to be valid: the caller keeps those the original schema
admits (jsonschema decides), so the generator can stay simple.

:func:`admission_failures` is the oracle: with no blocker, the projected schema (read
as the provider reads it) admits every value the original admits, once the keywords
the dialect table marks harmless are dropped from the original and its objects with
declared properties are closed (``schema.closed_object``: the host ignores or rejects
undeclared keys as the contract says).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from compiler.schema.checks import is_object_schema
from compiler.schema.dialects import Dialect
from compiler.schema.frozen_json import thaw_json
from compiler.schema.projected import Projection
from compiler.schema.walk import schema_slot

#: Patterns the schema generator uses, each with strings that match it.
PATTERNS: dict[str, tuple[str, ...]] = {
    "^[a-z]+$": ("abc", "z"),
    "^x": ("x1", "xyz"),
    "^[0-9]{2}$": ("42",),
}
STRINGS = ("", "a", "abc", "abcdefgh", "Z9", "2024-01-31", *itertools.chain(*PATTERNS.values()))
INTEGERS = (0, 1, -2, 7, 100)
NUMBERS = (0.5, -1.5, 2.25)
ANYTHING: tuple[Any, ...] = (None, True, 3, "a", [], {}, {"k": 1}, [1, "b"])
PER_NODE = 8  # candidates kept per schema node
MAX_DEPTH = 5  # $ref hops followed while generating

_OBJECT_KEYS = frozenset({"properties", "additionalProperties", "patternProperties", "required"})
_ARRAY_KEYS = frozenset({"items", "prefixItems", "contains"})

Pair = tuple[Any, Any]  # (value the contract admits, what the provider sends for it)


def candidates(node: Any, root: Mapping[str, Any], *, fill: bool, depth: int = 0) -> list[Pair]:
    """Return at most :data:`PER_NODE` ``(value, reply)`` pairs shaped after ``node``."""
    if node is True or node == {}:
        return [(v, v) for v in ANYTHING]
    if not isinstance(node, Mapping) or depth > MAX_DEPTH:
        return []
    found: list[Pair] = []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        found += candidates(target, root, fill=fill, depth=depth + 1)
    for key in ("enum",):
        found += [(v, v) for v in node.get(key, [])]
    if "const" in node:
        found.append((node["const"], node["const"]))
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(key, []):
            found += candidates(branch, root, fill=fill, depth=depth)
    for key in ("then", "else"):
        found += candidates(node.get(key), root, fill=fill, depth=depth)
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds is None:
        keys = set(node)
        kinds = [kind for kind, says in (("object", _OBJECT_KEYS), ("array", _ARRAY_KEYS))
                 if keys & says]
        if not kinds and not found:
            found += [(v, v) for v in ANYTHING]
    for kind in kinds:
        found += _typed(kind, node, root, fill, depth)
    return _dedupe(found)[:PER_NODE]


def _typed(kind: str, node: Mapping[str, Any], root: Mapping[str, Any], fill: bool,
           depth: int) -> list[Pair]:
    if kind == "null":
        return [(None, None)]
    if kind == "boolean":
        return [(True, True), (False, False)]
    if kind in ("integer", "number"):
        values: list[Any] = list(INTEGERS) + (list(NUMBERS) if kind == "number" else [])
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if isinstance(node.get(key), int | float) and not isinstance(node[key], bool):
                values += [node[key], node[key] + 1, node[key] - 1, node[key] * 2]
        return [(v, v) for v in values]
    if kind == "string":
        return [(v, v) for v in STRINGS]
    if kind == "array":
        return _arrays(node, root, fill, depth)
    if kind == "object":
        return _objects(node, root, fill, depth)
    return []


def _arrays(node: Mapping[str, Any], root: Mapping[str, Any], fill: bool,
            depth: int) -> list[Pair]:
    items = node.get("items", True)
    each = candidates(items, root, fill=fill, depth=depth + 1) if items is not False else []
    prefix = [candidates(sub, root, fill=fill, depth=depth + 1)[:2]
              for sub in node.get("prefixItems", [])]
    heads: list[list[Pair]] = [[]]
    if prefix and all(prefix):
        heads = [[options[i % len(options)] for options in prefix] for i in range(2)]
    extra = candidates(node.get("contains"), root, fill=fill, depth=depth + 1)[:1]
    out: list[Pair] = []
    for head in heads:
        tails = [[], each[:1], each[:2], each[1:3] + each[1:2], extra]
        for tail in tails:
            pairs = head + tail
            out.append(([v for v, _ in pairs], [r for _, r in pairs]))
    return out


def _objects(node: Mapping[str, Any], root: Mapping[str, Any], fill: bool,
             depth: int) -> list[Pair]:
    props = node.get("properties", {})
    required = set(node.get("required", []))
    options = {name: candidates(sub, root, fill=fill, depth=depth + 1)
               for name, sub in props.items()}
    out: list[Pair] = []
    for variant in range(3):  # every property (two choices each), only the required ones
        value: dict[str, Any] = {}
        reply: dict[str, Any] = {}
        for name, pairs in options.items():
            if variant == 2 and name not in required:
                if fill:
                    reply[name] = None
                continue
            if pairs:
                value[name], reply[name] = pairs[variant % len(pairs)]
        out.append((value, reply))
    extras: list[tuple[str, Any]] = []
    additional = node.get("additionalProperties", True)
    if additional is not False:
        extras += [("extra", v) for v, _ in candidates(additional, root, fill=fill,
                                                      depth=depth + 1)[:3]]
    for pattern, sub in node.get("patternProperties", {}).items():
        key = PATTERNS.get(pattern, ("x1",))[0]
        extras += [(key, v) for v, _ in candidates(sub, root, fill=fill, depth=depth + 1)[:2]]
    for key, extra in extras:
        value, reply = out[0]
        out.append(({**value, key: extra}, {**reply, key: extra}))
        out.append(({key: extra}, {key: extra}))
    return out


def _dedupe(pairs: list[Pair]) -> list[Pair]:
    seen: list[Pair] = []
    for pair in pairs:
        if pair not in seen:  # == on JSON values; True == 1 is fine for candidates
            seen.append(pair)
    return seen


# --------------------------------------------------------------------------- the oracle


def without_harmless(node: Any, dialect: Dialect, *, close: bool) -> Any:
    """``node`` without the keywords ``dialect`` drops harmlessly, its objects with declared
    properties closed when ``close`` (the rewrites the projection may make without a blocker)."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (key in dialect.harmless_drops and key not in ("$defs", "definitions")) or (
            key == "minItems" and dialect.min_items_values is not None
            and value not in dialect.min_items_values
        ):
            continue
        slot = schema_slot(key, value)
        if slot == "one":
            out[key] = without_harmless(value, dialect, close=close)
        elif slot == "list":
            out[key] = [without_harmless(v, dialect, close=close) for v in value]
        elif slot == "map":
            out[key] = {k: without_harmless(v, dialect, close=close) for k, v in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    if close and "properties" in out and not {"additionalProperties", "patternProperties"} & set(
            out):
        out["additionalProperties"] = False
    return out


def as_enforced(schema: Any, dialect: Dialect) -> Any:
    """The projected schema as the provider applies it: where the dialect has no
    ``additionalProperties``, an object can hold only its declared properties."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        slot = schema_slot(key, value)
        if slot == "one":
            out[key] = as_enforced(value, dialect)
        elif slot == "list":
            out[key] = [as_enforced(v, dialect) for v in value]
        elif slot == "map":
            out[key] = {k: as_enforced(v, dialect) for k, v in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    implicit_closed = dialect.keywords is not None and "additionalProperties" not in (
        dialect.keywords)
    if implicit_closed and is_object_schema(out) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def admission_failures(source: Mapping[str, Any], projection: Projection,
                       dialect: Dialect) -> tuple[int, list[str]]:
    """Return ``(values checked, failures)``: values the contract admits (harmless keywords
    dropped) that the enforced projection rejects. Meaningful only without blockers."""
    original = without_harmless(source, dialect, close=not dialect.open_objects)
    enforced = as_enforced(thaw_json(projection.schema), dialect)
    admits = Draft202012Validator(original).is_valid
    accepts = Draft202012Validator(enforced).is_valid
    checked = 0
    failures = []
    for value, reply in candidates(original, original, fill=dialect.all_required):
        if not admits(value):
            continue
        checked += 1
        sent = {projection.wrapped_root: reply} if projection.wrapped_root else reply
        if not accepts(sent):
            failures.append(f"{value!r} (sent as {sent!r})")
    return checked, failures

