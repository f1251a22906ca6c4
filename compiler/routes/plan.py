"""Compile a route plan: one attempt per group of endpoints that can all serve its body.

OpenRouter serves a request on one endpoint of the model, and endpoints differ in what
they accept (https://openrouter.ai/docs/guides/routing/provider-selection). So the
plan first applies the filters OpenRouter applies (the stage's ``provider`` routing,
``status``, and the prompt against each endpoint's ``context_length`` and
``max_prompt_tokens``), then compiles the strongest body each remaining endpoint accepts,
and groups endpoints whose bodies are identical into one attempt. Each attempt's
``provider`` names its group (``only`` plus ``allow_fallbacks: false``, and ``ignore``
for endpoints a base slug would also select), so OpenRouter can send it nowhere else.
Attempts are ordered strongest first: the caller's tools kept, then rung, then fewest
adjustments, then the larger length limit, then the published order of the endpoints
(OpenRouter lists its preferred endpoint first). Every endpoint ends in an attempt or with an
``excluded_by`` reason; no endpoint is excluded for a missing feature.

A stage pinned to one slug (:func:`registry.resolve.routing.is_pin`) has one attempt,
compiled for the intersection of what the matched endpoints support, and keeps the
caller's slug.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from compiler.compiled import CompiledRequest
from compiler.errors import AdjustmentRefused, NoEndpointError, PromptTooLongError
from compiler.intent import RUNGS, Intent
from compiler.policy import check_refused
from compiler.report import Adjustment
from compiler.routes.single import Single, compile_single
from compiler.routes.table import RouteRow, row_for, table_text
from registry.resolve.capabilities import EndpointCaps, Provenance, ResolvedModel
from registry.resolve.resolver import Registry
from registry.resolve.routing import Exclusion, is_pin, route_filter, unmatched_slugs

__all__ = ["Plan", "compile_plan"]


@dataclass(frozen=True, slots=True)
class Plan:
    """A compiled route plan and what a replay with other messages needs.

    Attributes:
        compiled: the first attempt, with the later ones in ``attempts`` and the route
            table in ``routes``.
        singles: one :class:`Single` per attempt, in order.
        replayable: the plan holds for any prompt up to every attempt's ceiling (no
            endpoint was excluded because of the prompt).
    """

    compiled: CompiledRequest
    singles: tuple[Single, ...]
    replayable: bool


def _body_key(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("messages", "provider")}


def _length(body: Mapping[str, Any]) -> int:
    value = body.get("max_tokens", body.get("max_completion_tokens"))
    return value if isinstance(value, int) else 0


def _strength(single: Single, group: Sequence[EndpointCaps]) -> tuple[int, ...]:
    compiled = single.compiled
    rung = RUNGS.index(compiled.rung) if compiled.rung in RUNGS else 0
    # the caller's tools are part of the request itself: a body that keeps them first
    tools = len(compiled.body.get("tools") or ()) - (compiled.rung == "tool")
    return (-tools, rung, len(compiled.report.adjustments), -_length(compiled.body),
            min(e.index for e in group), -len(group))


def _evidence(model: str, group: Sequence[EndpointCaps]) -> Provenance:
    return Provenance(
        layer="endpoints",
        source=f"/endpoints of {model} ({', '.join(e.label for e in group)})",
        field="endpoints[]",
    )


def _slug(endpoint: EndpointCaps) -> str:
    return endpoint.tag or endpoint.derived_slug or endpoint.provider_name or endpoint.label


def _data_notes(model: str, caps: Sequence[EndpointCaps]) -> list[Adjustment]:
    """Report assumptions about the endpoint data itself."""
    rows = []
    for e in caps:
        if e.assumed_parameters:
            rows.append(Adjustment(
                "route.parameters_assumed", f"endpoints[{e.label}].supported_parameters", None,
                sorted(e.supported_parameters),
                f"{e.label} publishes no supported_parameters; the model's list is assumed",
                _evidence(model, (e,))))
        if e.merged > 1:
            rows.append(Adjustment(
                "route.tag_ambiguous", f"endpoints[{e.label}]", e.merged, 1,
                f"{e.merged} endpoints publish the tag {e.label!r}; a slug cannot tell them "
                "apart, so only what all of them accept is used",
                _evidence(model, (e,))))
    return rows


def _provider_for(
    base: Mapping[str, Any], group: Sequence[EndpointCaps], caps: Sequence[EndpointCaps]
) -> dict[str, Any]:
    slugs = [_slug(e) for e in group]
    provider = dict(base)
    provider["only"] = slugs
    provider["allow_fallbacks"] = False
    members = {id(e) for e in group}
    outside = [e for e in caps if id(e) not in members and any(e.matches(s) for s in slugs)]
    if outside:
        ignore = list(provider.get("ignore") or [])
        provider["ignore"] = ignore + [_slug(e) for e in outside if _slug(e) not in ignore]
    if provider.get("order"):
        kept = [s for s in provider["order"] if any(e.matches(s) for e in group)]
        if kept:
            provider["order"] = kept
        else:
            del provider["order"]
    return provider


def _patch(
    compiled: CompiledRequest, index: int, total: int, group: Sequence[EndpointCaps],
    caps: Sequence[EndpointCaps], first: CompiledRequest | None,
) -> tuple[dict[str, Any], list[Adjustment]]:
    """Route ``compiled`` to ``group`` only: its body so routed, and the report rows that
    say why (and how it differs from ``first``)."""
    body = dict(compiled.body)
    old = dict(body.get("provider") or {})
    provider = _provider_for(old, group, caps)
    body["provider"] = provider
    model = compiled.report.model
    extra = [Adjustment(
        "route.attempt", "provider.only", old.get("only"), list(provider["only"]),
        f"attempt {index + 1} of {total}: OpenRouter may send this body only to these "
        "endpoints, each of which accepts all of it",
        _evidence(model, group))]
    derived = [e.derived_slug for e in group if not e.tag and e.derived_slug]
    if derived:
        extra.append(Adjustment(
            "route.slug_derived", "provider.only", None, derived,
            "the endpoint data has no tag; these slugs were derived from provider names",
            _evidence(model, group)))
    if first is not None:
        extra.append(Adjustment(
            "route.attempt_differs", "provider.only", first.rung, compiled.rung,
            "these endpoints cannot take the first attempt's body: "
            + "; ".join(_differences(first, compiled)),
            _evidence(model, group)))
    return body, extra


def _finished(
    single: Single, index: int, total: int, group: Sequence[EndpointCaps],
    caps: Sequence[EndpointCaps], first: CompiledRequest | None, patch: bool,
    notes: Sequence[Adjustment], extra: Sequence[str], later: tuple[CompiledRequest, ...],
    routes: tuple[RouteRow, ...] | None,
) -> Single:
    """One attempt as the plan sends it, every change made in one copy of the request
    (and one of its report): routed to ``group`` (``patch``; else only naming it),
    ``notes`` added to its adjustments and ``extra`` to its report notes, carrying the
    attempts after it (``later``) and, for the first, the route table (``routes``)."""
    compiled = single.compiled
    report = compiled.report
    changes: dict[str, Any] = {"attempts": later}
    if routes is not None:
        changes["routes"] = routes
    adjustments = report.adjustments
    if patch:
        changes["body"], added = _patch(compiled, index, total, group, caps, first)
        adjustments = (*adjustments, *added)
        changes["endpoints"] = tuple(_slug(e) for e in group)
    elif not compiled.endpoints:
        changes["endpoints"] = tuple(_slug(e) for e in group)
    if notes:
        adjustments = (*adjustments, *notes)
    if adjustments is not report.adjustments or extra:
        changes["report"] = replace(report, adjustments=adjustments,
                                    notes=(*report.notes, *extra) if extra else report.notes)
    return Single(replace(compiled, **changes), single.instructions_text,
                  single.prompt_ceiling, single.prompt_tokens)


def _differences(first: CompiledRequest, this: CompiledRequest) -> list[str]:
    """What differs between two attempts' bodies, for people: rung, keys, values."""
    found = []
    if first.rung != this.rung:
        found.append(f"rung {first.rung} -> {this.rung}")
    a, b = _body_key(first.body), _body_key(this.body)
    for key in sorted(set(a) | set(b)):
        if key in ("model", "response_format", "tools", "tool_choice"):
            continue  # the rung says it
        if key not in b:
            found.append(f"no {key}")
        elif key not in a:
            found.append(f"{key} {json.dumps(b[key])}")
        elif a[key] != b[key]:
            found.append(f"{key} {json.dumps(a[key])} -> {json.dumps(b[key])}")
    return found or ["the same body, other endpoints"]


