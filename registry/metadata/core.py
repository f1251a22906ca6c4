"""The few metadata fields resolution reads, parsed on their own.

Resolving a model reads eight values of its ``GET /api/v1/models`` entry (and an
alias's ``alias_target.slug``): ``supported_parameters``, ``context_length``,
``top_provider.max_completion_tokens``, ``reasoning.mandatory``,
``reasoning.supported_efforts``, ``reasoning.default_effort``, ``pricing.prompt`` and
``pricing.completion``. Validating only those (a
:class:`MetadataCore` per model) is several times cheaper than validating each whole
:class:`~registry.metadata.shapes.ModelInfo`, so a catalog validates the core fields when it
loads and each full model only when something asks for that model
(:class:`~registry.metadata.lazy.LazyModels`): ``capc compile`` and a sweep over every
model never build one, the audit's price tiers build those of the models they price,
``capc models`` builds every one.

A load reads the core fields in the same walk that finds where each model's entry
starts and ends (:func:`scan_cores`), and a cached list keeps both (:func:`core_json`),
so a full model is decoded from its own bytes, never by walking the other models'.

The core follows the rules of :mod:`registry.metadata.shapes` exactly (an out-of-range
limit or price is ``None``, see :mod:`registry.metadata.ranges`; prices are exact
:class:`~decimal.Decimal` values in USD per token); a test compares the parsers on
every shared snapshot.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Annotated, Any, NotRequired

from pydantic import BeforeValidator, TypeAdapter
from typing_extensions import TypedDict

from registry.metadata.ranges import OUT_OF_RANGE, screen
from registry.metadata.shapes import ModelInfo
from registry.metadata.spans import ModelSpans, model_spans

__all__ = [
    "CORE_FORMAT",
    "CoreFields",
    "MetadataCore",
    "core_json",
    "core_of",
    "parse_core_json",
    "parse_core_part",
    "read_only",
    "scan_cores",
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


_Core = Annotated[MetadataCore, BeforeValidator(screen)]


class _CoreResponse(TypedDict):
    data: list[_Core]


class _CorePart(TypedDict):
    """A stored core part: the core fields, and where each model's entry sits in the
    body (``spans``, two integers a model: the bytes from the end of the entry before,
    or from the start of the body, to its start, then its length in bytes)."""

    data: list[_Core]
    spans: NotRequired[list[int]]


@functools.cache
def _core_response() -> TypeAdapter[_CoreResponse]:
    """The validator of the core fields, built on first use (not at import)."""
    return TypeAdapter(_CoreResponse)


@functools.cache
def _core_part() -> TypeAdapter[_CorePart]:
    """The validator (and writer) of a stored core part."""
    return TypeAdapter(_CorePart)


@functools.cache
def _one_core() -> TypeAdapter[_Core]:
    """The validator of one model's core fields, for :func:`scan_cores`."""
    return TypeAdapter(_Core)


CORE_FORMAT = 5
"""Version of the core body :func:`core_json` writes. Bump it whenever the fields of
:class:`MetadataCore` or the rules that read them change (a stricter type, what counts
as an unknown price...), or what else the part holds: a stored core body holds values
already read by those rules, so a body stored by an older version must not be read as
if it were current (format 3: ``alias_target`` and ``out_of_range`` added; 4: string,
boolean and fractional limits, limits above 2^31 and prices above their ceilings out of
range; 5: ``spans``, where each model's entry starts and ends in the body)."""


