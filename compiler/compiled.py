"""The compiled result: :class:`CompiledRequest`, one route-plan attempt or the whole plan.

A compile yields one request body per *attempt* of its route plan (``docs/concepts.md``):
:attr:`CompiledRequest.body` is the first attempt's, :attr:`CompiledRequest.attempts` the
later ones (each a complete :class:`CompiledRequest` of its own), and
:attr:`CompiledRequest.routes` says, for every endpoint of the model, which attempt
serves it or why none does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.reply.parse import parse_reply
from compiler.report import AdjustmentReport
from compiler.routes.table import RouteRow
from compiler.schema.contract import OutputContract
from compiler.schema.projected import Projection
from compiler.tools.calls import ToolCall, parse_tool_calls
from compiler.tools.projection import ProjectedTool

__all__ = ["OPENAI_SDK_PARAMETERS", "CompiledRequest"]

#: Body keys the official ``openai`` SDK's ``chat.completions.create`` takes as named
#: arguments; every other key goes in ``extra_body``.
OPENAI_SDK_PARAMETERS: frozenset[str] = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "stop",
        "response_format",
        "reasoning_effort",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "prediction",
        "web_search_options",
        "verbosity",
    }
)

@dataclass(frozen=True, slots=True)
class CompiledRequest:
    """A compiled OpenRouter chat-completions request and how it was made.

    Attributes:
        body: the JSON-ready ``POST /api/v1/chat/completions`` body.
        report: every adjustment, the enforcement rung, the metadata source.
        instructions: the message the compiler adds before the caller's messages
            (``{"role": "system", "content": ...}``), or ``None`` without a contract.
        contract: the output contract, or ``None`` for free text.
        projection: the schema shown (and, at rung ``schema``, enforced), or ``None``.
        attempts: the route plan's later attempts, strongest first, each a complete
            request for endpoints this one leaves out (empty: one attempt covers every
            endpoint that can serve the model, or there is no endpoint data).
        endpoints: the routing slugs of the endpoints this attempt is for, empty when
            the compile had no endpoint data.
        routes: one row per endpoint of the model: the attempt that serves it, or
            why none does (``excluded_by``); empty without endpoint data.
        tools: the stage's own tools as projected and sent (``body["tools"]``), in order.
    """

    body: dict[str, Any]
    report: AdjustmentReport
    instructions: dict[str, str] | None
    contract: OutputContract | None
    projection: Projection | None
    attempts: tuple[CompiledRequest, ...] = ()
    endpoints: tuple[str, ...] = ()
    routes: tuple[RouteRow, ...] = ()
    tools: tuple[ProjectedTool, ...] = ()

    @property
    def plan(self) -> tuple[CompiledRequest, ...]:
        """Every attempt in order: this request first, then :attr:`attempts`."""
        return (self, *self.attempts)

    @property
    def rung(self) -> str:
        """The enforcement reached: ``schema``, ``json``, ``prompt`` or ``none``."""
        return self.report.rung

    @property
    def shown_schema(self) -> Mapping[str, Any] | None:
        """The schema the instruction message shows the model."""
        return None if self.projection is None else self.projection.schema

    @property
    def enforced_schema(self) -> Mapping[str, Any] | None:
        """The schema the provider enforces: ``response_format.json_schema.schema`` at rung
        ``schema``, the forced tool's ``parameters`` at rung ``tool`` when the call is
        ``strict`` (the endpoints list ``structured_outputs``), else ``None``."""
        fmt = self.body.get("response_format", {})
        if fmt.get("type") == "json_schema":
            schema: Mapping[str, Any] = fmt["json_schema"]["schema"]
            return schema
        if self.rung == "tool" and self.body["tools"][0]["function"].get("strict") is True:
            params: Mapping[str, Any] = self.body["tools"][0]["function"]["parameters"]
            return params
        return None

    def parse_reply(self, text: str) -> Any:
        """Validate a reply against the original contract and return the instance.

        Args:
            text: the reply's content; at rung ``tool``, the forced call's
                ``function.arguments`` string.

        A code fence is removed only when enforcement was ``json`` or ``prompt``; a
        wrapped root is unwrapped; nulls the projection introduced become absent
        fields so the contract's defaults apply.

        Raises:
            ReplyValidationError: invalid JSON or a contract violation (JSON paths and
                messages, never the offending values).
            ValueError: the request has no output contract.
        """
        if self.contract is None or self.projection is None:
            raise ValueError("this request has no output contract; the reply is free text")
        return parse_reply(
            text, self.contract, self.projection, strip_fence=self.rung in ("json", "prompt")
        )

    def parse_tool_calls(self, message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
        """Return the typed tool calls of an assistant ``message`` (a reply's
        ``choices[0].message``), arguments validated against each tool's own schema.

        A malformed call is not an exception: its :attr:`ToolCall.errors` holds
        ``(JSON path, message)`` pairs (never argument values) and its raw arguments
        are kept. Validate before invoking: ``call.ok``.
        """
        return parse_tool_calls(message, self.tools)

    def to_openai_kwargs(self) -> dict[str, Any]:
        """Split the body into ``openai`` SDK arguments plus ``extra_body``.

        Returns:
            Keyword arguments for ``client.chat.completions.create(**kwargs)``; fields
            the SDK does not name (``provider``, ``reasoning``, ``top_k``, ...) are in
            ``kwargs["extra_body"]``, so the JSON on the wire equals :attr:`body`.
        """
        body = copy.deepcopy(self.body)
        kwargs = {k: v for k, v in body.items() if k in OPENAI_SDK_PARAMETERS}
        extra = {k: v for k, v in body.items() if k not in OPENAI_SDK_PARAMETERS}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs
