"""What every ``capc`` command shares: exit codes, the input error, the common options,
and every line ``capc`` writes to stderr.

Exit codes: 0 success; 1 the compilation was refused or failed (a stage policy
refused an adjustment, the prompt does not fit, the contract cannot be projected, a
named metadata source could not be fetched); 2 invalid input (usage, unknown stage or
model, invalid YAML, unreadable metadata or messages). Errors go to stderr as one line,
never a traceback; with ``--json`` the error is also one JSON object on stdout,
``{"ok": false, "error": {"message", "kind", "exit_code", ...}}`` (:func:`error_payload`).

Every message on stderr has one of three forms, printed by one helper each here:
``capc: error: ...`` (:func:`print_error`), ``capc: warning: ...`` (:func:`print_warning`,
a Python warning such as a stage policy's ``warn``) and ``capc: note: ...``
(:func:`print_note`: fallbacks, pages written, cost notes). Longer text meant for a
person (the adjustment report of ``compile``, the usage of ``reply``) goes through
:func:`print_stderr`. Credentials are masked in all of them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_OK",
    "SHARED_OPTIONS",
    "CapcParser",
    "CliError",
    "Handler",
    "add_common_options",
    "add_route_options",
    "default_path",
    "error_payload",
    "forget_notes",
    "fresh_notes",
    "json_printed",
    "load_registry",
    "metadata_object",
    "notes_on_stderr",
    "notes_printed_here",
    "print_document",
    "print_error",
    "print_json",
    "print_note",
    "print_stderr",
    "print_warning",
    "report_error",
    "unrecognized",
]

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
#: 128 + SIGPIPE, what a shell reports for a program whose reader closed the pipe.
EXIT_BROKEN_PIPE = 141


class CliError(Exception):
    """An input problem a handler reports as one stderr line with an exit code.

    Attributes:
        code: the exit code (:data:`EXIT_INPUT` or :data:`EXIT_FAILED`).
        kind: the ``error.kind`` of the ``--json`` error object: ``"usage"`` for a
            command line argparse rejects, else ``"input"`` (exit 2) or ``"failed"``.
    """

    def __init__(self, message: str, code: int, *, kind: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.kind = kind or ("input" if code == EXIT_INPUT else "failed")


class CapcParser(argparse.ArgumentParser):
    """An argument parser whose usage errors raise :class:`CliError` (``kind
    "usage"``, exit 2), so they are reported like every other error: one stderr line,
    and a JSON object on stdout with ``--json``. Options are never abbreviated
    (``--meta`` is not ``--metadata``), for this parser and every subcommand's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", EXIT_INPUT, kind="usage")


#: The options some commands take and others do not (``add_common_options``,
#: ``add_route_options``), named in the error when given to one that does not.
SHARED_OPTIONS = ("--metadata", "--models", "--stages", "--json", "--endpoints",
                  "--coverage", "--wide")  # fmt: skip


def unrecognized(prog: str, extras: list[str]) -> CliError:
    """The usage error of ``extras`` left over by ``capc COMMAND`` (``prog``): an option
    another command takes is said not to apply here; help points at the command's own."""
    shared = [word for word in extras if word.split("=", 1)[0] in SHARED_OPTIONS]
    if shared:
        names = ", ".join(dict.fromkeys(word.split("=", 1)[0] for word in shared))
        return CliError(f"{names} does not apply to '{prog}' (see '{prog} --help')",
                        EXIT_INPUT, kind="usage")  # fmt: skip
    return CliError(f"unrecognized arguments: {' '.join(extras)} (see '{prog} --help')",
                    EXIT_INPUT, kind="usage")  # fmt: skip


