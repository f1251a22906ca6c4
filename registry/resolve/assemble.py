"""Turning a merged capability tree into the frozen :class:`ResolvedModel`.

Models that share sampling rules or reasoning controls share one frozen value object:
most models keep the built-in defaults' sampling mapping, and reasoning controls repeat
across many models.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
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
from registry.resolve.merge import Layer

__all__ = ["build_resolved", "published_fields", "sampling_sources"]


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
# and the reasoning controls by their values (their effort budgets included).
_SAMPLING: dict[int, tuple[Mapping[str, Any], SamplingRules]] = {}
_REASONING: dict[tuple[Any, ...], ReasoningCaps] = {}
_SETS: dict[frozenset[str], frozenset[str]] = {}  # supported_parameters: one object per set
_SHARED_LIMIT = 512


#: the sampling rules by the layers' own ``sampling`` values they were merged from (by
#: identity, kept beside them): the same sources give the same merged mapping
_BY_SOURCES: dict[tuple[int, ...], tuple[tuple[Any, ...], SamplingRules]] = {}


def sampling_sources(layers: Sequence[Layer]) -> tuple[Any, ...]:
    """The ``sampling`` values of ``layers`` that set one, in order: over the built-in
    defaults they decide the merged ``sampling`` mapping (the layers are not changed
    once made)."""
    return tuple(layer.values["sampling"] for layer in layers if "sampling" in layer.values)


def _sampling_rules(
    sampling: Mapping[str, Any], sources: tuple[Any, ...] | None = None
) -> SamplingRules:
    if sources is not None:
        key = tuple(map(id, sources))
        shared = _BY_SOURCES.get(key)
        if shared is not None and all(a is b for a, b in zip(shared[0], sources, strict=True)):
            return shared[1]
        rules = _sampling_rules(sampling)
        if len(_BY_SOURCES) >= _SHARED_LIMIT:
            _BY_SOURCES.clear()
        _BY_SOURCES[key] = (sources, rules)
        return rules
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
    can_disable = bool(reasoning.get("can_disable", True))
    ordered = None if efforts is None else _ordered_efforts(tuple(efforts))
    style = str(reasoning.get("style", "effort"))
    low, high = reasoning.get("budget_min"), reasoning.get("budget_max")
    default = reasoning.get("default_effort")
    budgets = reasoning.get("effort_budgets")
    # the same table (in the same order, of ints: 1024.0 == 1024) shares the object too
    key = (supported, can_disable, ordered, style, low, high, default,
           tuple(budgets.items()) if budgets else None)
    shared = not budgets or all(type(v) is int for v in budgets.values())
    try:
        found = _REASONING.get(key) if shared else None
    except TypeError:  # an unhashable value: not shared
        found, shared = None, False
    if found is None:
        found = ReasoningCaps(supported, can_disable, ordered, style, low, high,
                              effort_budgets=_copy(budgets), default_effort=default)
        if shared:
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
    info: Mapping[str, Any] | None = None,
    alias: tuple[str | None, list[str]] | None = None,
    sampling_from: tuple[Any, ...] | None = None,
) -> ResolvedModel:
    """Build the resolved model of ``model_id`` from its merged tree (read, not copied:
    treat both as read-only afterwards), with what :func:`published_fields` takes from
    the published ``info`` and the ``alias`` found. ``sampling_from``: the
    :func:`sampling_sources` of the layers merged over the built-in defaults, when the
    tree is that merge (models with the same sources share their sampling rules)."""
    sampling = _sampling_rules(merged.get("sampling", _EMPTY), sampling_from)
    supported = frozenset(merged.get("supported_parameters", ()))
    if sampling.forced_unsupported:
        supported -= sampling.forced_unsupported
    if sampling.forced_supported:
        supported |= sampling.forced_supported
    supported = _SETS.setdefault(supported, supported)
    if len(_SETS) > _SHARED_LIMIT:
        _SETS.clear()
    limits = merged.get("limits", _EMPTY)
    pricing = merged.get("pricing", _EMPTY)
    output = merged.get("structured_output", _EMPTY)
    given, shown, target, notes = published_fields(model_id, info, merged, endpoints, alias)
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
        output_modalities=shown,
        input_modalities=given,
        alias_target=target,
        metadata_notes=notes,
    )


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, Decimal):
        return value
    return Decimal(str(value))


def published_fields(
    model_id: str, info: Mapping[str, Any] | None, tree: Mapping[str, Any],
    endpoints: tuple[EndpointCaps, ...], alias: tuple[str | None, list[str]] | None,
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None, str | None, tuple[str, ...]]:
    """What a resolved model takes from its published metadata beside the merged tree.

    Args:
        model_id: the model.
        info: its published core fields (``None``: declared only).
        tree: the merged capability tree (its ``alias_target``).
        endpoints: the endpoints it is resolved for.
        alias: what :func:`registry.resolve.aliases.follow_alias` found (the final
            target and its notes), which replaces the published slug; ``None``: none.

    Returns:
        ``(input_modalities, output_modalities, alias_target, metadata_notes)``: the
        published ``architecture`` modalities (``None`` when unpublished), the alias
        target (``None`` for no alias), and one note per published limit or price read
        as unknown (:mod:`registry.metadata.ranges`), the model's and those of the
        endpoints, then the alias's notes.
    """
    architecture = {} if info is None else (info.get("architecture") or {})
    output, given = architecture.get("output_modalities"), architecture.get("input_modalities")
    notes = () if info is None else tuple(range_notes(model_id, info))
    notes += tuple(note for cap in endpoints if cap.out_of_range
                   for note in endpoint_notes(model_id, cap.label, dict(cap.out_of_range)))
    target = tree.get("alias_target")
    if alias is not None:
        target = alias[0] if target is not None else None
        notes += tuple(alias[1])
    return (None if given is None else tuple(given), None if output is None else tuple(output),
            None if target is None else str(target), notes)
