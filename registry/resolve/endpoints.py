"""Honest endpoint data: published ``/endpoints`` records as the router will see them.

Three repairs, each visible on the resulting :class:`EndpointCaps`:

* an endpoint that publishes no ``supported_parameters`` inherits the model's list
  (``assumed_parameters``), instead of reading as "supports nothing";
* endpoints that publish the same ``tag`` are one endpoint to the router (a slug
  cannot tell them apart), so they are merged: parameters intersected, limits the
  smallest, prices the highest (``merged`` counts them);
* tagless (2025) data gets a slug guessed from the provider name (``derived_slug``);
  it is matched beside the name, and the compiler reports it before writing it.

Routing semantics: https://openrouter.ai/docs/guides/routing/provider-selection.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from decimal import Decimal

from registry.metadata.shapes import Endpoint, EndpointList
from registry.resolve.capabilities import EndpointCaps

__all__ = ["PRICE_KEYS", "derive_slug", "endpoint_caps", "intersect"]

#: Endpoint price keys the router compares with ``provider.max_price``.
PRICE_KEYS: tuple[str, ...] = ("prompt", "completion", "request", "image")


def derive_slug(provider_name: str) -> str:
    """Guess a routing slug from a display name: lower case, runs of other characters
    become ``-``.

    >>> derive_slug("Google AI Studio")
    'google-ai-studio'
    """
    return re.sub(r"[^a-z0-9/]+", "-", provider_name.strip().lower()).strip("-")


def _prices(endpoint: Endpoint) -> tuple[tuple[str, Decimal], ...]:
    pricing = endpoint.pricing
    if pricing is None:
        return ()
    found = []
    for key in PRICE_KEYS:
        value = getattr(pricing, key, None)
        if isinstance(value, Decimal):
            found.append((key, value))
    return tuple(found)


def _positive(value: int | None) -> int | None:
    """A published limit, or ``None`` when absent, zero or negative (impossible)."""
    return value if value is not None and value > 0 else None


def _one(endpoint: Endpoint, index: int, model_parameters: Sequence[str] | None) -> EndpointCaps:
    published = endpoint.supported_parameters
    assumed = not published and model_parameters is not None
    tool_choice = endpoint.supports_tool_choice
    return EndpointCaps(
        tag=endpoint.tag or None,
        provider_name=endpoint.provider_name,
        supported_parameters=frozenset(model_parameters if assumed and model_parameters
                                       else published),
        context_length=_positive(endpoint.context_length),
        max_completion_tokens=_positive(endpoint.max_completion_tokens),
        quantization=endpoint.quantization,
        forced_tool=None if tool_choice is None else tool_choice.get("function"),
        tool_choice_modes=None if tool_choice is None
        else frozenset(mode for mode, on in tool_choice.items() if on is True),
        max_prompt_tokens=_positive(endpoint.max_prompt_tokens),
        status=endpoint.status,
        pricing=_prices(endpoint),
        assumed_parameters=assumed,
        derived_slug=None if endpoint.tag or not endpoint.provider_name
        else derive_slug(endpoint.provider_name) or None,
        index=index,
        out_of_range=tuple((endpoint.out_of_range or {}).items()),
    )


def _smallest(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v]
    return min(known) if known else None


def intersect(caps: Sequence[EndpointCaps]) -> EndpointCaps:
    """Return one endpoint that every one of ``caps`` can stand for: the parameters all
    of them list, the smallest limits, the highest prices, the worst status; a forced
    tool only when none forbids it. The identity (tag, name) is the first one's."""
    first = caps[0]
    if len(caps) == 1:
        return first
    forced = [c.forced_tool for c in caps]
    statuses = [c.status for c in caps if c.status is not None]
    quantizations = {c.quantization for c in caps}
    prices: dict[str, Decimal] = {}
    for c in caps:
        for key, value in c.pricing:
            prices[key] = max(value, prices.get(key, value))
    return EndpointCaps(
        tag=first.tag,
        provider_name=first.provider_name,
        supported_parameters=frozenset.intersection(*(c.supported_parameters for c in caps)),
        context_length=_smallest(c.context_length for c in caps),
        max_completion_tokens=_smallest(c.max_completion_tokens for c in caps),
        quantization=first.quantization if len(quantizations) == 1 else None,
        forced_tool=False if False in forced else (None if None in forced else True),
        tool_choice_modes=_common_modes(caps),
        max_prompt_tokens=_smallest(c.max_prompt_tokens for c in caps),
        status=next((s for s in statuses if s != 0), statuses[0] if statuses else None),
        pricing=tuple(sorted(prices.items())),
        assumed_parameters=any(c.assumed_parameters for c in caps),
        merged=sum(c.merged for c in caps),
        derived_slug=first.derived_slug,
        index=first.index,
        out_of_range=tuple(dict(pair for c in caps for pair in c.out_of_range).items()),
    )


def endpoint_caps(
    endpoints: EndpointList, model_parameters: Sequence[str] | None = None
) -> tuple[EndpointCaps, ...]:
    """Return the routing-relevant facts of each distinct endpoint, in published order.

    Args:
        endpoints: a model's ``/endpoints`` data.
        model_parameters: the model's published ``supported_parameters``, inherited by
            an endpoint that publishes none; ``None`` keeps such an endpoint empty.

    Returns:
        One :class:`EndpointCaps` per distinct routing slug (duplicates merged).
    """
    caps = [_one(e, i, model_parameters) for i, e in enumerate(endpoints.endpoints)]
    by_slug: dict[str, list[EndpointCaps]] = {}
    order: list[str] = []
    for i, c in enumerate(caps):
        key = (c.tag or c.derived_slug or c.provider_name or f"#{i}").lower()
        if key not in by_slug:
            by_slug[key] = []
            order.append(key)
        by_slug[key].append(c)
    return tuple(intersect(by_slug[key]) for key in order)


def _common_modes(caps: Sequence[EndpointCaps]) -> frozenset[str] | None:
    """The ``tool_choice`` modes every endpoint that publishes them accepts (``None``:
    none publishes any)."""
    published = [c.tool_choice_modes for c in caps if c.tool_choice_modes is not None]
    return frozenset.intersection(*published) if published else None
