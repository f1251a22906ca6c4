"""A tool's input schema read from a JSON file (``input_schema: schemas/lookup.json``).

The path is relative to the stages.yaml directory (or absolute). The file must be
UTF-8 JSON whose root is an object, with no key written twice in any object: Python's
``json`` keeps the last of two equal keys silently, and the other JSON readers a schema
meets may keep the first, so a duplicate is refused, named with the JSON Pointer of its
object. Errors name the file, and for invalid JSON its line and column.

Only a regular file (a symlink to one is fine) is read, and at most
:data:`MAX_SCHEMA_FILE_BYTES` + 1 bytes of it: a device (``/dev/zero``), a FIFO, a socket or
a directory is refused before it is opened, so nothing hangs or fills memory. The one
exception is the already-open stream the command line accepts for ``--messages``:
``/dev/stdin`` and ``/dev/fd/N`` (a process substitution), read with the same bound.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compiler.errors import ToolError
from registry.boundedread import InputTooLarge, read_at_most

__all__ = ["MAX_SCHEMA_FILE_BYTES", "load_schema_file"]

#: A tool schema file larger than this (bytes) is refused before it is parsed.
MAX_SCHEMA_FILE_BYTES = 4_000_000


class _Duplicates(dict[str, Any]):
    """An object that had a key written twice (the repeated keys, in order)."""

    repeated: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    repeated = []
    for key, value in pairs:
        if key in out:
            repeated.append(key)
        out[key] = value
    if not repeated:
        return out
    marked = _Duplicates(out)
    marked.repeated = repeated
    return marked


def _first_duplicate(node: Any, pointer: str = "") -> tuple[str, str] | None:
    """``(JSON Pointer of the object, key)`` of the first repeated key, depth first."""
    if isinstance(node, _Duplicates):
        return pointer, node.repeated[0]
    children = node.items() if isinstance(node, Mapping) else (
        enumerate(node) if isinstance(node, list) else ())
    for key, value in children:
        step = str(key).replace("~", "~0").replace("/", "~1")
        found = _first_duplicate(value, f"{pointer}/{step}")
        if found is not None:
            return found
    return None


def load_schema_file(name: str, spec: str, base_dir: Path) -> dict[str, Any]:
    """Read the JSON Schema file ``spec`` of tool ``name``.

    Args:
        name: the tool name (for the messages).
        spec: the path as written in stages.yaml (relative to ``base_dir``, or absolute).
        base_dir: the stages.yaml directory.

    Returns:
        The schema (plain dicts and lists).

    Raises:
        ToolError: the file is missing, unreadable, larger than
            :data:`MAX_SCHEMA_FILE_BYTES`, not UTF-8 JSON (``file:line:column``), has a
            duplicate key, or its root is not an object.
    """
    path = Path(spec)
    path = path if path.is_absolute() else base_dir / path
    where = f"tool {name!r}: input_schema file {str(path)!r}"
    try:
        mode = path.stat().st_mode
        stream = str(path) == "/dev/stdin" or str(path).startswith("/dev/fd/")
        if not stat.S_ISREG(mode) and not stream:
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "not a regular file")
            raise ToolError(f"{where} is {kind}; input_schema names a regular JSON file "
                            "(or /dev/stdin)")
        text = read_at_most(path, MAX_SCHEMA_FILE_BYTES).decode("utf-8")
    except InputTooLarge:
        raise ToolError(f"{where} has more than the {MAX_SCHEMA_FILE_BYTES} bytes a tool "
                        "schema may have") from None
    except OSError as exc:
        raise ToolError(f"{where} cannot be read: {exc.strerror or exc} (the path is "
                        "relative to the stages.yaml directory)") from None
    except UnicodeDecodeError as exc:
        raise ToolError(f"{where} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        data = json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise ToolError(f"{path}:{exc.lineno}:{exc.colno}: tool {name!r}: the input_schema "
                        f"file is not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ToolError(f"{where}: the JSON is nested too deeply") from None
    found = _first_duplicate(data)
    if found is not None:
        pointer, key = found
        raise ToolError(f"{where}: duplicate key {key!r} in the object at {pointer or '/'}; "
                        "each key may appear once per object")
    if not isinstance(data, dict):
        raise ToolError(f"{where}: the root must be a JSON object (a JSON Schema), not "
                        f"{type(data).__name__}")
    plain: dict[str, Any] = _plain(data)
    return plain


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node
