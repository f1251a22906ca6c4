"""Resolved capabilities of one model: frozen value objects with provenance.

A :class:`ResolvedModel` is the result of merging every layer (built-in defaults,
published metadata, models.yaml, stages.yaml); it is what the compiler reads. Each
effective value can be explained through :meth:`ResolvedModel.source_of`.

Units: every token count is in tokens (never characters); prices are USD per token
as OpenRouter publishes them (https://openrouter.ai/docs/guides/overview/models).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

__all__ = [
    "EFFORT_RANK",
    "EndpointCaps",
    "LimitChange",
    "Provenance",
    "ReasoningCaps",
    "ResolvedModel",
    "SamplingRules",
]

#: OpenRouter's effort vocabulary, ranked from no reasoning to the most
#: (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens).
EFFORT_RANK: Mapping[str, int] = {
    "none": 0,
    "minimal": 1,
    "low": 2,
    "medium": 3,
    "high": 4,
    "xhigh": 5,
    "max": 6,
}


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where one effective value came from.

    Attributes:
        layer: ``default``, ``metadata``, ``endpoints``, ``models.yaml`` or ``stages.yaml``.
        source: the file (with ``:line`` for YAML), URL, or ``bundled seed``.
        field: the metadata field or YAML key path that holds the value.
        fetched_at: when the metadata was fetched (ISO date or datetime); ``None`` for YAML.
    """

    layer: str
    source: str
    field: str
    fetched_at: str | None = None

    def __str__(self) -> str:
        if self.layer == "default":
            return f"built-in default ({self.field})"
        if self.fetched_at:
            return f"{self.layer} {self.field} ({self.source}, as of {self.fetched_at})"
        return f"{self.source} ({self.field})"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping of the four attributes plus ``text``."""
        return {
            "layer": self.layer,
            "source": self.source,
            "field": self.field,
            "fetched_at": self.fetched_at,
            "text": str(self),
        }


@dataclass(frozen=True, slots=True)
class EndpointCaps:
    """What one serving endpoint accepts (from ``/models/{id}/endpoints``), made honest
    by :func:`registry.resolve.endpoints.endpoint_caps`.

    Attributes:
        tag: the published routing slug (``deepinfra/fp8``), or ``None`` when the data
            has no ``tag`` (2025 responses).
        provider_name: display name (``DeepInfra``).
        supported_parameters: parameters this endpoint accepts; the definitive set for
            ``provider.require_parameters``.
        context_length: context window in tokens, or ``None``.
        max_completion_tokens: largest completion in tokens, or ``None``.
        quantization: ``fp8``, ``bf16``, ... or ``None``.
        forced_tool: whether ``tool_choice`` may name a function (the endpoint's
            ``supports_tool_choice.function``), ``None`` when not published.
        tool_choice_modes: the ``tool_choice`` modes the endpoint's
            ``supports_tool_choice`` marks true (``auto``, ``none``, ``required``,
            ``function``), ``None`` when not published.
        max_prompt_tokens: largest prompt in tokens, or ``None``.
        status: the published ``status``: ``0`` operational, negative degraded,
            ``None`` unpublished.
        pricing: ``(key, USD)`` pairs as published (``prompt``/``completion`` per token,
            ``request`` per request, ``image`` per image); unknown prices are left out.
        assumed_parameters: the endpoint publishes no ``supported_parameters``, so
            :attr:`supported_parameters` is the model's list (an assumption).
        merged: how many published endpoints share this :attr:`tag` (more than one:
            OpenRouter cannot tell them apart, so the capabilities are their
            intersection and the limits their minimum).
        derived_slug: for tagless data, a slug guessed from :attr:`provider_name`
            (``Google AI Studio`` -> ``google-ai-studio``); ``None`` when a tag exists.
        index: position of the (first) endpoint in the published list.
        out_of_range: ``(field, published text)`` of each limit or price the endpoint
            published out of range, read as unknown (reported with the model).
    """

    tag: str | None
    provider_name: str | None
    supported_parameters: frozenset[str]
    context_length: int | None = None
    max_completion_tokens: int | None = None
    quantization: str | None = None
    forced_tool: bool | None = None
    max_prompt_tokens: int | None = None
    status: int | None = None
    pricing: tuple[tuple[str, Decimal], ...] = ()
    assumed_parameters: bool = False
    merged: int = 1
    derived_slug: str | None = None
    index: int = 0
    tool_choice_modes: frozenset[str] | None = None
    out_of_range: tuple[tuple[str, str], ...] = ()

    def accepts_choice(self, mode: str) -> bool:
        """Return whether ``tool_choice`` mode ``mode`` may be sent here: listed true, or
        ``supports_tool_choice`` is unpublished (nothing says it is refused)."""
        return self.tool_choice_modes is None or mode in self.tool_choice_modes

    def matches(self, slug: str) -> bool:
        """Return whether a routing slug selects this endpoint: a full slug equal to the
        tag (or derived slug), a base slug of it (``deepinfra`` selects
        ``deepinfra/fp8``), or the provider's display name, case-insensitively."""
        want = slug.strip().lower()
        for tag in (self.tag, self.derived_slug):
            if tag:
                tag = tag.lower()
                if want == tag or (tag.startswith(want + "/") and "/" not in want):
                    return True
        return self.provider_name is not None and want == self.provider_name.strip().lower()

    @property
    def label(self) -> str:
        """The tag, else the derived slug, else the provider name, for messages."""
        return self.tag or self.derived_slug or self.provider_name or "?"

    @property
    def degraded(self) -> bool:
        """Whether the published ``status`` is non-zero (the endpoint is degraded)."""
        return self.status is not None and self.status != 0

    def price(self, key: str) -> Decimal | None:
        """Return the published price ``key`` (units as in :attr:`pricing`), or ``None``."""
        for name, value in self.pricing:
            if name == key:
                return value
        return None


