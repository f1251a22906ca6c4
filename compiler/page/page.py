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
import functools
import hashlib
import html
import importlib.metadata
import importlib.resources
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from compiler.artifacts.audit import AuditRow
from compiler.artifacts.audit_detail import SEVERITIES
from compiler.artifacts.diff import Change
from compiler.artifacts.output_file import write_atomically
from compiler.page.page_data import Pool, cell, data_json, script_json, vendor
from registry.resolve.resolver import Registry

__all__ = [
    "PAGE_FORMAT", "audit_page", "diff_page", "input_file", "registry_inputs", "write_page",
]

#: Version of the data embedded in the page (``<script id="capc-data">``).
PAGE_FORMAT = 1


@functools.cache
def _asset(name: str) -> str:
    return (importlib.resources.files("compiler.page") / name).read_text(encoding="utf-8")


@functools.cache
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


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@functools.cache
def _policy() -> str:
    """The Content-Security-Policy: only the page's own script and styles may run."""
    style, script = _asset("page.css"), _asset("page.js")
    return (f"default-src 'none'; script-src {_csp_hash(script)}; "
            f"style-src {_csp_hash(style)}; img-src data:; base-uri 'none'; form-action 'none'")


def _document(title: str, data: Mapping[str, Any], cells: Iterable[dict[str, Any]],
              pool: Pool) -> str:
    style, script, policy = _asset("page.css"), _asset("page.js"), _policy()
    data_text = data_json(data, cells, pool)  # first: building the cells fills the pool
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
        f'<script type="application/json" id="capc-pool">{script_json(pool.items)}</script>',
        f'<script type="application/json" id="capc-data">{data_text}</script>',
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
    pool = Pool()
    data = _base("audit", "capc audit")
    data.update(
        sides=[{"label": "audited", "text": registry.catalog.describe(),
                "inputs": [dict(i) for i in inputs]}],
        stages=_stage_order(rows),
    )
    return _document(f"capc audit: {registry.catalog.describe()}", data,
                     (cell(row, pool) for row in rows), pool)


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
            :func:`compiler.page.page_rows.rows_from_lock`).
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
    pool = Pool()
    pairs_changed = sorted(
        by_pair.items(), key=lambda kv: (stage_rank.get(kv[0][0], len(stage_rank)), kv[0]))

    def cells() -> Iterable[dict[str, Any]]:
        for (stage, model), found in pairs_changed:
            before, after = old.get((stage, model)), new.get((stage, model))
            yield {
                "stage": stage,
                "model": model,
                "vendor": vendor(model),
                "changes": [c.to_dict() for c in found],
                "old": None if before is None else cell(before, pool),
                "new": None if after is None else cell(after, pool),
            }

    data = _base("diff", "capc diff")
    data.update(
        sides=[dict(s) for s in sides],
        stages=sorted({stage for (stage, _), _ in pairs_changed},
                      key=lambda s: stage_rank.get(s, 0)),
        pairs=pairs,
        changes=len(changes),
    )
    title = " -> ".join(str(s.get("text")) for s in sides)
    return _document(f"capc diff: {title}", data, cells(), pool)


class PageTargetError(ValueError):
    """The ``--html`` target exists and is not a regular file (a directory, a FIFO, a
    device such as ``/dev/full``); the message names the path and suggests ``-``."""


def write_page(text: str, path: str | Path) -> Path:
    """Write a page atomically by the rules of ``capc lock --output``
    (:func:`compiler.artifacts.output_file.write_atomically`): a symlink is followed, a
    target that exists and is not a regular file is refused, missing parent folders are
    created. ``-`` (standard output) is the caller's to handle.

    Unlike a lock it is not synced to disk first: a page is a view, made again at will.
    A file that already holds exactly these bytes is left as it is (its time stamp
    too): replacing a file costs the file system a flush of the new one.

    Returns:
        The file written (``path`` with symlinks resolved).

    Raises:
        PageTargetError: the target exists and is not a regular file.
        OSError: the folder is not writable, or the disk is full.
    """
    return write_atomically(text.encode("utf-8"), path, option="--html",
                            refuse=PageTargetError, durable=False, keep_same=True)
