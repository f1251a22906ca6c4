"""The audit: a stage x model matrix of what each model actually receives, and its cost.

One row per stage and model listed in stages.yaml: the output enforcement reached, the
reasoning object sent, the length limit, the sampling parameters dropped, the number
of adjustments by kind, and the worst-case cost of one call in USD::

    cost = estimated prompt tokens x prompt price + max_tokens x completion price

Prices are USD per token as OpenRouter publishes them, computed exactly with
:class:`~decimal.Decimal`. A ``pricing.overrides`` entry applies when the estimated
prompt has more than its ``min_prompt_tokens`` tokens (later entries win per price);
entries that apply only at certain hours (``utc_start``/``utc_end``) are ignored, and
the row says so.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from compiler.artifacts.audit_detail import CellDetail, cell_detail
from compiler.artifacts.lock import Compilation, compile_all
from compiler.passes.budget import estimate_prompt_tokens
from registry.metadata.shapes import Pricing
from registry.resolve.capabilities import ResolvedModel
from registry.resolve.resolver import Registry

__all__ = [
    "AuditRow", "Cost", "audit", "audit_to_json", "render_audit", "row_status", "worst_case_cost",
]


@dataclass(frozen=True, slots=True)
class Cost:
    """The worst-case cost of one call.

    Attributes:
        usd: total in USD, or ``None`` when a price or the length limit is unknown.
        prompt_tokens: the estimated prompt size, in tokens.
        completion_tokens: the length limit sent (``max_tokens``), in tokens, or ``None``.
        prompt_price: USD per prompt token used, or ``None`` when unknown.
        completion_price: USD per completion token used, or ``None`` when unknown.
        tier: ``min_prompt_tokens`` of the last override entry that set a price used,
            or ``None`` for the base prices.
        notes: why the cost is unknown, or which override entries were ignored.
    """

    usd: Decimal | None
    prompt_tokens: int
    completion_tokens: int | None
    prompt_price: Decimal | None
    completion_price: Decimal | None
    tier: int | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping; Decimals become exact decimal strings."""
        return {
            "usd": _decimal_text(self.usd),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "prompt_price": _decimal_text(self.prompt_price),
            "completion_price": _decimal_text(self.completion_price),
            "tier_min_prompt_tokens": self.tier,
            "notes": list(self.notes),
        }


def _decimal_text(value: Decimal | None) -> str | None:
    return None if value is None else f"{value.normalize():f}"


def _priced_by_metadata(model: ResolvedModel, key: str) -> bool:
    source = model.source_of(f"pricing.{key}")
    return source is not None and source.layer == "metadata"


def worst_case_cost(
    model: ResolvedModel,
    pricing: Pricing | None,
    prompt_tokens: int,
    completion_tokens: int | None,
) -> Cost:
    """Compute the worst-case cost of one call from published pricing.

    Base prices come from the resolved model (metadata, or models.yaml when it
    declares them). The published ``pricing.overrides`` tiers adjust a price only when
    that price came from metadata: an entry applies when ``prompt_tokens`` exceeds its
    ``min_prompt_tokens`` (an entry without conditions always applies); later entries
    win per price; entries with ``utc_start``/``utc_end`` are ignored and noted.

    Args:
        model: the resolved model (``prompt_price``/``completion_price``, USD per token).
        pricing: the model's published pricing with its overrides, or ``None``.
        prompt_tokens: the estimated prompt size, in tokens.
        completion_tokens: the length limit of the request (``max_tokens``), in tokens;
            ``None`` when no limit is sent.

    Returns:
        The cost in USD (``None`` when a price or the limit is unknown) with the prices
        and tier used.

    >>> # worst_case_cost(model, info.pricing, 1200, 2000).usd -> Decimal('0.0336')
    """
    prices = {"prompt": model.prompt_price, "completion": model.completion_price}
    notes: list[str] = []
    tier: int | None = None
    overrides = () if pricing is None else pricing.overrides
    timed = 0
    for override in overrides:
        if override.utc_start is not None or override.utc_end is not None:
            timed += 1
            continue
        if override.min_prompt_tokens is not None and prompt_tokens <= override.min_prompt_tokens:
            continue
        for key in prices:
            price = getattr(override, key)
            if price is not None and _priced_by_metadata(model, key):
                prices[key] = price
                tier = override.min_prompt_tokens
    if timed:
        notes.append(
            f"{timed} time-of-day price override(s) (utc_start/utc_end) ignored; "
            "the price differs at some hours"
        )
    if tier is not None:
        notes.append(f"prompt of about {prompt_tokens} tokens is above {tier}: tier prices")
    prompt_price, completion_price = prices["prompt"], prices["completion"]
    usd: Decimal | None = None
    if prompt_price is None or completion_price is None:
        notes.append("price unknown in metadata and models.yaml")
    elif completion_tokens is None:
        notes.append("no length limit is sent, so the completion is unbounded")
    else:
        usd = prompt_tokens * prompt_price + completion_tokens * completion_price
    return Cost(
        usd=usd,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        prompt_price=prompt_price,
        completion_price=completion_price,
        tier=tier,
        notes=tuple(notes),
    )


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


