"""Tool calls in a reply: typed, their arguments validated before anything is invoked.

:func:`parse_tool_calls` reads an assistant message's ``tool_calls`` (OpenRouter's
OpenAI-shaped ``[{"id", "type": "function", "function": {"name", "arguments"}}]``) and
returns one :class:`ToolCall` each. The arguments are parsed and validated against the
tool's *original* schema (with pydantic when the tool is a model, with ``jsonschema``
Draft 2020-12 otherwise), after the nulls the projection added are turned back into
absent keys. A malformed call is a modelling failure, not a crash: the call keeps its
raw arguments and records its errors, ``(JSON path, message)`` pairs that never
include an argument value (keys the schema does not declare are shown as ``[*]``).

``arguments`` must be the JSON *text* the protocol defines: an object given in its
place (some clients decode it early) is refused with ``arguments is not a JSON string``,
not validated, so a call is read the same way whoever decoded it. A key written twice in
one object of the arguments is refused with that object's path (JSON readers disagree
on which of the two wins: Python keeps the last, others the first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.errors import ReplyValidationError
from compiler.reply.parse import parse_reply
from compiler.tools.projection import ProjectedTool

__all__ = ["ToolCall", "parse_tool_calls"]

_MAX_ERRORS = 50


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a reply.

    Attributes:
        id: the call's ``id`` (a tool result answers it with ``tool_call_id``).
        name: the function named.
        raw_arguments: the ``arguments`` string exactly as received (``""`` when it was
            not a string).
        arguments: the validated value (a model instance for a model tool, a dict
            otherwise), or ``None`` when :attr:`errors` is not empty.
        errors: ``(JSON path, message)`` pairs; empty when the call is valid. Never
            contains argument values.
    """

    id: str | None
    name: str | None
    raw_arguments: str
    arguments: Any
    errors: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the arguments are valid for the named tool."""
        return not self.errors


def parse_tool_calls(
    message: Mapping[str, Any], tools: Sequence[ProjectedTool]
) -> tuple[ToolCall, ...]:
    """Return the typed calls of an assistant ``message`` for the request's ``tools``.

    Raises nothing for bad calls (they carry their errors); a message without
    ``tool_calls`` gives ``()``.
    """
    by_name = {t.tool.name: t for t in tools}
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    out = []
    for raw in calls if isinstance(calls, list) else ():
        function = raw.get("function") if isinstance(raw, Mapping) else None
        function = function if isinstance(function, Mapping) else {}
        call_id = raw.get("id") if isinstance(raw, Mapping) else None
        name = function.get("name")
        given = function.get("arguments")
        text = given if isinstance(given, str) else ""
        ident = call_id if isinstance(call_id, str) else None
        label = name if isinstance(name, str) else None
        found = by_name.get(label) if label is not None else None
        if found is None:
            out.append(ToolCall(ident, label, text, None,
                                (("$", "the call names no tool of this request"),)))
            continue
        if given is not None and not isinstance(given, str):
            kind = "an object" if isinstance(given, Mapping) else type(given).__name__
            out.append(ToolCall(ident, label, text, None, ((
                "$", f"arguments is not a JSON string (it is {kind}); function.arguments "
                "carries the arguments as JSON text"),)))
            continue
        value, errors = _validate(text, found)
        if not errors:
            repeated = _duplicate_key(text, found)
            if repeated is not None:
                value, errors = None, (repeated,)
        out.append(ToolCall(ident, label, text, value, errors))
    return tuple(out)


class _Repeated(dict[str, Any]):
    """An object of the arguments that had a key written twice (the first such key)."""

    key: str


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and not isinstance(out, _Repeated):
            out = _Repeated(out)
            out.key = key
        out[key] = value
    return out


def _duplicate_key(text: str, tool: ProjectedTool) -> tuple[str, str] | None:
    """``(path, message)`` of the first key written twice in the arguments, else ``None``
    (called on arguments that already parsed and validated, so the text is bounded)."""
    try:
        data = json.loads(text or "{}", object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return None
    declared = _declared_names(tool.tool.schema)

    def step(key: str) -> str:
        if key not in declared:
            return "[*]"
        return f".{key}" if key.isidentifier() else f"[{key!r}]"

    stack: list[tuple[Any, str]] = [(data, "$")]
    while stack:
        node, path = stack.pop(0)
        if isinstance(node, _Repeated):
            return (path + step(node.key),
                    "a key is written twice in one object of the arguments; each key may "
                    "appear once (JSON readers disagree on which one wins)")
        if isinstance(node, Mapping):
            stack.extend((v, path + step(k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def _validate(text: str, tool: ProjectedTool) -> tuple[Any, tuple[tuple[str, str], ...]]:
    contract = tool.tool.contract
    if contract is None:
        return None, (("$", "the tool was not built by a Tool constructor"),)
    try:
        value = parse_reply(text or "{}", contract, tool.projection, strip_fence=False)
    except ReplyValidationError as exc:
        return None, exc.errors
    if tool.tool.model is not None:
        return value, ()
    errors = _schema_errors(value, tool.tool.schema)
    return (None, errors) if errors else (value, ())


def _schema_errors(value: Any, schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    declared = _declared_names(schema)
    errors = []
    found = sorted(Draft202012Validator(schema).iter_errors(value),
                   key=lambda e: [str(p) for p in e.absolute_path])
    for error in found[:_MAX_ERRORS]:
        path = "$"
        for step in error.absolute_path:
            if isinstance(step, int):
                path += f"[{step}]"
            elif step in declared:
                path += f".{step}" if step.isidentifier() else f"[{step!r}]"
            else:
                path += "[*]"
        errors.append((path, _message(error.validator, error.validator_value)))
    if len(found) > _MAX_ERRORS:
        errors.append(("$", f"... and {len(found) - _MAX_ERRORS} more errors"))
    return tuple(errors)


def _message(keyword: Any, bound: Any) -> str:
    """A message from the schema side only (the keyword and its bound), never the value."""
    if keyword == "required":
        return f"a required property is missing (required: {', '.join(map(str, bound))})"
    if keyword in ("additionalProperties", "unevaluatedProperties"):
        return "a property the schema does not declare is not allowed"
    if keyword == "type":
        return f"should be of type {bound}"
    if keyword in ("enum", "const"):
        return f"should be one of the values {keyword} lists"
    if isinstance(bound, (int, float, str, bool)) and keyword not in ("pattern", "format"):
        return f"fails {keyword} {bound}"
    if keyword in ("pattern", "format"):
        return f"fails {keyword} {bound!r}"
    return f"fails {keyword}"


def _declared_names(schema: Any) -> frozenset[str]:
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping):
                names.update(k for k in props if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)
