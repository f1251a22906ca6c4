"""Safe, line-aware loading of declaration files (models.yaml, stages.yaml).

The file is composed into a node tree with a safe loader (never a full load), then
walked once to build plain Python data together with the 1-based position of every
key, so later validation errors can point at ``file:line:col``. The loader is libyaml's
where PyYAML has it (:mod:`registry.declarations.yamlcompose`); a file it or a rule
below refuses is composed again with :class:`yaml.SafeLoader`, so what is accepted and
every message, with its line, are PyYAML's own.

Rules enforced while loading, each reported as a
:class:`~registry.errors.DeclarationError` naming the file and line:

* exactly one YAML document whose root is a mapping; an empty or comments-only
  file is refused with a message naming the expected top-level key;
* no duplicate keys in a mapping (the second one is reported, with the line of the first);
* no tabs in indentation (PyYAML's own message for this is cryptic);
* no merge keys (``<<``): share settings with a glob entry such as ``anthropic/*``
  instead, so that every value keeps one visible source line;
* mapping keys must be scalars; they are kept as the text written (``1.10`` stays
  ``"1.10"``, ``yes`` stays ``"yes"``);
* every number is finite: ``.nan``, ``.inf`` and ``-.inf`` are refused (JSON has no
  such values, so they could reach no request body, lock or ``--json`` output);
* anchors and aliases are allowed, but every node visited counts against a budget
  (an alias re-visits its target), so an alias bomb ("billion laughs") or a
  recursive alias is refused quickly with bounded memory.

Scalar values are constructed exactly as :func:`yaml.safe_load` would, except the
plain (unquoted) scalar ``unset``, which becomes the :data:`UNSET` sentinel: it
means "remove the value inherited from an earlier layer". Quote it (``"unset"``)
to get the string.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from registry.boundedread import InputTooLarge, read_at_most
from registry.declarations.yamlcompose import (
    compose_single,
    counting_loader,
    empty_error,
    fast_loader,
    syntax_error,
)
from registry.errors import DeclarationError

__all__ = [
    "MAX_BYTES",
    "MAX_NODES",
    "UNSET",
    "KeyPath",
    "YamlDocument",
    "format_key_path",
    "load_yaml",
]

KeyPath = tuple[str | int, ...]
"""A path into a document: mapping keys and sequence indexes, outermost first."""

MAX_NODES: Final = 100_000
"""Default budget of nodes visited while walking a document (aliases count again)."""

MAX_BYTES: Final = 8 * 2**20
"""The largest declaration file read (8 MiB; the example models.yaml is ~6 KB)."""

_MAX_DEPTH: Final = 64
_MAP_TAG: Final = "tag:yaml.org,2002:map"
_SEQ_TAG: Final = "tag:yaml.org,2002:seq"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"


class _Unset:
    """Type of :data:`UNSET`; a singleton that survives copying and pickling."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset()
"""The value of a plain ``unset`` scalar: remove the value inherited from an earlier layer."""


def format_key_path(path: Sequence[str | int]) -> str:
    """Render a key path as dotted text, sequence indexes in brackets.

    >>> format_key_path(("models", "anthropic/*", "sampling", "unsupported", 1))
    'models.anthropic/*.sampling.unsupported[1]'
    """
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


@dataclass(frozen=True)
class YamlDocument:
    """A loaded YAML file: plain data plus the position of every key.

    Attributes:
        file: the path the document was read from, as given.
        data: plain dicts (file order), lists and scalars; plain ``unset`` is :data:`UNSET`.
        marks: key path -> 1-based ``(line, column)`` of the entry's key (of the item
            for sequence entries); ``()`` maps to the start of the root node.
    """

    file: str
    data: Any
    marks: Mapping[KeyPath, tuple[int, int]]

    def locate(self, path: Sequence[str | int]) -> tuple[int | None, int | None]:
        """Return the position of ``path``, or of its longest prefix that has one.

        Args:
            path: mapping keys and sequence indexes, outermost first.

        Returns:
            ``(line, column)``, both 1-based, or ``(None, None)`` when nothing is known.

        >>> doc = YamlDocument("m.yaml", {"a": {"b": 1}}, {(): (1, 1), ("a",): (1, 1)})
        >>> doc.locate(("a", "b", "c"))
        (1, 1)
        """
        key = tuple(path)
        while True:
            mark = self.marks.get(key)
            if mark is not None:
                return mark
            if not key:
                return None, None
            key = key[:-1]

    def error(self, message: str, path: Sequence[str | int]) -> DeclarationError:
        """Build a :class:`DeclarationError` located at ``path`` in this document.

        Args:
            message: what is wrong and what was expected.
            path: key path of the offending entry.

        Returns:
            The error (not raised).

        >>> doc = YamlDocument("m.yaml", {"a": 1}, {(): (1, 1), ("a",): (1, 1)})
        >>> str(doc.error("bad", ["a"]))
        'm.yaml:1:1: a: bad'
        """
        line, column = self.locate(path)
        return DeclarationError(
            message, file=self.file, line=line, column=column, key_path=format_key_path(path)
        )


def load_yaml(path: str | Path, expect_key: str, *, max_nodes: int = MAX_NODES) -> YamlDocument:
    """Load one declaration file safely, keeping the position of every key.

    Args:
        path: the YAML file.
        expect_key: the top-level key the file should hold (``"models"``), named in
            the message when the file is empty or its root is not a mapping.
        max_nodes: budget of nodes visited (aliases count each time they are used).

    Returns:
        The document; ``data`` is always a ``dict``.

    Raises:
        DeclarationError: the file cannot be read, is not valid YAML, or breaks one
            of the rules in the module docstring.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    ...     _ = f.write("models:\\n  openai/*:\\n    notes: unset\\n")
    >>> doc = load_yaml(f.name, "models")
    >>> doc.data, doc.marks[("models", "openai/*", "notes")]
    ({'models': {'openai/*': {'notes': UNSET}}}, (3, 5))
    >>> os.unlink(f.name)
    """
    file = str(path)
    text = _read_text(file)
    fast = fast_loader(text, max_nodes)
    if fast is not None:
        try:
            return _load(fast, text, file, expect_key, max_nodes)
        except DeclarationError:
            pass  # composed again below, so the message and its line are PyYAML's
    return _load(counting_loader(text, file, max_nodes), text, file, expect_key, max_nodes)


