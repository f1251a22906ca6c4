"""What a lock is a function of: every input by source and content hash.

A lock records its inputs (the models list, the endpoint data or its absence,
models.yaml, stages.yaml, every local module a contract or a tool imports, and each
tool's ``.json`` schema file) so that
``capc lock --check`` can say *which* input changed, and so that the CLI's compile
cache keys on the same files (:func:`stage_modules`).

Local modules are found from the source, without importing anything new: the
contract's file is parsed (``ast``), each ``import`` / ``from ... import`` is resolved
to a file next to it, under the stages directory, or on ``sys.path``, and a file that
is not part of the standard library, an installed distribution or this package is
followed in turn.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.resources
import importlib.util
import json
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from registry.metadata.seed_endpoints import SEED_ENDPOINTS_RESOURCE
from registry.resolve.resolver import Registry

__all__ = ["contract_modules", "describe_inputs", "input_changes", "stage_modules"]

_SEED = "bundled seed"


def _sha256_file(path: Path) -> str | None:
    """The file's SHA-256, streamed; ``None`` when it cannot be read or is not a regular
    file (a device such as ``/dev/zero`` or a FIFO is never opened: it would not end)."""
    try:
        if not path.is_file():
            return None
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def _name(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or path


@functools.cache
def _excluded_roots() -> tuple[Path, ...]:
    """The standard library, site-packages and this project's own packages (constant for
    the process, so worked out once)."""
    paths = sysconfig.get_paths()
    roots = {Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")
             if k in paths}
    import compiler
    import registry

    for package in (compiler, registry):
        roots.add(Path(str(package.__file__)).resolve().parent)
    return tuple(sorted(roots))


@functools.cache
def _excluded_prefixes() -> tuple[str, ...]:
    """:func:`_excluded_roots` as ``ROOT/`` strings (case-folded where the system's
    paths are), for a prefix test instead of ``Path.is_relative_to`` per root."""
    return tuple(os.path.join(os.path.normcase(str(r)), "") for r in _excluded_roots())


@functools.lru_cache(maxsize=4)
def _path_roots(path: tuple[str, ...], cwd: str) -> tuple[Path, ...]:
    """The entries of ``sys.path`` resolved (relative ones against ``cwd``): a walk is
    made per contract, and each resolve follows every link. The path and the working
    folder are the key, so a changed one is resolved again."""
    return tuple(Path(entry).resolve() for entry in path if entry)


def _is_local(path: Path, excluded: tuple[str, ...]) -> bool:
    return path.suffix == ".py" and not os.path.normcase(str(path)).startswith(excluded)


def _candidates(module: str, here: Path, roots: Iterable[Path]) -> Iterable[str]:
    """``ROOT/a/b.py`` then ``ROOT/a/b/__init__.py`` for ``a.b``, ``here`` first (strings:
    a lookup makes over a hundred of them, and ``pathlib`` would dominate its cost)."""
    tail = os.path.join(*module.split("."))
    for root in (here, *roots):
        base = os.path.join(root, tail)
        yield base + ".py"
        yield os.path.join(base, "__init__.py")


def _resolve(module: str, here: Path, roots: list[Path]) -> Path | None:
    for candidate in _candidates(module, here, roots):
        if os.path.isfile(candidate):
            return Path(candidate).resolve()
    if module.split(".", 1)[0] in sys.stdlib_module_names:
        return None
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError, AttributeError):
        return None
    if found is None or not found.origin or not found.origin.endswith(".py"):
        return None
    return Path(found.origin).resolve()


def _imports(path: Path) -> list[tuple[str, int, list[str]]]:
    """``(module, level, names)`` of every import statement in ``path``."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    found: list[tuple[str, int, list[str]]] = []
    # An import is a statement, and statements sit only in the bodies of statements (and
    # of except handlers and match cases): walking those finds every import that
    # ast.walk finds, without visiting each expression node.
    todo: list[Any] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found.extend((alias.name, 0, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level, [a.name for a in node.names]))
        else:
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                children = getattr(node, name, None)
                if isinstance(children, list):
                    todo.extend(children)
    return found  # in another order than ast.walk's: the callers keep a sorted set


