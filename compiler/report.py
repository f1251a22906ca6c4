"""The adjustment report: every change between intent and the compiled request.

Each :class:`Adjustment` carries a stable dotted ``kind`` (catalogued in
``docs/adjustments.md``), the ``path`` it touched in the body or schema, what was
``requested``, what was ``applied`` (``None`` = omitted), a ``reason`` and the
``evidence`` (the layer and exact source that decided it).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from registry.resolve.capabilities import Provenance

__all__ = ["TABLE_HEADER", "Adjustment", "AdjustmentReport"]


@dataclass(frozen=True, slots=True)
class Adjustment:
    """One change the compiler made to the requested intent.

    Attributes:
        kind: stable dotted slug, e.g. ``param.dropped`` or ``reasoning.effort_mapped``.
        path: dotted path in the request body (``reasoning.effort``) or a JSON Pointer
            into the contract schema prefixed with ``schema:``.
        requested: the value the intent asked for (``None`` when it asked for nothing).
        applied: the value sent; ``None`` means the setting was omitted.
        reason: one sentence a person can act on.
        evidence: the source that decided it, or ``None`` for a rule of this library.
    """

    kind: str
    path: str
    requested: Any
    applied: Any
    reason: str
    evidence: Provenance | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping with the six attributes."""
        return {
            "kind": self.kind,
            "path": self.path,
            "requested": _jsonable(self.requested),
            "applied": _jsonable(self.applied),
            "reason": self.reason,
            "evidence": None if self.evidence is None else self.evidence.to_dict(),
        }


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return str(value)


@dataclass(frozen=True, slots=True)
class AdjustmentReport:
    """All adjustments of one compilation, plus what it was compiled from.

    Attributes:
        stage: the stage name.
        model: the model id.
        metadata: one line naming the metadata source and its date.
        rung: the output enforcement reached: ``schema``, ``json``, ``prompt`` or
            ``none`` (no contract).
        adjustments: in the order the passes produced them.
        shown_sha256: SHA-256 of the schema shown in the messages, or ``None``.
        enforced_sha256: SHA-256 of the schema in ``response_format``, or ``None``.
        notes: context lines (metadata assumptions, dropped hints).
        tool_hashes: ``(tool name, SHA-256 of its parameters as sent)`` per caller tool,
            in order; the parameters are what the model is shown and, where the call is
            ``strict``, what the provider enforces.
    """

    stage: str
    model: str
    metadata: str
    rung: str
    adjustments: tuple[Adjustment, ...] = ()
    shown_sha256: str | None = None
    enforced_sha256: str | None = None
    notes: tuple[str, ...] = field(default=())
    tool_hashes: tuple[tuple[str, str], ...] = ()

    def kinds(self) -> Counter[str]:
        """Return how many adjustments there are of each kind."""
        return Counter(a.kind for a in self.adjustments)

    def by_kind(self, kind: str) -> list[Adjustment]:
        """Return the adjustments of one kind, in order."""
        return [a for a in self.adjustments if a.kind == kind]

    def to_dict(self, *, adjustments: Any = None) -> dict[str, Any]:
        """Return a JSON-ready mapping (deterministic key order when dumped sorted).

        Args:
            adjustments: the ``adjustments`` value to put in instead of each
                adjustment's :meth:`Adjustment.to_dict` (a lock's compacted list);
                ``None`` for those.
        """
        return {
            "stage": self.stage,
            "model": self.model,
            "metadata": self.metadata,
            "rung": self.rung,
            "shown_sha256": self.shown_sha256,
            "enforced_sha256": self.enforced_sha256,
            "notes": list(self.notes),
            "adjustments": [a.to_dict() for a in self.adjustments] if adjustments is None
            else adjustments,
            **({"tools": [{"name": n, "sha256": h} for n, h in self.tool_hashes]}
               if self.tool_hashes else {}),
        }

    def table_rows(self) -> list[tuple[str, str, str, str, str]]:
        """The adjustment table of :meth:`to_text`, one row of cells per adjustment
        (columns :data:`TABLE_HEADER`; values as compact JSON, cut at 40 characters)."""
        rows = []
        for a in self.adjustments:
            why = a.reason if a.evidence is None else f"{a.reason} [{a.evidence}]"
            rows.append((a.kind, a.path, _cell(a.requested), _cell(a.applied, omitted=True), why))
        return rows

    def header_lines(self) -> list[str]:
        """The lines :meth:`to_text` prints above the table: stage and model, metadata,
        enforcement rung, notes."""
        lines = [
            f"stage {self.stage} / model {self.model}",
            f"metadata: {self.metadata}",
            f"output enforcement: {self.rung}",
        ]
        return lines + [f"note: {n}" for n in self.notes]

    def to_text(self) -> str:
        """Render a readable table: one row per adjustment, then the context lines."""
        lines = self.header_lines()
        if not self.adjustments:
            lines.append("no adjustments: the request is exactly what the stage asked for")
            return "\n".join(lines)
        rows = [TABLE_HEADER, *self.table_rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            lines.append(
                "  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4]
            )
        return "\n".join(lines)


#: The columns of :meth:`AdjustmentReport.table_rows`, as :meth:`~AdjustmentReport.to_text`
#: titles them.
TABLE_HEADER = ("KIND", "PATH", "REQUESTED", "APPLIED", "REASON / EVIDENCE")


def _cell(value: Any, *, omitted: bool = False) -> str:
    if value is None:
        return "(omitted)" if omitted else "-"
    text = json.dumps(_jsonable(value), ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."
