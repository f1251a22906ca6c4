"""Vouch for a schema against the JSON Schema draft 2020-12 meta-schema, quickly.

:func:`vouch` walks a schema once and answers ``True`` only when the meta-schema
(https://json-schema.org/draft/2020-12/schema and its vocabularies, as shipped by
``jsonschema-specifications``) certainly accepts it; ``False`` means "not vouched
for", never "invalid": the caller then runs jsonschema's own ``check_schema``, which
decides and says where the problem is. So a schema ``check_schema`` rejects is always
rejected, and one it accepts is accepted, only faster (about 50x on the example
contracts' projections).

What is checked, per keyword the meta-schema constrains (every other keyword is left
alone, as the meta-schema leaves it): subschemas (``properties``, ``items``, ``anyOf``
and the other applicators, ``$defs``) are objects or booleans and are checked in turn;
``type`` is a simple type or a non-empty array of distinct ones; ``required`` and
``dependentRequired`` lists hold distinct strings; counts (``minItems``, ``maxLength``,
...) are non-negative integers; bounds are numbers and ``multipleOf`` is above 0;
``pattern`` and ``patternProperties`` names compile as regular expressions (Python's
``re`` or pydantic-core's ``rust-regex``: :func:`format_checker`); ``title``,
``description``, ``format``, ``$comment`` and the content keywords are strings; the
flags are booleans; ``enum`` and ``examples`` are arrays. Keywords whose check needs a
URI or anchor grammar (``$id``, ``$schema``, ``$anchor``, ``$vocabulary``, ...) are
not vouched for, except ``$ref``/``$dynamicRef`` values that are local JSON Pointers
such as ``#/$defs/Item``. Values must be plain ``dict``/``list``/``str``/``int``/
``float``/``bool`` (JSON as ``json.loads`` builds it), or the read-only ``dict`` and
``list`` subclasses the caller names (``frozen``); anything else is not vouched for.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from typing import Any

__all__ = ["format_checker", "meta_schema_error", "vouch"]

_SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
#: Keywords whose value is one subschema.
_ONE = frozenset({"items", "contains", "additionalProperties", "propertyNames", "if", "then",
                  "else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema"})
#: Keywords whose value is a non-empty array of subschemas.
_ARRAY = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
#: Keywords whose value is an object of subschemas.
_MAP = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
_COUNTS = frozenset({"maxLength", "minLength", "maxItems", "minItems", "maxContains",
                     "minContains", "maxProperties", "minProperties"})
_NUMBERS = frozenset({"maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})
_STRINGS = frozenset({"title", "description", "format", "$comment", "contentEncoding",
                      "contentMediaType"})
_FLAGS = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})
_ARRAYS = frozenset({"enum", "examples"})
_UNCONSTRAINED = frozenset({"default", "const"})
#: Constrained by a URI or anchor grammar (or an odd shape): left to jsonschema.
_NOT_VOUCHED = frozenset({"$id", "$schema", "$anchor", "$dynamicAnchor", "$vocabulary",
                          "$recursiveAnchor", "$recursiveRef", "dependencies"})
#: A local JSON Pointer reference, which is a URI reference whatever the checker.
_LOCAL_REF = re.compile(r"#(?:/[A-Za-z0-9_.~$\-]*)*\Z")


def _distinct_strings(value: Any, lists: tuple[type, ...]) -> bool:
    return (type(value) in lists and all(type(v) is str for v in value)
            and len(set(value)) == len(value))


def _compiles(pattern: Any) -> bool:
    """Whether ``pattern`` is a regular expression for the engine that runs it: Python's
    ``re`` or pydantic-core's ``rust-regex`` (pydantic's default, which takes ``\\p{L}``
    and other syntax ``re`` lacks). A pattern valid for the contract's own engine is
    valid JSON Schema here; whether a provider takes it is the dialect's business."""
    if type(pattern) is not str:
        return False
    try:
        with warnings.catch_warnings():  # "possible nested set": a pattern, not our problem
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error:
        return _rust_compiles(pattern)
    except (OverflowError, RecursionError, ValueError):  # a pattern too large for re
        return _rust_compiles(pattern)
    return True


@lru_cache(maxsize=512)
def _rust_compiles(pattern: str) -> bool:
    from pydantic_core import SchemaError, SchemaValidator, core_schema

    try:
        SchemaValidator(core_schema.str_schema(pattern=pattern))
    except SchemaError:
        return False
    return True


def _regex_format(instance: object) -> bool:
    return not isinstance(instance, str) or _compiles(instance)


