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

:class:`SharedReports` builds the compacted adjustments of a lock's reports straight from
the :class:`~compiler.report.Adjustment` objects, each repeated piece built once and
shared read-only (for a lock written as text: the text writer writes a shared value
once), the same JSON as :func:`compact_entry` of ``to_dict()``'s.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from compiler.report import Adjustment
from compiler.schema.frozen_json import FrozenDict, FrozenList
from registry.resolve.capabilities import Provenance

__all__ = [
    "SHARED_LIMIT", "UNKEYED", "SharedReports", "compact_entry", "compact_reports",
    "expand_reports", "missing_reference", "portable_evidence", "shared_key", "shared_value",
]

#: Values a :class:`SharedReports` (or a lock's entries) keeps of each kind before it
#: starts again, so that a lock's memory stays bounded whatever its size.
SHARED_LIMIT = 4096

#: What :func:`shared_key` gives for a value it cannot key (it is then not shared).
UNKEYED: Any = object()

#: Types whose values are equal exactly when their JSON texts are (with their type).
_PLAIN = frozenset({str, int, bool, type(None)})

#: Values :func:`shared_value` keeps as they are.
_ATOMS = frozenset({str, int, float, bool, type(None)})


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


def portable_evidence(record: dict[str, Any], source: str, name: str) -> dict[str, Any]:
    """Make an evidence record (``Provenance.to_dict()``) portable, in place: a record
    from the metadata file ``source`` names the file only (``name``)."""
    if record["source"] == source:
        record["source"] = name
        record["text"] = record["text"].replace(source, name)
    return record


def shared_key(value: Any) -> Any:
    """A hashable key equal for two JSON values exactly when their lock text is equal, or
    :data:`UNKEYED` (a value of another type: a set, an enum, a subclass of ``str``).

    Strings, ``None``, ints, bools and floats (by ``repr``: ``0.0`` is not ``-0.0``),
    each typed (``1`` is not ``True`` is not ``"1"``); lists and tuples of those; a dict
    of those with string keys (a key by item, in order; ``{1: ...}`` and ``{True: ...}``
    are unkeyed: their texts differ although the dicts are equal); a read-only value by
    identity (it is kept
    alive by what is built from it, so its ``id`` is not reused meanwhile).
    """
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is int or kind is bool:
        return kind, value
    if kind is float:
        return kind, float.__repr__(value)
    if kind is FrozenDict or kind is FrozenList:
        return kind, id(value)
    if kind is list or kind is tuple:
        parts = []
        for item in value:
            part = item if type(item) is str or item is None else shared_key(item)
            if part is UNKEYED:
                return UNKEYED
            parts.append(part)
        return list, tuple(parts)
    if kind is dict:
        keys, values = tuple(value), tuple(value.values())
        types = tuple(map(type, values))
        if _PLAIN.issuperset(types) and all(type(key) is str for key in keys):
            return dict, keys, values, types  # the commonest: one level of plain atoms
        pairs = []
        for key, item in value.items():
            part = item if type(item) is str or item is None else shared_key(item)
            if part is UNKEYED or type(key) is not str:
                return UNKEYED
            pairs.append((key, part))
        return dict, tuple(pairs)
    return UNKEYED


def shared_value(value: Any) -> Any:
    """A read-only copy of a JSON value whose read-only parts are kept as they are (so
    the text writer's memo still knows them)."""
    kind = type(value)
    if kind is dict:
        return FrozenDict({k: v if type(v) in _ATOMS else shared_value(v)
                           for k, v in value.items()})
    if kind is list or kind is tuple:
        return FrozenList([v if type(v) in _ATOMS else shared_value(v) for v in value])
    return value


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


#: One compacted adjustment: (its dict, whether it is ``schema.*``, its evidence text
#: and record, or ``None`` twice).
_Item = tuple[FrozenDict, bool, "str | None", "FrozenDict | None"]


