"""The route table of a single body (``coverage: first``): which endpoints can take it.

The same filters as a route plan, applied to one finished body: the stage's routing
(:func:`registry.resolve.routing.route_filter`), the body's own ``provider.only``, then
what ``provider.require_parameters`` and the length limit leave
(https://openrouter.ai/docs/guides/routing/provider-selection).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.compiled import CompiledRequest
from compiler.passes.routing import needed_parameters
from compiler.routes.table import RouteRow, row_for
from compiler.tools.choice import choice_mode
from registry.resolve.capabilities import EndpointCaps, ResolvedModel
from registry.resolve.routing import over_price, route_filter

__all__ = ["model_price_problem", "single_routes"]


def _params(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("model", "messages", "provider")}


def _why_not(endpoint: EndpointCaps, body: Mapping[str, Any]) -> tuple[str, str] | None:
    params = _params(body)
    missing = needed_parameters(params) - endpoint.supported_parameters
    if missing == {"structured_outputs"}:
        return "structured_outputs", "strict json_schema without structured_outputs"
    if missing:
        return "require_parameters", "does not list " + ", ".join(sorted(missing))
    if isinstance(params.get("tool_choice"), dict) and endpoint.forced_tool is False:
        return "tool_choice", "supports_tool_choice.function is false"
    mode = choice_mode(params.get("tool_choice"))
    if mode is not None and not endpoint.accepts_choice(mode):
        return "tool_choice", f"supports_tool_choice.{mode} is false"
    length = params.get("max_tokens", params.get("max_completion_tokens"))
    limit = endpoint.max_completion_tokens
    if isinstance(length, int) and limit is not None and length > limit:
        return "max_completion_tokens", f"max_tokens {length} > {limit}"
    return None


def single_routes(
    model_id: str,
    caps: tuple[EndpointCaps, ...],
    compiled: CompiledRequest,
    stage_provider: Mapping[str, Any],
) -> tuple[RouteRow, ...]:
    """Return one row per endpoint of ``caps`` for the single body of ``compiled``.

    Args:
        model_id: the model, for messages.
        caps: every endpoint of the model.
        compiled: the single body.
        stage_provider: the stage's own ``provider`` routing (the body's may be
            narrowed further by the compiler, ``routing.restricted``).

    Raises:
        RoutingError: a routing slug matches no endpoint.
    """
    _, by_stage = route_filter(model_id, caps, stage_provider)
    reasons = {id(x.endpoint): (x.reason, x.detail) for x in by_stage}
    reached, _ = route_filter(model_id, caps, compiled.body.get("provider") or {})
    reach = {id(e) for e in reached}
    length = compiled.body.get("max_tokens", compiled.body.get("max_completion_tokens"))
    rows = []
    for e in caps:
        why = reasons.get(id(e)) or _why_not(e, compiled.body)
        if why is None and id(e) not in reach:
            why = ("allowed_providers", "the compiler narrowed provider.only")
        if why is None:
            rows.append(row_for(e, attempt=0, rung=compiled.rung, detail="attempt 1",
                                max_tokens=length if isinstance(length, int) else None))
        else:
            rows.append(row_for(e, excluded_by=why[0], detail=why[1]))
    return tuple(rows)


def model_price_problem(model: ResolvedModel) -> str | None:
    """Without endpoint data: why the model-level prices break ``provider.max_price``
    (OpenRouter would answer 404), or ``None``."""
    max_price = model.provider.get("max_price")
    if not max_price:
        return None
    prices = tuple((k, v) for k, v in (("prompt", model.prompt_price),
                                       ("completion", model.completion_price)) if v is not None)
    stand_in = EndpointCaps(tag=None, provider_name=None,
                            supported_parameters=model.supported_parameters, pricing=prices)
    return over_price(stand_in, max_price)
