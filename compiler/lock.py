"""The lock file: every declared stage x model compiled ahead of time, as one JSON document.

A runtime in any language reads the lock instead of running the compiler: for a stage
and a model it takes ``request`` (the body without messages), puts the caller's
messages after ``instructions`` (when not ``null``) and sends it. The document is
deterministic (sorted keys, no clock readings), so a lock on disk can be compared
byte for byte with a fresh one (``capc lock --check``) and two locks can be diffed
(:mod:`compiler.diff`).

Shape (``format`` 1; the full JSON Schema is :func:`lock_json_schema`)::

    {"$schema": LOCK_SCHEMA_ID, "format": 1,
     "generator": {"name": "capability-compiler", "version": "0.1.0"},
     "metadata": {"source": ..., "fetched_at": ..., "text": ...},
     "stages": {STAGE: {MODEL: {"status": "ok" | "error", "request", "instructions",
                                "report", "shown_sha256", "enforced_sha256",
                                "metadata", "error"}}}}

Metadata sources are recorded by file name only (``models-2026-08-19.json``), so the
lock does not depend on the directory it was made from.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from compiler.errors import (
    AdjustmentRefused,
    AdjustmentWarning,
    CompilerError,
    ProjectionError,
    PromptTooLongError,
)
from compiler.report import AdjustmentReport
from compiler.request import CompiledRequest, compile_request
from registry.catalog import Catalog
from registry.errors import UnknownModelError
from registry.resolver import Registry

__all__ = [
    "DEFAULT_LOCK_NAME",
    "LOCK_FORMAT",
    "LOCK_SCHEMA_ID",
    "RECORDED_FAILURES",
    "Compilation",
    "LockDocument",
    "LockFileError",
    "build_lock",
    "compile_all",
    "dump_lock",
    "lock_json_schema",
    "read_lock",
    "write_lock",
]

#: Version of the lock format; bumped on any incompatible change.
LOCK_FORMAT = 1
#: The ``$schema`` value of every lock document and the ``$id`` of its JSON Schema.
LOCK_SCHEMA_ID = "urn:capability-compiler:lock:1"
#: File name of the lock, written next to stages.yaml unless told otherwise.
DEFAULT_LOCK_NAME = "capc.lock.json"

#: Failures of one stage/model pair that are recorded in the lock instead of aborting:
#: they depend on the model (its metadata, its dialect), not on the stage's declaration.
RECORDED_FAILURES: tuple[type[Exception], ...] = (
    AdjustmentRefused,
    PromptTooLongError,
    ProjectionError,
    UnknownModelError,
)

_SHA256 = Annotated[str, Field(pattern="^[0-9a-f]{64}$")]


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


def compile_all(registry: Registry, *, stages: Sequence[str] | None = None) -> list[Compilation]:
    """Compile each stage for each model its ``models`` list names, without messages.

    ``warn`` policies do not issue :class:`AdjustmentWarning` here: the adjustments are
    in every report anyway.

    Args:
        registry: metadata plus declarations.
        stages: stage names to compile; ``None`` means every declared stage, in file order.

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
                    compiled = compile_request(stage, model, registry=registry)
                except RECORDED_FAILURES as exc:
                    results.append(Compilation(stage, model, error=exc))
                    continue
            results.append(Compilation(stage, model, compiled=compiled))
    return results


# -- the document --------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LockEvidence(_Strict):
    """The source that decided an adjustment."""

    layer: str
    """``default``, ``metadata``, ``endpoints``, ``models.yaml`` or ``stages.yaml``."""
    source: str
    """Metadata file name, ``bundled seed``, or ``models.yaml:LINE``."""
    field: str
    """The metadata field or YAML key path holding the value."""
    fetched_at: str | None
    """Date of the metadata (ISO); ``null`` for YAML and built-in defaults."""
    text: str
    """The evidence as one readable line."""


class LockAdjustment(_Strict):
    """One change between what the stage asked for and what the request carries."""

    kind: str
    """Stable dotted slug, catalogued in docs/adjustments.md."""
    path: str
    """Dotted body path, or ``schema:`` plus a JSON Pointer into the contract schema."""
    requested: Any
    """What the stage asked for (``null``: nothing)."""
    applied: Any
    """What the request carries (``null``: omitted)."""
    reason: str
    """One sentence a person can act on."""
    evidence: LockEvidence | None
    """Where the deciding value came from; ``null`` for a rule of this library."""


class LockReport(_Strict):
    """The adjustment report of one compilation."""

    stage: str
    """The stage name."""
    model: str
    """The model id."""
    metadata: str
    """The metadata source and its date, as one line."""
    rung: Literal["schema", "json", "prompt", "none"]
    """Output enforcement reached (``none``: the stage has no contract)."""
    shown_sha256: _SHA256 | None
    """SHA-256 of the schema shown to the model."""
    enforced_sha256: _SHA256 | None
    """SHA-256 of the schema in ``response_format`` (rung ``schema`` only)."""
    notes: list[str]
    """Free-text notes."""
    adjustments: list[LockAdjustment]
    """In the order the compiler passes made them."""


class LockMessage(_Strict):
    """The instruction message; runtimes send ``[instructions, *their own messages]``."""

    role: Literal["system"]
    """Always ``system``."""
    content: str
    """The instruction text, with the output schema rendered into it."""


