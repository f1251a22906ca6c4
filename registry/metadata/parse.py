"""Turning OpenRouter payloads into metadata models, and explaining what is wrong.

:func:`parse_models` takes a decoded ``GET /api/v1/models`` response (or a bare array),
:func:`parse_endpoints` one ``/endpoints`` response and :func:`parse_endpoints_bundle`
a bundle of them; :func:`parse_models_json` validates a well-formed body in one pass;
:func:`read_json` reads a file. Parsing never lets a :class:`pydantic.ValidationError`
escape: every problem is a :class:`~registry.errors.MetadataError` naming the source,
the element index, the model id and the field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails, from_json

from registry.boundedread import InputTooLarge, read_at_most
from registry.errors import MetadataError
from registry.jsondepth import MAX_JSON_DEPTH_CAP, json_depth_over
from registry.metadata.malformed import mend, mostly_malformed
from registry.metadata.ranges import json_kind
from registry.metadata.shapes import EndpointList, ModelInfo

__all__ = [
    "MAX_FILE_BYTES",
    "format_errors",
    "parse_endpoints",
    "parse_endpoints_bundle",
    "parse_models",
    "parse_models_json",
    "payload_problem",
    "read_bounded",
    "read_json",
]

MAX_FILE_BYTES = 64 * 2**20
"""The largest metadata file read (64 MiB, as ``CAPC_MAX_RESPONSE_BYTES``; OpenRouter's
whole list is ~1.3 MB)."""


def read_bounded(path: Path, *, source: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """Read a file whole, but never more than ``limit`` bytes (``/dev/zero`` ends).

    Works for pipes too (``/dev/stdin``, ``<(...)``).

    Raises:
        MetadataError: the file cannot be read, is larger than ``limit``, or nests
            deeper than :data:`registry.jsondepth.MAX_JSON_DEPTH_CAP` levels.
    """
    try:
        raw = read_at_most(path, limit)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise MetadataError(f"{source}: cannot read file: {reason}", source=source) from exc
    except InputTooLarge as exc:
        raise MetadataError(f"{source}: {exc} for a metadata file; is it the right file?",
                            source=source) from exc
    if json_depth_over(raw, MAX_JSON_DEPTH_CAP):  # before any parser recurses into it
        raise MetadataError(
            f"{source}: nested deeper than {MAX_JSON_DEPTH_CAP} levels of JSON arrays and "
            "objects (OpenRouter's lists nest at most 7); is it the right file?",
            source=source,
        )
    return raw


def payload_problem(raw: bytes, *, models: bool) -> str | None:
    """What makes a JSON body unfit although it parses: a non-finite number (``NaN``,
    ``Infinity``) anywhere, or, for a models list, one model id listed twice.

    Args:
        raw: the body.
        models: check for duplicate model ids (a ``{"data": [...]}`` list or bare array).

    Returns:
        One line saying what is wrong (with line and column, or both indexes), or
        ``None`` when nothing is (or the body is not JSON: the parsers explain that).
    """
    try:
        data = from_json(raw, allow_inf_nan=False)
    except ValueError as strict:
        try:
            from_json(raw)
        except ValueError:
            return None  # not JSON at all: the caller's parser says where
        where = str(strict).removeprefix("expected value ")
        return f"a number that is not finite (NaN or Infinity) {where}; JSON has none"
    if not models:
        return None
    items = data.get("data") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return None
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        model_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(model_id, str):
            continue
        if model_id in first:
            return (
                f"model id {model_id!r} is listed twice (data[{first[model_id]}] and "
                f"data[{index}]); a models list names each model once"
            )
        first[model_id] = index
    return None


@functools.cache
def _model_list() -> TypeAdapter[list[ModelInfo]]:
    """The validator of a bare models array, built when first needed."""
    return TypeAdapter(list[ModelInfo])


class _ModelsResponse(BaseModel):
    """The usual ``/models`` response shape, for :func:`parse_models_json`."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    data: list[ModelInfo]



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
        return f"expected {expected}, got {json_kind(payload)} (pass decoded JSON, not raw text)"
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
    return f"expected {expected}, got {json_kind(payload)}"


