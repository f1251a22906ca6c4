"""A whole OpenRouter chat-completions response, assembled: :class:`Response`.

Accepts the JSON object of a non-streamed response, the list of ``chat.completion.chunk``
objects of a streamed one, or the text of a stream dump (Server-Sent Events: ``data:``
lines, ``:`` comment lines such as OpenRouter's keep-alive, ``data: [DONE]``), see
https://openrouter.ai/docs/api-reference/streaming. Chunks are merged the way the
OpenAI protocol defines: ``delta.content`` and ``delta.reasoning`` are concatenated,
``delta.tool_calls`` are merged by ``index`` (``arguments`` concatenated), the last
``finish_reason`` wins, and usage comes from the chunk that carries it (the last).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Response", "assemble", "load_response_text", "text_of"]


@dataclass(frozen=True, slots=True)
class Response:
    """The parts of a response the reply loop reads.

    Attributes:
        content: the assistant message's text (``text`` content parts joined), or ``None``.
        refusal: the model's refusal (``message.refusal``, or ``refusal`` content parts
            joined; ``delta.refusal`` concatenated in a stream), or ``None``.
        reasoning: the reasoning text when returned, or ``None``.
        tool_calls: the message's tool calls as ``{"id", "type", "function": {"name",
            "arguments"}}`` mappings, in order.
        finish_reason: ``stop``, ``length``, ``tool_calls``, ``content_filter``,
            ``error``, ... or ``None``.
        provider: the ``provider`` OpenRouter reports (the endpoint's display name).
        model: the ``model`` the response names.
        usage: the raw ``usage`` object, or ``None``.
        created: the ``created`` Unix time in seconds, or ``None``.
        error: the response's ``error`` (top level, else ``choices[0].error``; in a stream,
            the last chunk's that has one) as a mapping: a string or other non-object
            error becomes ``{"message": str(error)}``. ``None`` only when both are absent
            or ``null``. Any non-``None`` error makes the response a provider error.
        message: the assistant message as a chat message (for a repair turn).
    """

    content: str | None
    refusal: str | None
    reasoning: str | None
    tool_calls: tuple[Mapping[str, Any], ...]
    finish_reason: str | None
    provider: str | None
    model: str | None
    usage: Mapping[str, Any] | None
    created: int | None
    error: Mapping[str, Any] | None
    message: Mapping[str, Any]


def load_response_text(text: str) -> Any:
    """Parse a saved response: a JSON object, a JSON list of chunks, or an SSE dump.

    A leading UTF-8 byte order mark (U+FEFF, as some editors save) is ignored.

    Raises:
        ValueError: the text is none of these (the message names the line).
    """
    text = text.removeprefix("\ufeff")
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    chunks: list[Any] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(":"):
            continue
        if not line.startswith("data:"):
            continue  # event:, id:, retry: fields carry nothing the loop reads
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            chunks.append(json.loads(data))
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number}: the data is not JSON ({exc.msg})") from None
    if not chunks:
        raise ValueError("neither a JSON response nor a stream dump with data: lines")
    return chunks


def _text(content: Any) -> str | None:
    """A string content as is; a list of parts: the ``text`` of its ``text`` parts (a part
    with no ``type``, or ``type: null``, counts as one) joined with no separator; anything
    else ``None``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content
                 if isinstance(p, Mapping) and p.get("type") in (None, "text")]
        return "".join(p for p in parts if isinstance(p, str))
    return None


def text_of(content: Any) -> str | None:
    """The reply text of a message ``content``, by the rule every reader applies
    (:func:`_text`): a string, or the ``text`` parts of a list joined."""
    return _text(content)


