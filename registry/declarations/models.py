"""What models.yaml declares about a model: the strict models of one entry and of the file.

Every class forbids unknown keys, never coerces types (a quoted ``"128000"`` is not
an integer) and is frozen. The docstring under each field documents it in the
published JSON Schema (:mod:`registry.declarations.schema` reads them from this source).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from registry.declarations.vocabulary import (
    EFFORTS,
    KNOWN_DIALECTS,
    PRICE_KEYS,
    QUANTIZATIONS,
    SORTS,
    Effort,
    ModelKey,
    ParameterName,
    SamplingName,
    Scalar,
    check_fixed,
    no_duplicates,
    one_of,
    problem,
)
from registry.redact import redact_text

__all__ = [
    "Decl",
    "LimitsDecl",
    "ModelDecl",
    "ModelsDocument",
    "PercentilesDecl",
    "PricingDecl",
    "PromptCacheDecl",
    "ProviderDecl",
    "RangeDecl",
    "ReasoningDecl",
    "ReasoningSamplingDecl",
    "SamplingDecl",
    "StructuredOutputDecl",
]


class Decl(BaseModel):
    """Base of every declaration: unknown keys forbidden, no coercion, frozen."""

    # Attribute docstrings document each field; they reach the published JSON Schema
    # through registry.declarations.schema rather than pydantic's use_attribute_docstrings,
    # which parses the module's source while building every class (about 90 ms at import).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ReasoningDecl(Decl):
    """How the model reasons and which reasoning settings it accepts."""

    style: Literal["effort", "budget", "toggle"] | None = None
    """How reasoning is requested: an effort level, a token budget, or on/off only."""
    efforts: list[Effort] | None = None
    """Efforts the model accepts, in any order; stored lowest first."""
    can_disable: bool | None = None
    """Whether reasoning can be turned off (false for reasoning-mandatory models)."""
    budget_min: Annotated[int, Field(ge=0)] | None = None
    """Smallest reasoning budget in tokens the provider accepts."""
    budget_max: Annotated[int, Field(ge=1)] | None = None
    """Largest reasoning budget in tokens the provider accepts."""
    effort_budgets: dict[Effort, Annotated[int, Field(gt=0)]] | None = None
    """Reasoning budget in tokens sent for each effort (budget-style models)."""
    default_effort: Effort | None = None
    """Effort the model uses when none is requested."""

    @field_validator("efforts")
    @classmethod
    def _sort_efforts(cls, efforts: list[str] | None) -> list[str] | None:
        no_duplicates(efforts)
        return None if efforts is None else sorted(efforts, key=EFFORTS.index)

    @model_validator(mode="after")
    def _consistent(self) -> ReasoningDecl:
        low, high = self.budget_min, self.budget_max
        if low is not None and high is not None and low > high:
            raise problem(f"budget_min ({low}) is greater than budget_max ({high})", "budget_min")
        if self.efforts is not None and self.default_effort not in (None, *self.efforts):
            raise problem(
                f"default_effort {self.default_effort!r} is not among efforts {self.efforts}",
                "default_effort",
            )
        previous = 0
        for effort in sorted(self.effort_budgets or {}, key=EFFORTS.index):
            tokens = (self.effort_budgets or {})[effort]
            at = ("effort_budgets", effort)
            if effort == "none":
                raise problem("effort 'none' takes no budget", *at)
            if (low is not None and tokens < low) or (high is not None and tokens > high):
                raise problem(f"{tokens} is outside budget_min..budget_max ({low}..{high})", *at)
            if tokens < previous:
                raise problem(f"{tokens} is less than the budget of a lower effort", *at)
            previous = tokens
        return self


class RangeDecl(Decl):
    """An inclusive range a sampling parameter must stay in."""

    min: float | None = None
    """Lowest accepted value."""
    max: float | None = None
    """Highest accepted value."""

    @model_validator(mode="after")
    def _ordered(self) -> RangeDecl:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise problem(f"min ({self.min}) is greater than max ({self.max})", "min")
        return self


class ReasoningSamplingDecl(Decl):
    """Sampling rules that apply only while the model is reasoning."""

    unsupported: list[SamplingName] | None = None
    """Parameters the provider rejects or ignores while reasoning."""
    fixed: dict[SamplingName, Scalar] | None = None
    """Parameters that must take this value while reasoning."""

    @field_validator("fixed")
    @classmethod
    def _fixed_values(cls, fixed: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_fixed(fixed)


class SamplingDecl(Decl):
    """Sampling rules that metadata cannot express."""

    unsupported: list[SamplingName] | None = None
    """Parameters to treat as unsupported, whatever the metadata lists."""
    supported: list[SamplingName] | None = None
    """Parameters to treat as supported, whatever the metadata lists."""
    ranges: dict[SamplingName, RangeDecl] | None = None
    """Narrower accepted ranges per parameter; values outside are clamped."""
    fixed: dict[SamplingName, Scalar] | None = None
    """Parameters that only accept this one value."""
    mutually_exclusive: list[Annotated[list[SamplingName], Field(min_length=2)]] | None = None
    """Groups of parameters of which at most one may be sent."""
    while_reasoning: ReasoningSamplingDecl | None = None
    """Extra rules while reasoning is on."""

    @field_validator("fixed")
    @classmethod
    def _fixed_values(cls, fixed: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_fixed(fixed)

    @model_validator(mode="after")
    def _consistent(self) -> SamplingDecl:
        no_duplicates(self.unsupported, "unsupported")
        no_duplicates(self.supported, "supported")
        for index, name in enumerate(self.supported or ()):
            if name in (self.unsupported or ()):
                raise problem(f"{name!r} is both supported and unsupported", "supported", index)
        for index, group in enumerate(self.mutually_exclusive or ()):
            no_duplicates(group, "mutually_exclusive", index)
        return self


class LimitsDecl(Decl):
    """Token limits that override or fill in the published ones."""

    context_length: Annotated[int, Field(gt=0)] | None = None
    """Context window in tokens (prompt plus completion)."""
    max_completion_tokens: Annotated[int, Field(gt=0)] | None = None
    """Largest ``max_tokens`` the serving endpoint accepts."""


class StructuredOutputDecl(Decl):
    """How the model's structured output is constrained."""

    dialect: str | None = None
    """JSON Schema dialect of the provider: one of openai-strict, anthropic, gemini, json."""
    forced_tool_with_reasoning: bool | None = None
    """Whether a forced tool call (``tool_choice`` naming a function) is allowed while the model reasons; false for providers that forbid it."""  # noqa: E501

    @field_validator("dialect")
    @classmethod
    def _known(cls, dialect: str | None) -> str | None:
        return None if dialect is None else one_of(dialect, KNOWN_DIALECTS, "dialect")


