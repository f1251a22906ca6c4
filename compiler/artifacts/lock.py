"""The lock file: every declared stage x model compiled ahead of time, as one JSON document.

A runtime in any language reads the lock instead of running the compiler: for a stage
and a model it takes ``request`` (the body without messages), puts the caller's
messages after ``instructions`` (when not ``null``) and sends it. The document is
deterministic (sorted keys, no clock readings), so a lock on disk can be compared
byte for byte with a fresh one (``capc lock --check``) and two locks can be diffed
(:mod:`compiler.artifacts.diff`).

Shape (``format`` 2; the full JSON Schema is :func:`lock_json_schema`)::

    {"$schema": LOCK_SCHEMA_ID, "format": 2,
     "generator": {"name": "capability-compiler", "version": "0.1.0"},
     "metadata": {"source": ..., "fetched_at": ..., "text": ...},
     "inputs": {"metadata", "endpoints", "models_yaml", "stages_yaml", "contracts"},
     "client": {"method": "POST", "base_url", "path", "headers": [NAME, ...]},
     "contracts": {CONTRACT_SHA256: {"name", "spec", "schema", "unchecked", "regex_engine"}},
     "schemas": {SHOWN_SHA256: projected schema},
     "evidence": {TEXT: record}, "schema_adjustments": {SHA256: [adjustment, ...]},
     "stages": {STAGE: {MODEL: {"status": "ok" | "error", "request", "instructions",
                                "report", "shown_sha256", "enforced_sha256",
                                "metadata", "error", "reply", ["endpoints",
                                "attempts", "routes"]}}}}

``reply`` is the recipe for reading a reply (:mod:`compiler.artifacts.lock_reply`);
``inputs`` names every input with a hash of its content
(:mod:`compiler.artifacts.lock_inputs`); reports share their evidence and ``schema.*``
adjustments through two tables (:mod:`compiler.artifacts.lock_compact`). Nothing in
the lock depends on the clock, a file's mtime or how the metadata was obtained this
time (a stale age, a failed fetch), nor on its directory (sources by file name only).

``endpoints``, ``attempts`` and ``routes`` are present only with endpoint data: the
endpoints ``request`` is for, the later route-plan attempts (each a complete request
for the endpoints it names) and one row per endpoint of the model.
"""

from __future__ import annotations

import importlib.metadata
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from compiler.artifacts.lock_compact import compact_reports, missing_reference
from compiler.artifacts.lock_inputs import describe_inputs
from compiler.artifacts.lock_reply import contract_record, reply_recipe
from compiler.artifacts.lock_schema import (
    CHAT_COMPLETIONS_PATH,
    CLIENT_HEADERS,
    LOCK_FORMAT,
    LOCK_SCHEMA_ID,
    LockDocument,
)
from compiler.artifacts.lock_text import lock_text
from compiler.artifacts.output_file import write_atomically
from compiler.compiled import CompiledRequest
from compiler.errors import (
    AdjustmentRefused,
    AdjustmentWarning,
    CompilerError,
    NoEndpointError,
    ProjectionError,
    PromptTooLongError,
    ToolError,
)
from compiler.report import AdjustmentReport
from compiler.request import compile_request
from compiler.schema.frozen_json import thaw_json
from registry.errors import RoutingError, UnknownModelError, UnsupportedModalityError
from registry.metadata.catalog import Catalog
from registry.resolve.resolver import Registry
from registry.sources.settings import DEFAULT_BASE_URL

__all__ = [
    "DEFAULT_LOCK_NAME",
    "RECORDED_FAILURES",
    "Compilation",
    "LockFileError",
    "build_lock",
    "compile_all",
    "dump_lock",
    "read_lock",
    "write_lock",
]

#: File name of the lock, written next to stages.yaml unless told otherwise.
DEFAULT_LOCK_NAME = "capc.lock.json"

#: Failures of one stage/model pair that are recorded in the lock instead of aborting:
#: they depend on the model (its metadata, its dialect), not on the stage's declaration.
RECORDED_FAILURES: tuple[type[Exception], ...] = (
    AdjustmentRefused,
    NoEndpointError,
    PromptTooLongError,
    ProjectionError,
    RoutingError,
    ToolError,  # a tool the model's dialect cannot express (a stage's own are located)
    UnknownModelError,
    UnsupportedModalityError,
)

class LockFileError(CompilerError):
    """A file that should be a lock is unreadable, not JSON, or not in the lock format."""


