"""The audit page: one self-contained HTML file of what every model receives.

``capc audit --html FILE`` and ``capc diff --html FILE`` write it. The file holds its
data (the audit rows as JSON), its styles and its script inline; it loads nothing
(a Content-Security-Policy of ``default-src 'none'`` with the hashes of its own script
and styles), so it works from ``file://`` with the network off and can be committed
next to a lock. The matrix is models (rows, grouped by vendor) x stages (columns);
the script (``page.js`` beside this module) draws it, filters it and opens each cell's
report. The top of the page names what it was made from: the metadata source, its
date, and the SHA-256 of every input file.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import html
import importlib.metadata
import importlib.resources
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from compiler.artifacts.audit import AuditRow
from compiler.artifacts.audit_detail import SEVERITIES
from compiler.artifacts.diff import Change
from registry.resolve.resolver import Registry

__all__ = [
    "PAGE_FORMAT", "audit_page", "diff_page", "input_file", "registry_inputs", "write_page",
]

#: Version of the data embedded in the page (``<script id="capc-data">``).
PAGE_FORMAT = 1


@functools.cache
def _asset(name: str) -> str:
    return (importlib.resources.files("compiler.artifacts") / name).read_text(encoding="utf-8")


def _version() -> str:
    try:
        return importlib.metadata.version("capability-compiler")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def input_file(what: str, location: str | Path | None) -> dict[str, Any]:
    """Name one input of a page by its file name and the SHA-256 of its bytes.

    Args:
        what: its role (``metadata``, ``models.yaml``, ``stages.yaml``, ``endpoints``,
            ``lock``).
        location: its path (or ``file://`` URL); an ``http(s)://`` URL or a name such
            as ``bundled seed`` is kept as it is, with no hash.

    Returns:
        ``{"what", "name", "sha256"}``; ``sha256`` is 64 hex digits, or ``None`` when
        the input is not a readable local file.
    """
    if location is None:
        return {"what": what, "name": None, "sha256": None}
    text = str(location)
    path = Path(text[len("file://"):] if text.startswith("file://") else text)
    digest = None
    if "://" not in text or text.startswith("file://"):
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            digest = None
    name = path.name if digest is not None else text
    return {"what": what, "name": name, "sha256": digest}


def registry_inputs(
    registry: Registry, endpoints: str | Path | None = None
) -> list[dict[str, Any]]:
    """The inputs of a registry: metadata, models.yaml, stages.yaml, endpoints (if given).

    Args:
        registry: the registry audited.
        endpoints: the ``--endpoints`` file, when one was given.

    Returns:
        One :func:`input_file` mapping per input; the metadata one also has ``date``
        (``fetched_at``) and ``text`` (``Catalog.describe()``).
    """
    catalog = registry.catalog
    metadata = input_file("metadata", catalog.source)
    metadata.update(date=catalog.fetched_at, text=catalog.describe())
    out = [metadata]
    for what, file in (("models.yaml", registry.models_file),
                       ("stages.yaml", registry.stages_file)):
        if file is not None:
            out.append(input_file(what, file.path))
    if endpoints is not None:
        out.append(input_file("endpoints", endpoints))
    return out


def _vendor(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else "(no vendor)"


class _Pool:
    """Values said once: the page's data names them by index (``{"$pool": i}``).

    Reasons, evidence and instruction messages repeat across pairs (a 1,656-pair
    audit holds 4 MB of strings of which 0.1 MB are distinct), and so do the schemas
    in the bodies (1,125 of them, 9 distinct); the script puts them back as it parses
    the data. Nothing here mutates a row: touched dicts are copies.
    """

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._index: dict[str, int] = {}
        self._objects: dict[int, int] = {}

    def ref(self, text: Any) -> Any:
        if not isinstance(text, str) or len(text) < _POOLED:
            return text
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.items)
            self.items.append(text)
        return {"$pool": index}

    def same(self, value: Any) -> Any:
        """Pool an object by identity (the compiler shares one schema among many bodies)."""
        index = self._objects.get(id(value))
        if index is None:
            index = self._objects[id(value)] = len(self.items)
            self.items.append(value)  # kept alive, so its id is not reused
        return {"$pool": index}

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

    def adjustments(self, items: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
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


def _cell(row: AuditRow, pool: _Pool) -> dict[str, Any]:
    data = row.to_dict()
    data["vendor"] = _vendor(row.model)
    data["details"] = pool.adjustments(data["details"])
    data["report_notes"] = [pool.ref(n) for n in data["report_notes"]]
    for attempt in data["attempts"]:
        attempt["adjustments"] = pool.adjustments(attempt["adjustments"])
        attempt["request"] = pool.request(attempt["request"])
        message = attempt["instructions"]
        if message is not None:
            attempt["instructions"] = {**message, "content": pool.ref(message.get("content"))}
    return data


def _script_json(data: Any) -> str:
    """JSON that cannot end its ``<script>`` element early, whatever the strings hold:
    every ``<`` is written ``\\u003c``, so neither ``</script`` nor ``<!--`` can occur."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _document(title: str, data: Mapping[str, Any], pool: _Pool) -> str:
    style, script = _asset("page.css"), _asset("page.js")
    pool_items = pool.items
    policy = (f"default-src 'none'; script-src {_csp_hash(script)}; "
              f"style-src {_csp_hash(style)}; img-src data:; base-uri 'none'; form-action 'none'")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="capability-compiler">',
        '<link rel="icon" href="data:,">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{style}</style>",
        "</head>",
        "<body>",
        "<noscript><p>This page draws its matrix with JavaScript; the data is in the "
        "element <code>capc-data</code> of its source.</p></noscript>",
        f'<script type="application/json" id="capc-pool">{_script_json(pool_items)}</script>',
        f'<script type="application/json" id="capc-data">{_script_json(data)}</script>',
        f"<script>{script}</script>",
        "</body>",
        "</html>",
        "",
    ])