def add_common_options(
    parser: argparse.ArgumentParser, *, metadata: bool = True, stages: bool = True
) -> None:
    """Add ``--metadata``, ``--models``, ``--stages`` and ``--json`` to a subcommand
    (without ``--metadata`` or ``--stages`` where the command has no use for them)."""
    if metadata:
        parser.add_argument(
            "--metadata",
            metavar="PATH",
            help="OpenRouter models list: a file path (- for stdin), file:// or http(s):// "
            "URL; default: OpenRouter's list through the cache (fresh cache, fetch, stale "
            "cache, bundled seed)",
        )
    parser.add_argument(
        "--models", metavar="PATH", help="models.yaml (- for stdin; default: ./models.yaml)"
    )
    if stages:
        parser.add_argument(
            "--stages", metavar="PATH", help="stages.yaml (- for stdin; default: ./stages.yaml)"
        )
    parser.add_argument("--json", action="store_true",
                        help='print one JSON object (an error too: {"ok": false, "error": ...})')


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
    """Load the registry named by the common options (see :func:`add_common_options`),
    with progress on a terminal when it takes a while (:func:`~compiler.cli.terminal.waiting`)."""
    from compiler.cli.terminal import waiting
    from registry.resolve.resolver import Registry

    endpoints = getattr(args, "endpoints", None)
    models = default_path(args.models, "models.yaml")
    stages = default_path(args.stages, "stages.yaml") if hasattr(args, "stages") else None
    endpoints_file = None if endpoints is None else default_path(endpoints, "endpoints")
    names = [p.name for p in (models, stages) if p is not None] + ["the metadata"]
    with waiting(args, "reading " + ", ".join(names[:-1]) + " and " * (len(names) > 1)
                 + names[-1]):  # fmt: skip
        return Registry.load(  # a command without --stages (models) reads no stages.yaml
            metadata=getattr(args, "metadata", None), models=models, stages=stages,
            endpoints=endpoints_file,
        )  # fmt: skip


_stdout = {"json": False}


def print_json(payload: Any, *, ensure_ascii: bool = False, sort_keys: bool = False) -> None:
    """Print ``payload`` on stdout as indented JSON, in one write with SIGINT held back.

    The text is built first and written at once, and a Ctrl-C during the write takes
    effect just after it, so an interrupted ``--json`` command leaves either the whole
    document (exit 130 still says it was interrupted) or nothing but the
    ``{"ok": false, "error": {"kind": "interrupted", ...}}`` object (:func:`json_printed`).
    """
    print_document(json.dumps(payload, indent=2, ensure_ascii=ensure_ascii,
                              sort_keys=sort_keys) + "\n")


