"""Reading the files named on the command line: bounded, strict UTF-8, pipes welcome.

Every input read whole has a size limit, so ``--messages /dev/zero`` ends with an error
instead of filling memory; ``-`` is stdin, and ``/dev/stdin`` or a process substitution
(``<(...)``) work as any file does. Text is decoded as strict UTF-8 from the bytes (never
through the locale), so an invalid byte is reported with its offset, not echoed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from compiler.cli.common import EXIT_INPUT, CliError
from registry.boundedread import STDIN, InputTooLarge, read_at_most

__all__ = ["MAX_MESSAGES_BYTES", "STDIN_NAME", "forget_stdin", "read_input_bytes",
           "read_input_text", "shown_paths", "spooled", "stdin_closed", "stdin_read_as"]

STDIN_NAME = "stdin"
"""What messages call standard input, whichever path it was read through."""

_STDIN_PATHS: set[str] = set()


def stdin_read_as(path: str) -> None:
    """Show ``path`` (``/dev/stdin``, a spooled copy of it) as :data:`STDIN_NAME`."""
    _STDIN_PATHS.add(path)


def forget_stdin() -> None:
    """Start a command with no path shown as stdin."""
    _STDIN_PATHS.clear()


def shown_paths(text: str) -> str:
    """``text`` with every path standard input was read through named ``stdin``."""
    for path in sorted(_STDIN_PATHS, key=len, reverse=True):
        text = text.replace(path, STDIN_NAME)
    return text


def stdin_closed() -> bool:
    """Whether standard input is closed (``<&-``: Python sets ``sys.stdin`` to ``None``)."""
    return sys.stdin is None

MAX_MESSAGES_BYTES = 64 * 2**20
"""The largest ``--messages`` input (64 MiB)."""


def read_input_bytes(spec: str, limit: int, what: str) -> bytes:
    """Read a file (``-``: stdin) whole, but at most ``limit`` bytes.

    Raises:
        OSError: the file cannot be read.
        CliError: (exit 2) the input is larger than ``limit``.
    """
    try:
        return read_at_most(spec, limit)
    except InputTooLarge as exc:
        where = STDIN_NAME if spec == STDIN else spec
        raise CliError(f"{where}: {what} {exc}; is it the right file?", EXIT_INPUT) from exc


def read_input_text(spec: str, limit: int, what: str) -> str:
    """:func:`read_input_bytes`, decoded as strict UTF-8 (a leading BOM is dropped).

    Raises:
        OSError: the file cannot be read.
        UnicodeDecodeError: the bytes are not UTF-8 (``start`` is the byte offset).
        CliError: (exit 2) the input is larger than ``limit``.
    """
    return read_input_bytes(spec, limit, what).decode("utf-8-sig")


def spooled(spec: str, copy: Path, limit: int = MAX_MESSAGES_BYTES) -> str:
    """Return ``spec`` itself for a URL, a regular file or a missing path; for anything
    else (a pipe, ``/dev/stdin``, ``<(...)``, ``/dev/zero``), read it once, at most
    ``limit`` bytes (64 MiB), into ``copy`` and return that path, for a reader that
    opens its input more than once.

    Raises:
        OSError: the input cannot be read or the copy written.
        CliError: (exit 2) the input is larger than ``limit``.
    """
    path = Path(spec)
    if "://" in spec or path.is_file() or not path.exists():
        return spec
    copy.write_bytes(read_input_bytes(spec, limit, "input"))
    if spec in _STDIN_PATHS:
        stdin_read_as(str(copy))
    return str(copy)
