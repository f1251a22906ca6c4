"""Tolerant pydantic models of OpenRouter model metadata.

The shapes follow ``GET /api/v1/models`` (the model list) and
``GET /api/v1/models/{author}/{slug}/endpoints`` (one model's provider endpoints) as
seen in real snapshots from 2025-04 to 2026-10. The API has grown a lot over that
time, so the models here are deliberately lenient:

* every key except a model's ``id`` is optional, and unknown keys are ignored;
* unknown ``supported_parameters`` values are kept as plain strings;
* prices are decimal strings in USD (per token unless the key says otherwise) and are
  parsed exactly as :class:`~decimal.Decimal`; router models publish ``"-1"`` for
  "variable or unknown", which becomes ``None``, as does any price written with a minus
  sign (a price is never negative here; see :func:`is_unknown_price`);
* a limit resolution reads that is not a positive number (``context_length: 0`` on
  non-text models, ``-5``, a non-finite ``1e999``), and a non-finite
  ``pricing.prompt``/``completion``, is ``None`` (unknown); the published text is kept
  in :attr:`ModelInfo.out_of_range` so it can be reported
  (:mod:`registry.metadata.ranges`);
* every other number must be finite: a non-finite one (``1e999`` reads as infinity) is
  a validation error naming the field.

All models are frozen and build their validators when first used.
:mod:`registry.metadata.parse` turns whole payloads into these models and reports every
problem as :class:`~registry.errors.MetadataError` naming the source, the element
index, the model id and the field.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from registry.metadata.ranges import screen, screen_endpoint

__all__ = [
    "AliasTarget",
    "Architecture",
    "Endpoint",
    "EndpointList",
    "ModelInfo",
    "Pricing",
    "PricingOverride",
    "ReasoningInfo",
    "TopProvider",
    "is_unknown_price",
]

# Keys inside a pricing object (or one of its overrides) that are NOT prices, so the
# "negative means unknown" rule must not touch them.
_NON_PRICE_KEYS = frozenset({"discount", "overrides", "min_prompt_tokens", "utc_start", "utc_end"})


def is_unknown_price(value: object) -> bool:
    """Return True for a price value that encodes "variable / unknown": one written with
    a minus sign. OpenRouter publishes ``"-1"`` on router models; any negative number or
    numeric string counts, and so does a negative zero (``-0.0``, ``"-0"``), so a price
    reads the same whether it arrives as a number or as its decimal string."""
    if type(value) is str:
        return value.lstrip().startswith("-")
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return math.copysign(1.0, value) < 0
    if isinstance(value, Decimal):
        return value.is_signed()
    return isinstance(value, int) and value < 0


def _unknown_prices_to_none(data: Any) -> Any:
    """Map negative price values (OpenRouter's ``"-1"``) to ``None`` in a raw pricing dict.

    Runs once per pricing object (not once per field) and copies the dict only when
    something must change. Non-price keys (``discount``, override conditions) are left
    alone.
    """
    if type(data) is not dict:
        return data
    bad = [
        k
        for k, v in data.items()
        if (type(v) is not str or "-" in v) and k not in _NON_PRICE_KEYS and is_unknown_price(v)
    ]
    if not bad:
        return data
    fixed = dict(data)
    for key in bad:
        fixed[key] = None
    return fixed


class ReasoningInfo(BaseModel):
    """A model's reasoning options (``reasoning`` object, published from 2026-08).

    Attributes:
        mandatory: reasoning cannot be disabled; effort ``"none"`` is rejected.
        supported_efforts: allowed effort values in the published (descending) order.
            ``None`` either because the key was absent (no effort selection) or because
            it was ``null`` (all efforts accepted); see :attr:`efforts_published`.
        default_effort: effort pre-selected when reasoning is enabled (``"none"`` means
            reasoning is off by default).
        default_enabled: whether reasoning is on when the request does not say.
        supports_max_tokens: the model accepts ``reasoning.max_tokens`` (a budget in
            tokens). Only ``True`` or absent in the data.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    mandatory: bool = False
    supported_efforts: tuple[str, ...] | None = None
    default_effort: str | None = None
    default_enabled: bool | None = None
    supports_max_tokens: bool | None = None

    @property
    def efforts_published(self) -> bool:
        """Whether the payload carried a ``supported_efforts`` key at all.

        Returns:
            ``False`` when the key was absent: the model exposes no effort selection.
            ``True`` when it was present; then :attr:`supported_efforts` is either the
            allow-list or ``None`` meaning every effort value is accepted.
        """
        return "supported_efforts" in self.model_fields_set


class _PriceFields(BaseModel):
    """Price keys shared by :class:`Pricing` and :class:`PricingOverride` (USD, Decimal)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    prompt: Decimal | None = None
    completion: Decimal | None = None
    request: Decimal | None = None
    image: Decimal | None = None
    web_search: Decimal | None = None
    internal_reasoning: Decimal | None = None
    input_cache_read: Decimal | None = None
    input_cache_write: Decimal | None = None
    input_cache_write_1h: Decimal | None = None
    audio: Decimal | None = None

    @model_validator(mode="before")
    @classmethod
    def _unknown_to_none(cls, data: Any) -> Any:
        """Turn negative (``"-1"``) prices into ``None`` before field validation."""
        return _unknown_prices_to_none(data)


class PricingOverride(_PriceFields):
    """A conditional price (``pricing.overrides[]``, 2026-08+).

    The entry applies when the prompt has more than ``min_prompt_tokens`` tokens and/or
    the current UTC time is in ``[utc_start, utc_end)`` (HHMM integers, may wrap past
    midnight). A price key missing here inherits the base price; when several entries
    apply, later entries win per key. Price keys are USD per token, ``None`` when
    absent or unknown. Price keys that are not fields (``audio_output``,
    ``input_audio_cache``, ...) are kept as extra attributes with their raw value.
    """

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True, allow_inf_nan=False)

    min_prompt_tokens: int | None = None
    utc_start: int | None = None
    utc_end: int | None = None


class Pricing(_PriceFields):
    """Prices of a model or an endpoint, parsed exactly as Decimal.

    Units: ``prompt``, ``completion``, ``internal_reasoning``, ``input_cache_read``,
    ``input_cache_write`` (5-minute cache), ``input_cache_write_1h`` (1-hour cache) and
    ``audio`` (input audio) are USD per token; ``request`` is USD per request, ``image``
    USD per input image and ``web_search`` USD per search. ``None`` means the key was
    absent (from 2026 a key that does not apply is omitted, i.e. 0 / not applicable)
    or the price is variable/unknown (``"-1"`` on router models; any negative value is
    treated the same). Other price keys (``audio_output``, ``image_output``, ...) are
    ignored.

    Attributes:
        discount: endpoint-only fraction 0-1 (a JSON number, not a string).
        overrides: conditional prices, see :class:`PricingOverride`.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    discount: float | None = None
    overrides: tuple[PricingOverride, ...] = ()


class TopProvider(BaseModel):
    """Limits of the top-ranked endpoint (not the maximum over endpoints).

    Attributes:
        context_length: context window in tokens, or ``None``.
        max_completion_tokens: output limit in tokens, or ``None`` (unknown; common).
        is_moderated: the provider moderates content.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    context_length: int | None = None
    max_completion_tokens: int | None = None
    is_moderated: bool | None = None


class Architecture(BaseModel):
    """Modalities and tokenizer family of a model.

    Attributes:
        modality: display string such as ``"text+image+file->text"``.
        input_modalities: e.g. ``("text", "image", "file")``.
        output_modalities: e.g. ``("text",)``.
        tokenizer: tokenizer family (``"GPT"``, ``"Claude"``, ``"Router"``, ...).
        instruct_type: chat template name; ``None`` or the string ``"none"`` in most data.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    modality: str | None = None
    input_modalities: tuple[str, ...] | None = None
    output_modalities: tuple[str, ...] | None = None
    tokenizer: str | None = None
    instruct_type: str | None = None


class AliasTarget(BaseModel):
    """What an alias id (``~anthropic/claude-sonnet-latest``) currently routes to
    (``alias_target``, published from 2026-08 on ``~vendor/name-latest`` ids only).

    Attributes:
        slug: the target model's id, e.g. ``anthropic/claude-sonnet-5``.
        name: its display name.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    slug: str | None = None
    name: str | None = None


class ModelInfo(BaseModel):
    """One element of the ``GET /api/v1/models`` list.

    Attributes:
        id: routable model slug, e.g. ``"anthropic/claude-sonnet-4.5"`` (the only
            required key).
        canonical_slug: permanent, usually dated build slug (2025-07+).
        name: display name.
        created: when the model was listed on OpenRouter (Unix seconds).
        context_length: context window in tokens; ``None`` when unknown (also when
            published as ``0``, as on many non-text models: see :attr:`out_of_range`).
        supported_parameters: request parameter names the model accepts (union-ish over
            endpoints). ``None`` when the snapshot does not publish the list (2025-04).
        default_parameters: the author's recommended sampling values; a ``None`` value
            means "no recommendation". OpenRouter does not inject these.
        reasoning: reasoning options (2026-08+); ``None`` when absent.
        expiration_date: deprecation date ``YYYY-MM-DD``.
        knowledge_cutoff: training cut-off date ``YYYY-MM-DD``.
        alias_target: for an alias id (``~vendor/name-latest``), the model it routes to.
        out_of_range: the limits and prices resolution reads that were published out of
            range (a limit not positive, a negative price, a number that is not finite),
            by field (``top_provider.max_completion_tokens``), with the published text;
            those fields read as ``None`` (see :mod:`registry.metadata.ranges`).
            ``None`` when every one was in range.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    id: str
    canonical_slug: str | None = None
    name: str | None = None
    created: int | None = None
    context_length: int | None = None
    architecture: Architecture | None = None
    pricing: Pricing | None = None
    top_provider: TopProvider | None = None
    supported_parameters: tuple[str, ...] | None = None
    default_parameters: dict[str, float | int | None] | None = None
    reasoning: ReasoningInfo | None = None
    expiration_date: str | None = None
    knowledge_cutoff: str | None = None
    alias_target: AliasTarget | None = None
    out_of_range: dict[str, str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _screen(cls, data: Any) -> Any:
        """Out-of-range limits and prices read as unknown (kept in ``out_of_range``)."""
        return screen(data)


class Endpoint(BaseModel):
    """One provider endpoint of a model (``/endpoints`` response, ``data.endpoints[]``).

    Attributes:
        name: ``"<provider> | <permaslug>"``.
        model_id: the model's permaslug (not in 2025 data).
        model_name: display name of the model (not in 2025 data).
        provider_name: display name of the provider, e.g. ``"Google Vertex"``.
        tag: routing slug for ``provider.order/only/ignore``, e.g. ``"deepinfra/fp8"``.
            Kept as published; ``None`` when absent.
        context_length: context window of this endpoint in tokens.
        max_completion_tokens: output limit of this endpoint in tokens.
        max_prompt_tokens: input limit of this endpoint in tokens.
        quantization: ``"fp8"``, ``"bf16"``, ``"unknown"``, ... or ``None``.
        supported_parameters: the definitive parameter set of this endpoint.
        status: ``0`` is operational; negative codes mean degraded (undocumented).
        pricing: prices of this endpoint (may carry ``discount``).
        uptime_last_30m: percent 0-100, ``None`` when there is too little data.
        supports_tool_choice: accepted ``tool_choice`` modes
            (``{"auto", "none", "required", "function"}`` -> bool), newest data only.
        out_of_range: limits not positive or prices negative (or a number that is not
            finite) in the fields routing reads, by field with the published text; those
            read as ``None`` (:func:`registry.metadata.ranges.screen_endpoint`).
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    name: str | None = None
    model_id: str | None = None
    model_name: str | None = None
    provider_name: str | None = None
    tag: str | None = None
    context_length: int | None = None
    max_completion_tokens: int | None = None
    max_prompt_tokens: int | None = None
    quantization: str | None = None
    supported_parameters: tuple[str, ...] = ()
    status: int | None = None
    pricing: Pricing | None = None
    uptime_last_30m: float | None = None
    supports_tool_choice: dict[str, bool] | None = None
    out_of_range: dict[str, str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _screen(cls, data: Any) -> Any:
        """Out-of-range limits and prices read as unknown (kept in ``out_of_range``)."""
        return screen_endpoint(data)

    @property
    def routing_slug(self) -> str | None:
        """The provider slug to use in the request's ``provider`` routing object.

        Returns:
            :attr:`tag` when published. Otherwise a slug derived from
            :attr:`provider_name` (lower-cased, spaces replaced by ``-``). That fallback
            is only a guess for old (2025) responses without ``tag``: it matches many
            providers (``"Google AI Studio"`` -> ``"google-ai-studio"``) but not all
            (``"Google"`` is routed as ``"google-vertex"``). ``None`` when neither is
            known.
        """
        if self.tag:
            return self.tag
        if self.provider_name:
            return self.provider_name.strip().lower().replace(" ", "-")
        return None


class EndpointList(BaseModel):
    """The ``data`` object of a ``/endpoints`` response.

    Attributes:
        id: the model id the endpoints belong to (a ``:free`` request reports the base id).
        name: display name of the model.
        endpoints: the provider endpoints, in the published order (may be empty).
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True, allow_inf_nan=False)

    id: str
    name: str | None = None
    endpoints: tuple[Endpoint, ...]