def core_json(raw: bytes) -> bytes | None:
    """Return the core fields of a ``{"data": [...]}`` response body as a body of the same
    shape holding only them (15-30% of the bytes of OpenRouter's lists: no descriptions),
    plus where each model's entry sits in ``raw``.

    Reading the result with :func:`parse_core_json` gives exactly what reading ``raw``
    gives (the same values, types and decimal spellings), so a cache can store it beside
    the body and skip scanning the whole body on every load; :func:`parse_core_part`
    also reads the offsets, so one model is decoded from ``raw`` alone.

    Args:
        raw: the response body as UTF-8 JSON.

    Returns:
        The core body (UTF-8 JSON: ``{"data": [...], "spans": [gap, length, ...]}``,
        prices as decimal strings in USD per token; ``spans`` holds, per model, the
        bytes of ``raw`` between the entry before (or the start) and this one, then the
        entry's length in bytes, and is absent when the body cannot be walked element by
        element), or ``None`` when :func:`parse_core_json` does not read ``raw``.
    """
    cores = parse_core_json(raw)
    if cores is None:
        return None
    part: dict[str, Any] = {"data": cores}
    found = model_spans(raw)
    if found is not None and len(found.spans) == len(cores):
        steps: list[int] = []
        end = 0
        for start, stop in found.spans:  # short numbers: a gap and a length a model
            steps += (start - end, stop - start)
            end = stop
        part["spans"] = steps
    return _core_part().dump_json(part, exclude_unset=True)  # type: ignore[arg-type]


def parse_core_part(
    core: bytes, raw: bytes
) -> tuple[list[MetadataCore], list[tuple[int, int]] | None] | None:
    """Read a core part written by :func:`core_json` for the body ``raw``.

    Returns:
        The core fields and, when the part holds well-formed offsets, the ``(start,
        end)`` byte offsets of each model's entry in ``raw``; ``None`` when the part does
        not parse. Well-formed: two a model, each entry inside the body, not empty, after
        the one before, and the entries the elements of one array, in order: only
        whitespace and a ``[`` before the first (as its last byte), whitespace and one
        ``,`` between two, whitespace and a ``]`` after the last, so an offset cannot
        point into a nested object (a decoy ``{"id": ...}`` inside another entry). The
        check reads only the bytes between entries.
    """
    try:
        part = _core_part().validate_json(core)
    except ValueError:  # pydantic's ValidationError included
        return None
    cores, steps = part["data"], part.get("spans")
    if (steps is None or len(steps) != 2 * len(cores) or not steps
            or min(steps) < 0 or min(steps[1::2]) < 1):
        return cores, None
    bounds = list(itertools.accumulate(steps))  # start, end, start, end, ... in bytes
    if bounds[-1] > len(raw) or not _one_array(raw, bounds):
        return cores, None
    return cores, list(zip(bounds[::2], bounds[1::2], strict=True))


_SPACE = b" \t\r\n"


def _one_array(raw: bytes, bounds: list[int]) -> bool:
    """Whether the entries at ``bounds`` (start, end, ...) are consecutive elements of
    one JSON array in ``raw``: what lies between them is whitespace and one separator."""
    if not raw[: bounds[0]].rstrip(_SPACE).endswith(b"["):
        return False
    ends, starts = bounds[1:-1:2], bounds[2::2]
    if any(raw[end:start].strip(_SPACE) != b"," for end, start in zip(ends, starts, strict=True)):
        return False
    after = raw[bounds[-1] : bounds[-1] + 64].lstrip(_SPACE)  # a few bytes, not the rest
    return after.startswith(b"]")


def scan_cores(raw: bytes) -> ModelSpans | None:
    """Validate the core fields of every model of a ``{"data": [...]}`` body in the walk
    that finds where each model's entry sits (:func:`registry.metadata.spans.model_spans`).

    Returns:
        The spans, with one :class:`MetadataCore` per element in
        :attr:`~registry.metadata.spans.ModelSpans.values` (the same values
        :func:`parse_core_json` reads); ``None`` when the body is not that shape, the
        walk declines it (e.g. a number of more than 4,300 digits) or a core field has an
        impossible type (then :func:`parse_core_json`, and after it
        :func:`~registry.metadata.parse.parse_models`, decide).
    """
    return model_spans(raw, _one_core().validate_python)


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


