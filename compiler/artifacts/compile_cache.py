"""A disk cache of ``capc compile`` results, for editors, hooks and CI that call it often.

A compile is a pure function of its inputs, so the CLI keeps its output keyed by a
SHA-256 of everything it read: the stage and model, the caller's messages, the bytes of
stages.yaml and models.yaml, the metadata file's path, size and modification time, and
the size and modification time of every module and data file of both packages,
subfolders included (so an upgrade or an edit anywhere invalidates everything). An
entry also records the files the compile read (the stage's contract module and every
local module it imports, as the lock's ``inputs`` lists them, and the same for each
tool's ``model`` or ``module:NAME`` input schema, plus each tool's ``.json`` input
schema file: :func:`stage_files`); a hit is served only when each still has the
recorded size and modification time. A hit
needs nothing but the standard library: no pydantic, no YAML parsing, no schema
projection.

Only compiles with a local metadata file are cached (the default source's answer
depends on the network and the TTL), and never one whose stage sets a policy (warnings
must be issued each time). ``capc compile --no-cache`` bypasses the cache, and
``capc cache clear`` empties it. Entries are JSON files written atomically in
``$CAPC_CACHE_DIR/compiled`` (default: the XDG cache directory of
:func:`registry.paths.default_cache_dir`); the API key is never part of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from registry.paths import default_cache_dir
from registry.sources.cache_files import database_problem, foreign_entries

__all__ = ["CompileCache", "compile_cache_entries", "contract_files", "stage_files"]

_FORMAT = "capc-compile-cache/2"  # 2: the --json payload carries the metadata object


_MAX_HASHED = 64 * 2**20
"""The largest input file hashed (64 MiB, the largest limit of any input; a larger one
is refused by its loader, uncached)."""


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _stat(path: Path) -> list[Any]:
    info = path.stat()
    return [str(path), info.st_size, info.st_mtime_ns]


def _package_fingerprint() -> list[Any]:
    """Name, size and modification time of every ``.py`` and ``.json`` file of both
    packages, every subfolder included (``__pycache__`` excepted), in a stable order."""
    import compiler
    import registry

    rows: list[Any] = []
    for package in (compiler, registry):
        root = Path(str(package.__file__)).resolve().parent
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            where = os.path.relpath(folder, root.parent)
            for name in sorted(files):
                if name.endswith((".py", ".json")):
                    info = os.stat(os.path.join(folder, name))
                    rows.append([f"{where}/{name}", info.st_size, info.st_mtime_ns])
    return rows


class CompileCache:
    """One cache slot: the key of a ``capc compile`` invocation and its entry file.

    Build it with :meth:`for_invocation`; ``None`` means the invocation is not cacheable.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_invocation(
        cls,
        *,
        stage: str,
        model: str,
        messages_text: str,
        stages: Path | None,
        models: Path | None,
        metadata: str | None,
        endpoints: Path | None = None,
        coverage: str | None = None,
    ) -> CompileCache | None:
        """Return the slot of this invocation, or ``None`` when it is not cacheable.

        Args:
            stage: the stage name.
            model: the model id.
            messages_text: the caller's messages exactly as read ("" for none).
            stages: stages.yaml in use, or ``None``.
            models: models.yaml in use, or ``None``.
            metadata: the ``--metadata`` value; only a local file is cacheable.
            endpoints: the ``--endpoints`` file in use, or ``None``.
            coverage: the ``--coverage`` value, or ``None`` for the stage's own.
        """
        if metadata is None or "://" in metadata:
            return None
        meta = Path(metadata)
        if not meta.is_file():
            return None
        digest = hashlib.sha256()
        material: list[Any] = [
            _FORMAT, sys.version, stage, model, messages_text,
            _stat(meta.resolve()), _package_fingerprint(),
        ]  # fmt: skip
        material.append(coverage)
        for path in (stages, models, endpoints):
            if path is None:
                material.append(None)
                continue
            # Only a regular file within the inputs' size limit is hashed: reading a
            # pipe (/dev/stdin, <(...)) here would leave nothing for the loader, and
            # /dev/zero never ends; both then compile uncached (the loader reads them
            # once, bounded, and explains).
            if not path.is_file() or path.stat().st_size > _MAX_HASHED:
                return None
            material.append([str(path.resolve()), _file_digest(path)])
        digest.update(json.dumps(material, sort_keys=True).encode())
        root = Path(os.environ.get("CAPC_CACHE_DIR") or default_cache_dir()).expanduser()
        if database_problem(root) is not None or (root / "compiled").is_symlink():
            return None  # another application's cache.db, a link elsewhere: write nothing
        if not (root / "cache.db").is_file() and foreign_entries(root):
            return None  # a project folder given by mistake: write nothing into it
        return cls(root / "compiled" / f"{digest.hexdigest()}.json")

    def get(self) -> dict[str, Any] | None:
        """Return the stored entry (``{"json": ..., "text": ...}``) when it is still valid."""
        try:
            entry = json.loads(self.path.read_text(encoding="utf-8"))
            for path, size, mtime in entry["deps"]:
                if _stat(Path(path))[1:] != [size, mtime]:
                    return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return {"json": entry["json"], "text": entry["text"]}

    def put(self, payload: dict[str, Any], text: str, deps: Iterable[Path]) -> None:
        """Store an entry atomically; a failure to write is ignored (the cache is optional)."""
        try:
            entry = {
                "format": _FORMAT,
                "deps": [_stat(p.resolve()) for p in deps],
                "json": payload,
                "text": text,
            }
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, ensure_ascii=False)
            os.replace(tmp, self.path)
        except OSError:
            return