@lru_cache(maxsize=1)
def format_checker() -> Any:
    """jsonschema's draft 2020-12 format checker with ``regex`` read as
    :func:`_compiles` does (``re`` or ``rust-regex``), so ``check_schema`` and
    :func:`vouch` agree on patterns."""
    from jsonschema import Draft202012Validator, FormatChecker  # type: ignore[import-untyped]

    checker = FormatChecker(formats=())
    checker.checkers = {**Draft202012Validator.FORMAT_CHECKER.checkers}
    checker.checks("regex")(_regex_format)
    return checker


def _keyword_ok(key: str, value: Any, stack: list[Any], dicts: tuple[type, ...],
                lists: tuple[type, ...]) -> bool:
    """Whether one keyword's value is certainly valid; subschemas go on ``stack``."""
    if key in _ONE:
        stack.append(value)
        return True
    if key in _MAP:
        if type(value) not in dicts:
            return False
        stack.extend(value.values())
        return True
    if key in _ARRAY:
        if type(value) not in lists or not value:
            return False
        stack.extend(value)
        return True
    if key == "type":
        if type(value) is str:
            return value in _SIMPLE_TYPES
        return (type(value) in lists and bool(value) and _distinct_strings(value, lists)
                and all(v in _SIMPLE_TYPES for v in value))
    if key == "required":
        return _distinct_strings(value, lists)
    if key in _COUNTS:
        return type(value) is int and value >= 0
    if key in _NUMBERS:
        return type(value) in (int, float)
    if key in _STRINGS:
        return type(value) is str
    if key in _FLAGS:
        return type(value) is bool
    if key in _ARRAYS:
        return type(value) in lists
    if key in ("$ref", "$dynamicRef"):
        return type(value) is str and _LOCAL_REF.match(value) is not None
    if key == "pattern":
        return _compiles(value)
    if key == "patternProperties":
        if type(value) not in dicts or not all(_compiles(k) for k in value):
            return False
        stack.extend(value.values())
        return True
    if key == "multipleOf":
        return type(value) in (int, float) and value > 0
    if key == "dependentRequired":
        return type(value) in dicts and all(_distinct_strings(v, lists) for v in value.values())
    return key in _UNCONSTRAINED or key not in _NOT_VOUCHED


def vouch(schema: Any, frozen: tuple[type, type] | None = None) -> bool:
    """Whether the draft 2020-12 meta-schema certainly accepts ``schema``.

    Args:
        schema: a JSON Schema document (a ``dict`` or a boolean), as plain JSON data.
        frozen: a read-only ``(dict subclass, list subclass)`` pair to take as ``dict``
            and ``list`` too (the projection passes
            :class:`~compiler.schema.frozen_json.FrozenDict` and ``FrozenList``, which
            override only mutation, so jsonschema reads them as it reads ``dict`` and
            ``list``); any other subclass is still not vouched for.

    Returns:
        ``True``: valid, ``Draft202012Validator.check_schema`` would raise nothing.
        ``False``: not vouched for; run ``check_schema`` to decide and to locate the
        problem.

    >>> vouch({"type": "object", "properties": {"n": {"type": "integer"}},
    ...        "required": ["n"], "additionalProperties": False})
    True
    >>> vouch({"type": "object", "required": ["n", "n"]})
    False
    """
    dicts: tuple[type, ...] = (dict,) if frozen is None else (dict, frozen[0])
    lists: tuple[type, ...] = (list,) if frozen is None else (list, frozen[1])
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if type(node) is bool:
            continue
        if type(node) not in dicts:
            return False
        for key, value in node.items():
            if type(key) is not str or not _keyword_ok(key, value, stack, dicts, lists):
                return False
    return True


def meta_schema_error(schema: Any, frozen: tuple[type, type] | None = None) -> str | None:
    """Check ``schema`` against the draft 2020-12 meta-schema: :func:`vouch`, then, for
    a schema it does not vouch for, jsonschema's ``Draft202012Validator.check_schema``.

    Args:
        schema: a JSON Schema document.
        frozen: the read-only ``(dict subclass, list subclass)`` pair :func:`vouch`
            takes as ``dict`` and ``list`` too, if any.

    Returns:
        ``None`` when valid, else ``"at JSON_PATH: message"`` (jsonschema's own words).
    """
    if vouch(schema, frozen):
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    try:
        Draft202012Validator.check_schema(schema, format_checker=format_checker())
    except SchemaError as exc:
        return f"at {exc.json_path}: {exc.message}"
    return None
