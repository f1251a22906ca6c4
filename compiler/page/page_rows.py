"""Audit rows read back from a lock file, so ``capc diff --html`` of two locks has cells.

A lock holds every body, report and route table but no prices, so these rows have no
cost (``cost`` is ``None``); a diff of two models lists audits each side instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from compiler.artifacts.audit import AuditRow, row_status
from compiler.artifacts.audit_detail import detail_from_entry
from compiler.artifacts.lock_compact import expand_reports

__all__ = ["rows_from_lock"]


def _row(stage: str, model: str, entry: Mapping[str, Any]) -> AuditRow:
    report = entry.get("report") or {}
    adjustments = list(report.get("adjustments") or ())
    kinds = dict(sorted(Counter(str(a.get("kind")) for a in adjustments).items()))
    dropped = tuple(str(a.get("path")) for a in adjustments
                    if str(a.get("kind")).startswith("param.") and a.get("applied") is None)
    error = None
    if entry.get("status") != "ok":
        failure = entry.get("error") or {}
        error = f"{failure.get('type')}: {failure.get('message')}"
    detail = detail_from_entry(entry, row_status(error))
    body = entry.get("request") or {}
    length_param = next((k for k in ("max_tokens", "max_completion_tokens") if k in body), None)
    return AuditRow(
        stage=stage,
        model=model,
        error=error,
        rung=report.get("rung"),
        reasoning=body.get("reasoning"),
        length_param=length_param,
        max_tokens=None if length_param is None else int(body[length_param]),
        dropped=dropped,
        adjustments=kinds,
        cost=None,
        reasoning_change=detail.reasoning_change,
        severity=detail.severity,
        attempts=detail.attempts,
        routes=detail.routes,
        details=detail.details,
        report_notes=detail.report_notes,
    )


def rows_from_lock(document: Mapping[str, Any]) -> list[AuditRow]:
    """Return one :class:`~compiler.artifacts.audit.AuditRow` per entry of a lock.

    Args:
        document: a lock document (:func:`compiler.artifacts.lock.read_lock`).

    Returns:
        The rows in the lock's order (stages, then models, sorted); ``cost`` is
        ``None`` (a lock records no prices).
    """
    whole = expand_reports(document)
    return [
        _row(stage, model, entry)
        for stage, models in (whole.get("stages") or {}).items()
        for model, entry in models.items()
    ]
