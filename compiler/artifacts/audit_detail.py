"""What one audit cell says beyond the table: its severity, the reasoning change, the plan.

The audit page (:mod:`compiler.page.page`) colours each stage x model cell by the
most serious adjustment of the pair (:data:`SEVERITIES`, most serious first), says
whether reasoning was kept, lowered, raised or dropped (:func:`reasoning_change`), and
opens a report with every adjustment, each route-plan attempt's body and the route
table. Everything here works on JSON-ready mappings (``Adjustment.to_dict()`` shapes),
so a cell can be built from a fresh compile or from a lock file's entry alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.artifacts.lock import Compilation
from compiler.memo import envelope_copy
from compiler.report import Adjustment, AdjustmentReport
from registry.metadata.catalog import Catalog

__all__ = [
    "SEVERITIES",
    "CellDetail",
    "CellDetails",
    "Severity",
    "cell_detail",
    "detail_from_entry",
    "reasoning_change",
    "severity_of",
]


@dataclass(frozen=True, slots=True)
class Severity:
    """One colour class of the audit page.

    Attributes:
        name: the class name (``output``, ``reasoning``, ...), used as ``severity``.
        label: a short text shown beside the colour (never colour alone).
        symbol: one character shown in each cell of this class.
        description: what puts a cell in this class, for the legend.
        prefixes: adjustment kinds (or kind prefixes ending in ``.``) of this class.
    """

    name: str
    label: str
    symbol: str
    description: str
    prefixes: tuple[str, ...] = ()


#: The classes, most serious first; a cell takes the first class any of its
#: adjustments (in any attempt) belongs to. ``failed`` and ``na`` come from the status.
SEVERITIES: tuple[Severity, ...] = (
    Severity("failed", "failed", "\u2715",
             "no request: refused by the stage's policy, no endpoint, or another error"),
    Severity("output", "weaker output", "\u25bc",
             "the enforcement ceiling was not met, or the forced tool call is not strict",
             ("output.",)),
    Severity("reasoning", "reasoning changed", "\u25c6",
             "reasoning lowered, raised, dropped or forced on", ("reasoning.",)),
    Severity("limits", "length limit", "\u25b2",
             "max_tokens clamped, capped, filled or too short for the answer",
             ("tokens.", "limits.")),
    Severity("params", "parameter changed", "\u25cf",
             "a sampling parameter dropped, fixed or clamped",
             ("param.", "routing.param_dropped")),
    Severity("schema", "schema rewritten", "\u25a0",
             "the contract's schema rewritten for the model's dialect", ("schema.",)),
    Severity("routing", "routing note", "\u00b7",
             "routing notes only: require_parameters, route-plan attempts, endpoint data, "
             "an alias id resolved through its target", ("routing.", "route.", "model.")),
    Severity("none", "as asked", "\u2713", "no adjustment: the body is what the stage asked"),
    Severity("na", "not applicable", "\u2013", "the model has no text output"),
)

_RANKED = [s for s in SEVERITIES if s.prefixes]
#: Efforts from least to most reasoning, to tell a lowered effort from a raised one.
_EFFORT_RANK = {e: i for i, e in enumerate(
    ("none", "minimal", "low", "medium", "high", "xhigh", "max"))}
#: Reasoning changes, most telling first: a cell shows the first that applies.
_CHANGES = ("dropped", "lowered", "raised", "forced on", "changed", "kept", "off")


def severity_of(kinds: Iterable[str], *, status: str = "ok") -> str:
    """Return the :attr:`Severity.name` of a pair.

    Args:
        kinds: the adjustment kinds of every attempt.
        status: ``ok``, ``error`` or ``not_applicable`` (as ``AuditRow.to_dict()``).

    >>> severity_of(["schema.closed_object", "param.dropped"])
    'params'
    """
    if status == "error":
        return "failed"
    if status == "not_applicable":
        return "na"
    best = _UNRANKED
    for kind in kinds:
        rank = _RANKS.get(kind)
        if rank is None:
            rank = _rank(kind)
        if rank < best:
            best = rank
    return "none" if best == _UNRANKED else _RANKED[best].name


_UNRANKED = len(_RANKED)
#: The rank (index in _RANKED) of each kind met so far; at most _RANKS_KEPT kinds (a
#: lock file may hold any text as a kind).
_RANKS: dict[str, int] = {}
_RANKS_KEPT = 4096


def _rank(kind: str) -> int:
    """The index of the first class of :data:`SEVERITIES` that ``kind`` belongs to."""
    rank = next((i for i, severity in enumerate(_RANKED)
                 if any(kind == p or (p.endswith(".") and kind.startswith(p))
                        for p in severity.prefixes)), _UNRANKED)
    if len(_RANKS) < _RANKS_KEPT:
        _RANKS[kind] = rank
    return rank


def _direction(requested: Any, applied: Any) -> str:
    if applied is None:
        return "dropped"
    if isinstance(requested, int) and isinstance(applied, int):
        return "lowered" if applied < requested else "raised" if applied > requested else "kept"
    if requested in _EFFORT_RANK and applied in _EFFORT_RANK:
        got, asked = _EFFORT_RANK[applied], _EFFORT_RANK[requested]
        return "dropped" if applied == "none" else (
            "lowered" if got < asked else "raised" if got > asked else "kept")
    return "changed"


def reasoning_change(
    adjustments: Sequence[Mapping[str, Any]], reasoning: Mapping[str, Any] | None
) -> str:
    """Say what became of the reasoning the stage asked for.

    Args:
        adjustments: one attempt's adjustments (``Adjustment.to_dict()`` mappings).
        reasoning: the ``reasoning`` object that attempt sends, or ``None``.

    Returns:
        ``dropped`` (asked, not sent), ``lowered`` / ``raised`` (effort or budget moved),
        ``forced on`` (none asked of a model that always reasons), ``changed`` (an effort
        a toggle-style model ignores), ``kept`` (sent as asked) or ``off`` (none asked,
        none sent).

    >>> reasoning_change([{"kind": "reasoning.effort_mapped", "requested": "minimal",
    ...                    "applied": "low"}], {"effort": "low"})
    'raised'
    """
    seen = set()
    for adjustment in adjustments:
        kind = adjustment.get("kind", "")
        if kind in ("reasoning.unsupported", "reasoning.dropped"):
            seen.add("dropped")
        elif kind == "reasoning.effort_lowered":
            seen.add("lowered")
        elif kind == "reasoning.cannot_disable":
            seen.add("forced on")
        elif kind == "reasoning.effort_ignored":
            seen.add("changed")
        elif kind in ("reasoning.effort_mapped", "reasoning.budget_clamped"):
            seen.add(_direction(adjustment.get("requested"), adjustment.get("applied")))
    if not reasoning or reasoning.get("effort") == "none" or reasoning.get("enabled") is False:
        seen.add("off")
    else:
        seen.add("kept")
    return next(c for c in _CHANGES if c in seen)


@dataclass(frozen=True, slots=True)
class CellDetail:
    """The part of an audit row the page's cell report shows.

    Attributes:
        reasoning_change: see :func:`reasoning_change`; ``None`` without a request.
        severity: a :attr:`Severity.name`.
        attempts: the route plan, first attempt first, each ``{"endpoints": [slug,
            ...], "rung", "request" (the body without messages), "instructions" (the
            system message, or ``None``), "adjustments" (that attempt's, as in
            ``details``; ``None`` for the first attempt, whose are ``details``),
            "reasoning_change"}``; empty when the pair has no request.
        routes: one ``RouteRow.to_dict()`` per endpoint of the model (empty without
            endpoint data).
        details: every adjustment of the first attempt's report (a refused compile's
            too), as ``Adjustment.to_dict()`` with metadata evidence naming the file only.
        report_notes: the report's notes (e.g. no endpoint data was used).
    """

    reasoning_change: str | None
    severity: str
    attempts: tuple[Mapping[str, Any], ...] = ()
    routes: tuple[Mapping[str, Any], ...] = ()
    details: tuple[Mapping[str, Any], ...] = ()
    report_notes: tuple[str, ...] = ()


def _file_name(source: str) -> str:
    if "://" in source and not source.startswith("file://"):
        return source
    return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or source


def _attempt(endpoints: Sequence[str], rung: str, request: Mapping[str, Any],
             instructions: Any, adjustments: list[Any], *, first: bool) -> dict[str, Any]:
    shown = dict(request)
    shown.pop("messages", None)
    return {
        "endpoints": list(endpoints),
        "rung": rung,
        "request": shown,
        "instructions": instructions,
        "adjustments": None if first else adjustments,
        "reasoning_change": reasoning_change(adjustments, request.get("reasoning")),
    }


#: The fields of a :class:`CellDetail`, in order (:meth:`CellDetails.parts`).
_Parts = tuple[str | None, str, tuple[Mapping[str, Any], ...], tuple[Mapping[str, Any], ...],
               tuple[Mapping[str, Any], ...], tuple[str, ...]]


def _parts(status: str, attempts: list[dict[str, Any]], details: list[Any],
           routes: Iterable[Mapping[str, Any]], notes: Iterable[str]) -> _Parts:
    kinds = [a["kind"] for a in details]
    for attempt in attempts[1:]:
        kinds += [a["kind"] for a in attempt["adjustments"]]
    return (attempts[0]["reasoning_change"] if attempts else None,
            severity_of(kinds, status=status), tuple(attempts), tuple(routes), tuple(details),
            tuple(notes))


def _detail(status: str, attempts: list[dict[str, Any]], details: list[Any],
            routes: Iterable[Mapping[str, Any]], notes: Iterable[str]) -> CellDetail:
    return CellDetail(*_parts(status, attempts, details, routes, notes))


class CellDetails:
    """:func:`cell_detail` for the many pairs of one audit, sharing the work.

    Projections share their adjustments across the models of a dialect (and 2,196
    pairs of the example stages have about 3,400 distinct adjustments among 9,800), so
    the portable mapping of each adjustment is made once and copied for every row that
    has it: each row still gets mappings of its own (its ``dict`` and ``list`` values
    copied too), as :func:`cell_detail` gives. Holds every adjustment it met, so make
    one per audit.

    Args:
        catalog: the metadata compiled from (evidence names its file only).
    """

    __slots__ = ("_name", "_seen", "_source")

    def __init__(self, catalog: Catalog) -> None:
        self._source = catalog.source
        self._name = _file_name(catalog.source)
        # id -> (the adjustment, kept so its id stays its own; its mapping; whether
        # requested or applied is a dict or list)
        self._seen: dict[int, tuple[Adjustment, dict[str, Any], bool]] = {}

    def portable(self, report: AdjustmentReport) -> list[dict[str, Any]]:
        """The adjustments of ``report`` as ``Adjustment.to_dict()`` mappings, metadata
        evidence naming the file only (as in a lock)."""
        out = []
        seen = self._seen
        for adjustment in report.adjustments:
            found = seen.get(id(adjustment))
            if found is None or found[0] is not adjustment:
                found = seen[id(adjustment)] = self._made(adjustment)
            data = found[1].copy()
            evidence = data["evidence"]
            if evidence is not None:
                data["evidence"] = evidence.copy()
            if found[2]:
                data["requested"] = envelope_copy(data["requested"])
                data["applied"] = envelope_copy(data["applied"])
            out.append(data)
        return out

    def _made(self, adjustment: Adjustment) -> tuple[Adjustment, dict[str, Any], bool]:
        data = adjustment.to_dict()
        evidence = data["evidence"]
        if evidence is not None and evidence["source"] == self._source:
            evidence["source"] = self._name
            evidence["text"] = evidence["text"].replace(self._source, self._name)
        deep = any(type(data[k]) in (dict, list) for k in ("requested", "applied"))
        return adjustment, data, deep

    def parts(self, item: Compilation, status: str) -> _Parts:
        """The fields of :func:`cell_detail`'s answer, in order, without the
        :class:`CellDetail` around them."""
        report = item.report
        details = [] if report is None else self.portable(report)
        compiled = item.compiled
        if compiled is None:
            return _parts(status, [], details, (), () if report is None else report.notes)
        attempts = [
            _attempt(a.endpoints, a.rung, a.body, a.instructions,
                     details if a is compiled else self.portable(a.report), first=a is compiled)
            for a in compiled.plan
        ]
        return _parts(status, attempts, details, [r.to_dict() for r in compiled.routes],
                      compiled.report.notes)

    def __call__(self, item: Compilation, status: str) -> CellDetail:
        """Describe one compilation, as :func:`cell_detail`."""
        return CellDetail(*self.parts(item, status))


def cell_detail(item: Compilation, catalog: Catalog, status: str) -> CellDetail:
    """Describe one compilation for the page (a :class:`CellDetails` of its own: for the
    many pairs of one audit, make one :class:`CellDetails` and call it per pair).

    Args:
        item: from :func:`compiler.artifacts.lock.compile_all`.
        catalog: the metadata compiled from (evidence names its file only).
        status: ``ok``, ``error`` or ``not_applicable``.
    """
    return CellDetails(catalog)(item, status)


def detail_from_entry(entry: Mapping[str, Any], status: str) -> CellDetail:
    """Describe one lock-file entry (``stages.<stage>.<model>``) for the page.

    Args:
        entry: the entry, as :func:`compiler.artifacts.lock.read_lock` returns it.
        status: ``ok``, ``error`` or ``not_applicable``.
    """
    report = entry.get("report") or {}
    details = list(report.get("adjustments") or ())
    notes = report.get("notes") or ()
    if entry.get("status") != "ok":
        return _detail(status, [], details, (), notes)
    attempts = [_attempt(entry.get("endpoints") or (), str(report.get("rung")),
                         entry.get("request") or {}, entry.get("instructions"), details,
                         first=True)]
    for later in entry.get("attempts") or ():
        attempts.append(_attempt(
            later.get("endpoints") or (), str((later.get("report") or {}).get("rung")),
            later.get("request") or {}, later.get("instructions"),
            list((later.get("report") or {}).get("adjustments") or ()), first=False))
    return _detail(status, attempts, details, entry.get("routes") or (), notes)
