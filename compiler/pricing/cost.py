"""What a call costs, from a :class:`~compiler.pricing.prices.PriceSheet`: the worst case
of one call (:func:`worst_case_cost`, used by ``capc audit``) and the cost of a response
from its usage (:func:`usage_cost`). USD, exact :class:`~decimal.Decimal`.

Reasoning tokens are output tokens (``completion_tokens`` includes them); where the
sheet publishes ``internal_reasoning`` they are priced at that rate instead of the
completion rate, never both. Cache reads and writes are input tokens priced at
``input_cache_read`` / ``input_cache_write`` (``input_cache_write_1h`` when the request
asks for a one-hour cache); a class with no price of its own falls back to ``prompt``,
and the cost says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from compiler.pricing.prices import PriceSheet, decimal_text
from compiler.pricing.usage import Usage

__all__ = ["Cost", "CostLine", "UsageCost", "total_cost", "usage_cost", "worst_case_cost"]


@dataclass(frozen=True, slots=True)
class Cost:
    """The worst-case cost of one call.

    Attributes:
        usd: total in USD, or ``None`` when a price or the length limit is unknown.
        prompt_tokens: the estimated prompt size, in tokens.
        completion_tokens: the length limit sent (``max_tokens``), in tokens, or ``None``.
        prompt_price: USD per prompt token used, or ``None`` when unknown.
        completion_price: USD per completion token used, or ``None`` when unknown.
        tier: ``min_prompt_tokens`` of the last override entry that set a price used,
            or ``None`` for the base prices.
        notes: why the cost is unknown, or which override entries were ignored.
        reasoning_tokens: the part of ``completion_tokens`` allowed for reasoning and
            priced at ``reasoning_price``, in tokens (``0`` when reasoning is not priced
            separately or not reserved).
        reasoning_price: USD per reasoning token (``internal_reasoning``), or ``None``
            when reasoning is priced as completion.
        request_price: USD per request added once, or ``None``.
        source: the metadata the prices come from, with its date.
    """

    usd: Decimal | None
    prompt_tokens: int
    completion_tokens: int | None
    prompt_price: Decimal | None
    completion_price: Decimal | None
    tier: int | None = None
    notes: tuple[str, ...] = ()
    reasoning_tokens: int = 0
    reasoning_price: Decimal | None = None
    request_price: Decimal | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping; Decimals become exact decimal strings."""
        return {
            "usd": decimal_text(self.usd),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "prompt_price": decimal_text(self.prompt_price),
            "completion_price": decimal_text(self.completion_price),
            "reasoning_tokens": self.reasoning_tokens,
            "reasoning_price": decimal_text(self.reasoning_price),
            "request_price": decimal_text(self.request_price),
            "tier_min_prompt_tokens": self.tier,
            "source": self.source,
            "notes": list(self.notes),
        }


def worst_case_cost(
    sheet: PriceSheet,
    prompt_tokens: int,
    completion_tokens: int | None,
    reasoning_tokens: int = 0,
) -> Cost:
    """The worst-case cost of one call.

    ``cost = prompt_tokens x prompt + (completion_tokens - reasoning_tokens) x completion
    + reasoning_tokens x internal_reasoning + request``; without an ``internal_reasoning``
    price every completion token is priced at ``completion``. Per-search ``web_search``
    prices are not included (a call's searches are not known in advance).

    Args:
        sheet: the model's prices (size tiers apply by ``prompt_tokens``; time-of-day
            tiers are ignored and noted).
        prompt_tokens: the estimated prompt size, in tokens.
        completion_tokens: the length limit of the request (``max_tokens``), in tokens;
            ``None`` when no limit is sent.
        reasoning_tokens: the reasoning allowance inside that limit, in tokens.

    >>> # worst_case_cost(sheet, 1200, 2000).usd -> Decimal('0.0336')
    """
    if sheet.tiers:
        applied = sheet.at(prompt_tokens)
        prices, tier, notes = applied.prices, applied.tier, list(applied.notes)
    else:  # what sheet.at() gives without tiers, without making it
        prices, tier, notes = dict(sheet.prices), None, []
    prompt_price = prices.get("prompt")
    completion_price = prices.get("completion")
    reasoning_price = prices.get("internal_reasoning")
    request_price = prices.get("request")
    reasoning = min(reasoning_tokens, completion_tokens or 0) if reasoning_price is not None else 0
    if reasoning:
        notes.append(f"{reasoning} of the {completion_tokens} completion tokens are the reasoning "
                     f"allowance, priced at internal_reasoning ({decimal_text(reasoning_price)} "
                     "USD per token)")
    usd: Decimal | None = None
    if prompt_price is None or completion_price is None:
        notes.append("price unknown in metadata and models.yaml")
    elif completion_tokens is None:
        notes.append("no length limit is sent, so the completion is unbounded")
    else:
        usd = prompt_tokens * prompt_price + (completion_tokens - reasoning) * completion_price
        if reasoning and reasoning_price is not None:
            usd += reasoning * reasoning_price
        if request_price:
            usd += request_price
    return Cost(
        usd=usd, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        prompt_price=prompt_price, completion_price=completion_price, tier=tier,
        notes=tuple(notes), reasoning_tokens=reasoning, reasoning_price=reasoning_price,
        request_price=request_price, source=sheet.source,
    )