def _error(value: Any) -> Mapping[str, Any] | None:
    """An ``error`` member as a mapping (``None`` when absent or ``null``): an object as
    is, anything else (a string, a number) as ``{"message": str(value)}``."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    return {"message": str(value)[:500]}


def _refusal(message: Mapping[str, Any]) -> str | None:
    """``message.refusal``, else the ``refusal`` content parts joined (``None``: neither)."""
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        return str(message["refusal"])
    content = message.get("content")
    if isinstance(content, list):
        parts = [p.get("refusal") for p in content
                 if isinstance(p, Mapping) and p.get("type") == "refusal"]
        if parts:
            return "".join(p for p in parts if isinstance(p, str))
    return None


def _first_choice(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return choices[0]
    return {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _message(content: str | None, calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [dict(c) for c in calls]
    return message


def _whole(obj: Mapping[str, Any]) -> Response:
    choice = _first_choice(obj)
    msg = choice.get("message")
    msg = msg if isinstance(msg, Mapping) else {}
    calls = tuple(c for c in msg.get("tool_calls") or () if isinstance(c, Mapping))
    content = _text(msg.get("content"))
    error = _error(obj.get("error"))
    if error is None:
        error = _error(choice.get("error"))
    return Response(
        content=content, refusal=_refusal(msg), reasoning=_str(msg.get("reasoning")),
        tool_calls=calls,
        finish_reason=_str(choice.get("finish_reason")), provider=_str(obj.get("provider")),
        model=_str(obj.get("model")),
        usage=obj.get("usage") if isinstance(obj.get("usage"), Mapping) else None,
        created=_int(obj.get("created")),
        error=error,
        message=_message(content, calls),
    )


def _chunks(chunks: Sequence[Any]) -> Response:
    content: list[str] = []
    refusal: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = provider = model = None
    usage = error = None
    created = None
    saw_content = False
    for chunk in chunks:
        if not isinstance(chunk, Mapping):
            continue
        provider = _str(chunk.get("provider")) or provider
        model = _str(chunk.get("model")) or model
        created = _int(chunk.get("created")) or created
        if isinstance(chunk.get("usage"), Mapping):
            usage = chunk["usage"]
        choice = _first_choice(chunk)
        finish = _str(choice.get("finish_reason")) or finish
        for found in (_error(chunk.get("error")), _error(choice.get("error"))):
            error = error if found is None else found
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            continue
        piece = _text(delta.get("content"))
        if piece is not None:
            saw_content = True
            content.append(piece)
        if isinstance(delta.get("reasoning"), str):
            reasoning.append(delta["reasoning"])
        piece = _refusal(delta)
        if piece is not None:
            refusal.append(piece)
        for call in delta.get("tool_calls") or ():
            if not isinstance(call, Mapping):
                continue
            index = _int(call.get("index")) or 0
            merged = calls.setdefault(index, {"id": None, "type": "function",
                                              "function": {"name": "", "arguments": ""}})
            if isinstance(call.get("id"), str):
                merged["id"] = call["id"]
            function = call.get("function")
            if isinstance(function, Mapping):
                if isinstance(function.get("name"), str):
                    merged["function"]["name"] += function["name"]
                if isinstance(function.get("arguments"), str):
                    merged["function"]["arguments"] += function["arguments"]
    text = "".join(content) if saw_content else None
    ordered = tuple(calls[i] for i in sorted(calls))
    return Response(
        content=text, refusal="".join(refusal) if refusal else None,
        reasoning="".join(reasoning) if reasoning else None, tool_calls=ordered,
        finish_reason=finish, provider=provider, model=model, usage=usage, created=created,
        error=error, message=_message(text, ordered),
    )


def assemble(response: Any) -> Response:
    """Assemble a response from its JSON object or its list of stream chunks.

    Raises:
        ValueError: ``response`` is neither a mapping nor a list of mappings.
    """
    if isinstance(response, Mapping):
        return _whole(response)
    if isinstance(response, list | tuple) and all(isinstance(c, Mapping) for c in response):
        return _chunks(response)
    raise ValueError("a response is a chat.completion JSON object or a list of "
                     "chat.completion.chunk objects")