def contract_modules(spec: str | None, base_dir: Path) -> list[Path]:
    """Return the contract's source file and every local module it imports, transitively.

    Args:
        spec: the stages.yaml ``contract`` value (``module:Class`` or ``file.py:Class``),
            or ``None``.
        base_dir: the stages.yaml directory (relative contract files start there).

    Returns:
        Resolved paths, sorted; empty for ``None`` or a module that cannot be found.
    """
    if spec is None:
        return []
    module = spec.split(":", 1)[0]
    roots = [base_dir.resolve(), *_path_roots(tuple(sys.path), os.getcwd())]
    start = (base_dir / module).resolve() if module.endswith(".py") else _resolve(
        module, base_dir.resolve(), roots)
    if start is None or not start.is_file():
        return []
    excluded = _excluded_prefixes()
    seen: set[Path] = set()
    todo = [start]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        package = path.parent
        for name, level, names in _imports(path):
            if level:
                anchor = package
                for _ in range(level - 1):
                    anchor = anchor.parent
                targets = [f"{name}.{n}" if name else n for n in names] + ([name] if name else [])
                hits = [_resolve(t, anchor, []) for t in targets]
            else:
                # An installed package may still hold local submodules (pkgutil's
                # extend_path), so every name is looked for.
                hits = [_resolve(name, package, roots)]
                hits += [_resolve(f"{name}.{n}", package, roots) for n in names]
            todo.extend(h for h in hits if h is not None and _is_local(h, excluded))
    return sorted(seen)


def stage_modules(
    decl: Any, base_dir: Path, *, memo: dict[tuple[str, Path], list[Path]] | None = None
) -> list[Path]:
    """Every file a compile of the stage ``decl`` (a :class:`registry.declarations.stages.
    StageDecl`) reads besides the YAML files: :func:`contract_modules` of its contract and
    of each tool's ``model`` or ``package.module:NAME`` input schema, and each tool's
    ``.json`` input schema file (relative to ``base_dir``, the stages.yaml directory).

    ``memo`` (module part of a spec -> its modules) lets the stages of one lock share
    the walk of a module several of them name (the example stages name one file).

    Returns:
        Resolved paths, sorted and without repeats (files that do not exist are left out).
    """

    def modules(spec: str | None) -> list[Path]:
        if memo is None or spec is None:
            return contract_modules(spec, base_dir)
        key = (spec.split(":", 1)[0], base_dir)
        if key not in memo:
            memo[key] = contract_modules(spec, base_dir)
        return memo[key]

    found = set(modules(decl.contract))
    for tool in decl.tools:
        schema = tool.input_schema if isinstance(tool.input_schema, str) else None
        if schema is not None and schema.lower().endswith(".json"):
            path = Path(schema) if Path(schema).is_absolute() else base_dir / schema
            if path.is_file():
                found.add(path.resolve())
            continue
        for spec in (tool.model, schema):
            if spec is not None:
                found.update(modules(spec))
    return sorted(found)


def _relative(path: Path, base_dir: Path) -> str:
    try:
        return path.relative_to(base_dir.resolve()).as_posix()
    except ValueError:
        return path.name


