"""The ``capc`` command line.

Exit codes: 0 success; 1 the compilation was refused or failed (a stage policy
refused an adjustment, the prompt does not fit, the contract cannot be projected);
2 invalid input (usage, unknown stage or model, invalid YAML, unreadable metadata
or messages). Errors go to stderr as one line, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["CliError", "Handler", "add_common_options", "load_registry", "main", "run"]

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
#: 128 + SIGPIPE, what a shell reports for a program whose reader closed the pipe.
EXIT_BROKEN_PIPE = 141

#: Modules that add subcommands: each has ``register(subparsers) -> {name: handler}``,
#: a handler takes the parsed arguments and returns the exit code.
_COMMAND_MODULES: tuple[str, ...] = (
    "compiler.cli_config",
    "compiler.cli_lock",
    "compiler.cli_metadata",
)


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


#: A subcommand handler: takes the parsed arguments, returns the exit code.
Handler = Callable[[argparse.Namespace], int]


def _parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = argparse.ArgumentParser(
        prog="capc",
        description="Compile provider-neutral stage intent into OpenRouter requests "
        "each model supports, and report every adjustment.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    comp = sub.add_parser(
        "compile",
        help="compile STAGE for MODEL and print the request",
        description="Compile STAGE for MODEL: print the request body, then the adjustment report.",
    )
    comp.add_argument("stage", metavar="STAGE")
    comp.add_argument("model", metavar="MODEL")
    comp.add_argument(
        "--messages",
        metavar="FILE|-",
        help='JSON list of chat messages (or {"messages": [...]}); - reads stdin',
    )
    comp.add_argument(
        "--no-cache",
        action="store_true",
        help="compile afresh: neither read nor write the compile cache (docs/performance.md)",
    )
    add_common_options(comp)
    explain = sub.add_parser(
        "explain",
        help="print the adjustment report of STAGE for MODEL as a readable table",
        description="Compile STAGE for MODEL and print only the adjustment report: each "
        "setting that differs from the stage's intent, with the reason and the evidence.",
    )
    explain.add_argument("stage", metavar="STAGE")
    explain.add_argument("model", metavar="MODEL")
    explain.add_argument("--messages", metavar="FILE|-", help="as for capc compile")
    add_common_options(explain)
    handlers: dict[str, Handler] = {"compile": _cmd_compile, "explain": _cmd_explain}
    for module in _COMMAND_MODULES:
        handlers.update(importlib.import_module(module).register(sub))
    return parser, handlers


def _default_path(given: str | None, name: str) -> Path | None:
    if given is not None:
        path = Path(given)
        if path.is_dir():
            raise CliError(f"{given}: is a directory; expected the path of {name}", EXIT_INPUT)
        if not path.is_file():
            raise CliError(f"{given}: no such file", EXIT_INPUT)
        return path
    path = Path(name)
    return path if path.is_file() else None


def load_registry(args: argparse.Namespace) -> Any:
    """Load the registry named by the common options (see :func:`add_common_options`)."""
    from registry.resolver import Registry

    return Registry.load(
        metadata=args.metadata,
        models=_default_path(args.models, "models.yaml"),
        stages=_default_path(args.stages, "stages.yaml"),
    )


def _read_messages(spec: str | None) -> tuple[str, list[dict[str, Any]]]:
    if spec is None:
        return "", []
    where = "stdin" if spec == "-" else spec
    try:
        text = sys.stdin.read() if spec == "-" else Path(spec).read_text(encoding="utf-8")
        data = json.loads(text)
    except OSError as exc:
        raise CliError(f"{where}: cannot read messages: {exc.strerror or exc}", EXIT_INPUT) from exc
    except UnicodeDecodeError as exc:
        raise CliError(
            f"{where}: messages are not UTF-8 text (byte {exc.start})", EXIT_INPUT
        ) from exc
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{where}:{exc.lineno}:{exc.colno}: messages are not valid JSON: {exc.msg}", EXIT_INPUT
        ) from exc
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not all(isinstance(m, dict) and "role" in m for m in data):
        raise CliError(
            f"{where}: expected a JSON list of messages, each an object with a 'role'", EXIT_INPUT
        )
    return text, data


def _cmd_compile(args: argparse.Namespace) -> int:
    text_in, messages = _read_messages(args.messages)
    stages = _default_path(args.stages, "stages.yaml")
    models = _default_path(args.models, "models.yaml")
    slot = None
    if not args.no_cache:
        from compiler.compile_cache import CompileCache

        slot = CompileCache.for_invocation(
            stage=args.stage, model=args.model, messages_text=text_in, stages=stages,
            models=models, metadata=args.metadata,
        )  # fmt: skip
        hit = None if slot is None else slot.get()
        if hit is not None:
            _print_compiled(args, hit["json"], hit["text"])
            return EXIT_OK
    from compiler.compile_cache import contract_files
    from compiler.request import compile_request
    from registry.resolver import Registry

    registry = Registry.load(metadata=args.metadata, models=models, stages=stages)
    compiled = compile_request(args.stage, args.model, messages, registry=registry)
    report = compiled.report
    payload = {
        "request": compiled.body,
        "adjustments": [a.to_dict() for a in report.adjustments],
        "report": report.to_dict(),
    }
    text = json.dumps(compiled.body, indent=2, ensure_ascii=False) + "\n\n" + report.to_text()
    _print_compiled(args, payload, text)
    decl = registry.stage(args.stage)
    if slot is not None and not decl.policy:
        slot.put(payload, text, contract_files(decl.contract, registry.stage_dir()))
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from compiler.request import compile_request

    _, messages = _read_messages(args.messages)
    registry = load_registry(args)
    report = compile_request(args.stage, args.model, messages, registry=registry).report
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.to_text())
    return EXIT_OK


def _print_compiled(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    if args.json:
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(text)


def _error_code(exc: Exception) -> int | None:
    from compiler.errors import CompilerError, ContractError, ReplyValidationError
    from registry.errors import RegistryError

    if isinstance(exc, RegistryError | ContractError | ReplyValidationError):
        return EXIT_INPUT
    if isinstance(exc, CompilerError):
        return EXIT_FAILED
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``capc`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser, handlers = _parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return handlers[args.command](args)
    except BrokenPipeError:
        # The reader went away (``capc models | head``): stop quietly, like other tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except CliError as exc:
        return _die(str(exc), exc.code)
    except Exception as exc:
        code = _error_code(exc)
        if code is None:
            raise
        return _die(str(exc), code)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    print(f"capc: warning: {message}", file=sys.stderr)


def _die(message: str, code: int) -> int:
    print(f"capc: error: {message}", file=sys.stderr)
    return code


def run() -> NoReturn:
    """Console-script entry point: exit with :func:`main`'s code."""
    sys.exit(main())
