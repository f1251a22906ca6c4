"""Check a reply with the contract's JSON Schema alone, under parse_reply's bounds.

The lock reader (:meth:`compiler.artifacts.lockfile.LockedRequest.parse_reply` with
``contract=False``, or when the contract module does not import) has the stored schema
only. :func:`check_reply` applies the recipe and validates with ``jsonschema`` under the
same bounds as :func:`compiler.reply.parse.parse_reply`: reply size and values, the
bounds of :mod:`compiler.reply.bounds` (depth, union fan-out, no NaN or Infinity, string
length under python-re), at most ``MAX_REPLY_ERRORS`` errors listed, and messages
composed from safe parts only: the path, the failed keyword and the schema's own value
for it (never ``jsonschema``'s message, which quotes the value). ``pattern`` runs with
the contract's engine: pydantic-core's ``rust-regex`` (linear time) for a default
contract, Python's ``re`` for a python-re one (whose strings are bounded), in
``pattern``, ``patternProperties`` and ``additionalProperties`` alike.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from pydantic_core import SchemaValidator, core_schema

from compiler.errors import ContractError, ReplyValidationError
from compiler.reply.bounds import (
    MAX_ERRORS_READ,
    MAX_PYTHON_RE_CHARS,
    check_data,
    json_path,
)
from compiler.reply.null_plan import null_plan, undo_nulls
from compiler.reply.parse import (
    MAX_REPLY_ERRORS,
    admit_reply,
    load_json,
    property_names,
)
from compiler.schema.projected import Projection

__all__ = ["check_reply", "pattern_matches"]

#: Keywords whose schema value is a number, a string or a list of names: shown as is.
_SHOWN = frozenset({"type", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
                    "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems",
                    "maxItems", "minProperties", "maxProperties", "uniqueItems"})
_WORDING = {
    "enum": "Input should be one of the values the contract lists",
    "const": "Input should be the value the contract sets",
    "additionalProperties": "Object has a property the contract does not allow",
    "unevaluatedProperties": "Object has a property the contract does not allow",
    "anyOf": "Input matches none of the contract's alternatives",
    "oneOf": "Input should match exactly one of the contract's alternatives",
    "not": "Input matches a shape the contract excludes",
}


def check_reply(text: str, *, schema: Mapping[str, Any], sha256: str, python_re: bool,
                strip_fence: bool, projection: Projection, wrapper: str | None) -> Any:
    """Apply a reply recipe and validate with ``schema`` (JSON Schema 2020-12).

    Args:
        text: the reply text.
        schema: the contract's validation schema; ``sha256`` its hash (cache key).
        python_re: the contract runs its patterns with Python's ``re``.
        strip_fence: remove one Markdown code fence first.
        projection: the shown schema (its absent nulls are undone).
        wrapper: the property a wrapped root sits in, or None.

    Returns:
        The reply's JSON data, absent nulls removed, root unwrapped.

    Raises:
        ReplyValidationError: a bound (path ``$``, unvalidated), invalid JSON, a NaN or
            Infinity, or contract violations (JSON paths, the values never quoted).
    """
    text, _ = admit_reply(text, strip_fence=strip_fence, sha256=sha256, schema=schema,
                          python_re=python_re)
    data = load_json(text)
    check_data(data, python_re=python_re)
    plan = null_plan(projection)
    if plan is not None:
        undo_nulls(data, plan)
    where: list[int | str] = []
    if wrapper is not None:
        if not isinstance(data, dict):
            raise ReplyValidationError(
                [("$", f"Input should be an object with property {wrapper!r}")])
        if wrapper not in data:
            raise ReplyValidationError([(json_path("$", wrapper), "Field required")])
        data, where = data[wrapper], [wrapper]
    errors: list[Any] = []
    read_all = True
    for error in _validator(sha256, schema, python_re).iter_errors(data):
        errors.extend(_branch_errors(error))
        if len(errors) >= MAX_ERRORS_READ:
            read_all = False
            break
    if not errors:
        return data
    errors.sort(key=lambda e: [str(p) for p in e.absolute_path])
    names = _names(sha256, schema) | ({wrapper} if wrapper is not None else set())
    shown = [_located(e, where, names) for e in errors[:MAX_REPLY_ERRORS]]
    if len(errors) > MAX_REPLY_ERRORS:
        more = f"{len(errors) - MAX_REPLY_ERRORS:,}" + ("" if read_all else " or more")
        shown.append(("$", f"... and {more} more errors (MAX_REPLY_ERRORS)"))
    raise ReplyValidationError(shown)


@lru_cache(maxsize=4096)
def _rust_pattern(pattern: str) -> SchemaValidator | None:
    try:
        return SchemaValidator(core_schema.str_schema(pattern=pattern,
                                                      regex_engine="rust-regex"))
    except Exception:  # a pattern rust-regex cannot compile (look-around, back-reference)
        return None


def pattern_matches(pattern: str, text: str, *, python_re: bool) -> bool:
    """Whether ``text`` matches ``pattern`` anywhere (``re.search`` semantics), with the
    engine pydantic would use: Python's ``re`` under python-re (``text`` is bounded by
    :data:`compiler.reply.bounds.MAX_PYTHON_RE_CHARS` before), else pydantic-core's
    ``rust-regex`` (linear time). A pattern rust-regex cannot compile is run with ``re``
    only on text within that bound; a longer text does not match. A pattern the python-re
    rule refuses (:func:`compiler.schema.budgets.backtracking_patterns`) is never run
    with ``re``: it is matched with rust-regex when rust-regex compiles it.

    Raises:
        ContractError: the pattern would run with ``re``, the rule refuses it, and
            rust-regex cannot compile it (the message quotes the rule's reason)."""
    if not python_re or _risk(pattern) is not None:
        validator = _rust_pattern(pattern)
        if validator is not None:
            return bool(validator.isinstance_python(text))
        if (why := _risk(pattern)) is not None:
            raise ContractError(f"pattern {pattern!r} is not run with Python's re: {why}")
        if len(text) > MAX_PYTHON_RE_CHARS:
            return False
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


@lru_cache(maxsize=256)
def _risk(pattern: str) -> str | None:
    """Why the python-re rule refuses ``pattern``, or None."""
    from compiler.schema.budgets import backtracking_patterns

    found = backtracking_patterns({"pattern": pattern})
    return found[0][1] if found else None


_VALIDATORS: dict[tuple[str, bool], Any] = {}


def _validator(sha256: str, schema: Mapping[str, Any], python_re: bool) -> Any:
    found = _VALIDATORS.get((sha256, python_re))
    if found is not None:
        return found
    from jsonschema import Draft202012Validator, validators  # type: ignore[import-untyped]
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

    def pattern(validator: Any, value: Any, instance: Any, _schema: Any) -> Any:
        if validator.is_type(instance, "string") and not pattern_matches(
                value, instance, python_re=python_re):
            yield ValidationError("does not match the pattern")

    def matched(key: str, schema: Mapping[str, Any]) -> bool:
        return any(pattern_matches(p, key, python_re=python_re)
                   for p in schema.get("patternProperties") or ())

    def pattern_properties(validator: Any, value: Any, instance: Any, _schema: Any) -> Any:
        if validator.is_type(instance, "object"):
            for key_pattern, sub in value.items():
                for key, item in instance.items():
                    if pattern_matches(key_pattern, key, python_re=python_re):
                        yield from validator.descend(item, sub, path=key,
                                                     schema_path=key_pattern)

    def additional(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        extras = [k for k in instance
                  if k not in (schema.get("properties") or {}) and not matched(k, schema)]
        if validator.is_type(value, "object"):
            for key in extras:
                yield from validator.descend(instance[key], value, path=key)
        elif value is False and extras:
            yield ValidationError("has a property the contract does not allow")

    fails = _branch_test(schema)

    def any_of(validator: Any, value: Any, instance: Any, _schema: Any) -> Any:
        valid = 0
        for index, branch in enumerate(value):
            if not fails(validator, instance, branch, index):
                valid += 1
                if _schema.get("anyOf") is value or valid > 1:
                    return  # anyOf: one is enough; oneOf: a second one is the error
        if valid == 1:
            return
        if valid > 1:
            yield ValidationError("is valid under more than one alternative")
            return
        yield ValidationError("matches none of the alternatives",
                              context=_context(validator, value, instance))

    checker = validators.extend(Draft202012Validator, {
        "pattern": pattern, "patternProperties": pattern_properties,
        "additionalProperties": additional, "anyOf": any_of, "oneOf": any_of})
    found = _VALIDATORS[(sha256, python_re)] = checker(
        schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return found


def _branch_test(root: Mapping[str, Any]) -> Any:
    """``fails(validator, instance, branch, index)``: whether ``instance`` fails the
    union branch ``branch``, as cheaply as can be told: a string ``const`` or ``enum``
    of a property (a ``Literal`` tag) the instance holds with another value settles it
    at once (the branch behind a local ``$ref`` is looked up, once); else the branch is
    validated up to its first error only (jsonschema builds every branch's every error,
    and a ``repr`` of the instance, for each value of a union)."""
    tags: dict[str, list[tuple[str, frozenset[str]]]] = {}

    def tags_of(branch: Any) -> list[tuple[str, frozenset[str]]]:
        ref = branch.get("$ref") if isinstance(branch, Mapping) else None
        key = ref if isinstance(ref, str) else None
        if key is not None and key in tags:
            return tags[key]
        target: Any = branch
        if key is not None and key.startswith("#/"):
            target = root
            for step in key[2:].split("/"):
                step = step.replace("~1", "/").replace("~0", "~")
                target = target.get(step) if isinstance(target, Mapping) else None
        found: list[tuple[str, frozenset[str]]] = []
        props = target.get("properties") if isinstance(target, Mapping) else None
        for name, sub in (props.items() if isinstance(props, Mapping) else ()):
            allowed = ([sub["const"]] if isinstance(sub, Mapping) and "const" in sub
                       else sub.get("enum") if isinstance(sub, Mapping) else None)
            if isinstance(allowed, list) and allowed and all(type(a) is str for a in allowed):
                found.append((name, frozenset(allowed)))
        if key is not None:
            tags[key] = found
        return found

    def fails(validator: Any, instance: Any, branch: Any, index: int) -> bool:
        if type(instance) is dict:
            for name, allowed in tags_of(branch):
                value = instance.get(name)
                if type(value) is str and value not in allowed:
                    return True
        return next(iter(validator.descend(instance, branch, schema_path=index)), None) is not None

    return fails


def _context(validator: Any, branches: Sequence[Any], instance: Any) -> list[Any]:
    """The errors of a failed union's only non-null branch (what :func:`_branch_errors`
    reports for an optional field), built in full; none for any other union."""
    real = [i for i, b in enumerate(branches) if b != {"type": "null"}]
    if instance is None or len(real) != 1:
        return []
    return list(validator.descend(instance, branches[real[0]], schema_path=real[0]))


def _branch_errors(error: Any) -> list[Any]:
    """A failed ``anyOf``/``oneOf`` whose value is not null and that has one non-null
    branch (an optional field) reports that branch's errors, as pydantic does."""
    if error.validator not in ("anyOf", "oneOf") or error.instance is None:
        return [error]
    real = [i for i, b in enumerate(error.validator_value) if b != {"type": "null"}]
    if len(real) != 1:
        return [error]
    inner = [e for e in error.context if e.relative_schema_path[0] == real[0]]
    return [f for e in inner for f in _branch_errors(e)] or [error]


_NAMES: dict[str, frozenset[str]] = {}


def _names(sha256: str, schema: Mapping[str, Any]) -> frozenset[str]:
    found = _NAMES.get(sha256)
    if found is None:
        found = _NAMES[sha256] = property_names(schema)
    return found


def _located(
    error: Any, where: Sequence[int | str], names: frozenset[str]
) -> tuple[str, str]:
    """``(JSON path, message)`` from the path, the keyword and the schema's value only; a
    key the schema does not declare is data (a dict key) and shows as ``[*]``, as in
    :func:`compiler.reply.parse.parse_reply`."""
    path = "$"
    for step in [*where, *error.absolute_path]:
        if isinstance(step, int):
            path = f"{path}[{step}]"
        else:
            path = json_path(path, str(step)) if str(step) in names else path + "[*]"
    keyword, value = str(error.validator), error.validator_value
    if keyword == "required":  # jsonschema names the schema's property: "'x' is a req..."
        name = str(error.message).removesuffix(" is a required property")
        with contextlib.suppress(ValueError, SyntaxError):
            named = ast.literal_eval(name)
            if isinstance(value, list) and named in value:
                path = json_path(path, str(named))
        return path, "Field required"
    if keyword in _WORDING:
        return path, _WORDING[keyword]
    if keyword in _SHOWN and isinstance(value, str | int | float | bool | list):
        shown = json.dumps(value)
        if len(shown) <= 200:
            return path, f"Input fails the contract's {keyword}: {shown}"
    return path, f"Input fails the contract's {keyword}"