class PromptCacheDecl(Decl):
    """Prompt caching hints (``cache_control`` markers in the messages)."""

    max_breakpoints: Annotated[int, Field(ge=0)] | None = None
    """Most ``cache_control`` markers one request may carry (Anthropic: 4); the earliest are kept. ``0``: the model ignores cache hints, so none is sent."""  # noqa: E501


class MediaDecl(Decl):
    """How media parts (images, files, audio) in the messages are counted."""

    token_rule: Literal["openai", "anthropic", "gemini"] | None = None
    """Whose published token rule estimates an image, PDF page or audio second (default ``openai``); see docs/tools.md."""  # noqa: E501


_Rate = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class PercentilesDecl(Decl):
    """One threshold per latency or throughput percentile; give any of them."""

    p50: _Rate | None = None
    """Median."""
    p75: _Rate | None = None
    """75th percentile."""
    p90: _Rate | None = None
    """90th percentile."""
    p99: _Rate | None = None
    """99th percentile."""


class ProviderDecl(Decl):
    """OpenRouter provider routing, passed through as the request's ``provider`` object.

    Its fields are those of OpenRouter's ``ProviderPreferences``
    (https://openrouter.ai/openapi.yaml, https://openrouter.ai/docs/guides/routing/provider-selection).
    """

    order: list[str] | None = None
    """Provider slugs to try, in order."""
    only: list[str] | None = None
    """Allow-list of provider slugs."""
    ignore: list[str] | None = None
    """Provider slugs never to use."""
    allow_fallbacks: bool | None = None
    """Whether providers outside ``order`` may serve the request."""
    require_parameters: bool | None = None
    """Only route to providers that support every parameter sent."""
    zdr: bool | None = None
    """Only route to Zero-Data-Retention endpoints."""
    enforce_distillable_text: bool | None = None
    """Only route to models whose author allows distillation of their text."""
    quantizations: list[str] | None = None
    """Accepted quantizations (int4, int8, fp4, mxfp4, nvfp4, fp6, fp8, mxfp8, fp16, bf16, fp32, unknown)."""  # noqa: E501
    data_collection: Literal["allow", "deny"] | None = None
    """``deny`` routes only to providers that neither store nor train on data."""
    sort: str | dict[str, str] | None = None
    """``price``, ``throughput``, ``latency`` or ``exacto``, or ``{by, partition}``."""
    max_price: dict[str, float] | None = None
    """Price ceilings in USD per million tokens (not per token), keyed prompt, completion, ..."""
    preferred_min_throughput: _Rate | PercentilesDecl | None = None
    """Throughput in tokens per second below which an endpoint is tried later (never excluded): a number, or ``{p50, p75, p90, p99}``."""  # noqa: E501
    preferred_max_latency: _Rate | PercentilesDecl | None = None
    """Latency in seconds above which an endpoint is tried later (never excluded): a number, or ``{p50, p75, p90, p99}``."""  # noqa: E501

    @model_validator(mode="after")
    def _vocabulary(self) -> ProviderDecl:
        for index, quant in enumerate(self.quantizations or ()):
            one_of(quant, QUANTIZATIONS, "quantization", "quantizations", index)
        for key in self.max_price or {}:
            one_of(key, PRICE_KEYS, "price key", "max_price", key)
        if isinstance(self.sort, str):
            one_of(self.sort, SORTS, "sort", "sort")
        elif self.sort is not None:
            for key, value in self.sort.items():
                one_of(key, ("by", "partition"), "sort key", "sort", key)
                allowed = SORTS if key == "by" else ("model", "none")
                one_of(value, allowed, f"sort.{key} value", "sort", key)
        return self


