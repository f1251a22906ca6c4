"""The repair turn: the messages that ask the model to fix an invalid reply.

One fixed template, the same for every model and rung (no adjustment adds guidance);
it lists the :class:`~compiler.errors.ReplyValidationError`'s JSON paths and messages,
which never carry a value from the reply. The model's own invalid reply is appended
before it only when the caller passes the response (``CompiledRequest.repair(...,
response=...)``): at rung ``tool`` as the assistant's forced call followed by a ``tool``
message (the chat protocol answers every call), otherwise as the assistant's message
followed by a ``user`` message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.errors import ReplyValidationError

__all__ = ["REPAIR_TEMPLATE", "content_form", "repair_text", "repair_turn"]

#: The repair message; ``{problems}`` becomes one ``- <JSON path>: <message>`` line per error.
REPAIR_TEMPLATE = (
    "Your previous reply does not satisfy the required output schema. Reply again with "
    "the complete output, following the schema given earlier. Problems found, by JSON "
    "path:\n{problems}"
)


def repair_text(error: ReplyValidationError) -> str:
    """The repair message for ``error`` (value-free: paths and messages only)."""
    problems = "\n".join(f"- {path}: {message}" for path, message in error.errors)
    return REPAIR_TEMPLATE.format(problems=problems or "- $: invalid")


def repair_turn(
    error: ReplyValidationError, reply: Mapping[str, Any] | None, forced_tool: str | None
) -> list[dict[str, Any]]:
    """The messages a repair turn appends.

    Args:
        error: the validation error of the reply.
        reply: the assistant message that was invalid (content and tool calls), or
            ``None`` to leave it out (the request then holds no value from the reply).
        forced_tool: at rung ``tool``, the forced function's name, else ``None``.
    """
    text = repair_text(error)
    if reply is None:
        return [{"role": "user", "content": text}]
    calls = [c for c in reply.get("tool_calls") or () if isinstance(c, Mapping)]
    if forced_tool is not None:
        forced = [c for c in calls if isinstance(c.get("function"), Mapping)
                  and c["function"].get("name") == forced_tool and c.get("id")]
        if forced:
            call = forced[0]
            assistant = {"role": "assistant", "content": None, "tool_calls": [
                {"id": call["id"], "type": "function",
                 "function": {"name": forced_tool,
                              "arguments": str(call["function"].get("arguments") or "")}}]}
            return [assistant, {"role": "tool", "tool_call_id": call["id"], "content": text}]
    content = reply.get("content")
    assistant = {"role": "assistant", "content": content if isinstance(content, str) else ""}
    return [assistant, {"role": "user", "content": text}]


def content_form(turns: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Repair turns rewritten for a rung without the forced tool (after a downgrade from
    rung ``tool``): each forced call and its ``tool`` answer become the assistant's
    message (the call's arguments as text) and a ``user`` message (the repair text)."""
    out: list[dict[str, Any]] = []
    answered = {str(t.get("tool_call_id")) for t in turns if t.get("role") == "tool"}
    for turn in turns:
        calls = turn.get("tool_calls") if turn.get("role") == "assistant" else None
        if isinstance(calls, list) and calls and all(
                isinstance(c, Mapping) and str(c.get("id")) in answered for c in calls):
            function = calls[0].get("function")
            arguments = function.get("arguments") if isinstance(function, Mapping) else ""
            out.append({"role": "assistant", "content": str(arguments or "")})
        elif turn.get("role") == "tool" and str(turn.get("tool_call_id")) in answered:
            out.append({"role": "user", "content": str(turn.get("content") or "")})
        else:
            out.append(dict(turn))
    return out