def compile_cache_entries(directory: Path) -> list[dict[str, Any]]:
    """List the compile cache under ``directory`` (``$CAPC_CACHE_DIR``), for ``capc cache
    info``.

    Returns:
        One ``{"stage", "model", "bytes", "modified", "path"}`` per entry file of
        ``directory/compiled``, newest first (``modified``: ISO 8601 UTC, seconds;
        ``stage`` and ``model`` ``None`` for a file that does not read as an entry).
    """
    from datetime import UTC, datetime

    rows: list[dict[str, Any]] = []
    if (directory / "compiled").is_symlink():
        return rows  # not ours: a link to somewhere else
    for path in (directory / "compiled").glob("*.json"):
        stage: str | None = None
        model: str | None = None
        try:
            info = path.stat()
        except OSError:  # removed meanwhile
            continue
        try:
            report = json.loads(path.read_text(encoding="utf-8"))["json"]["report"]
            stage, model = str(report["stage"]), str(report["model"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        moment = datetime.fromtimestamp(info.st_mtime, UTC)
        rows.append({"stage": stage, "model": model, "bytes": info.st_size,
                     "modified": moment.isoformat(timespec="seconds"), "path": str(path)})
    return sorted(rows, key=lambda row: (row["modified"], row["path"]), reverse=True)


def contract_files(spec: str | None, base_dir: Path) -> Sequence[Path]:
    """Return the source file of a stage's contract (``module:Class`` or ``file.py:Class``)
    and every local module it imports (the lock's ``inputs.contracts``: see
    :func:`compiler.artifacts.lock_inputs.contract_modules`), so an edit to a helper
    module invalidates the entry too."""
    from compiler.artifacts.lock_inputs import contract_modules

    return contract_modules(spec, base_dir)


def stage_files(decl: Any, base_dir: Path) -> list[Path]:
    """Every file a compile of the stage ``decl`` reads besides the YAML files: the
    contract's modules and each tool's modules and ``.json`` schema files
    (:func:`compiler.artifacts.lock_inputs.stage_modules`), so an edit to a tool's
    pydantic model or schema file invalidates the entry too."""
    from compiler.artifacts.lock_inputs import stage_modules

    return stage_modules(decl, base_dir)