def _refuse(model: str, rows: list[RouteRow], errors: list[Exception]) -> Exception:
    prompt = [e for e in errors if isinstance(e, PromptTooLongError)]
    refused = [e for e in errors if isinstance(e, AdjustmentRefused)]
    if errors and len(prompt) == len(errors):
        return prompt[0]
    if errors and len(refused) == len(errors):
        return refused[0]
    table = table_text(rows)
    return NoEndpointError(f"no endpoint of {model} can serve this request: {table}",
                           model=model, routes=rows)


def compile_plan(
    registry: Registry,
    intent: Intent,
    base: ResolvedModel,
    caps: tuple[EndpointCaps, ...],
    stage: str | None,
    messages: Sequence[Mapping[str, Any]],
) -> Plan:
    """Compile ``intent`` for every endpoint in ``caps`` (see the module docstring).

    Args:
        registry: the registry ``base`` came from.
        intent: the stage's intent.
        base: the model resolved without endpoint data (its ``provider`` is the
            stage's routing).
        caps: the model's endpoints (at least one).
        stage: the stage whose per-model overrides apply, or ``None``.
        messages: the caller's messages.

    Raises:
        NoEndpointError: every endpoint is excluded (carries the route table).
        PromptTooLongError: the prompt fits no endpoint.
        AdjustmentRefused: the policy refuses what every endpoint can take.
        RoutingError: a routing slug matches no endpoint.
    """
    provider = base.provider
    allowed, excluded = route_filter(base.id, caps, provider)
    exclusions: list[Exclusion] = list(excluded)
    notes: list[Adjustment] = _data_notes(base.id, allowed)
    pinned = is_pin(provider)
    operational = [e for e in allowed if not e.degraded]
    if pinned:
        pass  # the caller's slug reaches every matched endpoint: all of them must serve
    elif operational and len(operational) < len(allowed):
        exclusions += [Exclusion(e, "status", f"status {e.status}") for e in allowed
                       if e.degraded]
        allowed = tuple(operational)
    elif allowed and not operational:
        notes.append(Adjustment(
            "route.degraded_kept", "provider", None, [e.label for e in allowed],
            "every allowed endpoint publishes a degraded status; they are kept",
            _evidence(base.id, allowed)))
    groups: list[tuple[Single, list[EndpointCaps]]] = []
    errors: list[Exception] = []
    candidates = [tuple(allowed)] if pinned and allowed else [(e,) for e in allowed]
    for members in candidates:
        try:
            single = _checked(registry, intent, base.id, stage, members, messages)
        except PromptTooLongError as error:
            errors.append(error)
            exclusions += [Exclusion(e, error.limit, f"prompt about {error.prompt_tokens} "
                                     f"tokens, limit {error.context_length}") for e in members]
            continue
        except AdjustmentRefused as error:
            errors.append(error)
            exclusions += [Exclusion(e, "policy", "refuses " + ", ".join(sorted(set(
                error.kinds)))) for e in members]
            continue
        for found, group in groups:
            if _body_key(found.compiled.body) == _body_key(single.compiled.body):
                group.extend(members)
                break
        else:
            groups.append((single, list(members)))
    prompt_excluded = any(x.reason in ("context_length", "max_prompt_tokens")
                          for x in exclusions)
    rows_out = [row_for(x.endpoint, excluded_by=x.reason, detail=x.detail) for x in exclusions]
    if not groups:
        raise _refuse(base.id, rows_out, errors)
    if not pinned:
        groups = [(_regrouped(registry, intent, base.id, stage, s, g, messages), g)
                  for s, g in groups]
    groups.sort(key=lambda item: _strength(item[0], item[1]))
    whole = len(groups) == 1 and not exclusions
    extra = [f"{slug} matches no endpoint of {base.id}; OpenRouter skips it"
             for slug in unmatched_slugs(caps, provider)]
    if provider.get("data_collection") == "deny" or provider.get("zdr"):
        extra.append("provider.data_collection / zdr are passed to OpenRouter unchecked: "
                     "the endpoint data publishes no data policy")
    # (the rung and length limit of each attempt, which the rows read, and the body
    # apart from its provider, which the differences read, are the same before routing)
    rows = _rows(caps, groups, [s for s, _ in groups], rows_out)
    first = groups[0][0].compiled
    # each attempt carries the attempts after it, so a runtime can follow the plan from
    # any of them (after_error -> next_attempt); the first also carries the route table
    later: tuple[CompiledRequest, ...] = ()
    singles: list[Single] = []
    for index in range(len(groups) - 1, -1, -1):
        single, group = groups[index]
        single = _finished(single, index, len(groups), group, caps, first if index else None,
                           not (pinned or whole), notes, extra, later,
                           rows if index == 0 else None)
        singles.insert(0, single)
        later = (single.compiled, *later)
    return Plan(singles[0].compiled, tuple(singles), not prompt_excluded)


