"""Tolerant pydantic models of OpenRouter model metadata.

The shapes follow ``GET /api/v1/models`` (the model list) and
``GET /api/v1/models/{author}/{slug}/endpoints`` (one model's provider endpoints) as
seen in real snapshots from 2025-04 to 2026-10. The API has grown a lot over that
time, so the models here are deliberately lenient:

* every key except a model's ``id`` is optional, and unknown keys are ignored;
* unknown ``supported_parameters`` values are kept as plain strings;
* prices are decimal strings in USD (per token unless the key says otherwise) and are
  parsed exactly as :class:`~decimal.Decimal`; router models publish ``"-1"`` for
  "variable or unknown", which becomes ``None`` (a price is never negative here);
* a ``context_length`` of ``0`` (non-text models) is kept as ``0``: callers should
  treat it as unknown.

All models are frozen. Parsing never lets a :class:`pydantic.ValidationError` escape:
every problem is reported as :class:`~registry.errors.MetadataError` naming the source,
the element index, the model id and the field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator
from pydantic_core import ErrorDetails, from_json

from registry.errors import MetadataError

__all__ = [
    "Architecture",
    "Endpoint",
    "EndpointList",
    "ModelInfo",
    "Pricing",
    "PricingOverride",
    "ReasoningInfo",
    "TopProvider",
    "is_unknown_price",
    "parse_endpoints",
    "parse_endpoints_bundle",
    "parse_models",
    "parse_models_json",
    "read_json",
]

# Keys inside a pricing object (or one of its overrides) that are NOT prices, so the
# "negative means unknown" rule must not touch them.
_NON_PRICE_KEYS = frozenset({"discount", "overrides", "min_prompt_tokens", "utc_start", "utc_end"})


def is_unknown_price(value: object) -> bool:
    """Return True for a price value that encodes "variable / unknown" (negative):
    OpenRouter publishes ``"-1"`` on router models; any negative number or numeric
    string counts."""
    if type(value) is str:
        return value.lstrip().startswith("-")
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return False
    return value < 0


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

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

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

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    prompt: Decimal | None = None
    completion: Decimal | None = None
    request: Decimal | None = None
    image: Decimal | None = None
    web_search: Decimal | None = None
    internal_reasoning: Decimal | None = None
    input_cache_read: Decimal | None = None
    input_cache_write: Decimal | None = None

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
    absent or unknown. Price keys that are not fields (``audio``,
    ``input_cache_write_1h``, ...) are kept as extra attributes with their raw value.
    """

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    min_prompt_tokens: int | None = None
    utc_start: int | None = None
    utc_end: int | None = None


class Pricing(_PriceFields):
    """Prices of a model or an endpoint, parsed exactly as Decimal.

    Units: ``prompt``, ``completion``, ``internal_reasoning``, ``input_cache_read`` and
    ``input_cache_write`` are USD per token; ``request`` is USD per request, ``image``
    USD per input image and ``web_search`` USD per search. ``None`` means the key was
    absent (from 2026 a key that does not apply is omitted, i.e. 0 / not applicable)
    or the price is variable/unknown (``"-1"`` on router models; any negative value is
    treated the same). Other price keys (``audio``, ``input_cache_write_1h``, ...) are
    ignored.

    Attributes:
        discount: endpoint-only fraction 0-1 (a JSON number, not a string).
        overrides: conditional prices, see :class:`PricingOverride`.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    discount: float | None = None
    overrides: tuple[PricingOverride, ...] = ()


class TopProvider(BaseModel):
    """Limits of the top-ranked endpoint (not the maximum over endpoints).

    Attributes:
        context_length: context window in tokens, or ``None``.
        max_completion_tokens: output limit in tokens, or ``None`` (unknown; common).
        is_moderated: the provider moderates content.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

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

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    modality: str | None = None
    input_modalities: tuple[str, ...] | None = None
    output_modalities: tuple[str, ...] | None = None
    tokenizer: str | None = None
    instruct_type: str | None = None


class ModelInfo(BaseModel):
    """One element of the ``GET /api/v1/models`` list.

    Attributes:
        id: routable model slug, e.g. ``"anthropic/claude-sonnet-4.5"`` (the only
            required key).
        canonical_slug: permanent, usually dated build slug (2025-07+).
        name: display name.
        created: when the model was listed on OpenRouter (Unix seconds).
        context_length: context window in tokens; ``0`` for many non-text models, which
            callers should treat as unknown.
        supported_parameters: request parameter names the model accepts (union-ish over
            endpoints). ``None`` when the snapshot does not publish the list (2025-04).
        default_parameters: the author's recommended sampling values; a ``None`` value
            means "no recommendation". OpenRouter does not inject these.
        reasoning: reasoning options (2026-08+); ``None`` when absent.
        expiration_date: deprecation date ``YYYY-MM-DD``.
        knowledge_cutoff: training cut-off date ``YYYY-MM-DD``.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

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
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

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

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    id: str
    name: str | None = None
    endpoints: tuple[Endpoint, ...]


@functools.cache
def _model_list() -> TypeAdapter[list[ModelInfo]]:
    """The validator of a bare models array, built when first needed."""
    return TypeAdapter(list[ModelInfo])


class _ModelsResponse(BaseModel):
    """The usual ``/models`` response shape, for :func:`parse_models_json`."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    data: list[ModelInfo]



