"""A loaded models list whose full models are built one at a time, from their own bytes.

A catalog holds the core fields of every model from its load
(:mod:`registry.metadata.core`) and builds a model's whole
:class:`~registry.metadata.shapes.ModelInfo` the first time that model is asked for
(:class:`LazyModels`, made by :func:`lazy_models`). Where each model's entry starts
and ends in the body is learnt in the same walk as the core fields (a file, the seed,
a cached copy without offsets) or read from a cached copy's core part, so building one
model decodes that model's bytes only: an audit of a few pairs costs the same whatever
the size of the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, Mapping, ValuesView
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from registry.errors import MetadataError
from registry.metadata.core import (
    CoreFields,
    MetadataCore,
    parse_core_json,
    parse_core_part,
    read_only,
    scan_cores,
)
from registry.metadata.malformed import mend
from registry.metadata.parse import format_errors, parse_models, parse_models_json
from registry.metadata.shapes import ModelInfo
from registry.metadata.spans import ModelSpans, model_spans

__all__ = ["LazyModels", "index_models", "lazy_models"]


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
    """A models body whose elements are decoded one at a time, on demand, each validated
    as one :class:`ModelInfo`.

    ``spans`` says where each element sits (from the load's walk, or a cached core
    part: ``checked`` false, so each element it locates is checked to be the model
    asked for, and on a mismatch the body is walked again); without it, the first
    lookup walks the body (:mod:`registry.metadata.spans`), or decodes it whole when the
    walk declines it.
    """

    def __init__(self, raw: bytes, source: str, hint: str, positions: dict[str, int],
                 spans: ModelSpans | None, *, checked: bool = True):
        self._raw = raw
        self._source = source
        self._hint = hint
        self._positions = positions
        self._spans = spans
        self._checked = checked
        self._items: list[Any] | None = None

    def _element(self, position: int, model_id: str) -> object:
        if self._spans is not None and not self._checked:
            item = self._located(position)
            if _is_model(item, model_id):
                return item
            self._spans = None  # offsets from a cached part that do not fit: walk again
        if self._spans is None and self._items is None:  # locate the elements once
            self._checked = True
            self._spans = model_spans(self._raw)
            if self._spans is None:  # the walk declines the body: decode it whole
                payload = from_json(self._raw)
                items = payload.get("data") if isinstance(payload, dict) else None
                self._items = items if isinstance(items, list) else []
        if self._spans is not None:
            return self._located(position)
        assert self._items is not None
        return self._items[position] if position < len(self._items) else None

    def _located(self, position: int) -> object:
        spans = self._spans
        assert spans is not None
        if position >= len(spans.spans):
            return None
        try:
            return spans.element(position)
        except (ValueError, RecursionError):  # offsets that cut an element (a cached part)
            return None

    def build_all(self) -> list[ModelInfo]:
        models = parse_models_json(self._raw)
        if models is not None:
            return models
        try:
            return parse_models(from_json(self._raw), source=self._source)
        except MetadataError as exc:
            if not self._hint:
                raise
            raise MetadataError(f"{exc} ({self._hint})", source=self._source) from exc

    def build(self, model_id: str) -> ModelInfo:
        position = self._positions[model_id]
        item = self._element(position, model_id)
        if not _is_model(item, model_id):  # cannot happen
            raise MetadataError(f"{self._source}: model #{position} is not {model_id!r} in "
                                "the models list", source=self._source)
        try:
            return ModelInfo.model_validate(item)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            # a malformed field costs that field, with a note, as in the full parse
            mended = mend([item], [{**e, "loc": (0, *e["loc"])} for e in errors])
            if mended is not None:
                try:
                    return ModelInfo.model_validate(mended[0])
                except ValidationError:
                    pass
            text = (f"{self._source}: model #{position} ({model_id!r}): "
                    f"{format_errors(errors)}")
            if self._hint:
                text += f" ({self._hint})"
            raise MetadataError(text, source=self._source) from exc


def _is_model(item: object, model_id: str) -> bool:
    return isinstance(item, dict) and item.get("id") == model_id


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
        raw: a ``{"data": [...]}`` body as UTF-8 JSON (kept: each model is decoded from
            its own bytes and validated when first asked for).
        source: names the body in error messages.
        hint: appended to the message of a later error (e.g. how to refetch).
        core: the output of :func:`~registry.metadata.core.core_json` for ``raw``, when
            kept beside it: the core fields and where each model's entry sits are then
            read from it, not from ``raw`` (same result, a fraction of the bytes).
            Ignored when it does not parse.

    Returns:
        The models, or ``None`` when the body is not that shape, a core field is
        malformed, an id is empty or listed twice, or it lists no model: then
        :func:`~registry.metadata.parse.parse_models` (or, for a duplicate,
        :func:`~registry.metadata.parse.payload_problem`) says what is wrong.
    """
    cores: list[MetadataCore] | None = None
    spans: ModelSpans | None = None
    checked = True
    part = None if core is None else parse_core_part(core, raw)
    if part is not None:
        cores, pairs = part
        if pairs is not None:
            spans, checked = ModelSpans(raw, pairs), False
    if cores is None:  # the core fields in the walk that finds each entry
        spans = scan_cores(raw)
        if spans is not None:
            cores, spans.values = spans.values, []
    if cores is None:  # a body the walk declines: entries are found on first use
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

    body = _Body(raw, source, hint, positions, spans, checked=checked)
    return LazyModels(MappingProxyType(by_id), body.build, body.build_all, listed=len(cores))