def _checked(
    registry: Registry, intent: Intent, model_id: str, stage: str | None,
    members: tuple[EndpointCaps, ...], messages: Sequence[Mapping[str, Any]],
) -> Single:
    resolved = registry.resolve(model_id, stage, provider=intent.provider, group=members)
    single = compile_single(registry, intent, resolved, messages)
    check_refused(intent, single.compiled.report)
    return single


def _regrouped(
    registry: Registry, intent: Intent, model_id: str, stage: str | None,
    single: Single, group: list[EndpointCaps], messages: Sequence[Mapping[str, Any]],
) -> Single:
    """Recompile a group of several endpoints as one, so its report names them all;
    keep the first member's result when the group's body would differ."""
    if len(group) == 1 or single.compiled.endpoints:
        return single
    try:
        joint = _checked(registry, intent, model_id, stage, tuple(group), messages)
    except (PromptTooLongError, AdjustmentRefused):
        return single
    if _body_key(joint.compiled.body) != _body_key(single.compiled.body):
        return single
    return joint


def _rows(
    caps: Sequence[EndpointCaps],
    groups: Sequence[tuple[Single, list[EndpointCaps]]],
    singles: Sequence[Single],
    excluded: Sequence[RouteRow],
) -> tuple[RouteRow, ...]:
    by_id: dict[int, RouteRow] = {}
    for index, ((_, group), single) in enumerate(zip(groups, singles, strict=True)):
        for e in group:
            by_id[id(e)] = row_for(e, attempt=index, rung=single.compiled.rung,
                                   max_tokens=_length(single.compiled.body) or None,
                                   detail=f"attempt {index + 1}")
    rows = list(excluded)
    named = {r.endpoint for r in rows}
    ordered = [by_id[id(e)] for e in caps if id(e) in by_id]
    ordered += [r for r in rows if r.endpoint in named]
    index_of = {e.label: e.index for e in caps}
    return tuple(sorted(ordered, key=lambda r: index_of.get(r.endpoint, 0)))
