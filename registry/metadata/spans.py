"""Where each model sits in a ``{"data": [...]}`` body, so one model can be decoded alone.

:class:`~registry.metadata.lazy.LazyModels` builds a full model only when it is asked
for. Decoding the whole body for that costs in proportion to the catalog in time and
memory (every model's objects held at once: 3.3 s for 50,000 models, mostly the
collector walking them), so the body is walked once with the standard library's C
scanner instead, keeping only where each element of ``data`` starts and ends (byte
offsets); each element decoded on the way is handed to an optional ``read`` callback
(the core fields are validated there, :func:`registry.metadata.core.scan_cores`) and
freed at once. A lookup then decodes its own element, touching no other model's bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["ModelSpans", "model_spans"]

_SPACE = re.compile(r"[ \t\n\r]*")
_BLANK = frozenset(" \t\n\r")
_Scan = Callable[[str, int], tuple[object, int]]
_Read = Callable[[object], object]


class ModelSpans:
    """A models body and the byte offsets ``(start, end)`` of each element of ``data``.

    Attributes:
        body: the body's UTF-8 bytes.
        spans: byte offsets into :attr:`body`, in payload order (``body[start:end]`` is
            the element's JSON text).
        values: what ``read`` returned for each element, in the same order (empty when
            :func:`model_spans` was given no ``read``).
    """

    def __init__(self, body: bytes, spans: list[tuple[int, int]],
                 values: list[Any] | None = None):
        self.body = body
        self.spans = spans
        self.values: list[Any] = [] if values is None else values

    def element(self, index: int) -> object:
        """Decode element ``index`` of ``data`` (JSON types, as :func:`json.loads`)."""
        start, end = self.spans[index]
        return json.loads(self.body[start:end])


def model_spans(raw: bytes, read: _Read | None = None) -> ModelSpans | None:
    """Locate every element of the ``data`` array of a JSON object body.

    Args:
        raw: the body as UTF-8 JSON.
        read: called with each decoded element of ``data`` (JSON types), in order; what
            it returns is kept in :attr:`ModelSpans.values`. A ``ValueError`` it raises
            (pydantic's ``ValidationError`` is one) makes the result ``None``.

    Returns:
        The spans (of the last ``data`` key, as :func:`json.loads` keeps the last of
        duplicate keys), or ``None`` when the body is not a JSON object holding a
        ``data`` array, or ``read`` refused an element (then the caller decodes it
        whole).
    """
    try:
        text = raw.decode("utf-8")
        found = _scan(text, read)
    except (ValueError, IndexError, StopIteration, RecursionError):
        return None  # json.JSONDecodeError and ValidationError are ValueErrors
    if found is None:
        return None
    spans, values = found
    if not raw.isascii():  # the scanner counts characters; a slice of the bytes needs bytes
        spans = _byte_offsets(text, spans)
    return ModelSpans(raw, spans, values)


def _byte_offsets(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The character offsets ``spans`` into ``text`` as offsets into its UTF-8 bytes."""
    out: list[tuple[int, int]] = []
    chars = octets = 0  # the same place, counted in characters and in bytes
    for start, end in spans:
        octets += _utf8_length(text[chars:start])
        first = octets
        octets += _utf8_length(text[start:end])
        chars = end
        out.append((first, octets))
    return out


def _utf8_length(piece: str) -> int:
    return len(piece) if piece.isascii() else len(piece.encode("utf-8"))


def _skip(text: str, pos: int) -> int:
    """The offset of the first character at or after ``pos`` that is not JSON space."""
    found = _SPACE.match(text, pos)
    return pos if found is None else found.end()


def _scan(text: str, read: _Read | None) -> tuple[list[tuple[int, int]], list[Any]] | None:
    decoder: Any = json.JSONDecoder()
    scan: _Scan = decoder.scan_once  # the C scanner, where it is built
    found: tuple[list[tuple[int, int]], list[Any]] | None = None
    pos = _skip(text, 0)
    if text[pos] != "{":
        return None
    pos = _skip(text, pos + 1)
    if text[pos] == "}":
        return None
    while True:
        if text[pos] != '"':
            return None
        key, pos = scan(text, pos)
        pos = _skip(text, pos)
        if text[pos] != ":":
            return None
        pos = _skip(text, pos + 1)
        if key == "data" and text[pos] == "[":
            found = None  # an earlier "data" array's values are freed first
            found, pos = _elements(text, pos, scan, read)
        else:
            found = None if key == "data" else found
            _, pos = scan(text, pos)
        pos = _skip(text, pos)
        if text[pos] == "}":
            break
        if text[pos] != ",":
            return None
        pos = _skip(text, pos + 1)
    if _skip(text, pos + 1) != len(text):
        return None
    return found


def _elements(
    text: str, pos: int, scan: _Scan, read: _Read | None
) -> tuple[tuple[list[tuple[int, int]], list[Any]], int]:
    """The spans (and ``read`` values) of the array opening at ``pos``, and the offset
    just after it."""
    spans: list[tuple[int, int]] = []
    values: list[Any] = []
    pos = _skip(text, pos + 1)
    if text[pos] == "]":
        return (spans, values), pos + 1
    while True:
        item, end = scan(text, pos)
        spans.append((pos, end))
        if read is not None:
            values.append(read(item))
        del item
        if text[end] in _BLANK:
            end = _skip(text, end)
        if text[end] == "]":
            return (spans, values), end + 1
        if text[end] != ",":
            raise ValueError("expected ',' or ']'")
        pos = end + 1
        if text[pos] in _BLANK:
            pos = _skip(text, pos)
