"""The compiled result: :class:`CompiledRequest`, one route-plan attempt or the whole plan.

A compile yields one request body per *attempt* of its route plan (``docs/concepts.md``):
:attr:`CompiledRequest.body` is the first attempt's, :attr:`CompiledRequest.attempts` the
later ones (each a complete :class:`CompiledRequest` of its own), and
:attr:`CompiledRequest.routes` says, for every endpoint of the model, which attempt
serves it or why none does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from compiler.errors import RepairsExhaustedError, ReplyValidationError

# the reply side is imported by the methods that use it: a compile never loads it
if TYPE_CHECKING:
    from compiler.pricing.book import PriceBook
    from compiler.reply.classify import ErrorClass
    from compiler.reply.outcome import ParsedResponse
    from compiler.report import AdjustmentReport
    from compiler.routes.table import RouteRow
    from compiler.schema.contract import OutputContract
    from compiler.schema.projected import Projection
    from compiler.tools.calls import ToolCall
    from compiler.tools.projection import ProjectedTool

__all__ = ["OPENAI_SDK_PARAMETERS", "CompiledRequest", "ErrorVerdict", "Origin"]

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
class Origin:
    """What a compiled request needs from its compile to cost a reply and to downgrade.

    Attributes:
        prices: returns the prices of the metadata the request was compiled from.
        downgrade: ``downgrade(request, rung)`` recompiles ``request`` one rung down,
            for the same endpoints; ``None`` when the policy is not ``auto``.
    """

    prices: Callable[[], PriceBook]
    downgrade: Callable[[CompiledRequest, str], CompiledRequest | None]


@dataclass(frozen=True, slots=True)
class ErrorVerdict:
    """What :meth:`CompiledRequest.after_error` decided.

    Attributes:
        error: the classified error (``kind``, ``status``, ``detail``).
        retry: the request recompiled one rung down (``structured_output_unsupported``
            under policy ``auto`` only), else ``None``.
        next_attempt: for ``no_endpoint``, the route plan's next attempt, else ``None``.
        note: what to do, in one sentence.
    """

    error: ErrorClass
    retry: CompiledRequest | None
    next_attempt: CompiledRequest | None
    note: str

    @property
    def kind(self) -> str:
        """The error's class (:data:`compiler.reply.classify.ERROR_CLASSES`)."""
        return self.error.kind

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (the retry's body, not the whole request)."""
        return {**self.error.to_dict(), "note": self.note,
                "retry_rung": None if self.retry is None else self.retry.rung,
                "next_attempt_endpoints": None if self.next_attempt is None
                else list(self.next_attempt.endpoints)}


@dataclass(frozen=True, slots=True)
class CompiledRequest:
    """A compiled OpenRouter chat-completions request and how it was made.

    Attributes:
        body: the JSON-ready ``POST /api/v1/chat/completions`` body, the caller's to
            edit, except the schemas inside (``response_format.json_schema.schema``,
            ``tools[].function.parameters``): read-only ``FrozenDict``s shared by every
            request of that projection (``copy.deepcopy(body)`` is mutable throughout).
        report: every adjustment, the enforcement rung, the metadata source.
        instructions: the message the compiler adds before the caller's messages
            (``{"role": "system", "content": ...}``), or ``None`` without a contract.
        contract: the output contract, or ``None`` for free text.
        projection: the schema shown (and, at rung ``schema``, enforced), or ``None``.
        attempts: the route plan's attempts after this one, strongest first, each a
            complete request (with the attempts after it) for endpoints this one leaves
            out (empty: this is the last, or one attempt covers every endpoint that can
            serve the model, or there is no endpoint data).
        endpoints: the routing slugs of the endpoints this attempt is for, empty when
            the compile had no endpoint data.
        routes: one row per endpoint of the model: the attempt that serves it, or
            why none does (``excluded_by``); empty without endpoint data.
        timeout_seconds: the whole request's timeout, in seconds (the stage's, or
            derived, :mod:`compiler.timeouts`); ``None`` when built by hand.
        stream_idle_seconds: how long a stream may stay silent, in seconds.
        retries: repair turns an invalid reply gets (the stage's ``output.retries``).
        repairs: repair turns already in this request's messages.
        repair_turns: the messages those repair turns appended.
        origin: the compile's prices and downgrade (not compared, not serialised).
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
    timeout_seconds: float | None = None
    stream_idle_seconds: float | None = None
    retries: int = 1
    repairs: int = 0
    repair_turns: tuple[Mapping[str, Any], ...] = ()
    origin: Origin | None = field(default=None, compare=False, repr=False)
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
        from compiler.reply.parse import parse_reply

        return parse_reply(
            text, self.contract, self.projection, strip_fence=self.rung in ("json", "prompt")
        )

    def loop_settings(self) -> dict[str, Any]:
        """The reply loop's settings, JSON-ready: ``{"timeout_seconds": float | None,
        "stream_idle_seconds": float | None, "retries": int}`` (seconds; repair turns)."""
        return {"timeout_seconds": self.timeout_seconds,
                "stream_idle_seconds": self.stream_idle_seconds, "retries": self.retries}

    def parse_tool_calls(self, message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
        """Return the typed tool calls of an assistant ``message`` (a reply's
        ``choices[0].message``), arguments validated against each tool's own schema.

        A malformed call is not an exception: its :attr:`ToolCall.errors` holds
        ``(JSON path, message)`` pairs (never argument values) and its raw arguments
        are kept. Validate before invoking: ``call.ok``.
        """
        from compiler.tools.calls import parse_tool_calls

        return parse_tool_calls(message, self.tools)

    def to_openai_kwargs(self, *, stream: bool = False) -> dict[str, Any]:
        """Split the body into ``openai`` SDK arguments plus ``extra_body``.

        Args:
            stream: add ``stream=True``; the read timeout is then
                :attr:`stream_idle_seconds` (httpx's read timeout is the wait for the next
                bytes, i.e. an idle timeout), else :attr:`timeout_seconds`.

        Returns:
            Keyword arguments for ``client.chat.completions.create(**kwargs)``; fields
            the SDK does not name (``provider``, ``reasoning``, ``top_k``, ...) are in
            ``kwargs["extra_body"]``, so the JSON on the wire equals :attr:`body`.
            ``timeout`` is an ``httpx.Timeout`` when the request carries timeouts (httpx
            has no whole-request deadline: enforce :attr:`timeout_seconds` around the call).
        """
        body = copy.deepcopy(self.body)
        kwargs = {k: v for k, v in body.items() if k in OPENAI_SDK_PARAMETERS}
        extra = {k: v for k, v in body.items() if k not in OPENAI_SDK_PARAMETERS}
        if extra:
            kwargs["extra_body"] = extra
        if stream:
            kwargs["stream"] = True
        if self.timeout_seconds is not None:
            import httpx  # only here: the compile path never loads the network stack

            read = self.stream_idle_seconds if stream else self.timeout_seconds
            kwargs["timeout"] = httpx.Timeout(self.timeout_seconds, read=read)
        return kwargs

    def parse_response(self, response: Any, *, attempt: int = 0) -> ParsedResponse:
        """Validate a whole OpenRouter response to attempt ``attempt`` of :attr:`plan`.

        Args:
            response: the ``chat.completion`` JSON object, or the list of
                ``chat.completion.chunk`` objects of a stream.
            attempt: which attempt was sent (``0``: this request); the reply is read per
                that attempt's rung, its ``provider`` checked against its endpoints.

        Returns:
            The validated output, the caller's tool calls, ``finish_reason``, the
            endpoint check, usage and cost (:class:`compiler.reply.outcome.ParsedResponse`).

        Raises:
            ReplyValidationError: the reply breaks the contract (value-free; its
                ``usage`` and ``cost`` carry the response's).
            ReplyTruncatedError: ``finish_reason: length`` with no (or a cut-off) answer;
                says how many tokens reasoning used of ``max_tokens``.
            ProviderError: the response is an error (classified).
            ValueError: not a response object or chunk list.
        """
        from compiler.reply.outcome import read_response

        sent = self.plan[attempt]
        book = None if sent.origin is None else sent.origin.prices()
        return read_response(
            response, contract=sent.contract, projection=sent.projection, rung=sent.rung,
            body=sent.body, endpoints=sent.endpoints, book=book, attempt=attempt,
            plan_endpoints=[a.endpoints for a in self.plan])

    def repair(
        self, messages: Sequence[Mapping[str, Any]], error: ReplyValidationError, *,
        response: Any = None,
    ) -> CompiledRequest:
        """The next request after an invalid reply: the same body (same attempt and
        routing: only the generation is repeated) plus one repair turn.

        Args:
            messages: the caller's messages, as given to ``compile_request``.
            error: the reply's :class:`ReplyValidationError` (paths and messages only).
            response: the invalid response (object or chunks); when given, the model's
                reply goes back before the repair message; without it the request holds
                no value from the reply.

        Returns:
            A request whose ``repairs`` is one more; its ``attempts`` are empty.

        Raises:
            RepairsExhaustedError: :attr:`retries` repair turns were already made (the
                count carries across a downgrade, :meth:`after_error`; ``retries`` 0: never).
            TypeError: ``error`` is not a :class:`ReplyValidationError`.
        """
        if not isinstance(error, ReplyValidationError):
            raise TypeError(f"repair() takes a ReplyValidationError, not "
                            f"{type(error).__name__}: only invalid output is repaired (a "
                            "refusal, a filter, a truncation or a provider error is not)")
        if self.repairs >= self.retries:
            raise RepairsExhaustedError(error.errors, repairs=self.repairs)
        from compiler.reply.outcome import forced_tool
        from compiler.reply.repair import repair_turn
        from compiler.reply.response import assemble

        reply = None if response is None else assemble(response).message
        turn = repair_turn(error, reply, forced_tool(self.body) if self.rung == "tool" else None)
        turns = (*self.repair_turns, *turn)
        sent = [dict(m) for m in messages]
        if self.instructions is not None:
            sent.insert(0, dict(self.instructions))
        body = {**self.body, "messages": [*sent, *(dict(t) for t in turns)]}
        return replace(self, body=body, attempts=(), repairs=self.repairs + 1,
                       repair_turns=turns)

    def after_error(self, status: int | None, body: Any) -> ErrorVerdict:
        """Classify a provider error and say what to send next, if anything.

        Args:
            status: the HTTP status, or ``None`` when no response came (timeout, cancel).
            body: the error body (JSON, text or bytes).

        Returns:
            ``retry`` is the request recompiled one rung down (adjustment
            ``output.downgraded_after_error``) only for ``structured_output_unsupported``
            under policy ``auto``; ``next_attempt`` is the plan's next attempt for
            ``no_endpoint``; for every other class both are ``None``.
        """
        from compiler.reply.classify import classify_error

        found = classify_error(status, body)
        retry = next_attempt = None
        if found.kind == "structured_output_unsupported" and self.origin is not None and \
                self.rung in ("schema", "tool", "json"):
            retry = self.origin.downgrade(self, self.rung)
        if found.kind == "no_endpoint" and self.attempts:
            next_attempt = self.attempts[0]
        note = (f"send the request recompiled at rung {retry.rung}" if retry is not None
                else "send the route plan's next attempt" if next_attempt is not None
                else f"{found.kind}: nothing to retry at this level")
        return ErrorVerdict(error=found, retry=retry, next_attempt=next_attempt, note=note)
