"""The ``capc`` command line: the parser, the dispatch to each command, and exit codes.

Each command group lives in its own module with ``register(subparsers) -> {name:
handler}``; a handler takes the parsed arguments and returns the exit code. Only the
module of the command being run is imported (``capc compile`` never loads the lock, audit
or metadata commands); ``capc --help`` and an unknown command load them all. Exit codes
and the error line on stderr are described in :mod:`compiler.cli.common`.
"""

from __future__ import annotations

import contextlib

# Only the standard library's lightest modules here: run() installs the SIGINT handler
# before anything heavy (argparse, the command modules) is imported.
import errno
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from compiler.cli import interrupt

if TYPE_CHECKING:
    import argparse

    from compiler.cli.common import CliError, Handler

__all__ = ["COMMANDS", "main", "run"]

#: The cyclic collector's first threshold in a ``capc`` process (Python's default: 700).
GC_THRESHOLD = 10_000

#: Every command and the module that registers it (with the rest of its group), in the
#: order ``capc --help`` lists them (tests/test_cli.py checks it against the modules).
COMMANDS: dict[str, str] = {
    "compile": "compiler.cli.compile", "explain": "compiler.cli.compile",
    "routes": "compiler.cli.routes",
    "reply": "compiler.cli.reply",
    "show": "compiler.cli.declarations", "check": "compiler.cli.declarations",
    "schema": "compiler.cli.declarations",
    "lock": "compiler.cli.artifacts", "audit": "compiler.cli.artifacts",
    "diff": "compiler.cli.artifacts",
    "refresh": "compiler.cli.refresh",
    "models": "compiler.cli.metadata", "cache": "compiler.cli.metadata",
}


