"""The audit: a stage x model matrix of what each model actually receives, and its cost.

One row per stage and model listed in stages.yaml: the output enforcement reached, the
reasoning object sent, the length limit, the sampling parameters dropped, the number
of adjustments by kind, and the worst-case cost of one call in USD::

    cost = estimated prompt tokens x prompt price
         + (max_tokens - reasoning allowance) x completion price
         + reasoning allowance x internal_reasoning price + request price

The reasoning allowance is priced at ``internal_reasoning`` only where the model
publishes that price; otherwise every completion token is priced at ``completion``.
Prices are USD per token as OpenRouter publishes them, computed exactly with
:class:`~decimal.Decimal` (:func:`compiler.pricing.cost.worst_case_cost`). A
``pricing.overrides`` entry applies when the estimated prompt has more than its
``min_prompt_tokens`` tokens (later entries win per price); entries that apply only at
certain hours (``utc_start``/``utc_end``) are ignored, and the row says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.artifacts.audit_detail import CellDetails
from compiler.artifacts.lock import Compilation, iter_compilations
from compiler.passes.budget import estimate_prompt_tokens, tools_tokens
from compiler.pricing.book import price_book
from compiler.pricing.cost import Cost, worst_case_cost
from compiler.pricing.prices import decimal_text
from compiler.schema.frozen_json import FrozenDict
from registry.resolve.resolver import Registry

__all__ = [
    "AuditRow", "audit", "audit_table", "audit_to_json", "reasoning_allowance", "render_audit",
    "row_status",
]


def reasoning_allowance(body: Mapping[str, Any], output_tokens: int | None) -> int:
    """The part of a body's length limit left for reasoning, in tokens: the budget sent
    (``reasoning.max_tokens``), else, when reasoning is on, the limit minus the stage's
    ``output_tokens``; ``0`` without reasoning."""
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, Mapping) or reasoning.get("enabled") is False or (
        reasoning.get("effort") == "none"
    ):
        return 0
    budget = reasoning.get("max_tokens")
    if isinstance(budget, int):
        return budget
    limit = body.get("max_tokens", body.get("max_completion_tokens"))
    if not isinstance(limit, int) or output_tokens is None:
        return 0
    return max(limit - output_tokens, 0)


@dataclass(frozen=True, slots=True)
class AuditRow:
    """What one model receives for one stage.

    Attributes:
        stage: the stage name.
        model: the model id.
        error: ``"Type: message"`` when the compilation failed, else ``None``.
        rung: output enforcement reached (``schema``, ``json``, ``prompt``, ``none``),
            or ``None`` after a failure without a report.
        reasoning: the ``reasoning`` object sent, or ``None``.
        length_param: ``max_tokens`` or ``max_completion_tokens`` (whichever is sent).
        max_tokens: the length limit sent, in tokens, or ``None``.
        dropped: sampling parameters the stage set that are not sent.
        adjustments: number of adjustments by kind.
        cost: the worst-case cost of one call, or ``None`` after a failure.
        reasoning_change, severity, attempts, routes, details, report_notes: what the
            audit page shows (:class:`compiler.artifacts.audit_detail.CellDetail`): the
            reasoning kept / lowered / dropped, the colour class, the route plan's
            attempts with their bodies, the route table, every adjustment with its
            reason and evidence, the report's notes.
    """

    stage: str
    model: str
    error: str | None
    rung: str | None
    reasoning: Mapping[str, Any] | None
    length_param: str | None
    max_tokens: int | None
    dropped: tuple[str, ...]
    adjustments: Mapping[str, int]
    cost: Cost | None
    reasoning_change: str | None = None
    severity: str = "none"
    attempts: tuple[Mapping[str, Any], ...] = ()
    routes: tuple[Mapping[str, Any], ...] = ()
    details: tuple[Mapping[str, Any], ...] = ()
    report_notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping of the row."""
        return {
            "stage": self.stage,
            "model": self.model,
            "status": row_status(self.error),
            "error": self.error,
            "rung": self.rung,
            "reasoning": None if self.reasoning is None else dict(self.reasoning),
            "length_param": self.length_param,
            "max_tokens": self.max_tokens,
            "dropped": list(self.dropped),
            "adjustments": dict(sorted(self.adjustments.items())),
            "cost": None if self.cost is None else self.cost.to_dict(),
            "reasoning_change": self.reasoning_change,
            "severity": self.severity,
            "attempts": [dict(a) for a in self.attempts],
            "routes": [dict(r) for r in self.routes],
            "details": [dict(d) for d in self.details],
            "report_notes": list(self.report_notes),
        }


