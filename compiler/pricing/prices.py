"""The published prices of one model or endpoint: :class:`PriceSheet`.

Units, as OpenRouter publishes them (https://openrouter.ai/docs/api-reference/list-available-models,
``pricing``; facts in ``/work/shared/reference/openrouter-api.md`` section 1.4):
``prompt``, ``completion``, ``internal_reasoning``, ``input_cache_read``,
``input_cache_write`` (5-minute cache), ``input_cache_write_1h`` and ``audio`` are USD
per token; ``request`` is USD per request, ``image`` USD per input image and
``web_search`` USD per search. All are exact :class:`~decimal.Decimal` values.

``pricing.overrides`` entries are :class:`PriceTier` rows: one applies when the prompt has
more than its ``min_prompt_tokens`` tokens and/or the time is inside its
``[utc_start, utc_end)`` window (HHMM, may wrap past midnight); later entries win per
price key; a key an entry does not carry keeps the base price.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from registry.metadata.shapes import Pricing, PricingOverride

__all__ = ["PRICE_KEYS", "Applied", "PriceSheet", "PriceTier", "decimal_text", "sheet_from_pricing"]

#: Every price key a sheet reads, in the order costs list them.
PRICE_KEYS: tuple[str, ...] = (
    "prompt", "input_cache_read", "input_cache_write", "input_cache_write_1h", "audio",
    "completion", "internal_reasoning", "request", "image", "web_search",
)


def decimal_text(value: Decimal | None) -> str | None:
    """An exact decimal string without exponent or trailing zeros (``None`` stays ``None``)."""
    return None if value is None else f"{value.normalize():f}"


@dataclass(frozen=True, slots=True)
class PriceTier:
    """One ``pricing.overrides`` entry.

    Attributes:
        prices: ``(key, USD)`` pairs this entry sets (units as in :data:`PRICE_KEYS`).
        min_prompt_tokens: applies above this many prompt tokens, or ``None``.
        utc_start: start of its UTC window as HHMM, or ``None``.
        utc_end: end of its UTC window as HHMM (exclusive), or ``None``.
    """

    prices: tuple[tuple[str, Decimal], ...]
    min_prompt_tokens: int | None = None
    utc_start: int | None = None
    utc_end: int | None = None

    @property
    def timed(self) -> bool:
        """Whether the entry applies only at certain hours."""
        return self.utc_start is not None or self.utc_end is not None

    def in_window(self, when: datetime) -> bool:
        """Whether ``when`` (UTC) is inside ``[utc_start, utc_end)``; wraps past midnight."""
        start = 0 if self.utc_start is None else self.utc_start
        end = 2400 if self.utc_end is None else self.utc_end
        now = when.hour * 100 + when.minute
        return start <= now < end if start <= end else (now >= start or now < end)


@dataclass(frozen=True, slots=True)
class Applied:
    """The prices that apply to one call.

    Attributes:
        prices: price key -> USD (units as in :data:`PRICE_KEYS`); absent keys are not priced.
        tier: ``min_prompt_tokens`` of the last size tier that set a price, or ``None``.
        notes: which entries were ignored or applied, in words.
    """

    prices: Mapping[str, Decimal]
    tier: int | None
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PriceSheet:
    """The prices of one model (or one endpoint of it) and where they come from.

    Attributes:
        prices: ``(key, USD)`` base pairs (units as in :data:`PRICE_KEYS`); a key that is
            absent is not priced (OpenRouter omits keys that do not apply, 2026+).
        tiers: the ``pricing.overrides`` entries, in published order.
        source: the metadata the prices come from, with its date
            (``models-2026-08-19.json (file, as of 2026-08-19)``), plus ``, endpoint <slug>``
            for endpoint prices.
        date: the metadata's date (ISO), or ``None`` when unknown.
        endpoint: the endpoint's routing slug, or ``None`` for model-level prices.
        declared: keys set by models.yaml rather than metadata; tiers never change them.
    """

    prices: tuple[tuple[str, Decimal], ...]
    source: str
    date: str | None = None
    tiers: tuple[PriceTier, ...] = ()
    endpoint: str | None = None
    declared: frozenset[str] = frozenset()

    def price(self, key: str) -> Decimal | None:
        """The base price ``key`` in USD (per token, request, image or search), or ``None``."""
        for name, value in self.prices:
            if name == key:
                return value
        return None

    def at(self, prompt_tokens: int, when: datetime | None = None) -> Applied:
        """The prices for a call with ``prompt_tokens`` prompt tokens made at ``when`` (UTC).

        Size tiers apply when ``prompt_tokens`` exceeds their ``min_prompt_tokens``;
        time-of-day tiers apply when ``when`` is in their window, and are ignored (and
        noted) when ``when`` is ``None``.
        """
        prices = dict(self.prices)
        tier: int | None = None
        notes: list[str] = []
        ignored = 0
        for entry in self.tiers:
            if entry.timed:
                if when is None:
                    ignored += 1
                    continue
                if not entry.in_window(when):
                    continue
            if entry.min_prompt_tokens is not None and prompt_tokens <= entry.min_prompt_tokens:
                continue
            changed = False
            for key, value in entry.prices:
                if key not in self.declared:
                    prices[key] = value
                    changed = True
            if changed and entry.min_prompt_tokens is not None:
                tier = entry.min_prompt_tokens
            if changed and entry.timed:
                notes.append(f"time-of-day prices of {entry.utc_start:04d}-{entry.utc_end:04d} "
                             "UTC applied" if entry.utc_start is not None
                             and entry.utc_end is not None else "time-of-day prices applied")
        if ignored:
            notes.append(f"{ignored} time-of-day price override(s) (utc_start/utc_end) ignored; "
                         "the price differs at some hours")
        if tier is not None:
            notes.append(f"prompt of about {prompt_tokens} tokens is above {tier}: tier prices")
        return Applied(prices=prices, tier=tier, notes=tuple(notes))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping; prices are exact decimal strings in USD."""
        return {
            "source": self.source,
            "date": self.date,
            "endpoint": self.endpoint,
            "prices": {k: decimal_text(v) for k, v in self.prices},
            "tiers": [
                {"min_prompt_tokens": t.min_prompt_tokens, "utc_start": t.utc_start,
                 "utc_end": t.utc_end, "prices": {k: decimal_text(v) for k, v in t.prices}}
                for t in self.tiers
            ],
            "declared": sorted(self.declared),
        }


