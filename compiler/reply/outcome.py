"""Read a whole response against the attempt that was sent: :func:`read_response`.

The reply is taken per the attempt's rung: the forced call's ``function.arguments`` at
rung ``tool``, the message's ``content`` otherwise; it is validated with the contract
(:func:`compiler.reply.parse.parse_reply`) whatever the provider enforced. The
``provider`` OpenRouter names is checked against the attempt's endpoints, and the usage
is priced with that endpoint's prices (the model's when it is not known).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from compiler.errors import (
    ProviderError,
    ReplyBlockedError,
    ReplyTruncatedError,
    ReplyValidationError,
)
from compiler.pricing.book import PriceBook
from compiler.pricing.cost import UsageCost, usage_cost
from compiler.pricing.prices import PriceSheet
from compiler.pricing.usage import Usage, usage_from
from compiler.reply.classify import classify_error
from compiler.reply.parse import parse_reply
from compiler.reply.response import Response, assemble
from compiler.schema.contract import OutputContract
from compiler.schema.projected import Projection

__all__ = ["ParsedResponse", "answer_blocker", "forced_tool", "read_response", "serving_attempts"]


@dataclass(frozen=True, slots=True)
class ParsedResponse:
    """A validated response.

    Attributes:
        output: the validated instance of the contract (the reply text for a free-text
            stage; ``None`` when the model called the caller's tools instead of answering).
        tool_calls: the caller's tool calls (every call but the forced one), as mappings.
        finish_reason: as the response gives it, or ``None``.
        provider: the ``provider`` the response names (the endpoint's display name).
        endpoint: the routing slug(s) of the attempt's endpoint that served it, or ``None``.
        endpoint_check: ``ok`` (an endpoint of the attempt), ``mismatch`` (not one of
            them: :attr:`endpoint_note` says which attempt it belongs to, if any),
            ``unchecked`` (no endpoint data) or ``unreported`` (no ``provider``).
        endpoint_note: why the check is not ``ok``, or ``None``.
        attempt: the index in the route plan of the attempt the response answers.
        rung: that attempt's enforcement rung.
        usage: the response's tokens.
        cost: the response's cost from the compile's prices.
    """

    output: Any
    tool_calls: tuple[Mapping[str, Any], ...]
    finish_reason: str | None
    provider: str | None
    endpoint: str | None
    endpoint_check: str
    endpoint_note: str | None
    attempt: int
    rung: str
    usage: Usage
    cost: UsageCost

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (the output as JSON data)."""
        output = self.output
        dump = getattr(output, "model_dump", None)
        return {
            "output": dump(mode="json") if callable(dump) else output,
            "tool_calls": [dict(c) for c in self.tool_calls],
            "finish_reason": self.finish_reason, "provider": self.provider,
            "endpoint": self.endpoint, "endpoint_check": self.endpoint_check,
            "endpoint_note": self.endpoint_note, "attempt": self.attempt, "rung": self.rung,
            "usage": self.usage.to_dict(), "cost": self.cost.to_dict(),
        }


def forced_tool(body: Mapping[str, Any]) -> str | None:
    """The name of the function a body forces (``tool_choice.function.name``), or ``None``."""
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        name = choice["function"].get("name")
        return name if isinstance(name, str) else None
    return None


def _walk_parts(body: Mapping[str, Any]) -> tuple[int, bool]:
    """(input images, whether a one-hour cache is asked for) in the body's messages."""
    images, one_hour = 0, False
    stack: list[Any] = list(body.get("messages") or ())
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if node.get("type") == "image_url":
                images += 1
            cache = node.get("cache_control")
            if isinstance(cache, Mapping) and cache.get("ttl") == "1h":
                one_hour = True
            stack.extend(v for v in node.values() if isinstance(v, list | Mapping))
        elif isinstance(node, list):
            stack.extend(node)
    return images, one_hour


def _served(
    provider: str | None, endpoints: Sequence[str], book: PriceBook | None,
    plan_endpoints: Sequence[Sequence[str]],
) -> tuple[str | None, str, str | None, PriceSheet | None]:
    """(slug, check, note, the serving endpoint's prices or None)."""
    if provider is None:
        return None, "unreported", "the response names no provider", None
    if not endpoints:
        return None, "unchecked", "the compile had no endpoint data to check it against", None
    entries = () if book is None else book.matching(provider)
    hits = [e for e in entries if e.slug in endpoints]
    if not entries:  # no price data: compare the base slug with the name
        base = provider.strip().lower().replace(" ", "-")
        slugs = [s for s in endpoints if s.lower().split("/")[0] == base]
        if slugs:
            return ", ".join(slugs), "ok", None, None
    if hits:
        sheets = {h.sheet for h in hits}
        return (", ".join(h.slug for h in hits), "ok", None,
                hits[0].sheet if len(sheets) == 1 else None)
    others = [i for i, group in enumerate(plan_endpoints)
              if any(e.slug in group for e in entries)]
    where = (f"it is an endpoint of plan[{others[0]}] (attempt={others[0]})" if others
             else "it is no endpoint of this route plan")
    return None, "mismatch", (f"served by {provider!r}, not one of this attempt's endpoints "
                              f"({', '.join(endpoints)}); {where}"), None


def serving_attempts(
    provider: str | None, plan_endpoints: Sequence[Sequence[str]], book: PriceBook | None
) -> tuple[int, ...]:
    """The 0-based indexes of the plan's attempts with an endpoint named ``provider``
    (a response's display name); empty when it names none or is ``None``."""
    if provider is None:
        return ()
    entries = () if book is None else book.matching(provider)
    if entries:
        slugs = {e.slug for e in entries}
        return tuple(i for i, group in enumerate(plan_endpoints) if slugs & set(group))
    base = provider.strip().lower().replace(" ", "-")
    return tuple(i for i, group in enumerate(plan_endpoints)
                 if any(s.lower().split("/")[0] == base for s in group))


def read_response(
    response: Any,
    *,
    contract: OutputContract | None,
    projection: Projection | None,
    rung: str,
    body: Mapping[str, Any],
    endpoints: Sequence[str],
    book: PriceBook | None,
    attempt: int = 0,
    plan_endpoints: Sequence[Sequence[str]] = (),
) -> ParsedResponse:
    """Validate a whole response against the attempt that was sent.

    Raises:
        ValueError: ``response`` is not a response object or chunk list.
        ProviderError: the response carries an error object, or ``finish_reason`` is
            ``error`` (classified; an error in a response is one that came with HTTP 200).
        ReplyBlockedError: the model refused (``message.refusal``, a refusal content
            part) or ``finish_reason`` is ``content_filter``: never a validation failure.
        ReplyTruncatedError: ``finish_reason`` is ``length`` and the answer is missing
            or cut off.
        ReplyValidationError: the reply is invalid; the error's ``usage`` and ``cost``
            attributes hold the response's usage and cost.
    """
    got: Response = assemble(response)
    usage = usage_from(got.usage)
    slug, check, note, sheet = _served(got.provider, endpoints, book, plan_endpoints)
    if sheet is None:
        sheet = book.model if book is not None else PriceSheet(prices=(), source="no prices")
    images, one_hour = _walk_parts(body)
    when = None if got.created is None else datetime.fromtimestamp(got.created, UTC)
    cost = usage_cost(usage, sheet, images=images, one_hour_cache=one_hour, when=when)
    _no_answer(got, usage, cost)
    name = forced_tool(body) if rung == "tool" else None
    calls = got.tool_calls
    if name is not None:
        mine = [c for c in calls if _name(c) == name]
        answer = str(mine[0]["function"].get("arguments") or "") if mine else None
        others = tuple(c for c in calls if _name(c) != name)
    else:
        answer, others = got.content, calls
    limit = body.get("max_tokens", body.get("max_completion_tokens"))

    def truncated(answered: bool) -> ReplyTruncatedError:
        exc = ReplyTruncatedError(
            max_tokens=limit if isinstance(limit, int) else None,
            completion_tokens=usage.output_tokens, reasoning_tokens=usage.reasoning_tokens,
            answered=answered)
        exc.usage, exc.cost = usage, cost
        return exc

    if got.finish_reason == "length" and not (answer or "").strip():
        raise truncated(False)
    output: Any = answer
    if contract is not None and projection is not None:
        declared = {t["function"]["name"] for t in body.get("tools") or ()
                    if isinstance(t, Mapping) and t.get("function")} - {name}
        called = {str((c.get("function") or {}).get("name")) for c in others}
        if not (answer or "").strip() and others and called <= declared:
            output = None  # the model called the caller's tools; their results come next
        else:
            try:
                if not (answer or "").strip() and others:
                    raise ReplyValidationError(
                        [("$", "no answer, and a call to a function this request does not "
                          "declare: " + ", ".join(sorted(called - declared)))])
                if answer is None:
                    what = (f"no call to the forced function {name!r}" if name
                            else "the reply has no content")
                    raise ReplyValidationError([("$", what)])
                output = parse_reply(answer, contract, projection,
                                     strip_fence=rung in ("json", "prompt"))
            except ReplyValidationError as exc:
                if got.finish_reason == "length":
                    raise truncated(True) from None
                exc.usage, exc.cost = usage, cost
                raise
    return ParsedResponse(
        output=output, tool_calls=others, finish_reason=got.finish_reason,
        provider=got.provider, endpoint=slug, endpoint_check=check, endpoint_note=note,
        attempt=attempt, rung=rung, usage=usage, cost=cost,
    )


def answer_blocker(got: Response) -> ProviderError | ReplyBlockedError | None:
    """Return the error for a response that holds no answer to validate, or ``None``.

    Checked before the reply is read: an error object in the response, or
    ``finish_reason: error``, is a :class:`ProviderError` (it came with HTTP 200:
    generation had started); a refusal (``message.refusal`` or a refusal content part)
    or ``finish_reason: content_filter`` is a :class:`ReplyBlockedError`. The lock
    reader (:mod:`compiler.artifacts.lockfile`) applies the same rule.
    """
    if got.error is not None or got.finish_reason == "error":
        found = classify_error(200, {"error": got.error or {}})
        what = ("" if got.error is not None
                else " (finish_reason error, and the response carries no error object)")
        return ProviderError(f"the provider answered with an error ({found.kind}, status "
                             f"{found.status}){what}: {found.detail}", kind=found.kind,
                             status=found.status, detail=found.detail)
    if got.refusal is not None:
        return ReplyBlockedError(reason="refused", finish_reason=got.finish_reason,
                                 refusal=got.refusal)
    if got.finish_reason == "content_filter":
        return ReplyBlockedError(reason="filtered", finish_reason=got.finish_reason,
                                 refusal=None)
    return None


def _no_answer(got: Response, usage: Usage, cost: UsageCost) -> None:
    """Raise :func:`answer_blocker`'s error, carrying the response's usage and cost."""
    exc = answer_blocker(got)
    if exc is not None:
        exc.usage, exc.cost = usage, cost
        raise exc


def _name(call: Mapping[str, Any]) -> str | None:
    function = call.get("function")
    return function.get("name") if isinstance(function, Mapping) else None