#: An error that says the model cannot serve a chat completion at all (no text output):
#: the pair is not applicable rather than failed.
_NOT_APPLICABLE = "UnsupportedModalityError"


def row_status(error: str | None) -> str:
    """Return ``ok``, ``not_applicable`` or ``error`` for an :attr:`AuditRow.error`."""
    if error is None:
        return "ok"
    return "not_applicable" if error.startswith(_NOT_APPLICABLE) else "error"


class _Rows:
    """Makes the rows of one audit, with what the rows of a stage or of a model share
    worked out once: the stage's declared sizes, the tool definitions' estimate of each
    set of projected tools, the portable form of each adjustment."""

    __slots__ = ("_details", "_registry", "_stages", "_tools")

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._details = CellDetails(registry.catalog)
        self._stages: dict[str, tuple[int, int | None]] = {}
        self._tools: dict[tuple[Any, ...], tuple[tuple[Any, ...], int]] = {}

    def _stage(self, name: str) -> tuple[int, int | None]:
        """The stage's ``estimated_prompt_tokens`` (0 when not set) and ``output_tokens``."""
        found = self._stages.get(name)
        if found is None:
            decl = self._registry.stage(name)
            found = self._stages[name] = (decl.estimated_prompt_tokens or 0, decl.output_tokens)
        return found

    def _tools_tokens(self, tools: Any) -> int:
        """:func:`tools_tokens` of a body's ``tools``, once per set of tools whose
        parameters are the same read-only schemas (a projection's, shared by its models)."""
        if not tools or type(tools) is not list:
            return tools_tokens(tools)
        key: list[Any] = []
        for entry in tools:
            function = entry.get("function") if type(entry) is dict else None
            if type(function) is not dict:
                return tools_tokens(tools)
            name, about = function.get("name"), function.get("description")
            parameters = function.get("parameters")
            if type(parameters) is not FrozenDict or type(name) is not str or not (
                    about is None or type(about) is str):
                return tools_tokens(tools)
            key += (name, about, "description" in function, id(parameters))
        signature = tuple(key)
        found = self._tools.get(signature)
        if found is None:
            # the schemas are kept with their ids, so an id is never another schema's
            kept = tuple(e["function"]["parameters"] for e in tools)
            found = self._tools[signature] = (kept, tools_tokens(tools))
        return found[1]

    def row(self, item: Compilation) -> AuditRow:
        """The row of one compilation."""
        report = item.report
        adjustments: dict[str, int] = {}
        dropped: tuple[str, ...] = ()
        if report is not None:
            kinds: dict[str, int] = {}
            paths = []
            for a in report.adjustments:
                kind = a.kind
                kinds[kind] = kinds.get(kind, 0) + 1
                if a.applied is None and kind.startswith("param."):
                    paths.append(a.path)
            adjustments, dropped = dict(sorted(kinds.items())), tuple(paths)
        compiled = item.compiled
        error = None if compiled is not None else f"{type(item.error).__name__}: {item.error}"
        detail = self._details.parts(item, row_status(error))
        if compiled is None:
            return AuditRow(item.stage, item.model, error, None if report is None else report.rung,
                            None, None, None, dropped, adjustments, None, *detail)
        body = compiled.body
        length_param = ("max_tokens" if "max_tokens" in body else "max_completion_tokens"
                        if "max_completion_tokens" in body else None)
        limit = None if length_param is None else int(body[length_param])
        declared, output_tokens = self._stage(item.stage)
        # The same estimate the token budget pass used: the instruction message, the tool
        # definitions and the stage's declared prompt size (the audit compiles without the
        # caller's messages).
        shown = [] if compiled.instructions is None else [compiled.instructions]
        prompt = estimate_prompt_tokens(shown) + self._tools_tokens(body.get("tools")) + declared
        sheet = price_book(self._registry, item.model, item.stage).model
        reasoning = reasoning_allowance(body, output_tokens)
        return AuditRow(item.stage, item.model, None, compiled.rung, body.get("reasoning"),
                        length_param, limit, dropped, adjustments,
                        worst_case_cost(sheet, prompt, limit, reasoning), *detail)


