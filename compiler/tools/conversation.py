"""The pre-send check of the caller's messages: one pass, before anything is compiled.

A provider answers a malformed conversation with a 400; this check refuses it first,
naming the message index and the rule (:class:`compiler.errors.ConversationError`).
The rules (``docs/tools.md``, "Pre-send checks"), with their slugs:

* ``message``: every message is a JSON object;
* ``role``: ``role`` is one of ``system``, ``developer``, ``user``, ``assistant``, ``tool``;
* ``content``: ``content`` is a string or a non-empty list of parts; only an assistant
  message with ``tool_calls`` may leave it out (or ``null``, or ``[]``). An empty string
  is accepted: no provider reference in the project documents it either way, and callers
  send it often; an empty list of parts is refused (a message with nothing in it);
* ``part``: each part is an object of a type its role may carry (``text`` for every
  role; ``image_url``, ``file`` and ``input_audio`` only from ``user``) with its
  fields: ``text.text``, ``image_url.url``, ``file.file_data`` or ``file.file_id``,
  ``input_audio.data`` and ``.format``; a ``cache_control`` is an object;
* ``tool_call``: an assistant's ``tool_calls`` is a non-empty list of
  ``{"id", "type": "function", "function": {"name", "arguments": str}}`` (``type``
  present, ``id`` and ``function.name`` non-empty);
* ``tool_call_id_duplicate``: no two tool calls of the conversation share an id;
* ``tool_result``: a ``tool`` message has a string ``tool_call_id``;
* ``tool_result_orphan``: a tool result answers a call of the assistant message
  just before it (only tool results in between), not yet answered;
* ``tool_call_unanswered``: every call of an assistant message is answered by
  exactly one tool result before any other message (and before the end).

The last rule is the strictest of the providers': OpenAI requires the tool messages to
follow the assistant message that made the calls
(https://platform.openai.com/docs/guides/function-calling), and Anthropic wants every
``tool_result`` in the very next user turn
(https://docs.claude.com/en/docs/agents-and-tools/tool-use/implement-tool-use).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.errors import ConversationError

__all__ = ["ROLES", "check_conversation"]

ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")

_PART_FIELDS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "text": (("text",),),
    "image_url": (("image_url", "url"),),
    "file": (("file", "file_data"), ("file", "file_id")),
    "input_audio": (("input_audio", "data"),),
}
_MEDIA = frozenset({"image_url", "file", "input_audio"})


def _fail(index: int, rule: str, message: str) -> ConversationError:
    return ConversationError(message, index=index, rule=rule)


def _check_part(index: int, role: str, j: int, part: Any) -> None:
    where = f"content[{j}]"
    if not isinstance(part, Mapping):
        raise _fail(index, "part", f"{where} is not an object")
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in _PART_FIELDS:
        raise _fail(index, "part", f"{where} has type {kind!r}; use one of "
                    + ", ".join(sorted(_PART_FIELDS)))
    if kind in _MEDIA and role != "user":
        raise _fail(index, "part", f"{where} is a {kind} part in a {role} message; only "
                    "user messages carry media")
    for path in _PART_FIELDS[kind]:
        node: Any = part
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, str):
            break
    else:
        names = " or ".join(".".join(p) for p in _PART_FIELDS[kind])
        raise _fail(index, "part", f"{where} ({kind}) needs the string {names}")
    if kind == "input_audio" and not isinstance(part["input_audio"].get("format"), str):
        raise _fail(index, "part", f"{where} (input_audio) needs the string input_audio.format")
    if "cache_control" in part and not isinstance(part["cache_control"], Mapping):
        raise _fail(index, "part", f"{where}.cache_control must be an object")


def _check_calls(index: int, calls: Any, seen: set[str]) -> list[str]:
    if not isinstance(calls, list) or not calls:
        raise _fail(index, "tool_call", "tool_calls must be a non-empty list")
    ids = []
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if (not isinstance(call, Mapping) or not isinstance(call.get("id"), str)
                or not call["id"] or call.get("type") != "function"
                or not isinstance(function, Mapping)
                or not isinstance(function.get("name"), str) or not function["name"]
                or not isinstance(function.get("arguments"), str)):
            raise _fail(index, "tool_call", f"tool_calls[{j}] needs a non-empty string id, "
                        "\"type\": \"function\", a non-empty function.name and a "
                        "function.arguments string")
        if call["id"] in seen:
            raise _fail(index, "tool_call_id_duplicate",
                        f"tool_calls[{j}] reuses the id of an earlier tool call")
        seen.add(call["id"])
        ids.append(call["id"])
    return ids


def check_conversation(messages: Sequence[Mapping[str, Any]]) -> None:
    """Check ``messages`` against the rules of the module docstring.

    Raises:
        ConversationError: the first rule broken, with the message index and the slug.
    """
    seen: set[str] = set()
    pending: list[str] = []  # calls of the last assistant turn not yet answered
    answering = False
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise _fail(index, "message", "is not an object")
        role = message.get("role")
        if role not in ROLES:
            raise _fail(index, "role", f"role {role!r} is not one of {', '.join(ROLES)}")
        if role != "tool" and pending:
            raise _fail(index, "tool_call_unanswered",
                        f"{len(pending)} tool call(s) of the assistant message before are "
                        "not answered by tool messages before this one")
        calls = message.get("tool_calls") if role == "assistant" else None
        content = message.get("content")
        if content is None and not (role == "assistant" and calls is not None):
            raise _fail(index, "content", "has no content")
        if content is not None and not isinstance(content, (str, list)):
            raise _fail(index, "content", "content must be a string or a list of parts")
        if content == [] and not (role == "assistant" and calls is not None):
            raise _fail(index, "content", "content is an empty list of parts; give at least "
                        "one part (or a string)")
        for j, part in enumerate(content if isinstance(content, list) else ()):
            _check_part(index, str(role), j, part)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise _fail(index, "tool_result", "a tool message needs a string tool_call_id")
            if not answering or call_id not in pending:
                raise _fail(index, "tool_result_orphan",
                            "this tool result answers no open call of the assistant message "
                            "before it (unknown, already answered, or not just before)")
            pending.remove(call_id)
            continue
        answering = False
        if role == "assistant" and calls is not None:
            pending = _check_calls(index, calls, seen)
            answering = True
    if pending:
        raise _fail(len(messages) - 1, "tool_call_unanswered",
                    f"{len(pending)} tool call(s) of the last assistant message are not "
                    "answered")