@dataclass(frozen=True, slots=True)
class Compilation:
    """The outcome of compiling one stage for one model: a request or a recorded failure.

    Attributes:
        stage: the stage name.
        model: the model id as listed in stages.yaml.
        compiled: the compiled request, or ``None`` when the compilation failed.
        error: the failure (one of :data:`RECORDED_FAILURES`), or ``None``.
    """

    stage: str
    model: str
    compiled: CompiledRequest | None = None
    error: Exception | None = None

    @property
    def report(self) -> AdjustmentReport | None:
        """The adjustment report; a refused compilation still has one."""
        if self.compiled is not None:
            return self.compiled.report
        if isinstance(self.error, AdjustmentRefused):
            return self.error.report
        return None


def compile_all(
    registry: Registry, *, stages: Sequence[str] | None = None, coverage: str | None = None
) -> list[Compilation]:
    """Compile each stage for each model its ``models`` list names, without messages.

    ``warn`` policies do not issue :class:`AdjustmentWarning` here: the adjustments are
    in every report anyway.

    Args:
        registry: metadata plus declarations.
        stages: stage names to compile; ``None`` means every declared stage, in file order.
        coverage: ``full`` or ``first`` for every stage, ``None`` for each stage's own.

    Returns:
        One :class:`Compilation` per stage and model, in stages.yaml order.

    Raises:
        UnknownStageError: a name in ``stages`` is not declared.
        ContractError: a stage's contract does not import (a declaration problem,
            not a property of one model, so it aborts).
    """
    results: list[Compilation] = []
    for stage in registry.stage_names() if stages is None else stages:
        for model in registry.stage(stage).models:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AdjustmentWarning)
                try:
                    compiled = compile_request(stage, model, registry=registry,
                                               coverage=coverage)
                except RECORDED_FAILURES as exc:
                    results.append(Compilation(stage, model, error=exc))
                    continue
            results.append(Compilation(stage, model, compiled=compiled))
    return results


def _tool_version() -> str:
    try:
        return importlib.metadata.version("capability-compiler")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _file_name(source: str) -> str:
    """Return the file name of a local source (the lock stays directory-independent).

    An ``http(s)://`` source is kept whole: its name alone would not say where it is.
    """
    if "://" in source and not source.startswith("file://"):
        return source
    return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or source


def _catalog_metadata(catalog: Catalog) -> dict[str, Any]:
    return {"source": _file_name(catalog.source), "fetched_at": catalog.fetched_at,
            "text": catalog.describe(age=False)}


def _portable_report(report: AdjustmentReport, catalog: Catalog) -> dict[str, Any]:
    """Return the report as a dict, with metadata evidence naming the file only, and
    nothing about how the metadata was obtained this time (age, fetch notes)."""
    data = report.to_dict()
    if data["metadata"] == catalog.describe():
        data["metadata"] = catalog.describe(age=False)
    data["notes"] = [n for n in data["notes"] if n != catalog.note]
    for adjustment in data["adjustments"]:
        evidence = adjustment["evidence"]
        if evidence is not None and evidence["source"] == catalog.source:
            evidence["source"] = _file_name(catalog.source)
            evidence["text"] = evidence["text"].replace(catalog.source, evidence["source"])
    return data


def _entry(item: Compilation, registry: Registry) -> dict[str, Any]:
    catalog = registry.catalog
    report = item.report
    metadata = _catalog_metadata(catalog)
    entry: dict[str, Any] = {
        "status": "error" if item.compiled is None else "ok",
        "request": None,
        "instructions": None,
        "report": None if report is None else _portable_report(report, catalog),
        "shown_sha256": None if report is None else report.shown_sha256,
        "enforced_sha256": None if report is None else report.enforced_sha256,
        "metadata": metadata,
        "error": None,
    }
    if report is not None and item.model not in catalog:
        metadata.update(source=None, fetched_at=None, text=report.metadata)
    if (compiled := item.compiled) is not None:
        entry["request"] = {k: v for k, v in compiled.body.items() if k != "messages"}
        entry["instructions"] = compiled.instructions
        entry["reply"], entry["loop"] = reply_recipe(compiled), compiled.loop_settings()
        if compiled.endpoints:
            entry["endpoints"] = list(compiled.endpoints)
        if compiled.attempts:
            entry["attempts"] = [
                {
                    "endpoints": list(a.endpoints),
                    "request": {k: v for k, v in a.body.items() if k != "messages"},
                    "instructions": a.instructions,
                    "report": _portable_report(a.report, catalog),
                    "shown_sha256": a.report.shown_sha256,
                    "enforced_sha256": a.report.enforced_sha256,
                    "reply": reply_recipe(a),
                }
                for a in compiled.attempts
            ]
        if compiled.routes:
            entry["routes"] = [r.to_dict() for r in compiled.routes]
    else:
        error = item.error
        entry["reply"] = entry["loop"] = None
        entry["error"] = {
            "type": type(error).__name__,
            "message": str(error),
            "kinds": sorted(set(error.kinds)) if isinstance(error, AdjustmentRefused) else [],
        }
    return entry


