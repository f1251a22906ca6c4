"""The capability layers every resolution merges, and where their values come from.

A layer is a nested mapping in models.yaml entry shape (see docs/configuration.md) plus
a function naming the source of each leaf (:class:`registry.resolve.merge.Layer`). Here: the
built-in defaults, the published metadata of a model, the capabilities of the endpoints
routing allows, the caller's ``provider`` object, and the provenance of a YAML entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from registry.resolve.capabilities import EndpointCaps, Provenance
from registry.resolve.merge import Layer, merge_layers

if TYPE_CHECKING:
    from registry.declarations.files import ModelsFile, StagesFile
    from registry.metadata.core import CoreFields

__all__ = [
    "DEFAULTS",
    "DEFAULT_SAMPLING_RANGES",
    "METADATA_FIELDS",
    "caller_provenance",
    "default_provenance",
    "defaults_merged",
    "endpoint_values",
    "group_values",
    "metadata_values",
    "put_path",
    "top_context_binds",
    "yaml_provenance",
]

#: OpenRouter's documented parameter ranges, the defaults that models.yaml narrows
#: (https://openrouter.ai/docs/api_reference/parameters).
DEFAULT_SAMPLING_RANGES: dict[str, dict[str, float]] = {
    "temperature": {"min": 0.0, "max": 2.0},
    "top_p": {"min": 0.0, "max": 1.0},
    "top_k": {"min": 0},
    "min_p": {"min": 0.0, "max": 1.0},
    "top_a": {"min": 0.0, "max": 1.0},
    "frequency_penalty": {"min": -2.0, "max": 2.0},
    "presence_penalty": {"min": -2.0, "max": 2.0},
    "repetition_penalty": {"min": 0.0, "max": 2.0},
}

#: The built-in defaults layer, the lowest of all (docs/configuration.md).
DEFAULTS: dict[str, Any] = {
    # When metadata publishes no list (OpenRouter data before 2025-05), only the
    # length limit is assumed; everything else must be declared in models.yaml.
    "supported_parameters": ["max_tokens"],
    "reasoning": {"style": "effort", "can_disable": True},
    "sampling": {"ranges": DEFAULT_SAMPLING_RANGES},
    "structured_output": {"dialect": "openai-strict"},
}

#: capability path -> the OpenRouter metadata field it is read from
METADATA_FIELDS: Mapping[str, str] = {
    "supported_parameters": "supported_parameters",
    "limits.context_length": "context_length",
    "limits.max_completion_tokens": "top_provider.max_completion_tokens",
    "reasoning.can_disable": "reasoning.mandatory",
    "reasoning.efforts": "reasoning.supported_efforts",
    "reasoning.default_effort": "reasoning.default_effort",
    "pricing.prompt": "pricing.prompt",
    "pricing.completion": "pricing.completion",
    "alias_target": "alias_target.slug",
}


def _positive(value: object) -> bool:
    """A published limit is known only when positive (zero or negative: unknown)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def top_context_binds(core: CoreFields) -> bool:
    """Whether ``top_provider.context_length`` is below the model's ``context_length``
    (the request may land on that endpoint, so the smaller window is the limit)."""
    top = core.get("top_provider")
    inner = None if not top else top.get("context_length")
    if not _positive(inner):
        return False
    outer = core.get("context_length")
    return not _positive(outer) or int(inner) < int(outer)  # type: ignore[arg-type]


def metadata_values(core: CoreFields) -> dict[str, Any]:
    """The metadata layer of one model: its core fields in models.yaml entry shape.

    Lists are given as the core's tuples (the merge copies them into lists), so the
    layer, which a resolved model keeps for its provenance, holds no mutable list.
    """
    values: dict[str, Any] = {}
    parameters = core.get("supported_parameters")
    if parameters is not None:
        values["supported_parameters"] = tuple(parameters)
    limits: dict[str, Any] = {}
    context_length = core.get("context_length")
    if _positive(context_length):
        limits["context_length"] = context_length
    top = core.get("top_provider")
    if top and _positive(top.get("max_completion_tokens")):
        limits["max_completion_tokens"] = top["max_completion_tokens"]
    if top and top_context_binds(core):
        limits["context_length"] = top["context_length"]
    if limits:
        values["limits"] = limits
    published = core.get("reasoning")
    if published is not None:
        reasoning: dict[str, Any] = {"can_disable": not published.get("mandatory", False)}
        efforts = published.get("supported_efforts")
        if efforts is not None:
            reasoning["efforts"] = tuple(efforts)
        if published.get("default_effort") is not None:
            reasoning["default_effort"] = published["default_effort"]
        values["reasoning"] = reasoning
    pricing = core.get("pricing")
    if pricing:
        prices = {k: v for k in ("prompt", "completion") if (v := pricing.get(k)) is not None}
        if prices:
            values["pricing"] = prices
    alias = core.get("alias_target")
    slug = None if not alias else alias.get("slug")
    if slug and slug != core.get("id"):
        values["alias_target"] = slug
    return values


def endpoint_values(caps: tuple[EndpointCaps, ...]) -> dict[str, Any]:
    """Capabilities of a set of allowed endpoints: the union of their parameters (one
    of them must serve the whole set, checked by the compiler) and the smallest limits
    (so the request fits whichever endpoint serves it)."""
    values: dict[str, Any] = {
        "supported_parameters": sorted(set().union(*(c.supported_parameters for c in caps)))
    }
    limits = {}
    for key in ("context_length", "max_completion_tokens"):
        known = [getattr(c, key) for c in caps if _positive(getattr(c, key))]
        if known:
            limits[key] = min(known)
    if limits:
        values["limits"] = limits
    return values


def group_values(caps: tuple[EndpointCaps, ...]) -> dict[str, Any]:
    """Capabilities of a route-plan group, every member of which must serve the whole
    body: the parameters all of them list and the smallest limits, in tokens."""
    values: dict[str, Any] = {
        "supported_parameters": sorted(frozenset.intersection(
            *(c.supported_parameters for c in caps)))
    }
    limits = {}
    for key in ("context_length", "max_completion_tokens", "max_prompt_tokens"):
        known = [getattr(c, key) for c in caps if getattr(c, key)]
        if known:
            limits[key] = min(known)
    if limits:
        values["limits"] = limits
    return values


def caller_provenance(path: tuple[str, ...]) -> Provenance:
    """Provenance of a value from the ``provider`` argument of a compile."""
    return Provenance(layer="caller", source="compile_request(provider=...)",
                      field=".".join(path))


def put_path(values: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``value`` at ``path`` in nested dicts, creating the dicts on the way."""
    node = values
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    if path:
        node[path[-1]] = value


@functools.cache
def defaults_merged() -> tuple[dict[str, Any], dict[str, Provenance]]:
    """The built-in defaults layer, merged once; every resolution starts from a copy."""
    return merge_layers([Layer(DEFAULTS, default_provenance)])


@functools.cache
def default_provenance(path: tuple[str, ...]) -> Provenance:
    """Provenance of a built-in default."""
    return Provenance(layer="default", source="capability-compiler", field=".".join(path))


def yaml_provenance(
    file: ModelsFile | StagesFile, prefix: tuple[str | int, ...], layer: str
) -> Callable[[tuple[str, ...]], Provenance]:
    """Provenance of the leaves of one YAML entry (file:line of each key)."""
    name = Path(file.path).name

    def provenance(path: tuple[str, ...]) -> Provenance:
        full = (*prefix, *path)
        line, _ = file.document.locate(full)
        where = name if line is None else f"{name}:{line}"
        return Provenance(layer=layer, source=where, field=".".join(str(p) for p in full))

    return provenance