def _detail_fields(detail: CellDetail) -> dict[str, Any]:
    return {name: getattr(detail, name) for name in CellDetail.__dataclass_fields__}


def _row(item: Compilation, registry: Registry) -> AuditRow:
    report = item.report
    adjustments = dict(sorted(report.kinds().items())) if report is not None else {}
    dropped = tuple(
        a.path
        for a in (report.adjustments if report is not None else ())
        if a.kind.startswith("param.") and a.applied is None
    )
    error = None if item.compiled is not None else f"{type(item.error).__name__}: {item.error}"
    detail = _detail_fields(cell_detail(item, registry.catalog, row_status(error)))
    if item.compiled is None:
        return AuditRow(
            stage=item.stage,
            model=item.model,
            error=error,
            rung=None if report is None else report.rung,
            reasoning=None,
            length_param=None,
            max_tokens=None,
            dropped=dropped,
            adjustments=adjustments,
            cost=None,
            **detail,
        )
    body = item.compiled.body
    length_param = next((k for k in ("max_tokens", "max_completion_tokens") if k in body), None)
    limit = None if length_param is None else int(body[length_param])
    # The same estimate the token budget pass used: the instruction message plus the
    # stage's declared prompt size (the audit compiles without the caller's messages).
    shown = [] if item.compiled.instructions is None else [item.compiled.instructions]
    prompt = estimate_prompt_tokens(shown) + (
        registry.stage(item.stage).estimated_prompt_tokens or 0
    )
    resolved = registry.resolve(item.model, item.stage)
    info = registry.catalog.get(item.model)
    return AuditRow(
        stage=item.stage,
        model=item.model,
        error=None,
        rung=item.compiled.rung,
        reasoning=body.get("reasoning"),
        length_param=length_param,
        max_tokens=limit,
        dropped=dropped,
        adjustments=adjustments,
        cost=worst_case_cost(resolved, None if info is None else info.pricing, prompt, limit),
        **detail,
    )


def audit(
    registry: Registry, *, stage: str | None = None, model: str | None = None,
    coverage: str | None = None,
) -> list[AuditRow]:
    """Compile every listed stage/model pair and describe what each model receives.

    Args:
        registry: metadata plus declarations.
        stage: only this stage; ``None`` for all.
        model: only model ids matching this shell glob (``anthropic/*``); ``None`` for all.
        coverage: ``full`` or ``first`` for every stage, ``None`` for each stage's own.

    Returns:
        One row per pair, in stages.yaml order.

    Raises:
        UnknownStageError: ``stage`` is not declared.
        ContractError: a stage's contract does not import.
    """
    items = compile_all(registry, stages=None if stage is None else [stage], coverage=coverage)
    return [
        _row(item, registry)
        for item in items
        if model is None or fnmatch.fnmatchcase(item.model, model)
    ]


def audit_to_json(rows: Sequence[AuditRow], registry: Registry) -> str:
    """Render the audit as one JSON object: ``{"metadata": ..., "rows": [...]}``.

    Args:
        rows: from :func:`audit`.
        registry: the registry audited (names the metadata).

    Returns:
        Indented JSON text; costs are exact decimal strings in USD.
    """
    payload = {"metadata": registry.catalog.describe(), "rows": [r.to_dict() for r in rows]}
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


def render_audit(rows: Sequence[AuditRow], registry: Registry) -> str:
    """Render the audit as a table, then notes and the cost formula.

    Args:
        rows: from :func:`audit`.
        registry: the registry audited (names the metadata).

    Returns:
        The text, without a final newline.
    """
    table = [("STAGE", "MODEL", "RUNG", "REASONING", "LIMIT", "DROPPED", "COST_USD")]
    kinds = []
    notes: list[str] = []
    for row in rows:
        where = f"{row.stage} / {row.model}"
        if row.error is not None:
            notes.append(f"{where}: {row.error}")
        cost = row.cost
        na = row.error is not None and row.error.startswith(_NOT_APPLICABLE)
        usd = ("n/a" if na else "error") if cost is None else (
            _decimal_text(cost.usd) or "unknown")
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
            )
        )
        kinds.append(_kinds_cell(row.adjustments))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + "  " + k
        for r, k in zip(table, ["ADJUSTMENTS", *kinds], strict=True)
    ]
    lines += [f"note: {n}" for n in notes]
    lines += [
        f"metadata: {registry.catalog.describe()}",
        "COST_USD: worst case of one call = estimated prompt tokens x prompt price "
        "+ LIMIT x completion price; the prompt estimate is the instruction message "
        "plus the stage's estimated_prompt_tokens",
    ]
    return "\n".join(lines)
