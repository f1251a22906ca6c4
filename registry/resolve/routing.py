"""Which endpoints may serve a request, given OpenRouter ``provider`` routing.

Slug matching follows https://openrouter.ai/docs/guides/routing/provider-selection:
a base slug (``deepinfra``) matches every endpoint of that provider
(``deepinfra/fp8``, ``deepinfra/turbo``); a full slug matches that endpoint only. The
slug is the endpoint ``tag``. For older data without ``tag`` and for callers who write
display names (``"OpenAI"``, as OpenRouter's earlier docs did), a slug also matches the
endpoint's ``provider_name`` case-insensitively.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from registry.errors import RoutingError, closest
from registry.metadata.shapes import EndpointList
from registry.resolve.capabilities import EndpointCaps

__all__ = ["allowed_endpoints", "endpoint_caps", "restricts"]


def endpoint_caps(endpoints: EndpointList) -> tuple[EndpointCaps, ...]:
    """Return the routing-relevant facts of each endpoint, in published order."""
    return tuple(
        EndpointCaps(
            tag=e.routing_slug,
            provider_name=e.provider_name,
            supported_parameters=frozenset(e.supported_parameters),
            context_length=e.context_length or None,
            max_completion_tokens=e.max_completion_tokens or None,
            quantization=e.quantization,
            forced_tool=None if e.supports_tool_choice is None
            else e.supports_tool_choice.get("function"),
        )
        for e in endpoints.endpoints
    )


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

    Raises:
        RoutingError: a slug matches no endpoint of the model (with the closest slugs),
            or the routing leaves no endpoint at all.
    """
    known = sorted({e.tag for e in endpoints if e.tag} | {e.provider_name for e in endpoints
                                                          if e.provider_name})
    for key in ("only", "ignore", "order"):
        for slug in provider.get(key) or ():
            if not _matching(str(slug), endpoints):
                raise RoutingError(
                    f"provider.{key}: {slug!r} matches no endpoint of {model_id}",
                    suggestions=closest(str(slug), known),
                )
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
    if not allowed:
        raise RoutingError(f"the provider routing leaves no endpoint that can serve {model_id}",
                           suggestions=[])
    return tuple(allowed)
