"""Composing one declaration file into a YAML node tree, safely, with either loader.

:func:`fast_loader` is PyYAML's libyaml ``CSafeLoader`` (about 15x faster to compose
than the pure-Python loader; its nodes carry the same 0-based marks, and only the style
of a plain scalar differs: ``""`` where PyYAML's composer has ``None``) when PyYAML was
built with libyaml and the text is small enough for a bounded tree; else ``None``, and
:func:`counting_loader` is :class:`yaml.SafeLoader` with a node budget.
:func:`compose_single` takes the one document's root; :func:`syntax_error` and
:func:`empty_error` word what is wrong (:mod:`registry.declarations.yamlsource` uses
them all).
"""

from __future__ import annotations

from typing import Any

import yaml

from registry.errors import DeclarationError

__all__ = ["compose_single", "counting_loader", "empty_error", "fast_loader", "syntax_error"]

#: libyaml's safe loader, or None when PyYAML was built without it.
_CLOADER: Any = getattr(yaml, "CSafeLoader", None)
#: What PyYAML's reader refuses before parsing (libyaml's own check differs slightly).
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE


def fast_loader(text: str, max_nodes: int) -> Any:
    """libyaml's safe loader for ``text``, or ``None`` (no libyaml, more than ``max_nodes``
    characters, or a character PyYAML's reader refuses).

    A text of at most ``max_nodes`` characters cannot hold more than ``max_nodes`` nodes
    (each takes at least one character), so libyaml, which cannot stop composing midway,
    composes a bounded tree (the walk still counts aliases against the budget).
    """
    if _CLOADER is None or len(text) > max_nodes or _NON_PRINTABLE.search(text):
        return None
    return _CLOADER(text)


def counting_loader(text: str, file: str, max_nodes: int) -> Any:
    """PyYAML's safe loader for ``text``, refusing a file of more than ``max_nodes`` nodes."""
    return _CountingLoader(text, file, max_nodes)


class _CountingLoader(yaml.SafeLoader):
    """A safe loader that stops composing once the file holds more than ``max_nodes``
    nodes, so a huge file fails fast and says so (aliases are counted by the walk)."""

    def __init__(self, text: str, file: str, max_nodes: int) -> None:
        super().__init__(text)
        self.file, self.max_nodes, self.composed = file, max_nodes, 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if not (isinstance(parent, yaml.MappingNode) and index is None):  # keys are free
            self.composed += 1
        if self.composed > self.max_nodes:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise DeclarationError(
                f"the file has more than {self.max_nodes:,} YAML nodes; a declaration file "
                "is far smaller: is it the right file?",
                file=self.file,
                line=None if mark is None else mark.line + 1,
            )
        return super().compose_node(parent, index)


def empty_error(file: str, expect_key: str) -> DeclarationError:
    """The error for a file with no document (nothing, or only comments)."""
    return DeclarationError(
        f"file is empty; expected a mapping with top-level key {expect_key!r}", file=file
    )


def compose_single(loader: Any, file: str, expect_key: str) -> yaml.Node:
    """Compose the file's one document and return its root node.

    Raises:
        DeclarationError: the file holds no document, or more than one.
        yaml.YAMLError: the text is not valid YAML.
    """
    if not loader.check_node():  # only comments, or nothing at all
        raise empty_error(file, expect_key)
    root: yaml.Node | None = loader.get_node()
    if loader.check_node():
        event: yaml.Event = loader.peek_event()
        mark = event.start_mark
        raise DeclarationError(
            "file holds more than one YAML document; expected exactly one (remove the '---')",
            file=file,
            line=None if mark is None else mark.line + 1,
            column=None if mark is None else mark.column + 1,
        )
    assert root is not None  # get_node returns a node whenever check_node was true
    return root


def syntax_error(exc: yaml.YAMLError, file: str, text: str) -> DeclarationError:
    """Word PyYAML's error ``exc`` for ``file`` (a tab in the indentation said plainly)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return DeclarationError(f"invalid YAML: {exc}", file=file)
    line, column = mark.line + 1, mark.column + 1
    lines = text.splitlines()
    source = lines[mark.line] if mark.line < len(lines) else ""
    indent = source[: len(source) - len(source.lstrip(" \t"))]
    if "\t" in indent or "'\\t'" in str(getattr(exc, "problem", "")):
        return DeclarationError(
            "tabs are not allowed for indentation; use spaces", file=file, line=line, column=column
        )
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    return DeclarationError(message, file=file, line=line, column=column)