_JSON_TYPE_NAMES: Mapping[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bytes: "bytes",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _kind(value: object) -> str:
    """Describe the JSON type of ``value`` for error messages."""
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _shape_problem(payload: object, expected: str) -> str:
    """Explain why ``payload`` is not the expected top-level shape."""
    if isinstance(payload, str | bytes):
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
        head = text.lstrip()[:200].lower()
        if head.startswith("<") or "<html" in head:
            return (
                f"expected {expected}, got text that looks like an HTML page "
                "(wrong URL, login page or proxy error?)"
            )
        return f"expected {expected}, got {_kind(payload)} (pass decoded JSON, not raw text)"
    if isinstance(payload, dict):
        err = payload.get("error")
        if err is not None and "data" not in payload:
            if isinstance(err, dict):
                code = err.get("code")
                message = err.get("message")
                detail = " ".join(str(x) for x in (code, message) if x is not None)
            else:
                detail = str(err)
            return f"expected {expected}, got an API error response: {detail or err!r}"
        keys = ", ".join(repr(k) for k in list(payload)[:8]) or "none"
        return f"expected {expected}, got an object without a usable 'data' key (keys: {keys})"
    return f"expected {expected}, got {_kind(payload)}"


def _format_errors(errors: Sequence[ErrorDetails], *, skip: int = 0, limit: int = 3) -> str:
    """Render pydantic errors as ``field.path: message (got ...)``, dropping ``skip`` loc items."""
    parts: list[str] = []
    for err in errors[:limit]:
        loc = ".".join(str(p) for p in err["loc"][skip:]) or "<root>"
        got = repr(err.get("input"))
        if len(got) > 60:
            got = got[:57] + "..."
        parts.append(f"{loc}: {err['msg']} (got {got})")
    more = len(errors) - limit
    text = "; ".join(parts)
    if more > 0:
        text += f"; and {more} more error(s)"
    return text


_MODELS_EXPECTED = "a models list: an object with a 'data' array, or a bare array of models"


def parse_models(payload: object, *, source: str) -> list[ModelInfo]:
    """Parse a ``GET /api/v1/models`` response into :class:`ModelInfo` objects.

    Args:
        payload: decoded JSON: ``{"data": [...]}`` (root keys such as ``total_count``
            and ``links`` are ignored) or a bare array of model objects.
        source: where the payload came from (file path, URL, ``"bundled seed"``); used
            in error messages.

    Returns:
        The models in payload order (an empty list for an empty array).

    Raises:
        MetadataError: the payload has the wrong overall shape (text, an HTML page, an
            API ``{"error": ...}`` body, an object without a ``data`` array), an element
            is not an object or has no string ``id``, or a field has an impossible
            type. The message names ``source``, the element index, the model id and
            the field.
    """
    if isinstance(payload, list):
        items: Sequence[object] = payload
    elif isinstance(payload, dict) and isinstance(payload.get("data"), list):
        items = payload["data"]
    elif isinstance(payload, dict) and isinstance(payload.get("data"), dict):
        inner = payload["data"]
        hint = (
            "an /endpoints response (use parse_endpoints)"
            if "endpoints" in inner
            else "a single-model response"
        )
        raise MetadataError(
            f"{source}: expected {_MODELS_EXPECTED}, but 'data' is an object; "
            f"this looks like {hint}",
            source=source,
        )
    else:
        raise MetadataError(f"{source}: {_shape_problem(payload, _MODELS_EXPECTED)}", source=source)

    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise MetadataError(
                f"{source}: model #{index} is {_kind(item)}, not an object", source=source
            )
        model_id = item.get("id")
        if not isinstance(model_id, str) or not model_id:
            got = "missing" if model_id is None else f"{model_id!r}"
            raise MetadataError(
                f"{source}: model #{index} has no string 'id' ({got})", source=source
            )

    try:
        return _model_list().validate_python(items)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        loc = errors[0]["loc"]
        if not loc or not isinstance(loc[0], int):  # pragma: no cover - list pre-checked
            raise MetadataError(f"{source}: {_format_errors(errors)}", source=source) from exc
        index = loc[0]
        bad = items[index]
        bad_id = bad.get("id") if isinstance(bad, dict) else None
        mine = [e for e in errors if e["loc"][:1] == (index,)]
        others = {e["loc"][0] for e in errors} - {index}
        text = f"{source}: model #{index} ({bad_id!r}): {_format_errors(mine, skip=1)}"
        if others:
            text += f" (and errors in {len(others)} other model(s))"
        raise MetadataError(text, source=source) from exc


def parse_models_json(raw: bytes) -> list[ModelInfo] | None:
    """Parse a well-formed ``GET /api/v1/models`` response body in one pass.

    The JSON text is validated directly (keys this library does not read, such as the
    long ``description`` texts, are skipped without being decoded), which makes loading
    a large snapshot about a third faster than decoding it first. The result equals
    ``parse_models(json.loads(raw), source=...)``.

    Args:
        raw: the response body, ``{"data": [...]}`` as UTF-8 JSON.

    Returns:
        The models in payload order, or ``None`` when the body is not valid JSON in
        that shape (another shape, a bad field, a bare array): decode it and call
        :func:`parse_models`, which accepts every shape it does and explains a problem
        precisely.
    """
    try:
        return _ModelsResponse.model_validate_json(raw).data
    except ValueError:  # pydantic's ValidationError included
        return None


_ENDPOINTS_EXPECTED = "an /endpoints response: an object with a 'data' object holding 'endpoints'"


def parse_endpoints(payload: object, *, source: str) -> EndpointList:
    """Parse one ``GET /api/v1/models/{author}/{slug}/endpoints`` response.

    Args:
        payload: decoded JSON ``{"data": {"id": ..., "endpoints": [...]}}``; the bare
            ``data`` object is accepted too.
        source: where the payload came from; used in error messages.

    Returns:
        The model's id, name and endpoints.

    Raises:
        MetadataError: wrong overall shape (a models list, text, an API error body, no
            ``endpoints`` array) or a field with an impossible type; the message names
            ``source``, the model id and the field path (``endpoints.3.pricing.prompt``).
    """
    body: object
    if isinstance(payload, dict) and "data" in payload:
        body = payload["data"]
        if isinstance(body, list):
            raise MetadataError(
                f"{source}: expected {_ENDPOINTS_EXPECTED}, but 'data' is an array; "
                "this looks like a models list (use parse_models)",
                source=source,
            )
    elif isinstance(payload, dict) and "endpoints" in payload and "id" in payload:
        body = payload
    else:
        raise MetadataError(
            f"{source}: {_shape_problem(payload, _ENDPOINTS_EXPECTED)}", source=source
        )
    if not isinstance(body, dict) or not isinstance(body.get("endpoints"), list):
        what = "has no 'endpoints' array" if isinstance(body, dict) else f"is {_kind(body)}"
        raise MetadataError(
            f"{source}: expected {_ENDPOINTS_EXPECTED}, but 'data' {what}", source=source
        )
    try:
        return EndpointList.model_validate(body)
    except ValidationError as exc:
        model_id = body.get("id")
        raise MetadataError(
            f"{source}: endpoints of {model_id!r}: {_format_errors(exc.errors(include_url=False))}",
            source=source,
        ) from exc


def parse_endpoints_bundle(payload: object, *, source: str) -> dict[str, EndpointList]:
    """Parse a bundle of ``/endpoints`` responses keyed by model id.

    The bundle shape is ``{"fetched_at": ..., "note": ..., "endpoints": {model_id:
    <raw /endpoints response body>}}`` (``endpoints-all-2026-05-18.json``).

    Args:
        payload: the decoded bundle.
        source: where the payload came from; used in error messages.

    Returns:
        Endpoint lists by the bundle's model id key, in bundle order. The key is the id
        that was requested: for ``:free`` variants it differs from
        :attr:`EndpointList.id`, which reports the base model.

    Raises:
        MetadataError: the payload is not such a bundle, or one response is malformed
            (the message names the model id key).
    """
    bodies = payload.get("endpoints") if isinstance(payload, dict) else None
    if not isinstance(bodies, dict):
        expected = "an endpoints bundle: an object with an 'endpoints' object keyed by model id"
        raise MetadataError(f"{source}: {_shape_problem(payload, expected)}", source=source)
    result: dict[str, EndpointList] = {}
    for model_id, body in bodies.items():
        result[model_id] = parse_endpoints(body, source=f"{source} [{model_id}]")
    return result


def read_json(path: Path, *, source: str) -> object:
    """Read a file and decode it as JSON.

    Args:
        path: the file to read.
        source: how to name the file in error messages (usually ``str(path)`` or the
            URL it was given as).

    Returns:
        The decoded JSON value.

    Raises:
        MetadataError: the file cannot be read (missing, a directory, no permission),
            is not UTF-8, or is not valid JSON; decode errors give line and column.
    """
    where = source if source == str(path) else f"{source} ({path})"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise MetadataError(f"{where}: cannot read file: {reason}", source=source) from exc
    try:
        # pydantic-core's parser is about twice as fast as the stdlib one on the large
        # snapshots; on any failure the stdlib parser decides (and locates the error).
        return from_json(raw)
    except ValueError:
        pass
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        hint = ""
        if raw.lstrip()[:1] == b"<":
            hint = " (the file looks like HTML, not JSON)"
        elif exc.pos >= len(exc.doc.rstrip()):
            hint = " (the file looks truncated)"
        raise MetadataError(
            f"{where}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}",
            source=source,
        ) from exc
    except UnicodeDecodeError as exc:
        raise MetadataError(
            f"{where}: not UTF-8 text (byte {exc.start}): {exc.reason}", source=source
        ) from exc