# Written out rather than left to pydantic, whose JSON Schema for Decimal changes
# between releases; the published schema must not depend on the installed version.
_PRICE_SCHEMA = WithJsonSchema(
    {
        "anyOf": [
            {"type": "number", "minimum": 0, "maximum": 1},
            {"type": "string", "pattern": r"^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$"},
        ]
    }
)


class PricingDecl(Decl):
    """Prices in USD per token (as OpenRouter publishes them), overriding metadata: from 0
    to 1 USD per token (the ceiling metadata prices are read with; ``'1e999'`` or a
    5000-digit number is refused with its line)."""

    prompt: Annotated[Decimal, Field(ge=0, le=1, strict=False), _PRICE_SCHEMA] | None = None
    """USD per prompt token."""
    completion: Annotated[Decimal, Field(ge=0, le=1, strict=False), _PRICE_SCHEMA] | None = None
    """USD per completion token."""


class ModelDecl(Decl):
    """What metadata cannot say about a model (or every model a glob matches)."""

    reasoning: ReasoningDecl | None = None
    """Reasoning style, accepted efforts and budgets."""
    sampling: SamplingDecl | None = None
    """Sampling parameter rules."""
    limits: LimitsDecl | None = None
    """Token limits."""
    structured_output: StructuredOutputDecl | None = None
    """Structured output dialect."""
    provider: ProviderDecl | None = None
    """OpenRouter provider routing."""
    prompt_cache: PromptCacheDecl | None = None
    """Prompt caching hints: how many ``cache_control`` breakpoints the model takes."""
    media: MediaDecl | None = None
    """How media parts in the messages are counted toward the prompt estimate."""
    supported_parameters: list[ParameterName] | None = None
    """Replaces the published list of supported request parameters."""
    pricing: PricingDecl | None = None
    """Prices in USD per token."""
    notes: str | None = None
    """Free text for people; ignored by the compiler (credential-shaped text is masked)."""

    @field_validator("notes")
    @classmethod
    def _masked(cls, text: str | None) -> str | None:
        return None if text is None else redact_text(text)

    @field_validator("supported_parameters")
    @classmethod
    def _unique(cls, names: list[str] | None) -> list[str] | None:
        no_duplicates(names)
        return names


class ModelsDocument(Decl):
    """models.yaml: per-model declarations that metadata cannot express."""

    models: dict[ModelKey, ModelDecl]
    """Exact model ids (``openai/gpt-4o-mini``) or globs (``anthropic/*``); exact beats glob."""
