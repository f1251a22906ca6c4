"""The ``capc`` command line: the parser, the dispatch to each command, and exit codes.

Each command group lives in its own module with ``register(subparsers) -> {name:
handler}``; a handler takes the parsed arguments and returns the exit code. Exit codes
and the error line on stderr are described in :mod:`compiler.cli.common`.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from compiler.cli import artifacts, declarations, metadata, refresh, reply, routes
from compiler.cli import compile as compile_commands
from compiler.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INPUT,
    CapcParser,
    CliError,
    Handler,
    notes_on_stderr,
    print_stderr,
    print_warning,
    report_error,
)

__all__ = ["main", "run"]

#: 128 + SIGINT, what a shell reports for a program stopped by Ctrl-C.
EXIT_INTERRUPTED = 130

#: The command groups, in the order ``capc --help`` lists them.
_COMMAND_MODULES = (compile_commands, routes, reply, declarations, artifacts, refresh,
                    metadata)


def _parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = CapcParser(
        prog="capc",
        description="Compile provider-neutral stage intent into OpenRouter requests "
        "each model supports, and report every adjustment.",
        epilog="example: capc compile extract_invoice openai/gpt-4o-mini (and capc COMMAND "
        "--help for each command's options)",
    )
    parser.add_argument("--version", action="version", version=f"capc {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    handlers: dict[str, Handler] = {}
    for module in _COMMAND_MODULES:
        handlers.update(module.register(sub))
    return parser, handlers


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("capability-compiler")
    except PackageNotFoundError:  # a checkout that is not installed
        return "unknown"


def _error_code(exc: Exception) -> int | None:
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
    """Run ``capc`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C, also during a fetch or a YAML parse: one line, the shell's code.
        print_stderr("capc: interrupted")
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser, handlers = _parser()
    try:
        args = parser.parse_args(argv)
    except CliError as exc:  # a usage error (CapcParser.error)
        words = sys.argv[1:] if argv is None else list(argv)
        return report_error(exc, exc.code, as_json="--json" in words)
    as_json = bool(getattr(args, "json", False))
    try:
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


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    print_warning(str(message))


def run() -> NoReturn:
    """Console-script entry point: exit with :func:`main`'s code."""
    sys.exit(main())