def audit(
    registry: Registry, *, stage: str | None = None, model: str | None = None,
    coverage: str | None = None,
) -> list[AuditRow]:
    """Compile every listed stage/model pair and describe what each model receives.

    Args:
        registry: metadata plus declarations.
        stage: only this stage; ``None`` for all.
        model: only model ids matching this shell glob (``anthropic/*``, case-sensitive);
            ``None`` for all. Only the matching pairs are compiled; each selected stage
            that lists models has its declaration checked, so a broken contract raises
            as it does unfiltered.
        coverage: ``full`` or ``first`` for every stage, ``None`` for each stage's own.

    Returns:
        One row per pair, in stages.yaml order.

    Raises:
        UnknownStageError: ``stage`` is not declared.
        ContractError: a stage's contract does not import.
    """
    # one pair at a time: a compilation (its request, a failure's traceback) is dropped
    # once its row is made, so it never reaches the collector's older generations
    rows = _Rows(registry)
    return [
        rows.row(item)
        for item in iter_compilations(registry, stages=None if stage is None else [stage],
                                      coverage=coverage, model=model)
    ]


def audit_to_json(
    rows: Sequence[AuditRow], registry: Registry, *, metadata: Any = None
) -> str:
    """Render the audit as one JSON object: ``{"metadata": ..., "rows": [...]}``.

    Args:
        rows: from :func:`audit`.
        registry: the registry audited (names the metadata).
        metadata: the ``metadata`` value (``capc audit --json``: its metadata object);
            default the one-line description of the registry's metadata.

    Returns:
        Indented JSON text; costs are exact decimal strings in USD.
    """
    described = registry.catalog.describe() if metadata is None else metadata
    payload = {"metadata": described, "rows": [r.to_dict() for r in rows]}
    return json.dumps(payload, indent=2, ensure_ascii=False)


def _reasoning_cell(reasoning: Mapping[str, Any] | None) -> str:
    if not reasoning:
        return "-"
    return " ".join(f"{k}={json.dumps(v)}" for k, v in reasoning.items())


def _kinds_cell(adjustments: Mapping[str, int]) -> str:
    total = sum(adjustments.values())
    if not total:
        return "0"
    return f"{total}: " + ", ".join(f"{k} {n}" for k, n in adjustments.items())


def audit_table(
    rows: Sequence[AuditRow], registry: Registry
) -> tuple[tuple[str, ...], list[tuple[str, ...]], list[str]]:
    """The cells of :func:`render_audit`: the header, one row per pair (the last
    column ``ADJUSTMENTS``, adjustments by kind), and the lines after the table (notes,
    the metadata, the cost formula)."""
    header = ("STAGE", "MODEL", "RUNG", "REASONING", "LIMIT", "DROPPED", "COST_USD",
              "ADJUSTMENTS")  # fmt: skip
    table: list[tuple[str, ...]] = []
    notes: list[str] = []
    for row in rows:
        where = f"{row.stage} / {row.model}"
        if row.error is not None:
            notes.append(f"{where}: {row.error}")
        cost = row.cost
        na = row.error is not None and row.error.startswith(_NOT_APPLICABLE)
        usd = ("n/a" if na else "error") if cost is None else (
            decimal_text(cost.usd) or "unknown")
        notes += [f"{where}: {n}" for n in (() if cost is None else cost.notes)]
        limit = "-" if row.max_tokens is None else str(row.max_tokens)
        if row.length_param == "max_completion_tokens":
            limit += " (max_completion_tokens)"
        table.append(
            (
                row.stage,
                row.model,
                ("n/a" if na else "error") if row.error is not None else row.rung or "-",
                _reasoning_cell(row.reasoning),
                limit,
                ",".join(row.dropped) or "-",
                usd,
                _kinds_cell(row.adjustments),
            )
        )
    after = [f"note: {n}" for n in notes]
    after += [
        f"metadata: {registry.catalog.describe()}",
        "COST_USD: worst case of one call = estimated prompt tokens x prompt price "
        "+ LIMIT x completion price, the reasoning allowance at the internal_reasoning "
        "price where one is published; the prompt estimate is the instruction message "
        "and the tool definitions plus the stage's estimated_prompt_tokens",
    ]
    return header, table, after


def render_audit(rows: Sequence[AuditRow], registry: Registry) -> str:
    """Render the audit as a table, then notes and the cost formula.

    Args:
        rows: from :func:`audit`.
        registry: the registry audited (names the metadata).

    Returns:
        The text, without a final newline.
    """
    header, table, after = audit_table(rows, registry)
    cells = [header, *table]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in cells
    ]
    return "\n".join(lines + after)
