"""One pair's entry in the lock, and what a runtime needs to read a reply from the lock
alone: the recipe and the contract.

:class:`LockEntries` makes the entry of each stage x model (its request, report,
recipe, error, attempts and routes) with reports made portable (metadata evidence
naming the file only); :func:`reply_recipe` turns a compiled request into the entry's
``reply`` record (where the output is, whether a fence may be stripped, the
wrapped-root key, the nulls that mean "absent" as JSON Pointers into the shown
schema); :func:`contract_record` gives the contract's full validation schema, stored
once per contract in the lock's ``contracts``, with the checks that schema cannot
express (:func:`unchecked`).
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from compiler.artifacts.lock_compact import (
    SHARED_LIMIT,
    UNKEYED,
    SharedReports,
    portable_evidence,
    shared_key,
    shared_value,
)
from compiler.compiled import CompiledRequest
from compiler.errors import AdjustmentRefused
from compiler.reply.outcome import forced_tool
from compiler.report import AdjustmentReport
from compiler.schema.budgets import uses_python_re
from compiler.schema.contract import OutputContract
from compiler.schema.frozen_json import thaw_json
from registry.metadata.catalog import Catalog

__all__ = [
    "LAX_COERCIONS", "LockEntries", "catalog_metadata", "contract_record", "pointer",
    "portable_report", "reply_recipe", "unchecked",
]

#: Listed for every contract: pydantic validates replies in lax JSON mode, which accepts
#: some values the JSON Schema rejects (so a JSON Schema validator is the stricter one).
LAX_COERCIONS = (
    "lax coercions: pydantic also accepts a numeric string for a number, 'true'/'false'/"
    "'yes'/'no'/0/1 for a boolean, an integral float for an integer and a number for a "
    "date or datetime, which the schema rejects"
)


def pointer(path: tuple[str, ...]) -> str:
    """Return the JSON Pointer (RFC 6901) of a path of keys: ``("a", "b/c")`` ->
    ``"/a/b~1c"``; ``()`` -> ``""``."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def reply_recipe(compiled: CompiledRequest) -> dict[str, Any] | None:
    """Return the ``reply`` record of one attempt, or ``None`` without a contract.

    Returns:
        ``{"source": "content" | "tool_arguments", "tool", "strip_fence", "schema",
        "absent_nulls", "wrapped_root", "contract"}`` (see
        :class:`compiler.artifacts.lock_schema.LockReply`).
    """
    contract, projection = compiled.contract, compiled.projection
    if contract is None or projection is None:
        return None
    tool = forced_tool(compiled.body) if compiled.rung == "tool" else None
    return {
        "source": "tool_arguments" if tool is not None else "content",
        "tool": tool,
        "strip_fence": compiled.rung in ("json", "prompt"),
        "schema": projection.sha256,
        "absent_nulls": sorted(pointer(p) for p in projection.nullable_added),
        "wrapped_root": projection.wrapped_root,
        "contract": contract.sha256,
    }


