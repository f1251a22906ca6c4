"""Token usage of one response (or the sum of several): :class:`Usage`.

OpenRouter always returns full usage (https://openrouter.ai/docs/cookbook/administration/usage-accounting):
``prompt_tokens``, ``completion_tokens``, ``completion_tokens_details.reasoning_tokens``,
``prompt_tokens_details.{cached_tokens, cache_write_tokens, audio_tokens}`` and ``cost``
(USD); when streaming, in the final chunk. Following the OpenAI convention OpenRouter
uses, ``prompt_tokens`` counts every input token (cache reads and writes included) and
``completion_tokens`` every output token (reasoning included); the details are parts of
those totals, never additions to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from decimal import Decimal, InvalidOperation
from typing import Any

from compiler.pricing.prices import decimal_text

__all__ = ["Usage", "usage_from"]


def _plus(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one response (or summed over several), in tokens.

    ``None`` means the provider did not report the figure; ``0`` means it reported zero.
    The five token classes are input, cache read, cache write, output and reasoning.

    Attributes:
        input_tokens: ``prompt_tokens``: every input token, cache reads and writes included.
        cache_read_tokens: ``prompt_tokens_details.cached_tokens`` (part of the input).
        cache_write_tokens: ``prompt_tokens_details.cache_write_tokens`` (part of the input).
        output_tokens: ``completion_tokens``: every output token, reasoning included.
        reasoning_tokens: ``completion_tokens_details.reasoning_tokens`` (part of the
            output), ``None`` where the provider does not report it.
        audio_tokens: ``prompt_tokens_details.audio_tokens`` (part of the input).
        web_searches: ``server_tool_use.web_search_requests`` when reported.
        reported_cost: ``usage.cost`` in USD as OpenRouter charged it, or ``None``.
        responses: how many responses the figures cover.
    """

    input_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    audio_tokens: int | None = None
    web_searches: int | None = None
    reported_cost: Decimal | None = None
    responses: int = 1

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages per field; a figure stays ``None`` only when both are ``None``."""
        return Usage(**{f.name: _plus(getattr(self, f.name), getattr(other, f.name))
                        for f in fields(self)})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping; ``reported_cost`` is an exact decimal string in USD."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["reported_cost"] = decimal_text(self.reported_cost)
        return out


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 else None


def usage_from(usage: Any) -> Usage:
    """Read an OpenRouter ``usage`` object (a mapping; anything else is no usage).

    >>> usage_from({"prompt_tokens": 10, "completion_tokens": 5}).reasoning_tokens is None
    True
    """
    if not isinstance(usage, Mapping):
        return Usage(responses=1)
    prompt = usage.get("prompt_tokens_details")
    prompt = prompt if isinstance(prompt, Mapping) else {}
    completion = usage.get("completion_tokens_details")
    completion = completion if isinstance(completion, Mapping) else {}
    tools = usage.get("server_tool_use")
    tools = tools if isinstance(tools, Mapping) else {}
    cost: Decimal | None = None
    raw = usage.get("cost")
    if isinstance(raw, int | float | str) and not isinstance(raw, bool):
        try:
            cost = Decimal(str(raw))
        except InvalidOperation:
            cost = None
    return Usage(
        input_tokens=_count(usage.get("prompt_tokens")),
        cache_read_tokens=_count(prompt.get("cached_tokens")),
        cache_write_tokens=_count(prompt.get("cache_write_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
        reasoning_tokens=_count(completion.get("reasoning_tokens")),
        audio_tokens=_count(prompt.get("audio_tokens")),
        web_searches=_count(tools.get("web_search_requests")),
        reported_cost=cost,
    )
