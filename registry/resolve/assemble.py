"""Turning a merged capability tree into the frozen :class:`ResolvedModel`.

Models that share sampling rules or reasoning controls share one frozen value object:
most models keep the built-in defaults' sampling mapping, and reasoning controls repeat
across many models.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from registry.metadata.ranges import endpoint_notes, range_notes
from registry.resolve.capabilities import (
    EFFORT_RANK,
    EndpointCaps,
    LimitChange,
    Provenance,
    ReasoningCaps,
    ResolvedModel,
    SamplingRules,
)

__all__ = ["build_resolved", "with_modalities", "with_published"]


@functools.lru_cache(maxsize=256)
def _ordered_efforts(values: tuple[Any, ...]) -> tuple[str, ...]:
    unique = {str(v) for v in values if str(v) in EFFORT_RANK}
    return tuple(sorted(unique, key=EFFORT_RANK.__getitem__))


_EMPTY: Mapping[str, Any] = MappingProxyType({})  # a default to read from, never stored


def _copy(value: Mapping[str, Any] | None) -> dict[str, Any]:
    """A private plain-dict copy of a merged mapping (empty when absent)."""
    return dict(value) if value else {}


# Value objects many models share, kept once (they are frozen): the sampling rules by
# the merged ``sampling`` mapping (most models share the built-in defaults' object),
# and the reasoning controls by their values.
_SAMPLING: dict[int, tuple[Mapping[str, Any], SamplingRules]] = {}
_REASONING: dict[tuple[Any, ...], ReasoningCaps] = {}
_SHARED_LIMIT = 512


def _sampling_rules(sampling: Mapping[str, Any]) -> SamplingRules:
    found = _SAMPLING.get(id(sampling))
    if found is not None and found[0] is sampling:
        return found[1]
    while_reasoning = sampling.get("while_reasoning", {})
    rules = SamplingRules(
        ranges={name: (b.get("min"), b.get("max"))
                for name, b in sampling.get("ranges", {}).items()},
        fixed=_copy(sampling.get("fixed")),
        mutually_exclusive=tuple(tuple(g) for g in sampling.get("mutually_exclusive", ())),
        unsupported_while_reasoning=frozenset(while_reasoning.get("unsupported", ())),
        fixed_while_reasoning=_copy(while_reasoning.get("fixed")),
        forced_unsupported=frozenset(sampling.get("unsupported", ())),
        forced_supported=frozenset(sampling.get("supported", ())),
    )
    if len(_SAMPLING) >= _SHARED_LIMIT:
        _SAMPLING.clear()
    _SAMPLING[id(sampling)] = (sampling, rules)
    return rules


def _reasoning_caps(reasoning: Mapping[str, Any], supported: bool) -> ReasoningCaps:
    efforts = reasoning.get("efforts")
    key = (
        supported,
        bool(reasoning.get("can_disable", True)),
        None if efforts is None else _ordered_efforts(tuple(efforts)),
        str(reasoning.get("style", "effort")),
        reasoning.get("budget_min"),
        reasoning.get("budget_max"),
        reasoning.get("default_effort"),
    )
    budgets = reasoning.get("effort_budgets")
    found = None if budgets else _REASONING.get(key)
    if found is None:
        found = ReasoningCaps(*key[:6], effort_budgets=_copy(budgets), default_effort=key[6])
        if not budgets:
            if len(_REASONING) >= _SHARED_LIMIT:
                _REASONING.clear()
            _REASONING[key] = found
    return found


def build_resolved(
    model_id: str,
    merged: Mapping[str, Any],
    provenance: Mapping[str, Provenance],
    *,
    declared_only: bool,
    endpoints: tuple[EndpointCaps, ...] = (),
    routing_restricted: bool = False,
    endpoint_group: bool = False,
    max_prompt_tokens: int | None = None,
    limit_changes: tuple[LimitChange, ...] = (),
) -> ResolvedModel:
    """Build the resolved model of ``model_id`` from its merged tree (read, not copied:
    treat both as read-only afterwards)."""
    sampling = _sampling_rules(merged.get("sampling", _EMPTY))
    supported = frozenset(merged.get("supported_parameters", ()))
    if sampling.forced_unsupported:
        supported -= sampling.forced_unsupported
    if sampling.forced_supported:
        supported |= sampling.forced_supported
    limits = merged.get("limits", _EMPTY)
    pricing = merged.get("pricing", _EMPTY)
    output = merged.get("structured_output", _EMPTY)
    return ResolvedModel(
        id=model_id,
        supported_parameters=supported,
        context_length=limits.get("context_length"),
        max_completion_tokens=limits.get("max_completion_tokens"),
        reasoning=_reasoning_caps(merged.get("reasoning", _EMPTY), "reasoning" in supported),
        sampling=sampling,
        dialect=str(output.get("dialect", "openai-strict")),
        forced_tool_with_reasoning=bool(output.get("forced_tool_with_reasoning", True)),
        provider=_copy(merged.get("provider")),
        prompt_price=_decimal(pricing.get("prompt")),
        completion_price=_decimal(pricing.get("completion")),
        notes=merged.get("notes"),
        declared_only=declared_only,
        provenance=provenance,
        tree=merged,
        endpoints=endpoints,
        routing_restricted=routing_restricted,
        max_prompt_tokens=max_prompt_tokens,
        limit_changes=limit_changes,
        endpoint_group=endpoint_group,
    )


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, Decimal):
        return value
    return Decimal(str(value))


def with_modalities(info: Mapping[str, Any] | None, resolved: ResolvedModel) -> ResolvedModel:
    """Attach the published ``architecture`` input and output modalities, when any."""
    architecture = {} if info is None else (info.get("architecture") or {})
    output, given = architecture.get("output_modalities"), architecture.get("input_modalities")
    if output is None and given is None:
        return resolved
    return replace(resolved,
                   output_modalities=None if output is None else tuple(output),
                   input_modalities=None if given is None else tuple(given))


def with_published(info: Mapping[str, Any] | None, resolved: ResolvedModel,
                   alias: tuple[str | None, list[str]] | None = None) -> ResolvedModel:
    """:func:`with_modalities`, plus the ``alias_target`` of an alias id and one note
    per published limit or price read as unknown (:mod:`registry.metadata.ranges`), the
    model's and those of the endpoints it is resolved for. ``alias`` is what
    :func:`registry.resolve.aliases.follow_alias` found (the final target and its
    notes), which replaces the published slug."""
    resolved = with_modalities(info, resolved)
    notes = () if info is None else tuple(range_notes(resolved.id, info))
    notes += tuple(note for cap in resolved.endpoints if cap.out_of_range
                   for note in endpoint_notes(resolved.id, cap.label, dict(cap.out_of_range)))
    target = resolved.tree.get("alias_target")
    if alias is not None:
        target = alias[0] if target is not None else None
        notes += tuple(alias[1])
    if not notes and target is None:
        return resolved
    return replace(resolved, metadata_notes=notes,
                   alias_target=None if target is None else str(target))
