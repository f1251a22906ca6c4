"""Reading the files named on the command line: bounded, strict UTF-8, pipes welcome;
and the paths output options take (:func:`output_path`).

Every input read whole has a size limit, so ``--messages /dev/zero`` ends with an error
instead of filling memory; ``-`` is stdin, and ``/dev/stdin`` or a process substitution
(``<(...)``) work as any file does. Text is decoded as strict UTF-8 from the bytes (never
through the locale), so an invalid byte is reported with its offset, not echoed.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from compiler.cli.common import EXIT_INPUT, CliError
from registry.boundedread import (
    STDIN,
    STDIN_NAME,
    InputTooLarge,
    is_stdin_path,
    read_at_most,
    stdin_read_as,
)

__all__ = ["MAX_MESSAGES_BYTES", "output_path", "read_input_bytes", "read_input_text",
           "spooled"]


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
    if is_stdin_path(spec):
        stdin_read_as(str(copy))
    return str(copy)


def output_path(example: str) -> Callable[[str], str]:
    """The argparse ``type`` of an output option (``--output``, ``--html``): ``-`` or a
    file path; an empty value or one that ends in a path separator (a folder) is a usage
    error, not a file written somewhere else (``newdir/`` was written as ``newdir``)."""

    def check(text: str) -> str:
        if text == "":
            raise argparse.ArgumentTypeError("is empty: give a file path, or - for stdout")
        if text != "-" and text.endswith(("/", os.sep)):
            raise argparse.ArgumentTypeError(
                f"{text!r} names a folder: give a file in it, such as {text}{example}")
        return text

    return check
