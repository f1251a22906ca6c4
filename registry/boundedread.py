"""Reading an input whole, but never more than a limit: the one reader every file input uses.

Metadata files (:func:`registry.metadata.parse.read_bounded`), models.yaml and
stages.yaml (:func:`registry.declarations.yamlsource.load_yaml`), the command line's
``--messages`` and reply files (``compiler.cli.inputs``) and a tool's ``input_schema``
file (``compiler.tools.schema_file``) all read through :func:`read_at_most`, and each
words :class:`InputTooLarge` in its own terms. No third-party imports.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path

__all__ = ["STDIN", "STDIN_NAME", "InputTooLarge", "forget_stdin", "is_stdin_path",
           "read_at_most", "shown_paths", "stdin_closed", "stdin_read_as"]

STDIN = "-"
"""The name that means standard input wherever an input file is named (``--messages -``)."""

STDIN_NAME = "stdin"
"""What messages call standard input, whichever path it was read through."""

_STDIN_PATHS: set[str] = set()


def stdin_read_as(path: str) -> None:
    """Show ``path`` (``/dev/stdin``, a spooled copy of it) as :data:`STDIN_NAME`."""
    _STDIN_PATHS.add(path)


def forget_stdin() -> None:
    """Start a command with no path shown as stdin."""
    _STDIN_PATHS.clear()


def is_stdin_path(path: str) -> bool:
    """Whether standard input was read through ``path`` (see :func:`stdin_read_as`)."""
    return path in _STDIN_PATHS


def shown_paths(text: str) -> str:
    """``text`` with every path standard input was read through named ``stdin``."""
    for path in sorted(_STDIN_PATHS, key=len, reverse=True):
        text = text.replace(path, STDIN_NAME)
    return text


def stdin_closed() -> bool:
    """Whether standard input is closed (``<&-``: Python sets ``sys.stdin`` to ``None``)."""
    return sys.stdin is None


class InputTooLarge(Exception):
    """The input holds more than ``limit`` bytes; nothing past ``limit`` + 1 was read.

    Attributes:
        limit: the limit in bytes.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"larger than the {limit:,}-byte limit")
        self.limit = limit


def read_at_most(spec: str | Path, limit: int) -> bytes:
    """Read the file ``spec`` whole, but never more than ``limit`` bytes.

    At most ``limit`` + 1 bytes are read, so ``/dev/zero`` ends; a pipe (``/dev/stdin``, a
    process substitution ``<(...)``) is read like a file. The string ``"-"``
    (:data:`STDIN`) is standard input (its bytes; a text stand-in such as
    :class:`io.StringIO` is encoded as UTF-8).

    Args:
        spec: the path, or ``"-"``.
        limit: the largest size accepted, in bytes.

    Returns:
        The bytes, at most ``limit`` of them.

    Raises:
        OSError: the file cannot be opened or read (missing, a directory, no permission;
            ``"-"`` when standard input is closed, ``EBADF``).
        InputTooLarge: the input holds more than ``limit`` bytes.
    """
    if isinstance(spec, str) and spec == STDIN:
        if sys.stdin is None:  # closed (``<&-``): Python has no stdin object at all
            raise OSError(errno.EBADF, "standard input is closed")
        stream = getattr(sys.stdin, "buffer", None)  # a StringIO stand-in has none
        raw = (stream.read(limit + 1) if stream is not None
               else sys.stdin.read(limit + 1).encode("utf-8", "surrogateescape"))
    else:
        with Path(spec).open("rb") as handle:
            raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise InputTooLarge(limit)
    return raw