def _pairs(fields: Pricing | PricingOverride) -> tuple[tuple[str, Decimal], ...]:
    found = []
    for key in PRICE_KEYS:
        value = getattr(fields, key, None)
        if isinstance(value, Decimal):
            found.append((key, value))
    return tuple(found)


def sheet_from_pricing(
    pricing: Pricing | None,
    *,
    source: str,
    date: str | None,
    endpoint: str | None = None,
    declared: Mapping[str, Decimal | None] | None = None,
) -> PriceSheet:
    """Build a sheet from published pricing.

    Args:
        pricing: the model's or endpoint's ``pricing`` object, or ``None``.
        source: the metadata's description (names the file or URL and its date).
        date: the metadata's ISO date, or ``None``.
        endpoint: the endpoint's routing slug, for endpoint prices.
        declared: prices models.yaml sets (``prompt``/``completion``, USD per token);
            they replace the published ones and tiers leave them alone (``None`` values
            are skipped).
    """
    prices = dict(_pairs(pricing)) if pricing is not None else {}
    tiers = () if pricing is None else tuple(
        PriceTier(prices=_pairs(o), min_prompt_tokens=o.min_prompt_tokens,
                  utc_start=o.utc_start, utc_end=o.utc_end)
        for o in pricing.overrides
    )
    fixed: set[str] = set()
    for key, value in (declared or {}).items():
        if value is not None:
            prices[key] = value
            fixed.add(key)
    ordered = tuple((k, prices[k]) for k in PRICE_KEYS if k in prices)
    where = source if endpoint is None else f"{source}, endpoint {endpoint}"
    return PriceSheet(prices=ordered, source=where, date=date, tiers=tiers, endpoint=endpoint,
                      declared=frozenset(fixed))
