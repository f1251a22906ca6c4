"""Shared tables of a lock's reports: each repeated piece of a report is stored once.

Most of a lock's bytes were its reports: every entry and every route-plan attempt
repeats the projection's ``schema.*`` adjustments (the same list for each request
showing that schema) and the same few evidence records. :func:`compact_reports`
moves both into top-level tables of the document; :func:`expand_reports` puts them
back, giving the reports exactly as :meth:`compiler.report.AdjustmentReport.to_dict`
wrote them (metadata evidence naming the file only). ``request`` and
``instructions`` are untouched: they stay sendable as they are.

In a stored lock:

* ``evidence``: evidence text -> the evidence record (``layer``, ``source``,
  ``field``, ``fetched_at``, ``text``); an adjustment's ``evidence`` is that text
  (a key of the table) or ``null``.
* ``schema_adjustments``: SHA-256 (compact JSON, sorted keys) of a run of
  ``schema.*`` adjustments -> that run; in a report's ``adjustments`` the run is one
  item ``{"schema_adjustments": SHA256}``, at the run's place.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["compact_entry", "compact_reports", "expand_reports", "missing_reference"]


def _reports(document: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for models in (document.get("stages") or {}).values():
        for entry in models.values():
            yield from _entry_reports(entry)


def _entry_reports(entry: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    if entry.get("report") is not None:
        yield entry["report"]
    for attempt in entry.get("attempts") or ():
        if attempt.get("report") is not None:
            yield attempt["report"]


def _sha256(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _is_schema(item: Mapping[str, Any]) -> bool:
    return str(item.get("kind", "")).startswith("schema.")


def compact_reports(document: dict[str, Any]) -> dict[str, Any]:
    """Move the reports' evidence and ``schema.*`` runs into shared tables, in place.

    Args:
        document: a lock document with whole reports (as :func:`expand_reports` returns).

    Returns:
        ``document``, with top-level ``evidence`` and ``schema_adjustments`` tables.
    """
    evidence: dict[str, Any] = {}
    runs: dict[str, list[dict[str, Any]]] = {}
    for models in (document.get("stages") or {}).values():
        for entry in models.values():
            compact_entry(entry, evidence, runs)
    document["evidence"] = evidence
    document["schema_adjustments"] = runs
    return document


def compact_entry(
    entry: dict[str, Any], evidence: dict[str, Any], runs: dict[str, list[dict[str, Any]]]
) -> None:
    """Compact the reports of one lock entry (its own and its attempts'), in place.

    What :func:`compact_reports` does for a whole document, one entry at a time (so a
    writer can stream the entries): the entry's evidence records are added to
    ``evidence`` (text -> record; a later record of the same text replaces the earlier)
    and its ``schema.*`` runs to ``runs`` (SHA-256 -> run). Compacting the entries in
    document order into empty tables gives :func:`compact_reports`'s tables.
    """
    for report in _entry_reports(entry):
        items: list[dict[str, Any]] = []
        run: list[dict[str, Any]] = []
        for adjustment in [*report["adjustments"], None]:
            if adjustment is not None and adjustment.get("evidence") is not None:
                record = adjustment["evidence"]
                evidence[record["text"]] = record
                adjustment["evidence"] = record["text"]
            if adjustment is not None and _is_schema(adjustment):
                run.append(adjustment)
                continue
            if run:
                key = _sha256(run)
                runs[key] = run
                items.append({"schema_adjustments": key})
                run = []
            if adjustment is not None:
                items.append(adjustment)
        report["adjustments"] = items


def expand_reports(document: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of a lock document with whole reports (the shared tables resolved).

    A document already whole (no tables) is returned as a plain copy.

    Args:
        document: a lock document (as :func:`compiler.artifacts.lock.read_lock` returns).

    Returns:
        A deep copy whose report adjustments are complete, with evidence records in
        place; the ``evidence`` and ``schema_adjustments`` tables are left out.

    Raises:
        KeyError: a report references a table key the document does not have (a
            lock that passed :func:`compiler.artifacts.lock.read_lock` has them all).
    """
    out = copy.deepcopy(dict(document))
    evidence = out.pop("evidence", None) or {}
    runs = out.pop("schema_adjustments", None) or {}

    def whole(item: Mapping[str, Any]) -> dict[str, Any]:
        result = dict(item)
        if isinstance(result.get("evidence"), str):
            result["evidence"] = copy.deepcopy(evidence[result["evidence"]])
        return result

    for report in _reports(out):
        if "adjustments" not in report:  # a partial document (a test's, a hand-made one)
            continue
        items: list[dict[str, Any]] = []
        for adjustment in report["adjustments"]:
            if "schema_adjustments" in adjustment:
                items.extend(whole(a) for a in runs[adjustment["schema_adjustments"]])
            else:
                items.append(whole(adjustment))
        report["adjustments"] = items
    return out


def missing_reference(document: Mapping[str, Any]) -> str | None:
    """Name the first table key a report references that the document lacks.

    Args:
        document: a lock document that follows the lock format.

    Returns:
        ``stages.STAGE.MODEL: no evidence 'TEXT'`` (or ``no schema_adjustments``), or
        ``None`` when every reference resolves.
    """
    evidence = document.get("evidence") or {}
    runs = document.get("schema_adjustments") or {}
    for stage, models in (document.get("stages") or {}).items():
        for model, entry in models.items():
            reports = [entry.get("report"), *(a.get("report") for a in entry.get("attempts") or ())]
            for report in filter(None, reports):
                for item in report["adjustments"]:
                    key = item.get("schema_adjustments")
                    if key is not None and key not in runs:
                        return f"stages.{stage}.{model}: no schema_adjustments {key!r}"
                    for adjustment in runs.get(key, ()) if key is not None else (item,):
                        text = adjustment.get("evidence")
                        if text is not None and text not in evidence:
                            return f"stages.{stage}.{model}: no evidence {text!r}"
    return None
