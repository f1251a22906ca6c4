"""The output contract: one pydantic type and its canonical JSON Schema.

An :class:`OutputContract` is built once per type (:meth:`OutputContract.from_type`
is cached) or loaded from a ``"module:Attr"`` / ``"path.py:Attr"`` spec with
:func:`load_contract`. Its ``schema`` is deep-frozen: every dict and list in it
refuses mutation, so no pass can change the contract behind another's back.
``copy.deepcopy`` (or :func:`~compiler.schema.frozen_json.thaw_json`) returns plain, mutable
containers.

The JSON helpers the projection and reply modules share live in
:mod:`compiler.schema.frozen_json` (frozen values, canonical hashes) and
:mod:`compiler.schema.walk` (walking a schema's subschemas).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import re
import sys
import sysconfig
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import TypeAdapter

from compiler.errors import ContractError, Interrupted
from compiler.metaschema.draft2020 import meta_schema_error
from compiler.schema.budgets import backtracking_patterns, schema_value_problem, uses_python_re
from compiler.schema.frozen_json import (
    canonical_sha256,
    freeze_json,
)
from registry.errors import closest
from registry.outside import bounded, exception_text

__all__ = ["OutputContract", "load_contract"]

_NAME_LIMIT = 64  # OpenRouter json_schema.name: at most 64 characters of [a-zA-Z0-9_-]
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]+")


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
    not_a_type = _not_a_type(tp, None)
    if not_a_type:
        raise ContractError(f"{label} cannot be used as an output contract: {not_a_type}")
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(tp)
        schema = adapter.json_schema(mode="validation")
    except Exception as exc:
        raise ContractError(
            f"{label} cannot be used as an output contract: pydantic cannot build its "
            f"JSON Schema ({exception_text(exc, first_line=True)})"
        ) from exc
    not_a_type = _not_a_type(tp, schema)
    if not_a_type:
        raise ContractError(f"{label} cannot be used as an output contract: {not_a_type}")
    if (invalid := meta_schema_error(schema)) is not None:  # never an "internal error" later
        raise ContractError(f"{label} cannot be used as an output contract: its JSON Schema is "
                            f"not valid JSON Schema {bounded(invalid)}; fix or remove that "
                            "value (a json_schema_extra or WithJsonSchema?)")
    if (why := schema_value_problem(schema)) is not None:  # NaN, a lone surrogate
        raise ContractError(f"{label} cannot be used as an output contract: {why}")
    slow = backtracking_patterns(schema) if uses_python_re(tp, adapter.core_schema) else []
    if slow:
        where = "; ".join(f"{at}: {why}" for at, why in slow[:5])
        raise ContractError(
            f"{label} cannot be used as an output contract: with regex_engine='python-re' "
            f"a pattern can take exponential or high polynomial time on a reply ({where}); use "
            "pydantic's default regex engine (rust-regex, linear time), or rewrite the "
            "pattern (docs/contracts.md, Limits)"
        )
    return OutputContract(
        target=tp,
        schema=freeze_json(schema),
        name=_sanitise_name(label),
        sha256=canonical_sha256(schema),
        adapter=adapter,
    )


def _not_a_type(tp: Any, schema: Mapping[str, Any] | None) -> str | None:
    """Say why ``tp`` is no output type, or return None when it is one (``schema``: its
    JSON Schema once built, None before).

    pydantic's ``TypeAdapter`` accepts more than types: a function (it validates the call's
    arguments), a string (a forward reference), ``object`` and ``Any`` (schema ``{}``, which
    admits every reply). None of those describes a reply, so none is a contract.
    """
    if isinstance(tp, str):
        return (f"it is the string {tp[:60]!r}, not a type; name the class itself "
                "(a pydantic BaseModel subclass)")
    if not isinstance(tp, type) and get_origin(tp) is None and tp is not None and callable(tp):
        return (f"it is a {type(tp).__name__} (a callable), not a type; name a pydantic "
                "BaseModel subclass, or a type such as list[Model]")
    if schema is not None and not schema:
        return ("its JSON Schema is {} (every reply would pass, so it constrains nothing); "
                "name a pydantic BaseModel subclass")
    return None


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

_LOAD_LOCK = threading.RLock()
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
            (missing, ``ImportError``, ``SyntaxError``, an error, ``SystemExit`` or
            ``KeyboardInterrupt`` it raises itself while executing; a Ctrl-C ``capc``
            received passes through as :class:`~compiler.errors.Interrupted`), a missing
            attribute (with close matches), an object pydantic cannot turn into a JSON
            Schema, or one that is no reply type (a function, a string, ``Any``). The
            underlying exception is chained.
            What the module prints while it is imported goes to stderr, never stdout.

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
    module = (_load_file(module_part, base_dir, spec) if is_file
              else _import_module(module_part, spec))
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
                f"{exception_text(exc)}"
            ) from exc
        walked.append(part)
    try:
        return OutputContract.from_type(target)
    except ContractError as exc:
        raise ContractError(f"contract {spec!r} ({where}, attribute {attr_path!r}): {exc}") from exc


def _flush_stdout() -> None:
    for stream in (sys.stdout, sys.__stdout__):
        with contextlib.suppress(Exception):  # closed, or no reader: nothing to keep
            if stream is not None:
                stream.flush()


@contextlib.contextmanager
def _fd1_on_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr's while inside, so what bypasses ``sys.stdout``
    (``os.write(1, ...)``, a child process, ``sys.__stdout__``) cannot reach stdout
    either; stdout is flushed before and after, and descriptor 1 restored at the end."""
    _flush_stdout()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 (closed): nothing to protect
        yield
        return
    try:
        os.dup2(sys.stderr.fileno() if hasattr(sys.stderr, "fileno") else 2, 1)
    except (OSError, ValueError):
        os.dup2(2, 1)
    try:
        yield
    finally:
        _flush_stdout()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def _guarded_import(what: str, file: Callable[[], str | None]) -> Iterator[None]:
    """Run a contract's import with its prints sent to stderr and its exits made errors.

    Whatever the module prints at import goes to stderr, so stdout (a body, ``--json``)
    stays clean: ``sys.stdout`` and file descriptor 1 both point at stderr meanwhile
    (``os.write(1, ...)``, a child process and ``sys.__stdout__`` included);
    ``SystemExit`` and ``KeyboardInterrupt`` raised while it executes become a
    :class:`ContractError` naming ``what``, so ``capc`` never exits 0 on a contract's say.
    A Ctrl-C ``capc`` received (:class:`~compiler.errors.Interrupted`, raised by its SIGINT
    handler) passes through unchanged. Any other exception, ``BaseException`` subclasses
    (``GeneratorExit``, a class of the module's own) included, becomes the one line
    ``what cannot be imported: file:N: Type: message``: the message through
    :func:`registry.outside.exception_text` (one line, at most 500 characters, a
    placeholder when its ``__str__`` and ``__repr__`` raise). ``file()`` names the site
    when the traceback has none (a NUL byte in the source).
    """
    try:
        with _fd1_on_stderr(), contextlib.redirect_stdout(sys.stderr):
            yield
    except (ContractError, Interrupted):  # Interrupted: a real Ctrl-C, not the module's say
        raise
    except (SystemExit, KeyboardInterrupt) as exc:
        code = getattr(exc, "code", None)  # an int, None or any object: shown by its repr
        code = code if code is None or isinstance(code, int) else bounded(repr(code))
        detail = f" (code {code!r})" if isinstance(exc, SystemExit) else ""
        raise ContractError(
            f"{what} cannot be imported: {_error_site(exc, file)}it raised "
            f"{type(exc).__name__}{detail} while executing; a contract module must only "
            "define types"
        ) from exc
    except BaseException as exc:  # ImportError, SyntaxError, anything the module raises
        raise ContractError(
            f"{what} cannot be imported: {_error_site(exc, file)}{exception_text(exc)}"
        ) from exc


