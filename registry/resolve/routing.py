"""Which endpoints may serve a request, given OpenRouter ``provider`` routing.

Slug matching follows https://openrouter.ai/docs/guides/routing/provider-selection:
a base slug (``deepinfra``) matches every endpoint of that provider
(``deepinfra/fp8``, ``deepinfra/turbo``); a full slug matches that endpoint only. The
slug is the endpoint ``tag``. For older data without ``tag`` and for callers who write
display names (``"OpenAI"``, as OpenRouter's earlier docs did), a slug also matches the
endpoint's ``provider_name`` case-insensitively.

:func:`route_filter` applies the routing filters OpenRouter applies before it looks at
the body (``only``, ``ignore``, ``order`` without fallbacks, ``quantizations``,
``max_price``) and says why each endpoint it drops is dropped. ``max_price`` is in
USD per million tokens for ``prompt`` and ``completion`` (per request / per image for
``request`` / ``image``), while endpoint ``pricing`` is USD per token
(https://openrouter.ai/docs/guides/routing/provider-selection).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from registry.errors import RoutingError, closest
from registry.resolve.capabilities import EndpointCaps

__all__ = ["EXCLUSION_REASONS", "Exclusion", "allowed_endpoints", "is_pin", "over_price",
           "restricts", "route_filter", "unmatched_slugs",
           "unverifiable"]


def restricts(provider: Mapping[str, Any]) -> bool:
    """Return whether ``provider`` limits which endpoints may serve the request.

    ``only``, ``ignore`` and ``quantizations`` always do; ``order`` does only with
    ``allow_fallbacks: false`` (otherwise other providers remain fallbacks).
    """
    if provider.get("only") or provider.get("ignore") or provider.get("quantizations"):
        return True
    return bool(provider.get("order")) and provider.get("allow_fallbacks") is False


def _matching(slug: str, endpoints: Iterable[EndpointCaps]) -> list[EndpointCaps]:
    return [e for e in endpoints if e.matches(slug)]


def allowed_endpoints(
    model_id: str, endpoints: tuple[EndpointCaps, ...], provider: Mapping[str, Any]
) -> tuple[EndpointCaps, ...]:
    """Return the endpoints ``provider`` allows to serve ``model_id``.

    Args:
        model_id: the model, for messages.
        endpoints: every published endpoint of the model.
        provider: the OpenRouter ``provider`` object (``only``, ``ignore``, ``order``,
            ``allow_fallbacks``, ``quantizations``).

    Returns:
        The allowed endpoints; empty when the routing leaves none (the compiler then
        refuses the compile with the exclusion table).

    Raises:
        RoutingError: no slug of ``provider.only`` matches an endpoint and one is close
            to an existing slug (a typo; carries the closest slugs).
    """
    _check_slugs(model_id, endpoints, provider)
    allowed = list(endpoints)
    if provider.get("only"):
        allowed = [e for e in allowed if any(e.matches(s) for s in provider["only"])]
    if provider.get("order") and provider.get("allow_fallbacks") is False:
        allowed = [e for e in allowed if any(e.matches(s) for s in provider["order"])]
    if provider.get("ignore"):
        allowed = [e for e in allowed if not any(e.matches(s) for s in provider["ignore"])]
    if provider.get("quantizations"):
        wanted = set(provider["quantizations"])
        allowed = [e for e in allowed if e.quantization in wanted]
    return tuple(allowed)


#: Why an endpoint cannot take part in a route plan: a stable vocabulary, documented
#: in docs/adjustments.md. The first five come from the stage's own routing; the
#: others from the endpoint's published figures against the prompt, or the policy.
EXCLUSION_REASONS: Mapping[str, str] = {
    "allowed_providers": "provider.only (or provider.order without fallbacks) does not name it",
    "ignored_providers": "provider.ignore names it",
    "quantization": "its quantization is not in provider.quantizations",
    "max_price": "a price is above provider.max_price",
    "status": "its published status is degraded while an operational endpoint remains",
    "context_length": "the prompt estimate does not fit in its context_length",
    "max_prompt_tokens": "the prompt estimate exceeds its max_prompt_tokens",
    "policy": "the stage's policy refuses every body it can take",
    "require_parameters": "it does not list every parameter of the body (single-body mode)",
    "structured_outputs": "it does not list structured_outputs (single-body mode)",
    "tool_choice": "it does not allow a forced tool call (single-body mode)",
    "max_completion_tokens": "max_tokens is above its max_completion_tokens (single-body mode)",
}


@dataclass(frozen=True, slots=True)
class Exclusion:
    """One endpoint left out of every attempt, and why.

    Attributes:
        endpoint: the endpoint.
        reason: a key of :data:`EXCLUSION_REASONS`.
        detail: the figures behind it, for people.
    """

    endpoint: EndpointCaps
    reason: str
    detail: str


def is_pin(provider: Mapping[str, Any]) -> bool:
    """Return whether ``provider`` pins one slug: ``only`` (or, without ``only``,
    ``order``) names exactly one and ``allow_fallbacks`` is ``false``."""
    if provider.get("allow_fallbacks") is not False:
        return False
    named = provider.get("only") or provider.get("order") or ()
    return len(named) == 1


_MILLION = Decimal(1_000_000)


def over_price(endpoint: EndpointCaps, max_price: Mapping[str, Any]) -> str | None:
    """Return which price of ``endpoint`` is above ``max_price`` (USD per million tokens
    for ``prompt``/``completion``, as is for ``request``/``image``), or ``None``."""
    for key, limit in max_price.items():
        price = endpoint.price(key)
        if price is None or not isinstance(limit, (int, float)):
            continue
        scaled = price * _MILLION if key in ("prompt", "completion") else price
        if scaled > Decimal(str(limit)):
            unit = "USD per million tokens" if key in ("prompt", "completion") else "USD"
            return f"{key} {scaled.normalize():f} {unit} > max_price.{key} {limit}"
    return None


def route_filter(
    model_id: str, endpoints: tuple[EndpointCaps, ...], provider: Mapping[str, Any]
) -> tuple[tuple[EndpointCaps, ...], tuple[Exclusion, ...]]:
    """Split ``endpoints`` into those ``provider`` lets serve ``model_id`` and the rest.

    Args:
        model_id: the model, for messages.
        endpoints: every endpoint of the model (see ``endpoint_caps``).
        provider: the OpenRouter ``provider`` object of the stage.

    Returns:
        ``(allowed, excluded)``; ``allowed`` keeps the published order. It may be
        empty: the caller refuses the compile with the exclusion table.

    Raises:
        RoutingError: as for :func:`allowed_endpoints`.
    """
    _check_slugs(model_id, endpoints, provider)
    only = list(provider.get("only") or ())
    if not only and provider.get("order") and provider.get("allow_fallbacks") is False:
        only = list(provider["order"])
    ignore = list(provider.get("ignore") or ())
    quantizations = set(provider.get("quantizations") or ())
    max_price = provider.get("max_price") or {}
    allowed: list[EndpointCaps] = []
    excluded: list[Exclusion] = []
    for e in endpoints:
        if only and not any(e.matches(s) for s in only):
            excluded.append(Exclusion(e, "allowed_providers", f"not matched by {only}"))
        elif any(e.matches(s) for s in ignore):
            excluded.append(Exclusion(e, "ignored_providers", f"matched by {ignore}"))
        elif quantizations and e.quantization not in quantizations:
            excluded.append(Exclusion(e, "quantization",
                                      f"{e.quantization} not in {sorted(quantizations)}"))
        elif (over := over_price(e, max_price)) is not None:
            excluded.append(Exclusion(e, "max_price", over))
        else:
            allowed.append(e)
    return tuple(allowed), tuple(excluded)


def unverifiable(endpoints: tuple[EndpointCaps, ...], provider: Mapping[str, Any]) -> bool:
    """Whether ``provider.only`` names a slug the data cannot check: the endpoint data has
    no ``tag`` at all (2025 responses) and the slug matches neither a derived slug nor a
    provider name. The real slug may well exist (``google-vertex`` for the display name
    ``Google``), so such routing is compiled without endpoint data, not refused."""
    if not endpoints or any(e.tag for e in endpoints):
        return False
    return any(not _matching(str(s), endpoints) for s in provider.get("only") or ())


def unmatched_slugs(
    endpoints: tuple[EndpointCaps, ...], provider: Mapping[str, Any]
) -> list[str]:
    """Return ``"provider.KEY: 'slug'"`` for each slug of ``only``/``ignore``/``order``
    that matches no endpoint (harmless in ``ignore`` and ``order``; OpenRouter skips
    them, so a shared models.yaml routing may name providers some models lack)."""
    return [f"provider.{key}: {slug!r}" for key in ("only", "ignore", "order")
            for slug in provider.get(key) or () if not _matching(str(slug), endpoints)]


def _check_slugs(
    model_id: str, endpoints: tuple[EndpointCaps, ...], provider: Mapping[str, Any]
) -> None:
    """Refuse a ``provider.only`` none of whose slugs matches an endpoint when one of them
    looks misspelt (a close slug exists): that is a typo, not a routing choice."""
    only = [str(s) for s in provider.get("only") or ()]
    if not only or any(_matching(s, endpoints) for s in only):
        return
    known = sorted({e.tag for e in endpoints if e.tag}
                   | {e.derived_slug for e in endpoints if e.derived_slug}
                   | {e.provider_name for e in endpoints if e.provider_name})
    for slug in only:
        suggestions = closest(slug, known)
        if suggestions:
            raise RoutingError(
                f"provider.only: {slug!r} matches no endpoint of {model_id}",
                suggestions=suggestions,
            )
