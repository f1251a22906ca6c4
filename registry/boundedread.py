"""Reading an input whole, but never more than a limit: the one reader every file input uses.

Metadata files (:func:`registry.metadata.parse.read_bounded`), models.yaml and
stages.yaml (:func:`registry.declarations.yamlsource.load_yaml`), the command line's
``--messages`` and reply files (``compiler.cli.inputs``) and a tool's ``input_schema``
file (``compiler.tools.schema_file``) all read through :func:`read_at_most`, and each
words :class:`InputTooLarge` in its own terms. No third-party imports.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["STDIN", "InputTooLarge", "read_at_most"]

STDIN = "-"
"""The name that means standard input wherever an input file is named (``--messages -``)."""


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
        OSError: the file cannot be opened or read (missing, a directory, no permission).
        InputTooLarge: the input holds more than ``limit`` bytes.
    """
    if isinstance(spec, str) and spec == STDIN:
        stream = getattr(sys.stdin, "buffer", None)  # a StringIO stand-in has none
        raw = (stream.read(limit + 1) if stream is not None
               else sys.stdin.read(limit + 1).encode("utf-8", "surrogateescape"))
    else:
        with Path(spec).open("rb") as handle:
            raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise InputTooLarge(limit)
    return raw