@dataclass(frozen=True, slots=True)
class ReasoningCaps:
    """How a model takes reasoning.

    Attributes:
        supported: the resolved ``supported_parameters`` list ``reasoning``.
        can_disable: ``False`` when reasoning is mandatory (OpenRouter's
            ``reasoning.mandatory``); effort ``none`` is then rejected.
        efforts: accepted efforts in ascending order, or ``None`` when no list is
            published or declared (any effort is sent as asked).
        style: ``effort`` (send ``reasoning.effort``), ``budget`` (send
            ``reasoning.max_tokens``) or ``toggle`` (send only ``reasoning.enabled``).
        budget_min: smallest reasoning budget the model accepts, in tokens.
        budget_max: largest reasoning budget, in tokens.
        effort_budgets: reasoning tokens to reserve per effort, in tokens.
        default_effort: the model's default effort when reasoning is enabled.
    """

    supported: bool
    can_disable: bool
    efforts: tuple[str, ...] | None
    style: str
    budget_min: int | None
    budget_max: int | None
    effort_budgets: Mapping[str, int]
    default_effort: str | None


@dataclass(frozen=True, slots=True)
class SamplingRules:
    """Value rules for sampling parameters, beyond the bare supported list.

    Attributes:
        ranges: ``param -> (min, max)``; either bound may be ``None``.
        fixed: ``param -> value`` the model accepts only.
        mutually_exclusive: groups of parameters of which at most one may be sent.
        unsupported_while_reasoning: parameters refused while reasoning is on.
        fixed_while_reasoning: ``param -> value`` required while reasoning is on.
        forced_unsupported: parameters models.yaml declares unsupported whatever
            metadata says (``sampling.unsupported``).
        forced_supported: parameters models.yaml declares supported
            (``sampling.supported``).
    """

    ranges: Mapping[str, tuple[float | None, float | None]]
    fixed: Mapping[str, Any]
    mutually_exclusive: tuple[tuple[str, ...], ...]
    unsupported_while_reasoning: frozenset[str]
    fixed_while_reasoning: Mapping[str, Any]
    forced_unsupported: frozenset[str] = frozenset()
    forced_supported: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LimitChange:
    """A declared limit that differs from the one the serving endpoints publish.

    Attributes:
        path: ``limits.context_length`` or ``limits.max_completion_tokens``.
        published: the smallest figure the endpoints publish, in tokens.
        declared: the models.yaml / stages.yaml figure, in tokens.
        applied: the figure used: the declared one when it is lower (a clamp), the
            published one when the declaration is higher (an endpoint cannot return
            more than it publishes).
        source: where the declaration is, or ``None``.
    """

    path: str
    published: int
    declared: int
    applied: int
    source: Provenance | None = None


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """Everything the compiler may rely on for one model (and optionally one stage).

    Attributes:
        id: the OpenRouter model id, e.g. ``openai/gpt-4o-mini``.
        supported_parameters: parameter names the serving endpoints accept.
        context_length: context window in tokens, or ``None`` when unknown.
        max_completion_tokens: largest completion in tokens, or ``None`` when unknown.
        reasoning: reasoning controls.
        sampling: sampling value rules.
        dialect: the schema dialect name used for strict structured output.
        forced_tool_with_reasoning: a forced tool call is allowed while reasoning
            (``structured_output.forced_tool_with_reasoning``; default true).
        provider: the default OpenRouter ``provider`` routing object (may be empty).
        prompt_price: USD per prompt token, ``None`` when unknown.
        completion_price: USD per completion token, ``None`` when unknown.
        notes: free text from models.yaml.
        declared_only: the model is absent from metadata and declared whole in YAML.
        provenance: dotted capability path -> where its value came from.
        tree: the merged capability document (nested, models.yaml entry shape).
            Read-only: nested mappings no layer changed are shared with every other
            model of the process (the built-in defaults), so changing one changes all.
        endpoints: the endpoints that may serve the request (all published endpoints,
            or those the routing allows); empty when no endpoint data is loaded.
        routing_restricted: the ``provider`` object limits the endpoints, so the
            capabilities above are those of :attr:`endpoints`.
        max_prompt_tokens: largest prompt in tokens the endpoints accept, or ``None``.
        limit_changes: declared limits that differ from the endpoints' published ones.
        endpoint_group: the capabilities are those of exactly :attr:`endpoints`, each
            of which must serve the whole request (a route-plan attempt).
        output_modalities: the published ``architecture.output_modalities``
            (``("text",)``, ``("embeddings",)``...), ``None`` when unpublished.
        input_modalities: the published ``architecture.input_modalities``
            (``("text", "image", "file")``...), ``None`` when unpublished.
        alias_target: for an alias id (``~anthropic/claude-sonnet-latest``), the model
            it routes to as published (``alias_target.slug``), whose declarations
            apply (see :mod:`registry.resolve.aliases`); ``None`` otherwise.
        metadata_notes: one line per published limit or price read as unknown because
            it is out of range (naming the model, the field and the value).
    """

    id: str
    supported_parameters: frozenset[str]
    context_length: int | None
    max_completion_tokens: int | None
    reasoning: ReasoningCaps
    sampling: SamplingRules
    dialect: str
    forced_tool_with_reasoning: bool
    provider: Mapping[str, Any]
    prompt_price: Decimal | None
    completion_price: Decimal | None
    notes: str | None
    declared_only: bool
    provenance: Mapping[str, Provenance] = field(default_factory=dict)
    tree: Mapping[str, Any] = field(default_factory=dict)
    endpoints: tuple[EndpointCaps, ...] = ()
    routing_restricted: bool = False
    max_prompt_tokens: int | None = None
    limit_changes: tuple[LimitChange, ...] = ()
    endpoint_group: bool = False
    output_modalities: tuple[str, ...] | None = None
    input_modalities: tuple[str, ...] | None = None
    alias_target: str | None = None
    metadata_notes: tuple[str, ...] = ()

    @property
    def values(self) -> dict[str, Any]:
        """Dotted capability path -> effective value: the leaves of :attr:`tree`."""
        flat: dict[str, Any] = {}
        stack: list[tuple[str, Mapping[str, Any]]] = [("", self.tree)]
        while stack:
            prefix, node = stack.pop()
            for key, value in node.items():
                if isinstance(value, Mapping):
                    stack.append((f"{prefix}{key}.", value))
                else:
                    flat[f"{prefix}{key}"] = value
        return flat

    def supports(self, parameter: str) -> bool:
        """Return whether ``parameter`` is in :attr:`supported_parameters`."""
        return parameter in self.supported_parameters

    def parameter_evidence(self, parameter: str) -> Provenance | None:
        """Return the declaration or metadata list that decides whether ``parameter`` is sent."""
        if parameter in self.sampling.forced_unsupported:
            return self.source_of("sampling.unsupported")
        if parameter in self.sampling.forced_supported:
            return self.source_of("sampling.supported")
        return self.source_of("supported_parameters")

    def source_of(self, path: str) -> Provenance | None:
        """Return the provenance of a dotted path, or of its nearest recorded parent.

        >>> # model.source_of("reasoning.budget_min") -> Provenance(layer="models.yaml", ...)
        """
        probe = path
        while True:
            found = self.provenance.get(probe)
            if found is not None:
                return found
            if "." not in probe:
                return None
            probe = probe.rsplit(".", 1)[0]
