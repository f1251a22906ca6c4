"""pydantic validation errors of models.yaml and stages.yaml as located DeclarationErrors.

pydantic reports where a problem is in its own terms: a location through union
members and validator internals, and an error type. This module turns each into a
:class:`~registry.errors.DeclarationError` naming file, line, column and key path as
written in the YAML, with a plain message (``expected an integer; got string
'128000'``) and, for a misspelt key or value, the closest valid name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from registry.declarations.yamlsource import UNSET, KeyPath, YamlDocument
from registry.errors import DeclarationError, closest

__all__ = ["combined_error", "unset_key_problem", "validation_problems"]


def combined_error(problems: Sequence[DeclarationError]) -> DeclarationError:
    """Merge problems into one error to raise.

    A lone problem is returned as it is; several become one error, located at the
    first in file order, that lists each on its own line in file order.
    """
    ordered = sorted(problems, key=lambda p: (p.line or 0, p.column or 0))
    if len(ordered) == 1:
        return ordered[0]
    first = ordered[0]
    listing = "\n".join(f"  {p}" for p in ordered)
    combined = DeclarationError(
        f"{len(ordered)} problems:\n{listing}",
        file=first.file,
        line=first.line,
        column=first.column,
    )
    combined.problems = tuple(ordered)
    return combined


def unset_key_problem(
    doc: YamlDocument, root: type[BaseModel], path: KeyPath
) -> DeclarationError | None:
    """Check that the key of an ``unset`` entry at ``path`` is a valid key at its place."""
    parent = _type_at(root, path[:-1])
    key = path[-1]
    model = _model_class(parent)
    if model is not None:
        if key in model.model_fields:
            return None
        return doc.error(_unknown_key(str(key), model), path)
    args = get_args(_dict_type(parent)) if parent is not None else ()
    if len(args) == 2:
        try:
            TypeAdapter(args[0]).validate_python(key, strict=True)
        except ValidationError as exc:
            return doc.error(_message(exc.errors()[0], None), path)
    return None


def _arms(tp: Any) -> tuple[Any, ...]:
    """Union members of ``tp`` (itself when not a union), Annotated metadata dropped."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    args = get_args(tp)
    if args and get_origin(tp) not in (dict, list, Literal):
        return tuple(a for arm in args for a in _arms(arm))
    return (tp,)


def _model_class(tp: Any) -> type[BaseModel] | None:
    for arm in _arms(tp):
        if isinstance(arm, type) and issubclass(arm, BaseModel):
            return arm
    return None


def _dict_type(tp: Any) -> Any:
    return next((arm for arm in _arms(tp) if get_origin(arm) is dict), None)


def _type_at(root: Any, path: KeyPath) -> Any:
    """The declared type at ``path`` below ``root``, or ``None`` when the path leaves the schema."""
    tp = root
    for key in path:
        model = _model_class(tp)
        if model is not None and isinstance(key, str) and key in model.model_fields:
            tp = model.model_fields[key].annotation
            continue
        container = _dict_type(tp) if isinstance(key, str) else None
        if container is None and isinstance(key, int):
            container = next((a for a in _arms(tp) if get_origin(a) is list), None)
        if container is None:
            return None
        tp = get_args(container)[-1]
    return tp


def _unknown_key(key: str, model: type[BaseModel]) -> str:
    names = list(model.model_fields)
    hint = closest(key, names)
    if hint:
        return f"unknown key {key!r}; did you mean {hint[0]!r}?"
    return f"unknown key {key!r}; expected one of {', '.join(names)}"


def _data_path(data: Any, err: ErrorDetails) -> KeyPath:
    """Turn a pydantic error location into a path of keys that exist in the YAML data.

    Union member tags and validator internals are skipped; a custom error's ``at``
    and a missing key's name are appended.
    """
    path: list[str | int] = []
    node = data
    for part in err["loc"]:
        if part == "[key]":
            break
        in_dict = isinstance(node, dict) and part in node
        if not (in_dict or (isinstance(node, list) and isinstance(part, int) and part < len(node))):
            continue
        node = node[part]
        path.append(part)
    path.extend(err.get("ctx", {}).get("at", ()))
    if err["type"] == "missing":
        path.append(err["loc"][-1])
    return tuple(path)


_NOUNS: Final = {
    "int_type": "an integer", "float_type": "a number", "string_type": "a string",
    "bool_type": "true or false", "dict_type": "a mapping", "model_type": "a mapping",
    "model_attributes_type": "a mapping", "list_type": "a list", "decimal_type": "a number",
    "decimal_parsing": "a decimal number", "none_required": "null",
}  # fmt: skip
_BOUNDS: Final = {"greater_than": ("gt", ">"), "greater_than_equal": ("ge", ">="),
                  "less_than": ("lt", "<"), "less_than_equal": ("le", "<=")}  # fmt: skip


def _describe(value: Any) -> str:
    text = _describe_whole(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text):,} characters)"


def _describe_whole(value: Any) -> str:
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int) and value.bit_length() > 3000:
        return "a number of more than 900 digits"  # str() refuses above 4,300 digits
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value}"


def _expected(err: ErrorDetails) -> str | None:
    """What a type or choice error wanted, as a noun phrase."""
    if err["type"] == "literal_error":
        return "one of " + ", ".join(re.findall(r"'([^']*)'", err.get("ctx", {})["expected"]))
    return _NOUNS.get(err["type"])


def _message(err: ErrorDetails, parent: Any) -> str:
    kind, got, ctx = err["type"], err["input"], err.get("ctx", {})
    if got is UNSET:
        return "'unset' is only allowed as a mapping value, not as a list item"
    if kind == "declaration":
        return str(ctx["detail"])
    if kind == "extra_forbidden":
        model = _model_class(parent)
        key = str(err["loc"][-1])
        return _unknown_key(key, model) if model else f"unknown key {key!r}"
    if kind == "missing":
        return f"missing required key {err['loc'][-1]!r}"
    if kind in _BOUNDS:
        name, sign = _BOUNDS[kind]
        return f"must be {sign} {ctx[name]}; got {_describe(got)}"
    if kind == "too_short":
        return f"needs at least {ctx['min_length']} items; got {ctx['actual_length']}"
    if kind == "string_pattern_mismatch":
        return f"{_describe(got)} does not match the pattern {ctx['pattern']}"
    expected = _expected(err)
    if expected is None:
        return f"{err['msg']}; got {_describe(got)}"
    message = f"expected {expected}; got {_describe(got)}"
    if kind == "literal_error" and isinstance(got, str):
        hint = closest(got, re.findall(r"'([^']*)'", ctx["expected"]))
        message += f" (did you mean {hint[0]!r}?)" if hint else ""
    return message


def validation_problems(
    doc: YamlDocument, root: type[BaseModel], exc: ValidationError
) -> list[DeclarationError]:
    """One error per offending location; alternatives of a union are merged into one."""
    groups: dict[KeyPath, list[ErrorDetails]] = {}
    for err in exc.errors():
        groups.setdefault(_data_path(doc.data, err), []).append(err)
    out: list[DeclarationError] = []
    for path, errs in groups.items():
        wanted = [_expected(e) for e in errs]
        if len(errs) > 1 and all(wanted) and errs[0]["input"] is not UNSET:
            nouns = list(dict.fromkeys(w for w in wanted if w))
            messages = [f"expected {' or '.join(nouns)}; got {_describe(errs[0]['input'])}"]
        else:
            parent = _type_at(root, path[:-1]) if path else None
            messages = list(dict.fromkeys(_message(e, parent) for e in errs))
        out.extend(doc.error(m, path) for m in messages)
    return out