def _parser(
    argv: Sequence[str] | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    """The parser of the command ``argv`` names first (every command's when it names none
    it knows, so ``--help`` and the unknown-command error list them all)."""
    import importlib

    from compiler.cli.common import CapcParser

    parser = CapcParser(
        prog="capc",
        description="Compile provider-neutral stage intent into OpenRouter requests "
        "each model supports, and report every adjustment.",
        epilog="example: capc compile extract_invoice openai/gpt-4o-mini (and capc COMMAND "
        "--help for each command's options)",
    )
    parser.add_argument("--version", action="version", version=f"capc {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    words = sys.argv[1:] if argv is None else argv
    named = COMMANDS.get(words[0]) if words else None
    handlers: dict[str, Handler] = {}
    for module in [named] if named else dict.fromkeys(COMMANDS.values()):
        handlers.update(importlib.import_module(module).register(sub))
    return parser, handlers


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("capability-compiler")
    except PackageNotFoundError:  # a checkout that is not installed
        return "unknown"


def _error_code(exc: Exception) -> int | None:
    from compiler.cli.common import EXIT_FAILED, EXIT_INPUT
    from compiler.errors import CompilerError, ContractError, ReplyValidationError
    from registry.errors import RegistryError, SourceUnavailableError

    if isinstance(exc, SourceUnavailableError):
        return EXIT_FAILED
    if isinstance(exc, RegistryError | ContractError | ReplyValidationError):
        return EXIT_INPUT
    if isinstance(exc, CompilerError):
        return EXIT_FAILED
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``capc`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    A standard output that cannot be written (a full disk: ``capc models > /dev/full``)
    is ``capc: error: cannot write standard output: <reason>`` on stderr and exit 1,
    also when the failing write is the flush after the command; a reader that went
    away (``| head``) stays quiet (exit 141)."""
    from compiler.cli.common import EXIT_FAILED, CliError, report_error

    _hold_standard_descriptors()
    stream = sys.stdout
    sys.stdout = _Stdout(stream)
    try:
        code = _interruptible(argv)
        sys.stdout.flush()  # a full disk is reported here, not at exit
        return code
    except _StdoutError as exc:  # stdout cannot take the error object: stderr only
        with contextlib.suppress(OSError, ValueError, AttributeError):  # quiet exit flush
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        message = exc.error.strerror or str(exc.error)
        return report_error(CliError(f"cannot write standard output: {message}", EXIT_FAILED),
                            EXIT_FAILED, as_json=False)
    finally:
        if isinstance(sys.stdout, _Stdout):
            sys.stdout = stream


def _hold_standard_descriptors() -> None:
    """Put ``/dev/null`` on each of descriptors 0-2 the process started without
    (``capc ... 2>&-``), so no file capc opens later gets one of those numbers, and
    give a closed stderr a stream that drops what is written: ``print(file=None)`` would
    write to stdout, mixing messages into the data there. A closed stdin or stdout stays
    ``None`` in :mod:`sys`, so reading it or writing to it is still reported as closed."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd itself
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the process's)


def _interruptible(argv: Sequence[str] | None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C, also during a fetch or a YAML parse: one line, the shell's code; with
        # --json and no document written yet, the error object too (print_json writes a
        # document whole, so stdout never holds half of one).
        words = sys.argv[1:] if argv is None else list(argv)
        if "--json" in words:
            from compiler.cli.common import json_printed, print_json

            if not json_printed():
                print_json(interrupt.error_object())
        return interrupt.interrupted()


def _main(argv: Sequence[str] | None) -> int:
    import warnings

    from compiler.cli.common import (
        EXIT_BROKEN_PIPE,
        CliError,
        forget_notes,
        notes_on_stderr,
        report_error,
        unrecognized,
    )

    forget_notes()
    parser, handlers = _parser(argv)
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        args, extras = parser.parse_known_args(argv)
    except CliError as exc:  # a usage error (CapcParser.error)
        # An unknown option or command is named before what it made argparse miss.
        first = _unknown_word(parser, words) or exc
        return report_error(first, first.code, as_json="--json" in words)
    if extras:  # named against the command, unless one came before it
        error = _unknown_word(parser, words, after=False) or unrecognized(
            f"capc {args.command}", extras)
        return report_error(error, error.code, as_json="--json" in words)
    as_json = bool(getattr(args, "json", False))
    try:
        _stdin_inputs(args)
        with warnings.catch_warnings(), notes_on_stderr():
            warnings.showwarning = _show_warning
            return handlers[args.command](args)
    except BrokenPipeError:
        # The reader went away (``capc models | head``): stop quietly, like other tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except CliError as exc:
        return report_error(exc, exc.code, as_json=as_json)
    except Exception as exc:
        code = _error_code(exc)
        if code is None:
            raise
        return report_error(exc, code, as_json=as_json)


#: Every option or argument that names an input file, as spelt on the command line.
_INPUTS = {"metadata": "--metadata", "models": "--models", "stages": "--stages",
           "endpoints": "--endpoints", "messages": "--messages", "file": "FILE",
           "old": "OLD", "new": "NEW"}  # fmt: skip


def _stdin_inputs(args: argparse.Namespace) -> None:
    """``-`` is standard input for every input file: one such option at most (standard
    input is read once), passed on as ``/dev/stdin`` to the readers that take a path
    (``--messages`` and ``capc reply``'s FILE read ``-`` themselves).

    Raises:
        CliError: (exit 2, usage) two inputs are ``-``.
    """
    from compiler.cli.common import EXIT_INPUT, CliError
    from registry.boundedread import STDIN_NAME, forget_stdin, stdin_closed, stdin_read_as

    forget_stdin()
    named = [key for key in _INPUTS if getattr(args, key, None) == "-"]
    if len(named) > 1:
        raise CliError(f"{' and '.join(_INPUTS[key] for key in named)} are each '-': standard "
                       "input can be read once, so at most one input may be '-'", EXIT_INPUT,
                       kind="usage")  # fmt: skip
    if named and stdin_closed():
        raise CliError(f"{STDIN_NAME}: cannot read {_INPUTS[named[0]]}: standard input is "
                       "closed; give a file, or pipe the input in", EXIT_INPUT)
    for key in named:
        if key not in ("messages", "file"):
            setattr(args, key, "/dev/stdin")
            stdin_read_as("/dev/stdin")


def _unknown_word(
    parser: argparse.ArgumentParser, words: list[str], *, after: bool = True
) -> CliError | None:
    """The usage error of the first word neither ``capc`` nor its command knows: an option
    before the command (``capc --bogus``: ``unrecognized arguments``), a command that
    does not exist (``invalid choice``, with a did-you-mean), or an option after the
    command (``capc compile --bogus``, reported before the STAGE and MODEL it lacks;
    only when ``after``)."""
    import argparse
    import difflib

    from compiler.cli.common import EXIT_INPUT, SHARED_OPTIONS, CliError, unrecognized

    known = {"-h", "--help", "--version"}
    for index, word in enumerate(words):
        if word in known or (word == "--" and index == len(words) - 1):
            return None
        if word == "--":  # argparse would take it as the COMMAND: worded as one
            return CliError("argument COMMAND: invalid choice: '--' (the command comes "
                            "first: capc COMMAND [-- ARGS]); choose from "
                            + ", ".join(COMMANDS) + " (see 'capc --help')", EXIT_INPUT,
                            kind="usage")  # fmt: skip
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            close = difflib.get_close_matches(name, ["--help", "--version"], n=1, cutoff=0.7)
            place = (f" (an option of a command goes after it: capc COMMAND {name})"
                     if name in SHARED_OPTIONS else f" (did you mean {close[0]!r}?)" if close
                     else "")
            return CliError(f"unrecognized arguments: {word}{place} (see 'capc --help')",
                            EXIT_INPUT, kind="usage")  # fmt: skip
        if word not in COMMANDS:
            close = difflib.get_close_matches(word, list(COMMANDS), n=3, cutoff=0.6)
            hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
            return CliError(f"argument COMMAND: invalid choice: {word!r}{hint}; choose from "
                            + ", ".join(COMMANDS) + " (see 'capc --help')", EXIT_INPUT,
                            kind="usage")  # fmt: skip
        if not after:
            return None
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        options = sub.choices[word]._option_string_actions
        extras = [w for w in words[index + 1:] if w.startswith("-") and w != "-"
                  and w.split("=", 1)[0] not in options]
        return unrecognized(f"capc {word}", extras[:1]) if extras else None
    return None


class _StdoutError(Exception):
    """A write to standard output failed (a full disk, an I/O error): ``error`` is the
    ``OSError``."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Stdout:
    """``sys.stdout`` during :func:`main`: a write or flush that fails with an ``OSError``
    other than a broken pipe raises :class:`_StdoutError`, so ``main`` tells it from the
    command's own file errors. Everything else is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:  # started with stdout closed (capc ... >&-)
            raise _StdoutError(OSError(errno.EBADF, "it is closed"))
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _StdoutError(exc) from exc

    def flush(self) -> None:
        if self._stream is None:
            return  # nothing was written (a write is the error)
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _StdoutError(exc) from exc

    def __getattr__(self, name: str) -> Any:
        if self._stream is None and name == "isatty":
            return lambda: False
        if self._stream is None:
            raise _StdoutError(OSError(errno.EBADF, "it is closed"))
        return getattr(self._stream, name)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    from compiler.cli.common import print_warning

    print_warning(str(message))


def run() -> NoReturn:
    """Console-script entry point: exit with :func:`main`'s code.

    capc validates only its own inputs, so pydantic's plugins (validation telemetry, found
    by scanning the entry points of every installed distribution: 10-16 ms and the
    ``importlib.metadata``/``email`` imports of a cold ``capc compile``) are off in its
    process unless ``PYDANTIC_DISABLE_PLUGINS`` is set (set it empty to keep them).

    The process (never the library) also raises the cyclic collector's first threshold
    from 700 to :data:`GC_THRESHOLD` allocations: a bulk command builds hundreds of
    thousands of long-lived objects (a resolved model keeps about 12), and each young
    collection that promotes them makes the next full one longer, so resolving 50,000
    models took 58-60 us a model with the default and 37-38 us with this (two runs
    each, 2026-12-01; docs/performance.md). Objects are freed by reference counting as
    before; only cycles wait longer, and a short-lived process makes few.

    First of all it installs capc's SIGINT handler (:mod:`compiler.cli.interrupt`): a
    Ctrl-C from then on is ``capc: interrupted`` and exit 130, and after the work is done
    the flush is covered and the interpreter's shutdown ignores SIGINT.
    """
    try:
        interrupt.install()
        import gc

        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
        code = main()
    except KeyboardInterrupt:  # between the handler and main()'s own try
        code = interrupt.interrupted()
    sys.exit(interrupt.finish(code))