def _record(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    return {"source": _name(path), "sha256": _sha256_file(Path(path))}


def _seed_endpoints_sha() -> str | None:
    resource = importlib.resources.files("registry").joinpath(SEED_ENDPOINTS_RESOURCE)
    with importlib.resources.as_file(resource) as path:
        return _sha256_file(path)


def _endpoints_record(
    registry: Registry, endpoints: str | Path | None, routed: list[str]
) -> dict[str, Any] | None:
    """Where the endpoint data came from: the file given, the bundled seed, a fetch
    (hashed over the lists used), or ``None`` when no pair used any."""
    if endpoints is not None:
        return _record(str(endpoints))
    if not routed:
        return None
    if registry.catalog.origin == "seed":
        return {"source": f"{_SEED} ({_name(SEED_ENDPOINTS_RESOURCE)})",
                "sha256": _seed_endpoints_sha()}
    # SHA-256 of json.dumps({model: its list or None}, sort_keys=True), one model at a
    # time (the text of every routed model's list is never held at once).
    digest = hashlib.sha256(b"{")
    for index, model in enumerate(sorted(set(routed))):
        found = registry.endpoints(model)  # memoised: no new fetch
        listed = None if found is None else found.model_dump(mode="json")
        digest.update(f"{', ' if index else ''}{json.dumps(model)}: "
                      f"{json.dumps(listed, sort_keys=True)}".encode())
    digest.update(b"}")
    return {"source": "GET /api/v1/models/{id}/endpoints", "sha256": digest.hexdigest()}


def _metadata_record(registry: Registry) -> dict[str, Any]:
    """The models list's record: the SHA-256 of the bytes the catalog was parsed from
    (``Catalog.sha256``, hashed beside the load), else of the file as it is now."""
    catalog = registry.catalog
    if catalog.origin == "seed":
        from registry.metadata.catalog import SEED_RESOURCE

        read = catalog.sha256()
        if read is not None:
            return {"source": _SEED, "sha256": read}
        resource = importlib.resources.files("registry").joinpath(SEED_RESOURCE)
        with importlib.resources.as_file(resource) as path:
            return {"source": _SEED, "sha256": _sha256_file(path)}
    if catalog.origin == "file":
        from urllib.parse import unquote, urlparse

        read = catalog.sha256()
        if read is not None:
            return {"source": _name(catalog.source), "sha256": read}
        location = catalog.source
        if location.startswith("file://"):
            location = unquote(urlparse(location).path)
        return {"source": _name(catalog.source), "sha256": _sha256_file(Path(location))}
    return {"source": catalog.source, "sha256": None}


def describe_inputs(
    registry: Registry, *, endpoints: str | Path | None = None, routed: list[str] | None = None
) -> dict[str, Any]:
    """Return the ``inputs`` record of a lock made from ``registry``.

    Args:
        registry: the registry the lock was compiled from.
        endpoints: the endpoints file given to :meth:`Registry.load`, or ``None``.
        routed: the model ids whose compile used endpoint data (non-empty routes).

    Returns:
        ``{"metadata", "endpoints", "models_yaml", "stages_yaml": {"source",
        "sha256"} | None, "contracts": {relative path: sha256}}``; ``contracts``
        holds every stage's contract modules and its tools' modules and ``.json``
        schema files (:func:`stage_modules`).
    """
    stages = registry.stages_file
    base = registry.stage_dir()
    contracts: dict[str, str] = {}
    memo: dict[tuple[str, Path], list[Path]] = {}
    hashed: dict[Path, str] = {}
    for name in registry.stage_names():
        for path in stage_modules(registry.stage(name), base, memo=memo):
            if path not in hashed:
                hashed[path] = _sha256_file(path) or "0" * 64
            contracts[_relative(path, base)] = hashed[path]
    return {
        "metadata": _metadata_record(registry),
        "endpoints": _endpoints_record(registry, endpoints, routed or []),
        "models_yaml": _record(None if registry.models_file is None
                               else registry.models_file.path),
        "stages_yaml": _record(None if stages is None else stages.path),
        "contracts": dict(sorted(contracts.items())),
    }


def _short(record: Any) -> str:
    if record is None:
        return "none"
    if isinstance(record, str):
        return f"sha256 {record[:12]}"
    sha = record.get("sha256")
    return f"{record.get('source')} ({'sha256 ' + sha[:12] if sha else 'no hash'})"


def input_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Name every input that differs between two locks' ``inputs`` records.

    Args:
        old: the ``inputs`` of the lock on disk (``{}`` when it has none).
        new: the ``inputs`` of a fresh lock.

    Returns:
        One line per changed input, e.g. ``"models_yaml: models.yaml (sha256
        0a1b...) -> models.yaml (sha256 9f8e...)"``; empty when every input is equal.
    """
    lines: list[str] = []
    for key in ("metadata", "endpoints", "models_yaml", "stages_yaml"):
        if old.get(key) != new.get(key):
            lines.append(f"{key}: {_short(old.get(key))} -> {_short(new.get(key))}")
    was, now = old.get("contracts") or {}, new.get("contracts") or {}
    for path in sorted(set(was) | set(now)):
        if was.get(path) != now.get(path):
            what = ("tool schema file" if str(path).lower().endswith(".json")
                    else "contract module")
            lines.append(f"{what} {path}: {_short(was.get(path))} -> "
                         f"{_short(now.get(path))}")
    return lines