def build_lock(
    registry: Registry, compilations: Sequence[Compilation] | None = None,
    *, coverage: str | None = None, endpoints: str | Path | None = None,
) -> dict[str, Any]:
    """Build the lock document for a registry.

    Args:
        registry: metadata plus declarations (stages.yaml lists the models per stage).
        compilations: results of :func:`compile_all` when already computed; ``None``
            compiles now.
        coverage: as for :func:`compile_all`.
        endpoints: the endpoints file the registry was loaded with (recorded in
            ``inputs`` by name and hash), or ``None``.

    Returns:
        The JSON-ready document (see the module docstring); serialise it with
        :func:`dump_lock`.

    Raises:
        ContractError: a stage's contract does not import.
    """
    items = compile_all(registry, coverage=coverage) if compilations is None else compilations
    stages: dict[str, dict[str, Any]] = {name: {} for name in registry.stage_names()}
    contracts: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for item in items:
        stages.setdefault(item.stage, {})[item.model] = _entry(item, registry)
        for attempt in () if item.compiled is None else item.compiled.plan:
            if attempt.contract is not None and attempt.projection is not None:
                if attempt.contract.sha256 not in contracts:
                    spec = registry.stage(item.stage).contract
                    contracts[attempt.contract.sha256] = contract_record(attempt.contract, spec)
                schemas[attempt.projection.sha256] = thaw_json(attempt.projection.schema)
    return compact_reports({
        "$schema": LOCK_SCHEMA_ID,
        "format": LOCK_FORMAT,
        "generator": {"name": "capability-compiler", "version": _tool_version()},
        "metadata": _catalog_metadata(registry.catalog),
        "inputs": describe_inputs(registry, endpoints=endpoints, routed=[
            i.model for i in items if i.compiled is not None and i.compiled.routes]),
        "client": {"method": "POST", "base_url": DEFAULT_BASE_URL,
                   "path": CHAT_COMPLETIONS_PATH, "headers": list(CLIENT_HEADERS)},
        "contracts": contracts,
        "schemas": schemas,
        "stages": stages,
    })


def dump_lock(document: dict[str, Any]) -> str:
    """Serialise a lock document canonically: sorted keys, two-space indent, final newline.

    Args:
        document: a document from :func:`build_lock`.

    Returns:
        The text to write; equal documents give equal text.
    """
    return lock_text(document) + "\n"  # json.dumps(indent=2, sort_keys=True), faster


def write_lock(text: str, path: str | Path) -> Path:
    """Write lock text atomically: a temporary file beside the target, then ``os.replace``.

    A reader sees the old lock or the new one, never a partial file. A symlink is
    followed: the file it points to is replaced (in that file's directory), and the
    link stays a link. Missing parent directories are created. An existing file's
    permission bits are kept; a new file gets ``0o644``.

    Args:
        text: the output of :func:`dump_lock`.
        path: where the lock goes.

    Returns:
        The file written (``path`` with symlinks resolved).

    Raises:
        LockFileError: the target exists and is not a regular file (a directory, a
            device such as ``/dev/stdout``, a FIFO).
        OSError: the directory is not writable, or the disk is full.
    """
    return write_atomically(text.encode("utf-8"), path, option="--output",
                            refuse=LockFileError, durable=True)


def read_lock(path: str | Path) -> dict[str, Any]:
    """Read and validate a lock file.

    Args:
        path: the lock file.

    Returns:
        The document as plain JSON data (as :func:`build_lock` returns it).

    Raises:
        LockFileError: the file cannot be read, is not JSON, or does not follow the
            lock format (the message names the first offending key path).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LockFileError(f"{path}: cannot read the lock: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LockFileError(f"{path}: the lock is not valid JSON: {exc}") from exc
    try:
        LockDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise LockFileError(
            f"{path}: not a capability-compiler lock (format {LOCK_FORMAT}): "
            f"{where}: {first['msg']}"
        ) from exc
    if (missing := missing_reference(data)) is not None:
        raise LockFileError(f"{path}: not a capability-compiler lock: {missing}")
    result: dict[str, Any] = data
    return result