def format_errors(errors: Sequence[ErrorDetails], *, skip: int = 0, limit: int = 3) -> str:
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
        The models in payload order (an empty list for an empty array). A model's
        field of an impossible type is dropped and recorded in its ``out_of_range``
        (:func:`registry.metadata.malformed.mend`): it costs that field, not the list.

    Raises:
        MetadataError: the payload has the wrong overall shape (text, an HTML page, an
            API ``{"error": ...}`` body, an object without a ``data`` array), an element
            is not an object or has no string ``id``, or more than half the models (and
            more than one) have malformed values. The message names ``source``, the
            element index, the model id and the field.
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
                f"{source}: model #{index} is {json_kind(item)}, not an object", source=source
            )
        model_id = item.get("id")
        if not isinstance(model_id, str) or not model_id:
            got = "missing" if model_id is None else f"{model_id!r}"
            raise MetadataError(
                f"{source}: model #{index} has no string 'id' ({got})", source=source
            )

    try:
        return _fit(_model_list().validate_python(items), source)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        mended = mend(items, errors)  # a malformed field costs that field, with a note
        if mended is not None:
            try:
                return _fit(_model_list().validate_python(
                    [mended.get(index, item) for index, item in enumerate(items)]), source)
            except ValidationError:
                pass  # explained as it was found
        loc = errors[0]["loc"]
        if not loc or not isinstance(loc[0], int):  # pragma: no cover - list pre-checked
            raise MetadataError(f"{source}: {format_errors(errors)}", source=source) from exc
        index = loc[0]
        bad = items[index]
        bad_id = bad.get("id") if isinstance(bad, dict) else None
        mine = [e for e in errors if e["loc"][:1] == (index,)]
        others = {e["loc"][0] for e in errors} - {index}
        text = f"{source}: model #{index} ({bad_id!r}): {format_errors(mine, skip=1)}"
        if others:
            text += f" (and errors in {len(others)} other model(s))"
        raise MetadataError(text, source=source) from exc


def _fit(models: list[ModelInfo], source: str) -> list[ModelInfo]:
    problem = mostly_malformed(models)  # a few malformed values are notes; most, garbage
    if problem is not None:
        raise MetadataError(f"{source}: {problem}", source=source)
    return models


def parse_models_json(raw: bytes | str) -> list[ModelInfo] | None:
    """Parse a well-formed ``GET /api/v1/models`` response body in one pass.

    The JSON text is validated directly (keys this library does not read, such as the
    long ``description`` texts, are skipped without being decoded), which makes loading
    a large snapshot about a third faster than decoding it first. The result equals
    ``parse_models(json.loads(raw), source=...)``.

    Args:
        raw: the response body, ``{"data": [...]}`` as UTF-8 JSON.

    Returns:
        The models in payload order, or ``None`` when the body is not valid JSON in
        that shape (another shape, a bad field, an empty id, a bare array, mostly
        malformed values): decode it and call :func:`parse_models`, which accepts every
        shape it does, mends a few bad fields and explains a problem precisely.
    """
    try:
        models = _ModelsResponse.model_validate_json(raw).data
    except ValueError:  # pydantic's ValidationError included
        return None
    if not all(model.id for model in models) or mostly_malformed(models):
        return None  # an empty id, or mostly garbage: parse_models says what is wrong
    return models


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
        what = "has no 'endpoints' array" if isinstance(body, dict) else f"is {json_kind(body)}"
        raise MetadataError(
            f"{source}: expected {_ENDPOINTS_EXPECTED}, but 'data' {what}", source=source
        )
    try:
        return EndpointList.model_validate(body)
    except ValidationError as exc:
        model_id = body.get("id")
        raise MetadataError(
            f"{source}: endpoints of {model_id!r}: {format_errors(exc.errors(include_url=False))}",
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
    raw = read_bounded(path, source=where)
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
