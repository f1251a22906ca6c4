"""The prices a compiled request is costed with: :class:`PriceBook`, one model-level
:class:`~compiler.pricing.prices.PriceSheet` plus one per published endpoint.

Built from the registry the request was compiled from: the catalog's ``pricing`` (with
``models.yaml`` ``prompt``/``completion`` prices winning where declared) and each
endpoint's ``pricing`` from the endpoint data.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from compiler.pricing.prices import PriceSheet, sheet_from_pricing
from registry.resolve.capabilities import ResolvedModel
from registry.resolve.endpoints import derive_slug
from registry.resolve.resolver import Registry

__all__ = ["EndpointPrices", "PriceBook", "price_book"]


@dataclass(frozen=True, slots=True)
class EndpointPrices:
    """The prices of one endpoint.

    Attributes:
        slug: its routing slug (``tag``, else the slug derived from its provider name).
        provider_name: its display name (what a response's ``provider`` says), or ``None``.
        sheet: its prices.
    """

    slug: str
    provider_name: str | None
    sheet: PriceSheet

    def matches(self, provider: str) -> bool:
        """Whether a response's ``provider`` (a display name or a slug) names this endpoint."""
        want = provider.strip().lower()
        names = {self.slug.lower(), self.slug.lower().split("/")[0]}
        if self.provider_name:
            names |= {self.provider_name.strip().lower(), derive_slug(self.provider_name)}
        return want in names or derive_slug(provider) in names


@dataclass(frozen=True, slots=True)
class PriceBook:
    """Model-level prices and per-endpoint prices of one model.

    Attributes:
        model: the model-level sheet.
        endpoints: one entry per published endpoint, in published order (empty
            without endpoint data).
    """

    model: PriceSheet
    endpoints: tuple[EndpointPrices, ...] = ()

    def matching(self, provider: str) -> tuple[EndpointPrices, ...]:
        """The endpoints a response's ``provider`` names (several share a provider name)."""
        return tuple(e for e in self.endpoints if e.matches(provider))


def _declared(resolved: ResolvedModel) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    prices = (("prompt", resolved.prompt_price), ("completion", resolved.completion_price))
    for key, value in prices:
        source = resolved.source_of(f"pricing.{key}")
        if value is not None and source is not None and source.layer != "metadata":
            out[key] = value
    return out


_BOOKS: weakref.WeakKeyDictionary[Registry, dict[tuple[str, str | None], PriceBook]] = (
    weakref.WeakKeyDictionary()
)
#: Per registry, the books by model and models.yaml-declared prices, so the stages of a
#: model that declare the same prices (most of them: none) share one book; and by model
#: and resolved model (kept, so its id stays its own): ``(resolved, book)``.
_SHARED: weakref.WeakKeyDictionary[Registry, dict[tuple[str, Any], Any]] = (
    weakref.WeakKeyDictionary()
)


def price_book(registry: Registry, model: str, stage: str | None = None) -> PriceBook:
    """The prices of ``model`` in ``registry`` (memoised per registry, model and stage;
    stages of one model that declare the same prices, digit for digit, share one book).

    Args:
        registry: the registry the request was compiled from.
        model: the model id.
        stage: the stage name, for per-stage ``overrides`` prices; ``None`` for none.
    """
    memo = _BOOKS.setdefault(registry, {})
    found = memo.get((model, stage))
    if found is not None:
        return found
    resolved = registry.resolve(model, stage)
    shared = _SHARED.setdefault(registry, {})
    # stages without an override of the model resolve to the same object: its declared
    # prices are looked up once (each source_of merges provenance)
    same = shared.get((model, id(resolved)))
    if same is not None and same[0] is resolved:
        found = same[1]
    else:
        declared = _declared(resolved)
        # by the digits as declared: Decimal("0.000003") == Decimal("0.0000030"), but a
        # book keeps the digits it was given, and they show in its costs' Decimals
        key = (model, tuple((name, str(value)) for name, value in declared.items()))
        found = shared.get(key)
        if found is None:
            found = shared[key] = _book(registry, model, declared)
        shared[(model, id(resolved))] = (resolved, found)
    memo[(model, stage)] = found
    return found


def _book(registry: Registry, model: str, declared: dict[str, Decimal]) -> PriceBook:
    catalog = registry.catalog
    info = catalog.get(model)
    sheet = sheet_from_pricing(
        None if info is None else info.pricing, source=catalog.describe(),
        date=catalog.fetched_at, declared=declared,
    )
    endpoints: list[EndpointPrices] = []
    listed = registry.endpoints(model)
    where, when = registry.endpoint_source(model)
    for endpoint in () if listed is None else listed.endpoints:
        slug = endpoint.tag or (derive_slug(endpoint.provider_name) if endpoint.provider_name
                                else None)
        if not slug:
            continue
        own = sheet if endpoint.pricing is None else sheet_from_pricing(
            endpoint.pricing, source=f"{where} endpoints of {model}"
            + (f" (as of {when})" if when else ""), date=when, endpoint=slug)
        endpoints.append(EndpointPrices(slug, endpoint.provider_name, own))
    return PriceBook(model=sheet, endpoints=tuple(endpoints))
