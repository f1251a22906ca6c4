"""The lock file: every declared stage x model compiled ahead of time, as one JSON document.

A runtime in any language reads the lock instead of running the compiler: for a stage
and a model it takes ``request`` (the body without messages), puts the caller's
messages after ``instructions`` (when not ``null``) and sends it. The document is
deterministic (sorted keys, no clock readings), so a lock on disk can be compared
byte for byte with a fresh one (``capc lock --check``) and two locks can be diffed
(:mod:`compiler.artifacts.diff`). :func:`build_lock` builds the document whole;
:func:`spool_lock` writes the same text entry by entry, as it compiles (``capc lock``).

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

import contextlib
import fnmatch
import functools
import importlib.metadata
import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from compiler.artifacts.lock_compact import compact_entry, missing_reference
from compiler.artifacts.lock_inputs import describe_inputs
from compiler.artifacts.lock_reply import LockEntries, catalog_metadata, contract_record
from compiler.artifacts.lock_schema import (
    CHAT_COMPLETIONS_PATH,
    CLIENT_HEADERS,
    LOCK_FORMAT,
    LOCK_SCHEMA_ID,
    LockDocument,
)
from compiler.artifacts.lock_text import LockSpool, lock_text
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
from compiler.request import check_stage, compile_once
from compiler.schema.frozen_json import thaw_json
from registry.errors import RoutingError, UnknownModelError, UnsupportedModalityError
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
    "iter_compilations",
    "read_lock",
    "spool_lock",
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
    return list(iter_compilations(registry, stages=stages, coverage=coverage))


def iter_compilations(
    registry: Registry, *, stages: Sequence[str] | None = None, coverage: str | None = None,
    model: str | None = None,
) -> Iterator[Compilation]:
    """:func:`compile_all` one pair at a time, each compiled when it is asked for (so a
    lock written as it compiles holds one compilation at a time); the same arguments,
    order and errors, raised when the pair is reached. ``model``, a shell glob
    (``anthropic/*``, case-sensitive), compiles only the model ids it matches; a stage
    that lists models but cannot compile raises as unfiltered (:func:`check_stage`)."""
    for stage in registry.stage_names() if stages is None else stages:
        listed = registry.stage(stage).models
        if model is not None and listed:
            with contextlib.suppress(*RECORDED_FAILURES):  # each pair records these
                check_stage(registry, stage, coverage)
            listed = [name for name in listed if fnmatch.fnmatchcase(name, model)]
        for name in listed:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AdjustmentWarning)
                try:
                    item = Compilation(stage, name, compiled=compile_once(
                        stage, name, registry=registry, coverage=coverage))
                except RECORDED_FAILURES as exc:
                    item = Compilation(stage, name, error=exc)
            yield item


@functools.cache
def _tool_version() -> str:
    try:
        return importlib.metadata.version("capability-compiler")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _document_order(registry: Registry, items: Sequence[Compilation]) -> list[Compilation]:
    """The pairs as a document holds them: stages in stages.yaml order (others after, as
    they come), models in their first place, the last compilation of a repeated pair."""
    order: dict[str, dict[str, Compilation]] = {name: {} for name in registry.stage_names()}
    for item in items:
        order.setdefault(item.stage, {})[item.model] = item
    return [item for models in order.values() for item in models.values()]


def _walk(
    registry: Registry, items: Iterable[Compilation], *, endpoints: str | Path | None,
    add: Callable[[str, str, dict[str, Any]], None], frozen: bool,
) -> dict[str, Any]:
    """Build the lock entry of each pair, compacted, and hand it to ``add(stage, model,
    entry)`` in document order; return every other key of the document.

    A sequence is walked twice (contracts in the order given, entries in document
    order); any other iterable once, as it comes, each pair once in stages.yaml order
    (as :func:`iter_compilations` yields them). ``frozen`` (for text; the same text)
    leaves the schemas and the entries' repeated pieces read-only and shared."""
    contracts: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    evidence: dict[str, Any] = {}
    runs: dict[str, list[dict[str, Any]]] = {}
    routed: set[str] = set()
    entries = LockEntries(registry.catalog, tables=(evidence, runs) if frozen else None)

    def tables(item: Compilation) -> None:
        for attempt in () if item.compiled is None else item.compiled.plan:
            if attempt.contract is not None and attempt.projection is not None:
                if attempt.contract.sha256 not in contracts:
                    spec = registry.stage(item.stage).contract
                    contracts[attempt.contract.sha256] = contract_record(attempt.contract, spec)
                if (sha := attempt.projection.sha256) not in schemas:
                    equal = frozen and attempt.report.enforced_sha256 == sha  # then the
                    schema = (equal and attempt.enforced_schema) or attempt.projection.schema
                    schemas[sha] = schema if frozen else thaw_json(schema)  # request's copy
        if item.compiled is not None and item.compiled.routes:
            routed.add(item.model)

    if given := isinstance(items, Sequence):
        for item in items:
            tables(item)
        items = _document_order(registry, items)
    for item in items:
        if not given:
            tables(item)
        entry = entries.entry(item.model, item.compiled, item.error, item.report)
        if not frozen:  # else LockEntries compacted it
            compact_entry(entry, evidence, runs)
        add(item.stage, item.model, entry)
    return {
        "$schema": LOCK_SCHEMA_ID,
        "format": LOCK_FORMAT,
        "generator": {"name": "capability-compiler", "version": _tool_version()},
        "metadata": catalog_metadata(registry.catalog),
        "inputs": describe_inputs(registry, endpoints=endpoints, routed=sorted(routed)),
        "client": {"method": "POST", "base_url": DEFAULT_BASE_URL,
                   "path": CHAT_COMPLETIONS_PATH, "headers": list(CLIENT_HEADERS)},
        "contracts": contracts,
        "schemas": schemas,
        "evidence": evidence,
        "schema_adjustments": runs,
    }


def build_lock(
    registry: Registry, compilations: Sequence[Compilation] | None = None,
    *, coverage: str | None = None, endpoints: str | Path | None = None,
) -> dict[str, Any]:
    """Build the lock document for a registry, whole (:func:`spool_lock` writes the same
    text without holding it).

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
    rest = _walk(registry, items, endpoints=endpoints, frozen=False,
                 add=lambda stage, model, entry: stages.setdefault(stage, {}).update(
                     {model: entry}))
    tables = {key: rest.pop(key) for key in ("evidence", "schema_adjustments")}
    return {**rest, "stages": stages, **tables}


def spool_lock(
    registry: Registry, compilations: Iterable[Compilation] | None = None,
    *, coverage: str | None = None, endpoints: str | Path | None = None,
    spool_dir: str | Path | None = None,
) -> LockSpool:
    """Compile every pair and write the lock's text entry by entry, without holding it.

    Each pair is compiled (or taken from ``compilations``), made an entry, written to a
    spool as text and dropped; the returned spool's
    :meth:`~compiler.artifacts.lock_text.LockSpool.chunks` are the bytes of
    ``dump_lock(build_lock(registry, ...))``. Close it (or use it in a ``with``).

    Args:
        registry: metadata plus declarations.
        compilations: the pairs, as :func:`compile_all` or :func:`iter_compilations`
            gives them (an iterator is consumed once); ``None`` compiles them one by one.
        coverage: as for :func:`compile_all`.
        endpoints: as for :func:`build_lock`.
        spool_dir: where the spool's file goes past its first 4 MiB (default
            ``TMPDIR``); ``capc lock`` uses the folder of the lock.

    Raises:
        ContractError: a stage's contract does not import (the spool is closed).
    """
    items = iter_compilations(registry, coverage=coverage) if compilations is None \
        else compilations
    spool = LockSpool(registry.stage_names(), spool_dir=spool_dir)
    try:
        spool.finish(_walk(registry, items, endpoints=endpoints, add=spool.add, frozen=True))
    except BaseException:
        spool.close()
        raise
    return spool


def dump_lock(document: dict[str, Any]) -> str:
    """Serialise a lock document canonically: sorted keys, two-space indent, final newline.

    Args:
        document: a document from :func:`build_lock`.

    Returns:
        The text to write; equal documents give equal text.
    """
    return lock_text(document) + "\n"  # json.dumps(indent=2, sort_keys=True), faster


def write_lock(text: str | Iterable[bytes], path: str | Path) -> Path:
    """Write lock text atomically: a temporary file beside the target, then ``os.replace``.

    A reader sees the old lock or the new one, never a partial file. A symlink is
    followed: the file it points to is replaced (in that file's directory), and the
    link stays a link. Missing parent directories are created. An existing file's
    permission bits are kept; a new file gets ``0o644``.

    Args:
        text: the output of :func:`dump_lock`, or the UTF-8 chunks of a
            :func:`spool_lock` (written one by one as they come).
        path: where the lock goes.

    Returns:
        The file written (``path`` with symlinks resolved).

    Raises:
        LockFileError: the target exists and is not a regular file (a directory, a
            device such as ``/dev/stdout``, a FIFO).
        OSError: the directory is not writable, or the disk is full.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    return write_atomically(data, path, option="--output", refuse=LockFileError, durable=True)


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