def _error_site(exc: BaseException, fallback: Callable[[], str | None]) -> str:
    """``file:line: `` where ``exc`` arose: a ``SyntaxError``'s own position, else the
    innermost frame outside the import machinery; ``fallback: `` (the file being
    imported) when neither names one, ``""`` when there is no fallback either (a module
    that is not found at all). A path under the current directory is shown relative to
    it."""
    site = _traceback_site(exc)
    file = None if site else fallback()
    if file:
        shown = os.path.relpath(file) if Path(file).is_absolute() else file
        return f"{file if shown.startswith('..') else shown}: "
    return site


def _traceback_site(exc: BaseException) -> str:
    file, line = (exc.filename, exc.lineno) if isinstance(exc, SyntaxError) else (None, None)
    if file is None:
        frames = [(f.f_code.co_filename, n) for f, n in traceback.walk_tb(exc.__traceback__)]
        frames = [(name, n) for name, n in frames if not name.startswith("<")
                  and Path(name).parent != _IMPORTLIB and name != __file__]
        own = [(name, n) for name, n in frames if not name.startswith(_LIBRARIES)]
        if not frames:
            return ""
        file, line = (own or frames)[-1]  # the caller's own code before a library's
    shown = os.path.relpath(file) if Path(file).is_absolute() else file
    shown = file if shown.startswith("..") else shown
    return f"{shown}:{line}: " if line else f"{shown}: "


_IMPORTLIB = Path(importlib.__file__ or ".").parent
_LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")})


def _import_module(name: str, ref: str) -> types.ModuleType:
    with _LOAD_LOCK, _guarded_import(f"contract {ref!r}", lambda: _origin(name)):
        return importlib.import_module(name)


def _origin(name: str) -> str | None:
    """The file module ``name`` loads from, when its parents are imported (no code runs)."""
    parents = name.split(".")[:-1]
    if not all(".".join(parents[: i + 1]) in sys.modules for i in range(len(parents))):
        return None
    with contextlib.suppress(Exception):
        found = importlib.util.find_spec(name)
        return found.origin if found is not None and found.has_location else None
    return None


def _load_file(relative: str, base_dir: Path, ref: str) -> types.ModuleType:
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
            with _guarded_import(f"contract {ref!r}", lambda: str(path)):
                spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        _FILE_MODULES[path] = module
        return module