class LockMetadata(_Strict):
    """Which model metadata a compilation used."""

    source: str | None
    """File name of the models list, ``bundled seed``, or ``null`` for a model declared
    whole in models.yaml."""
    fetched_at: str | None
    """Date of the metadata (ISO), ``null`` when unknown."""
    text: str
    """One readable line, as in the report."""


class LockFailure(_Strict):
    """Why a stage/model pair has no request."""

    type: str
    """Exception class: ``AdjustmentRefused``, ``PromptTooLongError``, ``ProjectionError``
    or ``UnknownModelError``."""
    message: str
    """The error message."""
    kinds: list[str]
    """Adjustment kinds the stage's policy refused (``AdjustmentRefused`` only)."""


class LockEntry(_Strict):
    """One stage compiled for one model."""

    status: Literal["ok", "error"]
    """``ok``: ``request`` is usable; ``error``: see ``error``."""
    request: dict[str, Any] | None
    """The chat-completions body without ``messages``."""
    instructions: LockMessage | None
    """The message to put before the caller's messages, or ``null`` without a contract."""
    report: LockReport | None
    """The adjustment report (also kept for a refused compilation)."""
    shown_sha256: _SHA256 | None
    """SHA-256 of the schema shown to the model."""
    enforced_sha256: _SHA256 | None
    """SHA-256 of the schema the provider enforces."""
    metadata: LockMetadata
    """The metadata this pair was compiled from."""
    error: LockFailure | None
    """The failure, when ``status`` is ``error``."""


class LockGenerator(_Strict):
    """The tool that wrote the lock."""

    name: Literal["capability-compiler"]
    """Always ``capability-compiler``."""
    version: str
    """Its installed version."""


class LockDocument(_Strict):
    """A capability-compiler lock file: every declared stage x model, compiled."""

    schema_id: Literal["urn:capability-compiler:lock:1"] = Field(alias="$schema")
    """Identifies the format."""
    format: Literal[1]
    """Version of the lock format."""
    generator: LockGenerator
    """The tool and version that wrote the lock."""
    metadata: LockMetadata
    """The metadata catalog every pair was compiled from."""
    stages: dict[str, dict[str, LockEntry]]
    """Stage name -> model id -> entry."""


def lock_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (Draft 2020-12) of the lock format.

    Returns:
        The schema, with ``$id`` :data:`LOCK_SCHEMA_ID`; also published as
        ``docs/schema/lock.schema.json``.

    >>> lock_json_schema()["$id"]
    'urn:capability-compiler:lock:1'
    """
    schema = LockDocument.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": LOCK_SCHEMA_ID,
        **schema,
        "title": "capc.lock.json",
    }


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
    return {
        "source": _file_name(catalog.source),
        "fetched_at": catalog.fetched_at,
        "text": catalog.describe(),
    }


def _portable_report(report: AdjustmentReport, catalog: Catalog) -> dict[str, Any]:
    """Return the report as a dict, with metadata evidence naming the file only."""
    data = report.to_dict()
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
    if item.compiled is not None:
        entry["request"] = {k: v for k, v in item.compiled.body.items() if k != "messages"}
        entry["instructions"] = item.compiled.instructions
    else:
        error = item.error
        entry["error"] = {
            "type": type(error).__name__,
            "message": str(error),
            "kinds": sorted(set(error.kinds)) if isinstance(error, AdjustmentRefused) else [],
        }
    return entry


def build_lock(
    registry: Registry, compilations: Sequence[Compilation] | None = None
) -> dict[str, Any]:
    """Build the lock document for a registry.

    Args:
        registry: metadata plus declarations (stages.yaml lists the models per stage).
        compilations: results of :func:`compile_all` when already computed; ``None``
            compiles now.

    Returns:
        The JSON-ready document (see the module docstring); serialise it with
        :func:`dump_lock`.

    Raises:
        ContractError: a stage's contract does not import.
    """
    items = compile_all(registry) if compilations is None else compilations
    stages: dict[str, dict[str, Any]] = {name: {} for name in registry.stage_names()}
    for item in items:
        stages.setdefault(item.stage, {})[item.model] = _entry(item, registry)
    return {
        "$schema": LOCK_SCHEMA_ID,
        "format": LOCK_FORMAT,
        "generator": {"name": "capability-compiler", "version": _tool_version()},
        "metadata": _catalog_metadata(registry.catalog),
        "stages": stages,
    }


def dump_lock(document: dict[str, Any]) -> str:
    """Serialise a lock document canonically: sorted keys, two-space indent, final newline.

    Args:
        document: a document from :func:`build_lock`.

    Returns:
        The text to write; equal documents give equal text.
    """
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_lock(text: str, path: str | Path) -> None:
    """Write lock text atomically: a temporary file in the same directory, then ``os.replace``.

    A reader sees the old lock or the new one, never a partial file. An existing
    file's permission bits are kept; a new file gets ``0o644``.

    Args:
        text: the output of :func:`dump_lock`.
        path: where the lock goes.

    Raises:
        OSError: the directory is not writable, or the disk is full.
    """
    target = Path(path)
    try:
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


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
    result: dict[str, Any] = data
    return result
