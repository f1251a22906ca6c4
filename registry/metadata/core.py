"""The few metadata fields resolution reads, parsed on their own; full models on demand.

Resolving a model reads eight values of its ``GET /api/v1/models`` entry (and an
alias's ``alias_target.slug``): ``supported_parameters``, ``context_length``,
``top_provider.max_completion_tokens``, ``reasoning.mandatory``,
``reasoning.supported_efforts``, ``reasoning.default_effort``, ``pricing.prompt`` and
``pricing.completion``. Validating only those (a
:class:`MetadataCore` per model) is several times cheaper than validating each whole
:class:`~registry.metadata.shapes.ModelInfo`, so a catalog validates the core fields when it
loads and each full model only when something asks for that model (:class:`LazyModels`,
made by :func:`lazy_models`): ``capc compile`` and a sweep over every model never
build one, the audit's price tiers build those of the models they price, ``capc
models`` builds every one.

The core follows the rules of :mod:`registry.metadata.shapes` exactly (an out-of-range
limit or price is ``None``, see :mod:`registry.metadata.ranges`; prices are exact
:class:`~decimal.Decimal` values in USD per token); a test compares both parsers on
every shared snapshot.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, ItemsView, Iterator, Mapping, ValuesView
from decimal import Decimal
from types import MappingProxyType
from typing import Annotated, Any, NotRequired

from pydantic import BeforeValidator, TypeAdapter, ValidationError
from pydantic_core import from_json
from typing_extensions import TypedDict

from registry.errors import MetadataError
from registry.metadata.parse import format_errors, parse_models, parse_models_json
from registry.metadata.ranges import OUT_OF_RANGE, screen
from registry.metadata.shapes import ModelInfo
from registry.metadata.spans import ModelSpans, model_spans

__all__ = [
    "CORE_FORMAT",
    "CoreFields",
    "LazyModels",
    "MetadataCore",
    "core_json",
    "core_of",
    "index_models",
    "lazy_models",
    "parse_core_json",
    "read_only",
]


class CoreTopProvider(TypedDict, total=False):
    """``top_provider``, as far as resolution reads it (tokens)."""

    max_completion_tokens: int | None
    context_length: int | None


class CoreArchitecture(TypedDict, total=False):
    """``architecture``, as far as resolution reads it."""

    output_modalities: tuple[str, ...] | None
    input_modalities: tuple[str, ...] | None


class CoreReasoning(TypedDict, total=False):
    """``reasoning``, as far as resolution reads it."""

    mandatory: bool
    supported_efforts: tuple[str, ...] | None
    default_effort: str | None


class CorePricing(TypedDict, total=False):
    """``pricing.prompt`` and ``pricing.completion`` in USD per token (``None``: unknown)."""

    prompt: Decimal | None  # out-of-range values are None already (screen)
    completion: Decimal | None


class CoreAliasTarget(TypedDict, total=False):
    """``alias_target``, as far as resolution reads it (the target's id)."""

    slug: str | None


class MetadataCore(TypedDict):
    """The fields of one ``/models`` entry that resolution reads; absent keys stay absent.

    Keys: ``id``; optional ``context_length`` (tokens), ``supported_parameters``,
    ``top_provider``, ``reasoning``, ``pricing``, ``architecture`` and ``alias_target``
    (see the ``Core*`` shapes), and ``out_of_range`` (the limits and prices read as
    unknown, with their published text; :mod:`registry.metadata.ranges`).
    """

    id: str
    context_length: NotRequired[int | None]
    supported_parameters: NotRequired[tuple[str, ...] | None]
    top_provider: NotRequired[CoreTopProvider | None]
    reasoning: NotRequired[CoreReasoning | None]
    pricing: NotRequired[CorePricing | None]
    architecture: NotRequired[CoreArchitecture | None]
    alias_target: NotRequired[CoreAliasTarget | None]
    out_of_range: NotRequired[dict[str, str]]


class _CoreResponse(TypedDict):
    data: list[Annotated[MetadataCore, BeforeValidator(screen)]]


@functools.cache
def _core_response() -> TypeAdapter[_CoreResponse]:
    """The validator of the core fields, built on first use (not at import)."""
    return TypeAdapter(_CoreResponse)


CORE_FORMAT = 4
"""Version of the core body :func:`core_json` writes. Bump it whenever the fields of
:class:`MetadataCore` or the rules that read them change (a stricter type, what counts
as an unknown price...): a stored core body holds values already read by those rules,
so a body stored by an older version must not be read as if it were current
(format 3: ``alias_target`` and ``out_of_range`` added; 4: string, boolean and
fractional limits, limits above 2^31 and prices above their ceilings out of range)."""


def core_json(raw: bytes) -> bytes | None:
    """Return the core fields of a ``{"data": [...]}`` response body as a body of the same
    shape holding only them (15-30% of the bytes of OpenRouter's lists: no descriptions).

    Reading the result with :func:`parse_core_json` gives exactly what reading ``raw``
    gives (the same values, types and decimal spellings), so a cache can store it beside
    the body and skip scanning the whole body on every load.

    Args:
        raw: the response body as UTF-8 JSON.

    Returns:
        The core body (UTF-8 JSON; prices as decimal strings in USD per token), or
        ``None`` when :func:`parse_core_json` does not read ``raw``.
    """
    cores = parse_core_json(raw)
    if cores is None:
        return None
    return _core_response().dump_json({"data": cores}, exclude_unset=True)


def parse_core_json(raw: bytes) -> list[MetadataCore] | None:
    """Validate the core fields of every model of a ``{"data": [...]}`` response body.

    Args:
        raw: the response body as UTF-8 JSON.

    Returns:
        One :class:`MetadataCore` per element, in payload order; ``None`` when the body
        is not valid JSON of that shape or a core field has an impossible type (then
        :func:`registry.metadata.parse.parse_models` explains what is wrong).
    """
    try:
        return _core_response().validate_json(raw)["data"]
    except ValueError:  # pydantic's ValidationError included
        return None


CoreFields = Mapping[str, Any]
"""Core fields of one model: the keys of :class:`MetadataCore`."""


def read_only(core: Mapping[str, Any]) -> CoreFields:
    """Return a read-only view of core fields (nested mappings read-only too)."""
    view = dict(core)
    for key in ("top_provider", "reasoning", "pricing", "architecture", "alias_target",
                OUT_OF_RANGE):
        inner = view.get(key)
        if inner is not None:
            view[key] = MappingProxyType(inner)
    return MappingProxyType(view)


def core_of(info: ModelInfo) -> dict[str, Any]:
    """Return the core fields of an already validated model (same values as parsing),
    as a new mapping the caller owns."""
    core: dict[str, Any] = {"id": info.id}
    fields = info.model_fields_set
    if "context_length" in fields:
        core["context_length"] = info.context_length
    if "supported_parameters" in fields:
        core["supported_parameters"] = info.supported_parameters
    top = info.top_provider
    if top is not None:
        core["top_provider"] = {"max_completion_tokens": top.max_completion_tokens,
                                "context_length": top.context_length}
    reasoning = info.reasoning
    if reasoning is not None:
        core["reasoning"] = {
            "mandatory": reasoning.mandatory,
            "supported_efforts": reasoning.supported_efforts,
            "default_effort": reasoning.default_effort,
        }
    pricing = info.pricing
    if pricing is not None:
        core["pricing"] = {"prompt": pricing.prompt, "completion": pricing.completion}
    architecture = info.architecture
    if architecture is not None:
        core["architecture"] = {"output_modalities": architecture.output_modalities,
                                "input_modalities": architecture.input_modalities}
    if info.alias_target is not None:
        core["alias_target"] = {"slug": info.alias_target.slug}
    if info.out_of_range is not None:  # as parse_core_json: the published texts
        core[OUT_OF_RANGE] = dict(info.out_of_range)
    return core


class LazyModels(Mapping[str, ModelInfo]):
    """Models by id whose full :class:`ModelInfo` objects are built one at a time, on use.

    Holds the core fields of every model from the start. Ids, order, ``len``, ``in``
    and :meth:`core` never build anything; a value lookup builds that one model
    (``build``) and keeps it, so pricing 14 models of a 50,000-model catalog builds 14
    objects. Build one with :func:`lazy_models`.

    Args:
        cores: core fields by id, in source order.
        build: returns the full model of one listed id.
        build_all: returns every model in source order (used by :meth:`values` and
            :meth:`items`; a malformed model anywhere then raises).

    Raises:
        MetadataError: from a value lookup, when ``build`` finds a field outside the
            core fields of *that* model malformed (naming source, index, id and field);
            another model's malformed field only when that model is looked up.
    """

    def __init__(self, cores: Mapping[str, CoreFields], build: Callable[[str], ModelInfo],
                 build_all: Callable[[], list[ModelInfo]] | None = None, *,
                 listed: int | None = None):
        #: How many entries the body lists (more than ``len`` when an id is repeated).
        self.listed = len(cores) if listed is None else listed
        self._cores = cores
        self._build = build
        self._build_all = build_all
        self._models: dict[str, ModelInfo] = {}

    def _all(self) -> None:
        """Build every model not built yet in one pass (``build_all``), for
        :meth:`values` and :meth:`items`: a whole list validates faster at once."""
        if self._build_all is not None and len(self._models) != len(self._cores):
            for model in self._build_all():
                if model.id in self._cores:
                    self._models.setdefault(model.id, model)

    def values(self) -> ValuesView[ModelInfo]:
        """Every model, building those not built yet in one pass."""
        self._all()
        return super().values()

    def items(self) -> ItemsView[str, ModelInfo]:
        """Every ``(id, model)``, building the models not built yet in one pass."""
        self._all()
        return super().items()

    def __getitem__(self, model_id: str) -> ModelInfo:
        found = self._models.get(model_id)
        if found is not None:
            return found
        if model_id not in self._cores:
            raise KeyError(model_id)
        model = self._models[model_id] = self._build(model_id)
        return model

    def __iter__(self) -> Iterator[str]:
        return iter(self._cores)

    def __len__(self) -> int:
        return len(self._cores)

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._cores

    def __repr__(self) -> str:
        return f"<LazyModels: {len(self._cores)} models, {len(self._models)} built>"

    def core(self, model_id: str) -> CoreFields | None:
        """Return the core fields of ``model_id`` (read-only), or ``None`` when it is not
        listed."""
        found = self._cores.get(model_id)
        return None if found is None else read_only(found)

    def _stored_core(self, model_id: str) -> CoreFields | None:
        """The stored core fields themselves, for this package's resolver (which only
        reads them); everyone else gets :meth:`core`'s read-only view."""
        return self._cores.get(model_id)

    @property
    def built(self) -> int:
        """How many full models have been built so far (0: none)."""
        return len(self._models)


class _Body:
    """A models body whose elements are decoded one at a time, on demand
    (:mod:`registry.metadata.spans`), each validated as one :class:`ModelInfo`."""

    def __init__(self, raw: bytes, source: str, hint: str, positions: dict[str, int]):
        self._raw: bytes | None = raw
        self._source = source
        self._hint = hint
        self._positions = positions
        self._spans: ModelSpans | None = None
        self._items: list[Any] | None = None

    def _element(self, position: int) -> object:
        raw = self._raw
        if raw is not None:  # first use: locate the elements (or decode them all)
            self._spans = model_spans(raw)
            if self._spans is None:
                payload = from_json(raw)
                items = payload.get("data") if isinstance(payload, dict) else None
                self._items = items if isinstance(items, list) else []
            else:
                self._raw = None  # the spans hold the body
        if self._spans is not None:
            return self._spans.element(position) if position < len(self._spans.spans) else None
        assert self._items is not None
        return self._items[position] if position < len(self._items) else None

    def build_all(self) -> list[ModelInfo]:
        body = self._raw if self._spans is None else self._spans.body
        assert body is not None
        models = parse_models_json(body)
        if models is not None:
            return models
        try:
            return parse_models(from_json(body), source=self._source)
        except MetadataError as exc:
            if not self._hint:
                raise
            raise MetadataError(f"{exc} ({self._hint})", source=self._source) from exc

    def build(self, model_id: str) -> ModelInfo:
        position = self._positions[model_id]
        item = self._element(position)
        if not isinstance(item, dict) or item.get("id") != model_id:  # cannot happen
            raise MetadataError(f"{self._source}: model #{position} is not {model_id!r} in "
                                "the models list", source=self._source)
        try:
            return ModelInfo.model_validate(item)
        except ValidationError as exc:
            text = (f"{self._source}: model #{position} ({model_id!r}): "
                    f"{format_errors(exc.errors(include_url=False))}")
            if self._hint:
                text += f" ({self._hint})"
            raise MetadataError(text, source=self._source) from exc


def index_models(models: list[ModelInfo]) -> Mapping[str, ModelInfo]:
    """Index validated models by id, keeping source order; the first of duplicates wins."""
    by_id: dict[str, ModelInfo] = {}
    for model in models:
        by_id.setdefault(model.id, model)
    return MappingProxyType(by_id)


def lazy_models(
    raw: bytes, *, source: str, hint: str = "", core: bytes | None = None
) -> LazyModels | None:
    """Validate the core fields of a response body now and the rest on first use.

    Args:
        raw: a ``{"data": [...]}`` body as UTF-8 JSON (kept until a first full model is
            asked for; then each model is decoded and validated when first asked for).
        source: names the body in error messages.
        hint: appended to the message of a later error (e.g. how to refetch).
        core: the output of :func:`core_json` for ``raw``, when kept beside it: the
            core fields are then read from it, not from ``raw`` (same result, a
            fraction of the bytes). Ignored when it does not parse.

    Returns:
        The models, or ``None`` when the body is not that shape, a core field is
        malformed, an id is empty or listed twice, or it lists no model: then
        :func:`~registry.metadata.parse.parse_models` (or, for a duplicate,
        :func:`~registry.metadata.parse.payload_problem`) says what is wrong.
    """
    cores = None if core is None else parse_core_json(core)
    if cores is None:
        cores = parse_core_json(raw)
    if not cores:
        return None
    by_id: dict[str, CoreFields] = {}
    positions: dict[str, int] = {}
    for position, fields in enumerate(cores):
        model_id = fields["id"]
        if not model_id or model_id in by_id:  # an empty id, or one listed twice
            return None
        by_id[model_id] = fields
        positions[model_id] = position

    body = _Body(raw, source, hint, positions)
    return LazyModels(MappingProxyType(by_id), body.build, body.build_all, listed=len(cores))