def _models(tp: Any, seen: set[type]) -> Iterator[type[BaseModel]]:
    """Every ``BaseModel`` class reachable from the type ``tp`` (fields, unions, lists)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in seen:
            return
        seen.add(tp)
        yield tp
        for info in tp.model_fields.values():
            yield from _models(info.annotation, seen)
        return
    for arg in typing.get_args(tp):
        yield from _models(arg, seen)


def unchecked(contract: OutputContract) -> list[str]:
    """Return what the contract's JSON Schema cannot express: its custom validators
    (``Model.method (model validator)``, ``Model.field: function (field validator)``)
    and :data:`LAX_COERCIONS`."""
    found: list[str] = []
    for model in _models(contract.target, set()):
        decorators = model.__pydantic_decorators__
        for name, mdec in decorators.model_validators.items():
            found.append(f"{model.__name__}.{name} (model validator, mode {mdec.info.mode})")
        for name, fdec in decorators.field_validators.items():
            fields = ", ".join(fdec.info.fields)
            found.append(f"{model.__name__}.{fields}: {name} (field validator)")
        for field_name, info in model.model_fields.items():
            for meta in info.metadata:
                if type(meta).__name__ in ("AfterValidator", "BeforeValidator",
                                           "PlainValidator", "WrapValidator"):
                    found.append(f"{model.__name__}.{field_name}: {type(meta).__name__}")
    return [*sorted(set(found)), LAX_COERCIONS]


def contract_record(contract: OutputContract, spec: str | None) -> dict[str, Any]:
    """Return the lock's record of a contract (keyed by ``contract.sha256``).

    Returns:
        ``{"name", "spec", "schema", "unchecked", "regex_engine"}``; ``schema`` is what
        pydantic validates, constraints included (``pattern``, ``minimum``, ``format``);
        ``regex_engine`` is ``"python-re"`` when pydantic runs some pattern with
        Python's ``re`` (:func:`compiler.schema.budgets.uses_python_re`).
    """
    python_re = uses_python_re(contract.target, contract.adapter.core_schema)
    return {
        "name": contract.name,
        "spec": spec,
        "schema": thaw_json(contract.schema),
        "unchecked": unchecked(contract),
        "regex_engine": "python-re" if python_re else "rust-regex",
    }


def _file_name(source: str) -> str:
    """Return the file name of a local source (the lock stays directory-independent).

    An ``http(s)://`` source is kept whole: its name alone would not say where it is.
    """
    if "://" in source and not source.startswith("file://"):
        return source
    return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or source


def catalog_metadata(catalog: Catalog) -> dict[str, Any]:
    """The lock's ``metadata`` record: ``{"source": file name or URL, "fetched_at",
    "text": Catalog.describe(age=False)}``."""
    return {"source": _file_name(catalog.source), "fetched_at": catalog.fetched_at,
            "text": catalog.describe(age=False)}


def portable_report(report: AdjustmentReport, catalog: Catalog) -> dict[str, Any]:
    """Return the report as a dict, with metadata evidence naming the file only, and
    nothing about how the metadata was obtained this time (age, fetch notes)."""
    return LockEntries(catalog).report(report)


class LockEntries:
    """The lock entries of pairs compiled from one catalog (its texts worked out once).

    Args:
        catalog: the catalog the pairs were compiled from.
        tables: the lock's ``evidence`` and ``schema_adjustments`` tables, for entries
            made to be written as text: then each entry's reports come compacted into
            them (as :func:`compiler.artifacts.lock_compact.compact_entry` leaves
            them), and the pieces that repeat from pair to pair (records, recipes,
            adjustments) are built once and shared read-only; ``None`` makes each entry
            of dicts of its own, reports whole (the projected schemas in its request
            stay the projection's read-only values, as they always were).
    """

    def __init__(self, catalog: Catalog, *,
                 tables: tuple[dict[str, Any], dict[str, Any]] | None = None) -> None:
        self.catalog = catalog
        self._described = catalog.describe()
        self._metadata = catalog_metadata(catalog)
        self._name = self._metadata["source"]
        self._shared: SharedReports | None = None
        self._values: dict[Any, Any] = {}
        if tables is not None:
            self._shared = SharedReports(*tables, source=catalog.source, name=self._name)
            self._frozen_metadata = shared_value(self._metadata)

    def report(self, report: AdjustmentReport) -> dict[str, Any]:
        """:func:`portable_report` of ``report`` (compacted, with ``tables``)."""
        catalog = self.catalog
        if self._shared is not None:
            data = report.to_dict(adjustments=self._shared.adjustments(report.adjustments))
        else:
            data = report.to_dict()
            for adjustment in data["adjustments"]:
                if adjustment["evidence"] is not None:
                    portable_evidence(adjustment["evidence"], catalog.source, self._name)
        if data["metadata"] == self._described:
            data["metadata"] = self._metadata["text"]
        data["notes"] = [n for n in data["notes"] if n != catalog.note]
        return data

    def _share(self, value: Any) -> Any:
        """``value`` itself, or with ``tables`` a read-only value equal to it, the same
        object for every equal value."""
        if self._shared is None or type(value) is not dict:
            return value
        key = shared_key(value)
        if key is UNKEYED:
            return value
        found = self._values.get(key)
        if found is None:
            if len(self._values) >= SHARED_LIMIT:
                self._values.clear()
            found = self._values[key] = shared_value(value)
        return found

    def entry(self, model: str, compiled: CompiledRequest | None, error: Exception | None,
              report: AdjustmentReport | None) -> dict[str, Any]:
        """The entry ``stages[STAGE][model]`` of a compilation: ``compiled``, or the
        recorded ``error`` (``report`` is the compilation's, a refusal's included)."""
        share = self._share
        if report is not None and model not in self.catalog:
            metadata = {**self._metadata, "source": None, "fetched_at": None,
                        "text": report.metadata}
        else:
            metadata = dict(self._metadata) if self._shared is None else self._frozen_metadata
        entry: dict[str, Any] = {
            "status": "error" if compiled is None else "ok",
            "request": None,
            "instructions": None,
            "report": None if report is None else self.report(report),
            "shown_sha256": None if report is None else report.shown_sha256,
            "enforced_sha256": None if report is None else report.enforced_sha256,
            "metadata": metadata,
            "error": None,
        }
        if compiled is not None:
            entry["request"] = {k: v for k, v in compiled.body.items() if k != "messages"}
            entry["instructions"] = share(compiled.instructions)
            entry["reply"] = share(reply_recipe(compiled))
            entry["loop"] = compiled.loop_settings()
            if compiled.endpoints:
                entry["endpoints"] = list(compiled.endpoints)
            if compiled.attempts:
                entry["attempts"] = [
                    {
                        "endpoints": list(a.endpoints),
                        "request": {k: v for k, v in a.body.items() if k != "messages"},
                        "instructions": share(a.instructions),
                        "report": self.report(a.report),
                        "shown_sha256": a.report.shown_sha256,
                        "enforced_sha256": a.report.enforced_sha256,
                        "reply": share(reply_recipe(a)),
                    }
                    for a in compiled.attempts
                ]
            if compiled.routes:
                entry["routes"] = [r.to_dict() for r in compiled.routes]
        else:
            entry["reply"] = entry["loop"] = None
            entry["error"] = share({
                "type": type(error).__name__,
                "message": str(error),
                "kinds": sorted(set(error.kinds)) if isinstance(error, AdjustmentRefused)
                else [],
            })
        return entry
