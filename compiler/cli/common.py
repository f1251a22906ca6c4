"""What every ``capc`` command shares: exit codes, the input error, the common options,
and the stderr helpers of the metadata commands (progress lines, notes).

Exit codes: 0 success; 1 the compilation was refused or failed (a stage policy
refused an adjustment, the prompt does not fit, the contract cannot be projected);
2 invalid input (usage, unknown stage or model, invalid YAML, unreadable metadata
or messages). Errors go to stderr as one line, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_OK",
    "CliError",
    "Handler",
    "add_common_options",
    "add_route_options",
    "default_path",
    "load_registry",
    "log_records_as_notes",
    "notes_printed_here",
    "print_note",
    "progress_printer",
]

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
#: 128 + SIGPIPE, what a shell reports for a program whose reader closed the pipe.
EXIT_BROKEN_PIPE = 141


class CliError(Exception):
    """An input problem a handler reports as one stderr line with an exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--metadata``, ``--models``, ``--stages`` and ``--json`` to a subcommand."""
    parser.add_argument(
        "--metadata",
        metavar="PATH",
        help="OpenRouter models list: a file path, file:// or http(s):// URL; default: "
        "OpenRouter's list through the cache (fresh cache, fetch, stale cache, bundled seed)",
    )
    parser.add_argument(
        "--models", metavar="PATH", help="models.yaml (default: ./models.yaml when present)"
    )
    parser.add_argument(
        "--stages", metavar="PATH", help="stages.yaml (default: ./stages.yaml when present)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def add_route_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--endpoints FILE`` and ``--coverage {full,first}`` to a compiling subcommand."""
    parser.add_argument(
        "--endpoints",
        metavar="FILE",
        help="/endpoints data: one GET /models/MODEL/endpoints response or a bundle of "
        "them; default: the bundled seed's with the seed, the cache or a fetch with live "
        "metadata, none with a --metadata file (so a compile is reproducible offline)",
    )
    parser.add_argument(
        "--coverage",
        choices=("full", "first"),
        help="full: one attempt per group of endpoints, covering every endpoint that can "
        "serve the model; first: one body from the model-level figures (default: each "
        "stage's coverage, else full)",
    )


#: A subcommand handler: takes the parsed arguments, returns the exit code.
Handler = Callable[[argparse.Namespace], int]


def default_path(given: str | None, name: str) -> Path | None:
    """Return the file given on the command line, else ``./name`` when it exists, else None.

    Raises:
        CliError: (exit 2) ``given`` is a directory or no such file.
    """
    if given is not None:
        path = Path(given)
        if path.is_dir():
            raise CliError(f"{given}: is a directory; expected the path of {name}", EXIT_INPUT)
        if not path.exists():  # a pipe (/dev/stdin, <(...)) is fine
            raise CliError(f"{given}: no such file", EXIT_INPUT)
        return path
    path = Path(name)
    return path if path.is_file() else None


def load_registry(args: argparse.Namespace) -> Any:
    """Load the registry named by the common options (see :func:`add_common_options`)."""
    from registry.resolve.resolver import Registry

    endpoints = getattr(args, "endpoints", None)
    return Registry.load(
        metadata=args.metadata,
        models=default_path(args.models, "models.yaml"),
        stages=default_path(args.stages, "stages.yaml"),
        endpoints=None if endpoints is None else default_path(endpoints, "endpoints"),
    )


def progress_printer(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Return a printer of progress lines (``capc: LINE ...`` on stderr), or ``None`` when
    stderr is not a terminal or ``args.json`` is set."""
    if getattr(args, "json", False) or not sys.stderr.isatty():
        return None

    def show(line: str) -> None:
        print(f"capc: {line} ...", file=sys.stderr, flush=True)

    return show


def print_note(message: str) -> None:
    """Print ``capc: MESSAGE`` on stderr (credentials masked)."""
    from registry.redact import redact_text

    print(f"capc: {redact_text(message)}", file=sys.stderr)


class _NoteHandler(logging.Handler):
    """Prints each record as a note, through :func:`print_note`."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print_note(f"note: {record.getMessage()}")
        except Exception:
            self.handleError(record)


@contextmanager
def log_records_as_notes() -> Iterator[None]:
    """Within, a warning logged under ``registry`` (a fallback, a stale copy, endpoints
    not fetched) is printed as ``capc: note: ...`` on stderr, like every other note,
    instead of Python's bare last-resort line."""
    handler = _NoteHandler(logging.WARNING)
    logger = logging.getLogger("registry")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


@contextmanager
def notes_printed_here() -> Iterator[None]:
    """Silence the ``registry.sources`` logger within: the metadata commands print each
    note once, themselves."""
    logger = logging.getLogger("registry.sources")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was
