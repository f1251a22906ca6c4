"""Routing: make sure an endpoint that may serve the request supports all of it.

Support is decided per endpoint, not per model
(https://openrouter.ai/docs/guides/features/structured-outputs): with
``provider.require_parameters: true`` OpenRouter routes only to endpoints that list
every parameter sent, and a request no endpoint can serve fails. When endpoint data is
loaded, this pass checks the body against the endpoints the routing allows:

* if no endpoint supports the whole parameter set, wants are dropped from the lowest
  precedence up (sampling, then reasoning, then output enforcement) until one does,
  each reported as ``routing.param_dropped``;
* a strict ``json_schema`` request may only go to endpoints listing
  ``structured_outputs``: ``require_parameters`` does not exclude an endpoint that lists
  ``response_format`` alone, so when some allowed endpoint lacks it, ``provider.only``
  is narrowed to the endpoints that have it (``routing.restricted``).
"""

from __future__ import annotations

from typing import Any

from compiler.passes.draft import Draft
from compiler.tools.choice import choice_mode
from registry.resolve.capabilities import EndpointCaps, Provenance

__all__ = ["apply_endpoints", "needed_parameters"]

_LENGTH_KEYS = ("max_tokens", "max_completion_tokens")


def needed_parameters(params: dict[str, Any]) -> frozenset[str]:
    """Return the ``supported_parameters`` entries an endpoint needs to serve ``params``."""
    needed = set(params)
    fmt = params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        needed.add("structured_outputs")
    for tool in params.get("tools") or ():
        if isinstance(tool, dict) and (tool.get("function") or {}).get("strict") is True:
            needed.add("structured_outputs")
    return frozenset(needed)


def _serving(draft: Draft) -> list[EndpointCaps]:
    needed = needed_parameters(draft.params)
    mode = choice_mode(draft.params.get("tool_choice"))
    forced = mode == "function"
    return [
        e
        for e in draft.model.endpoints
        if needed <= e.supported_parameters and not (forced and e.forced_tool is False)
        and (mode is None or e.accepts_choice(mode))
    ]


def _served(draft: Draft) -> bool:
    """Whether the body can be served: by every endpoint of a route-plan group, else
    by at least one allowed endpoint."""
    serving = _serving(draft)
    if draft.model.endpoint_group:
        return len(serving) == len(draft.model.endpoints)
    return bool(serving)


def _evidence(draft: Draft) -> Provenance:
    base = draft.model.source_of("supported_parameters")
    labels = ", ".join(e.label for e in draft.model.endpoints)
    return Provenance(
        layer="endpoints",
        source=f"/endpoints of {draft.model.id} ({labels})",
        field="endpoints[].supported_parameters",
        fetched_at=None if base is None else base.fetched_at,
    )


def _drop(draft: Draft, key: str, why: str) -> None:
    draft.adjust("routing.param_dropped", key, draft.params.pop(key), None, why, _evidence(draft))


def _downgrade_output(draft: Draft) -> bool:
    if draft.rung == "tool":
        function = draft.params["tools"][0]["function"]
        if function.get("strict") is True:
            # a strict call the endpoints cannot honour: the same call, not strict
            del function["strict"]
            draft.enforced_sha256 = None
            draft.adjust("output.not_strict", "tools[0].function.strict", True, None,
                         "no allowed endpoint lists structured_outputs with the whole "
                         "parameter set", _evidence(draft))
            return True
        del draft.params["tools"], draft.params["tool_choice"]
        if draft.model.supports("response_format"):
            draft.params["response_format"] = {"type": "json_object"}
            new_rung = "json"
        else:
            new_rung = "prompt"
        draft.adjust("output.downgraded", "tools", "tool", new_rung,
                     "no allowed endpoint supports the whole parameter set with a forced tool call",
                     _evidence(draft))
        draft.rung = new_rung
        return True
    fmt = draft.params.get("response_format")
    if not isinstance(fmt, dict):
        return False
    if fmt.get("type") == "json_schema":
        draft.params["response_format"] = {"type": "json_object"}
        new_rung = "json"
    else:
        del draft.params["response_format"]
        new_rung = "prompt"
    draft.adjust("output.downgraded", "response_format", draft.rung, new_rung,
                 "no allowed endpoint supports the whole parameter set with this enforcement",
                 _evidence(draft))
    draft.rung = new_rung
    return True


def _restore(
    draft: Draft, mark: int, before: dict[str, Any], reasoning_on: bool
) -> None:
    """Put back the wants dropped before an output downgrade that the downgrade alone
    made unnecessary (highest precedence first: reasoning, then sampling in the order
    the stage declared them), each only if the body stays served."""
    dropped = [a for a in draft.adjustments[mark:] if a.kind == "routing.param_dropped"]
    order = ["reasoning", *(name for name, _ in draft.intent.sampling)]
    for key in [k for k in order if any(a.path == k for a in dropped)]:
        draft.params[key] = before[key]
        if _served(draft):
            draft.adjustments[:] = [a for a in draft.adjustments
                                    if not (a.kind == "routing.param_dropped" and a.path == key
                                            and a in dropped)]
            if key == "reasoning":
                draft.reasoning_on = reasoning_on
        else:
            del draft.params[key]


def apply_endpoints(draft: Draft) -> None:
    """Fit the body to the allowed endpoints (see the module docstring)."""
    endpoints = draft.model.endpoints
    if not endpoints:
        return
    why = "no allowed endpoint supports the whole parameter set; lowest precedence dropped first"
    marks = (len(draft.adjustments), dict(draft.params), draft.reasoning_on)
    served = _served(draft)  # worked out again after each change of the body only
    if not served:
        sampled = [name for name, _ in draft.intent.sampling if name in draft.params]
        for name in reversed(sampled):
            _drop(draft, name, why)
            served = _served(draft)
            if served:
                break
    if not served and "reasoning" in draft.params:
        _drop(draft, "reasoning", why)
        draft.reasoning_on = not draft.model.reasoning.can_disable
        served = _served(draft)
    downgraded = False
    while not served and _downgrade_output(draft):
        downgraded = True
        served = _served(draft)
    if downgraded and served:
        _restore(draft, *marks)
        served = _served(draft)
    if not served:
        extras = [k for k in draft.params if k not in _LENGTH_KEYS]
        for key in extras:
            _drop(draft, key, why)
    if draft.model.endpoint_group:
        return
    serving = _serving(draft)
    fmt = draft.params.get("response_format")
    strict = isinstance(fmt, dict) and fmt.get("type") == "json_schema"
    forced = isinstance(draft.params.get("tool_choice"), dict)
    if (strict or forced) and serving and len(serving) < len(endpoints):
        only = sorted({e.label for e in serving})
        draft.provider_patch["only"] = only
        what = ("a strict json_schema request may only go to endpoints listing "
                "structured_outputs" if strict else "a forced tool call may only go to "
                "endpoints whose supports_tool_choice allows naming a function")
        draft.adjust("routing.restricted", "provider.only",
                     draft.model.provider.get("only"), only,
                     f"{what}; require_parameters alone does not exclude the others",
                     _evidence(draft))
