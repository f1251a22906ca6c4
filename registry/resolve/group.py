"""Capabilities of a route-plan group: endpoints that must each serve the whole body.

The group's endpoint layer (the parameters every member lists, the smallest limits)
sits above the published model metadata and below the YAML layers. A declared limit
that differs from the published one is recorded as a
:class:`~registry.resolve.capabilities.LimitChange`; a declared limit above it is capped
to it, since an endpoint cannot return more than it publishes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from registry.resolve.assemble import build_resolved, sampling_sources
from registry.resolve.capabilities import EndpointCaps, LimitChange, Provenance, ResolvedModel
from registry.resolve.layers import defaults_merged, group_values
from registry.resolve.merge import Layer, LazyProvenance, merge_values

__all__ = ["resolve_group"]


def resolve_group(
    model_id: str,
    info: Mapping[str, Any] | None,
    layers: list[Layer],
    group: tuple[EndpointCaps, ...],
    provenance_of: Callable[[tuple[str, ...]], Provenance],
    alias: tuple[str | None, list[str]] | None = None,
) -> ResolvedModel:
    """Resolve ``model_id`` for ``group``.

    Args:
        model_id: the model.
        info: its published core fields, or ``None`` when it is absent from metadata
            (declared only: its layers start with YAML).
        layers: the model's layers, metadata first when published, then YAML, then
            the caller's ``provider``.
        group: the endpoints (at least one).
        provenance_of: provenance of the group's endpoint values.
        alias: what :func:`registry.resolve.aliases.follow_alias` found, or ``None``.
    """
    declared_only = info is None
    published = group_values(group)
    layers = list(layers)
    layers.insert(0 if declared_only else 1, Layer(published, provenance_of, True))
    merged = merge_values(defaults_merged()[0], layers)
    provenance = LazyProvenance(defaults_merged(), layers, merged)
    changes: list[LimitChange] = []
    capped: dict[str, int] = {}
    for key in ("context_length", "max_completion_tokens"):
        figure = published.get("limits", {}).get(key)
        value = merged.get("limits", {}).get(key)
        source = provenance.get(f"limits.{key}")
        if figure is None or value is None or value == figure or source is None:
            continue
        if source.layer in ("models.yaml", "stages.yaml"):
            changes.append(LimitChange(f"limits.{key}", figure, value, min(value, figure), source))
            if value > figure:
                capped[key] = figure
    if capped:
        layers.append(Layer({"limits": capped}, provenance_of, True))
        merged = merge_values(defaults_merged()[0], layers)
        provenance = LazyProvenance(defaults_merged(), layers, merged)
    return build_resolved(model_id, merged, provenance, declared_only=declared_only,
                          endpoints=group, endpoint_group=True,
                          max_prompt_tokens=merged.get("limits", {}).get("max_prompt_tokens"),
                          limit_changes=tuple(changes), info=info, alias=alias,
                          sampling_from=sampling_sources(layers))