class SharedReports:
    """The compacted ``adjustments`` of a lock's reports, built from the reports'
    adjustments, into the lock's two tables.

    :meth:`adjustments` gives what :func:`compact_entry` leaves in a report's
    ``adjustments`` (a portable report's: metadata evidence names the file only) and
    adds to ``evidence`` and ``runs`` what :func:`compact_entry` would, in the same
    order. Each adjustment, evidence record, ``schema.*`` run (its SHA-256 worked out
    once) and list is built once per value and shared read-only (``FrozenDict`` /
    ``FrozenList``): for a lock's text, not for a document handed out to be edited.
    At most :data:`SHARED_LIMIT` of each are kept; then they are built again.

    Args:
        evidence: the lock's ``evidence`` table (filled in).
        runs: the lock's ``schema_adjustments`` table (filled in).
        source: the metadata's source (``Catalog.source``).
        name: what a portable record says instead (the file's name).
    """

    def __init__(self, evidence: dict[str, Any], runs: dict[str, Any], source: str,
                 name: str) -> None:
        self.evidence, self.runs = evidence, runs
        self._source, self._name = source, name
        self._by_id: dict[int, tuple[Adjustment, _Item]] = {}
        self._by_value: dict[Any, tuple[Provenance | None, _Item]] = {}
        self._records: dict[int, tuple[Provenance, FrozenDict]] = {}
        self._runs: dict[tuple[int, ...], tuple[FrozenList, str, FrozenDict]] = {}
        self._lists: dict[tuple[int, ...], tuple[FrozenList, tuple[Any, ...],
                                                 tuple[Any, ...], tuple[_Item, ...]]] = {}

    def adjustments(self, adjustments: Sequence[Adjustment]) -> FrozenList:
        """The compacted ``adjustments`` of a report with these adjustments; their
        evidence and runs are added to the tables."""
        items = [self._item(a) for a in adjustments]
        key = tuple(id(item[0]) for item in items)  # the entry keeps them: no id reused
        found = self._lists.get(key)
        if found is None:
            if len(self._lists) >= SHARED_LIMIT:
                self._lists.clear()
            found = self._lists[key] = (*self._compact(items), tuple(items))
        result, records, runs, _ = found
        evidence = self.evidence
        for text, record in records:  # in order: a later record of a text replaces one
            evidence[text] = record
        for sha, run in runs:
            self.runs[sha] = run
        return result

    def _compact(self, items: list[_Item]) -> tuple[FrozenList, tuple[Any, ...],
                                                     tuple[Any, ...]]:
        out: list[Any] = []
        records: list[tuple[str, FrozenDict | None]] = []
        runs: list[tuple[str, FrozenList]] = []
        run: list[FrozenDict] = []
        for item in [*items, None]:
            if item is not None and item[2] is not None:
                records.append((item[2], item[3]))
            if item is not None and item[1]:
                run.append(item[0])
                continue
            if run:
                whole, sha, marker = self._run(run)
                runs.append((sha, whole))
                out.append(marker)
                run = []
            if item is not None:
                out.append(item[0])
        return FrozenList(out), tuple(records), tuple(runs)

    def _run(self, run: list[FrozenDict]) -> tuple[FrozenList, str, FrozenDict]:
        key = tuple(map(id, run))
        found = self._runs.get(key)
        if found is None:
            if len(self._runs) >= SHARED_LIMIT:
                self._runs.clear()
            sha = _sha256(run)
            found = self._runs[key] = (FrozenList(run), sha,
                                       FrozenDict({"schema_adjustments": sha}))
        return found

    def _item(self, adjustment: Adjustment) -> _Item:
        found = self._by_id.get(id(adjustment))
        if found is not None and found[0] is adjustment:
            return found[1]
        if len(self._by_id) >= SHARED_LIMIT:
            self._by_id.clear()
        evidence = adjustment.evidence
        kind, path, reason = adjustment.kind, adjustment.path, adjustment.reason
        requested, applied = adjustment.requested, adjustment.applied
        schema = str(kind).startswith("schema.")
        key: Any = UNKEYED
        # A projection's schema.* adjustments are shared objects already (the identity
        # memo finds them); the others are made anew per pair, often equal.
        if not schema and type(kind) is str and type(path) is str and type(reason) is str:
            key = (kind, path, reason,
                   requested if type(requested) is str or requested is None
                   else shared_key(requested),
                   applied if type(applied) is str or applied is None
                   else shared_key(applied), id(evidence))
            if key[3] is UNKEYED or key[4] is UNKEYED:
                key = UNKEYED
            else:  # the evidence object is kept by the memo: its id stays its own
                known = self._by_value.get(key)
                if known is not None and known[0] is evidence:
                    self._by_id[id(adjustment)] = (adjustment, known[1])
                    return known[1]
        record = None if evidence is None else self._record(evidence)
        text = None if record is None else record["text"]
        if type(requested) in _ATOMS and type(applied) in _ATOMS:  # to_dict()'s, faster
            data = FrozenDict({"kind": kind, "path": path, "requested": requested,
                               "applied": applied, "reason": reason, "evidence": text})
        else:
            whole = adjustment.to_dict()
            whole["evidence"] = text
            data = shared_value(whole)
        item: _Item = (data, schema, text, record)
        if key is not UNKEYED:
            if len(self._by_value) >= SHARED_LIMIT:
                self._by_value.clear()
            self._by_value[key] = (evidence, item)
        self._by_id[id(adjustment)] = (adjustment, item)
        return item

    def _record(self, evidence: Provenance) -> FrozenDict:
        found = self._records.get(id(evidence))
        if found is None or found[0] is not evidence:
            if len(self._records) >= SHARED_LIMIT:
                self._records.clear()
            record = portable_evidence(evidence.to_dict(), self._source, self._name)
            found = self._records[id(evidence)] = (evidence, shared_value(record))
        return found[1]


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
