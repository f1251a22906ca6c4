"""The audit page's data: cells built straight from the rows, long values said once.

:mod:`compiler.page.page` writes it into ``<script type="application/json">``
elements. Each cell is encoded (the C JSON encoder, compact) as soon as it is built and
its dicts freed, so even a 1,656-pair page never holds its whole tree at once; long
strings and the schemas the compiler shares among bodies go in a pool (:class:`Pool`)
the page's script resolves (``{"$pool": i}``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.artifacts.audit import AuditRow, row_status

__all__ = ["Pool", "cell", "data_json", "script_json", "vendor"]


def vendor(model: str) -> str:
    """The part of a model id before its first ``/`` (``(no vendor)`` without one)."""
    return model.split("/", 1)[0] if "/" in model else "(no vendor)"


class _Ref(dict[str, int]):
    """A reference the pool handed out (the encoder writes it as any dict)."""

    __slots__ = ()


class Pool:
    """Values said once: the page's data names them by index (``{"$pool": i}``).

    Reasons, evidence and instruction messages repeat across pairs (a 1,656-pair
    audit holds 4 MB of strings of which 0.1 MB are distinct), and so do the schemas
    in the bodies (1,125 of them, 9 distinct); the script puts them back as it parses
    the data. Nothing here mutates a row: touched dicts are copies.
    """

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.refs = 0  # how many ``{"$pool": i}`` this pool has handed out
        self._index: dict[str, int] = {}
        self._objects: dict[int, int] = {}

    def ref(self, text: Any) -> Any:
        if not isinstance(text, str) or len(text) < _POOLED:
            return text
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.items)
            self.items.append(text)
        self.refs += 1
        return _Ref({"$pool": index})

    def same(self, value: Any) -> Any:
        """Pool an object by identity (the compiler shares one schema among many bodies)."""
        index = self._objects.get(id(value))
        if index is None:
            index = self._objects[id(value)] = len(self.items)
            self.items.append(value)  # kept alive, so its id is not reused
        self.refs += 1
        return _Ref({"$pool": index})

    def literal(self, value: Any) -> Any:
        """``value`` with each object of its own that looks like a reference (one key,
        ``$pool``: a crafted lock could hold one) moved into the pool, which the script
        reads as it is, so the page shows it instead of another pool item."""
        if isinstance(value, _Ref):
            return value
        if isinstance(value, Mapping):
            if list(value) == ["$pool"]:
                return self.same(value)
            return {k: self.literal(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.literal(v) for v in value]
        return value

    def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body with its schema (``response_format`` or the forced tool's) pooled."""
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict) \
                and "schema" in fmt["json_schema"]:
            inner = fmt["json_schema"]
            body = {**body, "response_format": {
                **fmt, "json_schema": {**inner, "schema": self.same(inner["schema"])}}}
        tools = body.get("tools")
        if isinstance(tools, list) and len(tools) == 1 and isinstance(tools[0], dict) \
                and "parameters" in (tools[0].get("function") or {}):
            function = tools[0]["function"]
            body = {**body, "tools": [{**tools[0], "function": {
                **function, "parameters": self.same(function["parameters"])}}]}
        return body

    def adjustments(
        self, items: Iterable[Mapping[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        if items is None:
            return None
        out = []
        for item in items:
            evidence = item.get("evidence")
            if evidence is not None:
                evidence = {**evidence, "text": self.ref(evidence.get("text"))}
            out.append({**item, "reason": self.ref(item.get("reason")), "evidence": evidence})
        return out


#: Strings at least this long go in the pool.
_POOLED = 40


def cell(row: AuditRow, pool: Pool) -> dict[str, Any]:
    """The row as ``AuditRow.to_dict()`` + ``vendor``, built without copying what the
    encoder can read as it is (tuples, the routes, the bodies' unchanged values)."""
    details = pool.adjustments(row.details)  # pooled before the attempts, as ever
    notes = [pool.ref(n) for n in row.report_notes]
    attempts = []
    for attempt in row.attempts:
        adjustments = pool.adjustments(attempt["adjustments"])
        request = pool.request(attempt["request"])
        message = attempt["instructions"]
        if message is not None:
            message = {**message, "content": pool.ref(message.get("content"))}
        attempts.append({**attempt, "adjustments": adjustments, "request": request,
                         "instructions": message})
    return {
        "stage": row.stage,
        "model": row.model,
        "status": row_status(row.error),
        "error": row.error,
        "rung": row.rung,
        "reasoning": row.reasoning,
        "length_param": row.length_param,
        "max_tokens": row.max_tokens,
        "dropped": row.dropped,
        "adjustments": dict(sorted(row.adjustments.items())),
        "cost": None if row.cost is None else row.cost.to_dict(),
        "reasoning_change": row.reasoning_change,
        "severity": row.severity,
        "attempts": attempts,
        "routes": row.routes,
        "details": details,
        "report_notes": notes,
        "vendor": vendor(row.model),
    }


def _plain(value: Any) -> Any:
    """What the encoder writes for a mapping or sequence that is not a dict or list."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"the page cannot hold a {type(value).__name__}")


#: One encoder for the whole page (the C one: compact, no indent; the data is a tree,
#: so the check for cycles is skipped).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_plain,
                           check_circular=False).encode


def script_json(data: Any) -> str:
    """JSON that cannot end its ``<script>`` element early, whatever the strings hold:
    every ``<`` is written ``\\u003c``, so neither ``</script`` nor ``<!--`` can occur."""
    return _ENCODE(data).replace("<", "\\u003c")


def data_json(data: Mapping[str, Any], cells: Iterable[dict[str, Any]], pool: Pool) -> str:
    """``data`` with ``"cells"`` last, each cell encoded as soon as it is built.

    A cell's dicts are freed as soon as it is written, so a 1,656-pair page never
    holds its whole tree (whose allocations would set off full garbage collections).
    A cell whose text holds more ``{"$pool":`` than the pool handed out for it has an
    object of its own of that shape: it is encoded again through :meth:`Pool.literal`.
    """
    head = _ENCODE({**data, "cells": []})
    if head.count(_REF) != 0:
        head = _ENCODE(pool.literal({**data, "cells": []}))
    parts = []
    seen = pool.refs
    for cell in cells:
        text = _ENCODE(cell)
        if text.count(_REF) != pool.refs - seen:
            text = _ENCODE(pool.literal(cell))
        seen = pool.refs
        parts.append(text)
    return (head[:-3] + "[" + ",".join(parts) + "]}").replace("<", "\\u003c")


#: How a reference to the pool starts in the encoded text (a string holding it is
#: written ``"{\\"$pool\\":``, so only an object key matches).
_REF = '{"$pool":'
