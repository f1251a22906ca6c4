"""The output contract: one pydantic type and its canonical JSON Schema.

An :class:`OutputContract` is built once per type (:meth:`OutputContract.from_type`
is cached) or loaded from a ``"module:Attr"`` / ``"path.py:Attr"`` spec with
:func:`load_contract`. Its ``schema`` is deep-frozen: every dict and list in it
refuses mutation, so no pass can change the contract behind another's back.
``copy.deepcopy`` (or :func:`thaw_json`) returns plain, mutable containers.

This module also holds the small JSON helpers the projection and reply modules
share: :func:`freeze_json`, :func:`thaw_json`, :func:`canonical_sha256` and
:func:`subschemas`.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import json
import re
import sys
import threading
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, Union, get_args, get_origin

from pydantic import TypeAdapter

from compiler.errors import ContractError
from registry.errors import closest

__all__ = [
    "FrozenDict",
    "FrozenList",
    "OutputContract",
    "canonical_sha256",
    "escape_pointer",
    "freeze_json",
    "load_contract",
    "schema_slot",
    "subschemas",
    "thaw_json",
    "walk_schema",
]

_NAME_LIMIT = 64  # OpenRouter json_schema.name: at most 64 characters of [a-zA-Z0-9_-]
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]+")


# --------------------------------------------------------------------------- frozen JSON


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError("this JSON value is read-only; use copy.deepcopy() for a mutable copy")


class FrozenDict(dict[str, Any]):
    """A JSON object that refuses mutation (still a ``dict`` for ``json`` and ``jsonschema``)."""

    __slots__ = ()
    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (thaw_json(self),))


class FrozenList(list[Any]):
    """A JSON array that refuses mutation (still a ``list`` for ``json`` and ``jsonschema``)."""

    __slots__ = ()
    __setitem__ = _refuse
    __delitem__ = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse
    append = _refuse
    clear = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    reverse = _refuse
    sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(value, memo) for value in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (thaw_json(self),))


def freeze_json(value: Any) -> Any:
    """Return a deep, read-only copy of a JSON value (new containers, never aliases).

    Args:
        value: a JSON-compatible value (dicts with string keys, lists, tuples, scalars).

    Returns:
        The same value built from :class:`FrozenDict` / :class:`FrozenList`.

    >>> frozen = freeze_json({"a": [1]})
    >>> frozen["a"].append(2)
    Traceback (most recent call last):
    TypeError: this JSON value is read-only; use copy.deepcopy() for a mutable copy
    """
    if isinstance(value, Mapping):
        return FrozenDict({str(key): freeze_json(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(freeze_json(item) for item in value)
    return value


def thaw_json(value: Any) -> Any:
    """Return a deep, plain (mutable) copy of a JSON value.

    Args:
        value: a JSON value, frozen or not.

    Returns:
        The same value built from plain ``dict`` and ``list``.
    """
    if isinstance(value, Mapping):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw_json(item) for item in value]
    return value


def canonical_sha256(value: Any) -> str:
    """Return the hex SHA-256 of a JSON value in canonical form.

    The canonical form is ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` encoded as UTF-8, so key order and whitespace never matter.

    Args:
        value: a JSON value.

    Returns:
        64 lowercase hex digits.

    >>> canonical_sha256({"b": 1, "a": 2}) == canonical_sha256({"a": 2, "b": 1})
    True
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_ONE_SCHEMA = frozenset({
    "items", "additionalProperties", "not", "propertyNames", "contains", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema",
})
_SCHEMA_LISTS = frozenset({"prefixItems", "anyOf", "oneOf", "allOf"})
_SCHEMA_MAPS = frozenset({
    "properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
})


def schema_slot(key: str, value: Any) -> Literal["one", "list", "map"] | None:
    """Say how keyword ``key`` holds subschemas: one, a list, a name map, or none (data).

    Args:
        key: a JSON Schema keyword.
        value: its value (``items`` may be a schema or, in older drafts, a list).

    Returns:
        ``"one"``, ``"list"``, ``"map"``, or ``None`` for data keywords such as
        ``enum``, ``const``, ``default`` or ``required``.

    >>> schema_slot("anyOf", []), schema_slot("enum", [])
    ('list', None)
    """
    if key in _ONE_SCHEMA and isinstance(value, Mapping | bool):
        return "one"
    if (key in _SCHEMA_LISTS or key == "items") and isinstance(value, list):
        return "list"
    if key in _SCHEMA_MAPS and isinstance(value, Mapping):
        return "map"
    return None


def subschemas(node: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yield ``(relative path, subschema)`` for every schema-valued keyword of ``node``.

    Only keywords that hold schemas are followed (see :func:`schema_slot`); the
    walk is one level deep, callers recurse.

    Args:
        node: a JSON Schema object.

    Yields:
        The path segments from ``node`` to the subschema, and the subschema
        (a mapping or a boolean).

    >>> [p for p, _ in subschemas({"properties": {"a": {}}, "enum": [{}]})]
    [('properties', 'a')]
    """
    for key, value in node.items():
        slot = schema_slot(key, value)
        if slot == "one":
            yield (key,), value
        elif slot == "list":
            for index, item in enumerate(value):
                yield (key, str(index)), item
        elif slot == "map":
            for name, item in value.items():
                yield (key, name), item


def walk_schema(node: Any, pointer: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Yield ``(JSON Pointer, node)`` for ``node`` and every schema object below it.

    Args:
        node: a schema (booleans yield nothing).
        pointer: the RFC 6901 pointer of ``node`` itself.

    Yields:
        Each schema object with its pointer, parents before children.

    >>> [p for p, _ in walk_schema({"items": {"properties": {"a/b": {}}}})]
    ['', '/items', '/items/properties/a~1b']
    """
    if not isinstance(node, Mapping):
        return
    yield pointer, node
    for path, sub in subschemas(node):
        yield from walk_schema(sub, pointer + "".join("/" + escape_pointer(p) for p in path))


def escape_pointer(segment: str) -> str:
    """Escape one RFC 6901 JSON Pointer segment (``~`` -> ``~0``, ``/`` -> ``~1``).

    >>> escape_pointer("a/b~c")
    'a~1b~0c'
    """
    return segment.replace("~", "~0").replace("/", "~1")


# --------------------------------------------------------------------------- the contract


@dataclass(frozen=True)
class OutputContract:
    """One output type and its canonical JSON Schema.

    Attributes:
        target: the pydantic model class, or any type ``TypeAdapter`` accepts (for
            example an ``Annotated`` discriminated union).
        schema: ``TypeAdapter(target).json_schema()`` (mode ``validation``), deep-frozen.
        name: a name for OpenRouter's ``json_schema.name``: at most 64 characters of
            ``[a-zA-Z0-9_-]``, derived from the type's name.
        sha256: :func:`canonical_sha256` of ``schema``.
        adapter: the ``TypeAdapter`` that validates replies (not part of eq/hash).
    """

    target: Any
    schema: Mapping[str, Any] = field(hash=False)
    name: str
    sha256: str
    adapter: TypeAdapter[Any] = field(compare=False, hash=False, repr=False)

    @classmethod
    def from_type(cls, tp: Any) -> OutputContract:
        """Build (once per type) the contract of ``tp``.

        Args:
            tp: a ``BaseModel`` subclass or any type pydantic's ``TypeAdapter`` accepts.

        Returns:
            The contract; the same object for the same ``tp`` on later calls.

        Raises:
            ContractError: pydantic cannot build a validator or a JSON Schema for ``tp``.

        >>> from pydantic import BaseModel
        >>> class Answer(BaseModel):
        ...     text: str
        >>> OutputContract.from_type(Answer).name
        'Answer'
        """
        try:
            hash(tp)
        except TypeError:  # an unhashable type: build it without the cache
            return _build_contract(tp)
        return _contract_of(tp)


@cache
def _contract_of(tp: Any) -> OutputContract:
    return _build_contract(tp)


def _build_contract(tp: Any) -> OutputContract:
    label = _type_name(tp)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(tp)
        schema = adapter.json_schema(mode="validation")
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ContractError(
            f"{label} cannot be used as an output contract: pydantic cannot build its "
            f"JSON Schema ({type(exc).__name__}: {reason})"
        ) from exc
    return OutputContract(
        target=tp,
        schema=freeze_json(schema),
        name=_sanitise_name(label),
        sha256=canonical_sha256(schema),
        adapter=adapter,
    )


def _type_name(tp: Any) -> str:
    """Return a readable name for a type: the class name, or one built from a union's parts."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _type_name(get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        return "_or_".join(_type_name(arg) for arg in get_args(tp))
    if origin is not None:
        inner = "_".join(_type_name(arg) for arg in get_args(tp))
        return f"{_type_name(origin)}_{inner}" if inner else _type_name(origin)
    name = getattr(tp, "__name__", None)
    return name if isinstance(name, str) and name else "output"


def _sanitise_name(label: str) -> str:
    """Make ``label`` a valid ``json_schema.name`` (<= 64 of ``[a-zA-Z0-9_-]``)."""
    name = _NAME_BAD.sub("_", label).strip("_") or "output"
    if len(name) <= _NAME_LIMIT:
        return name
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:8]
    return f"{name[: _NAME_LIMIT - 9]}_{digest}"


# --------------------------------------------------------------------------- loading a spec

_LOAD_LOCK = threading.Lock()
_FILE_MODULES: dict[Path, types.ModuleType] = {}


def load_contract(spec: str, *, base_dir: Path) -> OutputContract:
    """Import the type named by ``spec`` and return its contract.

    ``spec`` is ``"package.module:ClassName"`` (imported with ``importlib``) or
    ``"relative/path.py:ClassName"`` (a file relative to ``base_dir``, loaded once
    under a stable module name derived from its resolved path). The attribute part
    may be dotted (``"pkg.mod:Outer.Inner"``).

    Args:
        spec: the contract reference, as written in ``stages.yaml``.
        base_dir: directory that relative file paths start from.

    Returns:
        The contract (cached per type, so loading twice returns the same object).

    Raises:
        ContractError: a malformed spec, a file or module that does not import
            (missing, ``ImportError``, ``SyntaxError``, an error while executing it),
            a missing attribute (with close matches), or an object pydantic cannot
            turn into a JSON Schema. The underlying exception is chained.

    >>> load_contract("decimal:Decimal", base_dir=Path(".")).name
    'Decimal'
    """
    module_part, sep, attr_path = spec.rpartition(":")
    if not sep or not module_part or not attr_path:
        raise ContractError(
            f"contract {spec!r} is not of the form 'package.module:ClassName' or "
            "'relative/path.py:ClassName'"
        )
    is_file = module_part.endswith(".py") or "/" in module_part or "\\" in module_part
    module = _load_file(module_part, base_dir) if is_file else _import_module(module_part)
    where = f"file {module_part!r}" if is_file else f"module {module_part!r}"
    target: Any = module
    walked: list[str] = []
    for part in attr_path.split("."):
        owner = where if not walked else f"{'.'.join(walked)!r} in {where}"
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            hint = closest(part, [n for n in dir(target) if not n.startswith("_")])
            suggestion = f"; did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
            raise ContractError(
                f"contract {spec!r}: {owner} has no attribute {part!r}{suggestion}"
            ) from exc
        except Exception as exc:  # a module-level __getattr__ that fails
            raise ContractError(
                f"contract {spec!r}: reading {part!r} from {owner} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        walked.append(part)
    try:
        return OutputContract.from_type(target)
    except ContractError as exc:
        raise ContractError(f"contract {spec!r} ({where}, attribute {attr_path!r}): {exc}") from exc


def _import_module(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:  # ImportError, SyntaxError, or anything the module raises
        raise ContractError(
            f"contract module {name!r} cannot be imported: {type(exc).__name__}: {exc}"
        ) from exc


def _load_file(relative: str, base_dir: Path) -> types.ModuleType:
    path = (base_dir / relative).resolve()
    with _LOAD_LOCK:
        if path in _FILE_MODULES:
            return _FILE_MODULES[path]
        if not path.is_file():
            raise ContractError(f"contract file {relative!r} not found (looked at {path})")
        stem = _NAME_BAD.sub("_", path.stem)
        digest = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:12]
        module_name = f"_capc_contract_{stem}_{digest}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ContractError(f"contract file {relative!r} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # pydantic resolves forward references through it
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            sys.modules.pop(module_name, None)
            if not isinstance(exc, Exception):
                raise
            raise ContractError(
                f"contract file {relative!r} cannot be imported: {type(exc).__name__}: {exc}"
            ) from exc
        _FILE_MODULES[path] = module
        return module