def print_document(text: str | Iterable[str]) -> None:
    """Write ``text``, a JSON document already rendered (the audit, a lock on stdout), to
    stdout the way :func:`print_json` does: one write (or one per piece, when ``text``
    is pieces in order), SIGINT held back during it."""
    import signal

    held = {signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        _stdout["json"] = True
        for piece in (text,) if isinstance(text, str) else text:
            sys.stdout.write(piece)
        sys.stdout.flush()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def json_printed() -> bool:
    """Whether :func:`print_json` or :func:`print_document` wrote a document in this
    process."""
    return _stdout["json"]


def metadata_object(catalog: Any) -> dict[str, Any]:
    """The ``metadata`` object of every ``--json`` output (compile, explain, show, audit,
    routes, models): ``{source, origin, fetched_at, stale, note, text}``.

    ``source`` is the URL or path the models list came from, ``origin`` how this run got
    it (``fetch``, ``cache``, ``stale-cache``, ``seed``, ``file``), ``fetched_at`` an ISO
    8601 time or null, ``stale`` a bool, ``note`` the fallback note or null, ``text`` the
    one-line description reports print (``bundled seed (as of 2026-08-19)``). A superset
    of the lock's ``metadata`` ``{source, fetched_at, text}``, where ``source`` is the
    file name only and ``text`` carries no age (a lock does not depend on when it ran).
    """
    return {"source": catalog.source, "origin": catalog.origin,
            "fetched_at": catalog.fetched_at, "stale": catalog.stale, "note": catalog.note,
            "text": catalog.describe()}  # fmt: skip


def print_stderr(text: str) -> None:
    """Print ``text`` (a report, a summary for a person) on stderr, credentials masked."""
    from registry.redact import redact_text

    print(redact_text(text), file=sys.stderr)


def _print_labelled(label: str, message: str) -> None:
    from compiler.cli.terminal import stderr_label
    from registry.boundedread import shown_paths
    from registry.redact import redact_text

    text = shown_paths(redact_text(message))
    if not stderr_label(label, text):  # coloured on a terminal, else plain
        print(f"capc: {label}: {text}", file=sys.stderr, flush=True)


_notes_shown: set[str] = set()


def print_note(message: str) -> None:
    """Print ``capc: note: MESSAGE`` on stderr (credentials masked)."""
    _notes_shown.add(message)
    _print_labelled("note", message)


def fresh_notes(lines: list[str]) -> list[str]:
    """``lines`` of a report without the ``note: ...`` lines this command already showed
    (as ``capc: note:``, or in an earlier attempt's report), so each note prints once."""
    kept = []
    for line in lines:
        if line.startswith("note: "):
            if line[6:] in _notes_shown:
                continue
            _notes_shown.add(line[6:])
        kept.append(line)
    return kept


def forget_notes() -> None:
    """Start a command with no note shown (``main`` may run several in one process)."""
    _notes_shown.clear()


def print_warning(message: str) -> None:
    """Print ``capc: warning: MESSAGE`` on stderr (credentials masked)."""
    _print_labelled("warning", message)


def print_error(message: str) -> None:
    """Print ``capc: error: MESSAGE`` on stderr (credentials masked)."""
    _print_labelled("error", message)


def _kind(exc: BaseException) -> str:
    """``UnknownModelError`` -> ``"unknown_model"``; a :class:`CliError` its ``kind``."""
    if isinstance(exc, CliError):
        return exc.kind
    name = type(exc).__name__.removesuffix("Error")
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


#: Attributes of the error classes copied into the ``--json`` error object (when set).
_FIELDS = {"file": "file", "line": "line", "column": "column", "key_path": "key",
           "source": "source", "name": "name", "suggestions": "suggestions",
           "kinds": "kinds", "model": "model", "prompt_tokens": "prompt_tokens",
           "context_length": "context_length", "limit": "limit", "status": "status",
           "index": "index", "rule": "rule"}  # fmt: skip


def error_payload(exc: BaseException, code: int) -> dict[str, Any]:
    """Return the ``--json`` error object of ``exc``.

    Returns:
        ``{"ok": False, "error": {"message": str, "kind": str, "exit_code": int, ...}}``;
        ``kind`` is the error class in snake case (``declaration``, ``unknown_model``,
        ``unknown_stage``, ``metadata``, ``source_unavailable``, ``adjustment_refused``,
        ``contract``, ...; ``usage`` and ``input`` for command-line problems; the whole
        list, with ``refresh_failed`` and ``interrupted``, is in docs/quickstart.md); the
        other keys are the error's located fields when it has them (``file``, ``line``,
        ``column``, ``key`` for a YAML problem; ``source`` for metadata; ``name`` and
        ``suggestions`` for an unknown name; ``kinds`` for a refusal; ...). Every string
        is credential-masked.
    """
    from registry.boundedread import shown_paths
    from registry.redact import redact_text

    def plain(value: Any) -> Any:
        if isinstance(value, str):
            return shown_paths(redact_text(value))
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value if value is None or isinstance(value, int | float | bool) else str(value)

    error: dict[str, Any] = {"message": plain(str(exc)), "kind": _kind(exc),
                             "exit_code": code}
    for attribute, key in _FIELDS.items():
        value = getattr(exc, attribute, None)
        if value is not None and value != "" and key not in error:
            error[key] = plain(value)
    return {"ok": False, "error": error}


def report_error(exc: BaseException, code: int, *, as_json: bool) -> int:
    """Report ``exc``: one ``capc: error:`` line on stderr and, when ``as_json``, its
    :func:`error_payload` on stdout. Returns ``code``, the exit code."""
    if as_json:
        print_json(error_payload(exc, code))
    print_error(str(exc))
    return code


class _NoteHandler(logging.Handler):
    """Print the project's log records of WARNING and above as ``capc: note:`` lines."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print_note(record.getMessage())
        except Exception:  # a logging handler never raises
            self.handleError(record)


@contextmanager
def notes_on_stderr() -> Iterator[None]:
    """Within, every WARNING the ``registry`` loggers record (a metadata fallback, a
    cache that cannot be written) is one ``capc: note:`` line on stderr."""
    logger = logging.getLogger("registry")
    handler = _NoteHandler(logging.WARNING)
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
