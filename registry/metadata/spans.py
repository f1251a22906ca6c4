"""Where each model sits in a ``{"data": [...]}`` body, so one model can be decoded alone.

:class:`~registry.metadata.core.LazyModels` builds a full model only when it is asked
for. Decoding the whole body for that costs in proportion to the catalog in time and
memory (every model's objects held at once: 3.3 s for 50,000 models, mostly the
collector walking them), so the body is walked once with the standard library's C
scanner instead, keeping only where each element of ``data`` starts and ends; each
element decoded on the way is freed at once. A lookup then decodes its own element.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["ModelSpans", "model_spans"]

_SPACE = re.compile(r"[ \t\n\r]*")
_Scan = Callable[[str, int], tuple[object, int]]


class ModelSpans:
    """A models body and the ``(start, end)`` of each element of ``data``.

    Attributes:
        body: the body: its UTF-8 bytes when they are all ASCII (then a character
            offset is a byte offset), else the decoded text.
        spans: offsets into :attr:`body`, in payload order.
    """

    def __init__(self, body: str | bytes, spans: list[tuple[int, int]]):
        self.body = body
        self.spans = spans

    def element(self, index: int) -> object:
        """Decode element ``index`` of ``data`` (JSON types, as :func:`json.loads`)."""
        start, end = self.spans[index]
        return json.loads(self.body[start:end])


def model_spans(raw: bytes) -> ModelSpans | None:
    """Locate every element of the ``data`` array of a JSON object body.

    Args:
        raw: the body as UTF-8 JSON.

    Returns:
        The spans (of the last ``data`` key, as :func:`json.loads` keeps the last of
        duplicate keys), or ``None`` when the body is not a JSON object holding a
        ``data`` array (then the caller decodes it whole).
    """
    try:
        text = raw.decode("utf-8")
        found = _scan(text)
    except (ValueError, IndexError, StopIteration):  # json.JSONDecodeError is a ValueError
        return None
    if found is not None and raw.isascii():
        found.body = raw  # the same offsets, and the text is freed
    return found


def _skip(text: str, pos: int) -> int:
    """The offset of the first character at or after ``pos`` that is not JSON space."""
    found = _SPACE.match(text, pos)
    return pos if found is None else found.end()


def _scan(text: str) -> ModelSpans | None:
    decoder: Any = json.JSONDecoder()
    scan: _Scan = decoder.scan_once  # the C scanner, where it is built
    found: list[tuple[int, int]] | None = None
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
            found, pos = _elements(text, pos, scan)
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
    return None if found is None else ModelSpans(text, found)


def _elements(text: str, pos: int, scan: _Scan) -> tuple[list[tuple[int, int]], int]:
    """The spans of the array opening at ``pos``, and the offset just after it."""
    spans: list[tuple[int, int]] = []
    pos = _skip(text, pos + 1)
    if text[pos] == "]":
        return spans, pos + 1
    while True:
        _, end = scan(text, pos)
        spans.append((pos, end))
        pos = _skip(text, end)
        if text[pos] == "]":
            return spans, pos + 1
        if text[pos] != ",":
            raise ValueError("expected ',' or ']'")
        pos = _skip(text, pos + 1)