def _base(kind: str, title: str) -> dict[str, Any]:
    return {
        "format": PAGE_FORMAT,
        "kind": kind,
        "title": title,
        "generator": f"capability-compiler {_version()}",
        "severities": [
            {"name": s.name, "label": s.label, "symbol": s.symbol,
             "description": s.description}
            for s in SEVERITIES
        ],
    }


def _stage_order(*row_lists: Iterable[AuditRow]) -> list[str]:
    order: dict[str, None] = {}
    for rows in row_lists:
        for row in rows:
            order.setdefault(row.stage, None)
    return list(order)


def audit_page(
    rows: Sequence[AuditRow], registry: Registry, *, inputs: Sequence[Mapping[str, Any]]
) -> str:
    """Render the audit as one self-contained HTML page.

    Args:
        rows: from :func:`compiler.artifacts.audit.audit`.
        registry: the registry audited.
        inputs: what the audit was made from (:func:`registry_inputs`).

    Returns:
        The HTML text (UTF-8, ending in a newline). Its data (``#capc-data``) is
        ``{"format": 1, "kind": "audit", "sides": [{"label", "text", "inputs"}],
        "stages": [...], "cells": [AuditRow.to_dict() + {"vendor"}, ...], ...}``, where
        each long string (reasons, evidence, instruction messages, notes) and each
        schema in a body is ``{"$pool": i}``, item ``i`` of the list in ``#capc-pool``.
    """
    pool = _Pool()
    data = _base("audit", "capc audit")
    data.update(
        sides=[{"label": "audited", "text": registry.catalog.describe(),
                "inputs": [dict(i) for i in inputs]}],
        stages=_stage_order(rows),
        cells=[_cell(row, pool) for row in rows],
    )
    return _document(f"capc audit: {registry.catalog.describe()}", data, pool)


def diff_page(
    changes: Sequence[Change],
    old_rows: Sequence[AuditRow],
    new_rows: Sequence[AuditRow],
    *,
    sides: Sequence[Mapping[str, Any]],
    pairs: int,
) -> str:
    """Render a diff as one self-contained HTML page: only the pairs that changed.

    Args:
        changes: from :func:`compiler.artifacts.diff.diff_locks`.
        old_rows: the old side's rows (from the audit of a models list, or
            :func:`compiler.artifacts.page_rows.rows_from_lock`).
        new_rows: the new side's rows.
        sides: ``[{"label": "old", "text", "inputs"}, {"label": "new", ...}]``.
        pairs: how many stage/model pairs were compared.

    Returns:
        The HTML text. Its data has ``"kind": "diff"`` and one cell per changed pair:
        ``{"stage", "model", "vendor", "changes": [Change.to_dict(), ...], "old":
        cell | null, "new": cell | null}``.
    """
    old = {(r.stage, r.model): r for r in old_rows}
    new = {(r.stage, r.model): r for r in new_rows}
    by_pair: dict[tuple[str, str], list[Change]] = {}
    for change in changes:
        by_pair.setdefault((change.stage, change.model), []).append(change)
    stage_rank = {s: i for i, s in enumerate(_stage_order(new_rows, old_rows))}
    pool = _Pool()
    cells: list[dict[str, Any]] = []
    for (stage, model), found in sorted(
            by_pair.items(), key=lambda kv: (stage_rank.get(kv[0][0], len(stage_rank)), kv[0])):
        before, after = old.get((stage, model)), new.get((stage, model))
        cells.append({
            "stage": stage,
            "model": model,
            "vendor": _vendor(model),
            "changes": [c.to_dict() for c in found],
            "old": None if before is None else _cell(before, pool),
            "new": None if after is None else _cell(after, pool),
        })
    data = _base("diff", "capc diff")
    data.update(
        sides=[dict(s) for s in sides],
        stages=sorted({str(c["stage"]) for c in cells}, key=lambda s: stage_rank.get(s, 0)),
        cells=cells,
        pairs=pairs,
        changes=len(changes),
    )
    title = " -> ".join(str(s.get("text")) for s in sides)
    return _document(f"capc diff: {title}", data, pool)


def write_page(text: str, path: str | Path) -> None:
    """Write a page atomically (a temporary file in the same folder, then a rename).

    Unlike a lock it is not synced to disk first: a page is a view, made again at will.

    Raises:
        OSError: the folder is not writable, or the disk is full.
    """
    target = Path(path)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