def _load(loader: Any, text: str, file: str, expect_key: str, max_nodes: int) -> YamlDocument:
    try:
        root = compose_single(loader, file, expect_key)
        walker = _Walker(file, loader, max_nodes)
        data = walker.walk(root, ())
    except yaml.YAMLError as exc:
        raise syntax_error(exc, file, text) from exc
    except RecursionError as exc:
        raise DeclarationError("YAML nesting is too deep", file=file) from exc
    finally:
        loader.dispose()
    if data is None:
        raise empty_error(file, expect_key)
    if not isinstance(data, dict):
        raise DeclarationError(
            f"the root is a {_kind(data)}; expected a mapping with top-level key {expect_key!r}",
            file=file,
            line=root.start_mark.line + 1,
            column=root.start_mark.column + 1,
        )
    return YamlDocument(file=file, data=data, marks=walker.marks)


def _read_text(file: str) -> str:
    try:
        raw = read_at_most(Path(file), MAX_BYTES)
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise DeclarationError(f"cannot read file: {reason}", file=file) from exc
    except InputTooLarge as exc:
        raise DeclarationError(f"the file is {exc} for a declaration file; is it the right "
                               "file?", file=file) from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DeclarationError(
            f"file is not valid UTF-8 (byte {exc.start})", file=file, line=line
        ) from exc


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_HINT = ("a lone surrogate escape (such as \"\\ud83d\"), which UTF-8 cannot "
                   "encode; write the character itself, or \"\\U0001F600\" for one "
                   "outside the BMP, not two \\u escapes")


class _Walker:
    """Turns a composed node tree into plain data and key positions, within a budget."""

    def __init__(self, file: str, loader: Any, max_nodes: int) -> None:
        self.file = file
        self.loader = loader
        self.budget = max_nodes
        self.max_nodes = max_nodes
        self.marks: dict[KeyPath, tuple[int, int]] = {}
        self.active: set[int] = set()

    def fail(self, message: str, node: yaml.Node, path: KeyPath) -> DeclarationError:
        return DeclarationError(
            message,
            file=self.file,
            line=node.start_mark.line + 1,
            column=node.start_mark.column + 1,
            key_path=format_key_path(path),
        )

    def walk(self, node: yaml.Node, path: KeyPath) -> Any:
        self.budget -= 1
        if self.budget < 0:
            # Composing counted at most max_nodes nodes, so only aliases get here.
            message = f"too many YAML nodes (aliases expand beyond {self.max_nodes})"
            raise self.fail(message, node, path)
        if len(path) > _MAX_DEPTH:
            raise self.fail(f"YAML nesting is deeper than {_MAX_DEPTH} levels", node, path)
        if not path:
            self.marks[()] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            # a plain scalar: style None (PyYAML's composer) or "" (libyaml's)
            if not node.style and node.value == "unset":
                return UNSET
            try:
                value = self.loader.construct_object(node, deep=True)
            except ValueError:  # an integer of more than 4,300 digits
                raise self.fail("a number too long to read", node, path) from None
            if isinstance(value, float) and not math.isfinite(value):
                raise self.fail(
                    f"{node.value!r} is not a finite number; write a number "
                    "(NaN and infinity cannot be sent as JSON)",
                    node,
                    path,
                )
            if isinstance(value, str) and _SURROGATE.search(value):
                raise self.fail(_SURROGATE_HINT, node, path)
            return value
        if id(node) in self.active:
            raise self.fail("recursive alias: a node contains itself", node, path)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self.walk_mapping(node, path)
            if isinstance(node, yaml.SequenceNode):
                return self.walk_sequence(node, path)
            raise self.fail(f"unsupported YAML node {type(node).__name__}", node, path)
        finally:
            self.active.discard(id(node))

    def walk_mapping(self, node: yaml.MappingNode, path: KeyPath) -> dict[str, Any]:
        if node.tag != _MAP_TAG:
            raise self.fail(f"unsupported tag {node.tag!r} on a mapping", node, path)
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                raise self.fail(
                    "merge keys ('<<') are not supported; repeat the settings or share "
                    "them with a glob entry such as 'anthropic/*'",
                    key_node,
                    path,
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail("mapping keys must be plain scalars", key_node, path)
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if _SURROGATE.search(key):
                raise self.fail(_SURROGATE_HINT, key_node, path)
            if key in first_line:
                raise self.fail(
                    f"duplicate key {key!r} (first defined at line {first_line[key]})",
                    key_node,
                    (*path, key),
                )
            first_line[key] = line
            child = (*path, key)
            self.marks[child] = (line, key_node.start_mark.column + 1)
            out[key] = self.walk(value_node, child)
        return out

    def walk_sequence(self, node: yaml.SequenceNode, path: KeyPath) -> list[Any]:
        if node.tag != _SEQ_TAG:
            raise self.fail(f"unsupported tag {node.tag!r} on a sequence", node, path)
        out: list[Any] = []
        for index, item in enumerate(node.value):
            child = (*path, index)
            self.marks[child] = (item.start_mark.line + 1, item.start_mark.column + 1)
            out.append(self.walk(item, child))
        return out