@dataclass(frozen=True, slots=True)
class CostLine:
    """One priced quantity.

    Attributes:
        item: what is priced: ``input``, ``cache_read``, ``cache_write``, ``audio``,
            ``output``, ``reasoning``, ``request``, ``image`` or ``web_search``.
        quantity: tokens, requests, images or searches.
        price_key: the price used (``input_cache_read``, ``prompt``, ...).
        unit_price: USD per unit.
        usd: ``quantity x unit_price``.
    """

    item: str
    quantity: int
    price_key: str
    unit_price: Decimal
    usd: Decimal

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping; USD figures are exact decimal strings."""
        return {"item": self.item, "quantity": self.quantity, "price_key": self.price_key,
                "unit_price": decimal_text(self.unit_price), "usd": decimal_text(self.usd)}


@dataclass(frozen=True, slots=True)
class UsageCost:
    """The cost of a response (or several) from its usage.

    Attributes:
        usd: the total in USD, or ``None`` when a token count or a needed price is unknown.
        lines: the priced quantities.
        source: the price source: the metadata (file or URL) and its date, and the endpoint.
        date: the metadata's date, or ``None``.
        reported_usd: ``usage.cost`` as OpenRouter charged it, or ``None``.
        difference: ``reported_usd - usd`` (shown, never hidden), or ``None``.
        notes: fallbacks, ignored tiers, unknowns.
    """

    usd: Decimal | None
    lines: tuple[CostLine, ...]
    source: str
    date: str | None
    reported_usd: Decimal | None = None
    difference: Decimal | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping; USD figures are exact decimal strings."""
        return {
            "usd": decimal_text(self.usd), "source": self.source, "date": self.date,
            "reported_usd": decimal_text(self.reported_usd),
            "difference": decimal_text(self.difference),
            "lines": [line.to_dict() for line in self.lines], "notes": list(self.notes),
        }


def usage_cost(
    usage: Usage,
    sheet: PriceSheet,
    *,
    images: int = 0,
    one_hour_cache: bool = False,
    when: datetime | None = None,
) -> UsageCost:
    """Price one response's usage.

    Args:
        usage: the response's tokens (see :class:`~compiler.pricing.usage.Usage`).
        sheet: the prices of the endpoint that served it (or of the model).
        images: input images in the request (priced per image where ``image`` is published).
        one_hour_cache: the request asked for a one-hour cache (``cache_control.ttl: 1h``),
            so cache writes are priced at ``input_cache_write_1h`` where published.
        when: when the response was made (its ``created``), for time-of-day tiers.

    Returns:
        The cost, compared with ``usage.cost`` when the response reports it.
    """
    notes: list[str] = []
    if usage.input_tokens is None or usage.output_tokens is None:
        missing = [n for n, v in (("prompt_tokens", usage.input_tokens),
                                  ("completion_tokens", usage.output_tokens)) if v is None]
        return UsageCost(usd=None, lines=(), source=sheet.source, date=sheet.date,
                         reported_usd=usage.reported_cost,
                         notes=(f"the response reports no {' or '.join(missing)}",))
    applied = sheet.at(usage.input_tokens, when)
    notes += applied.notes
    prices = applied.prices
    lines: list[CostLine] = []
    unknown: list[str] = []

    def add(item: str, quantity: int, *keys: str) -> None:
        if quantity <= 0:
            return
        for n, key in enumerate(keys):
            price = prices.get(key)
            if price is not None:
                if n:
                    notes.append(f"{item}: no {keys[0]} price is published, so {key} was used")
                lines.append(CostLine(item, quantity, key, price, quantity * price))
                return
        unknown.append(keys[0])

    cached, written = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
    audio = usage.audio_tokens or 0
    add("input", max(usage.input_tokens - cached - written - audio, 0), "prompt")
    add("cache_read", cached, "input_cache_read", "prompt")
    write_keys = ("input_cache_write_1h", "input_cache_write") if one_hour_cache else (
        "input_cache_write",)
    add("cache_write", written, *write_keys, "prompt")
    add("audio", audio, "audio", "prompt")
    reasoning = usage.reasoning_tokens
    if prices.get("internal_reasoning") is not None and reasoning is not None:
        add("output", max(usage.output_tokens - reasoning, 0), "completion")
        add("reasoning", min(reasoning, usage.output_tokens), "internal_reasoning")
    else:
        if prices.get("internal_reasoning") is not None:
            notes.append("internal_reasoning is priced but the response reports no "
                         "reasoning_tokens: every output token priced at completion")
        add("output", usage.output_tokens, "completion")
    if prices.get("request") is not None:
        add("request", usage.responses, "request")
    if prices.get("image") is not None:
        add("image", images, "image")
    if prices.get("web_search") is not None:
        if usage.web_searches is None:
            notes.append("web_search is priced per search but the response reports no "
                         "searches (usage.server_tool_use.web_search_requests)")
        else:
            add("web_search", usage.web_searches, "web_search")
    usd: Decimal | None = sum((line.usd for line in lines), Decimal(0))
    if unknown:
        usd = None
        notes.append(f"no price for {', '.join(unknown)} in the price source")
    difference = None if usd is None or usage.reported_cost is None else (
        usage.reported_cost - usd)
    if difference:
        notes.append(f"OpenRouter reports {decimal_text(usage.reported_cost)} USD, "
                     f"{decimal_text(difference)} USD from the computed figure")
    return UsageCost(usd=usd, lines=tuple(lines), source=sheet.source, date=sheet.date,
                     reported_usd=usage.reported_cost, difference=difference, notes=tuple(notes))


def total_cost(costs: Sequence[UsageCost]) -> Decimal | None:
    """The sum of several costs in USD, or ``None`` when any is unknown."""
    total = Decimal(0)
    for cost in costs:
        if cost.usd is None:
            return None
        total += cost.usd
    return total
