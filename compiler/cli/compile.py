"""``capc compile`` and ``capc explain``: one stage for one model, the request and its report.

``compile`` prints the request body, then the adjustment report, then any later
route-plan attempts and the route table (``--json``: one object with all of them); a
compile from a local metadata file is kept in the compile cache
(:mod:`compiler.artifacts.compile_cache`). ``explain`` prints only the reports and
the route table.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any

from compiler.cli.common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    CliError,
    Handler,
    add_common_options,
    add_route_options,
    default_path,
    error_payload,
    fresh_notes,
    load_registry,
    metadata_object,
    print_error,
    print_json,
    print_stderr,
)
from compiler.cli.inputs import MAX_MESSAGES_BYTES, read_input_text
from compiler.cli.routes import attempts_payload, attempts_text, print_attempts, print_report
from compiler.cli.terminal import add_wide_option, stdout_console, waiting
from compiler.compiled import CompiledRequest
from registry.boundedread import STDIN_NAME

__all__ = ["register"]


def register(sub: Any) -> dict[str, Handler]:
    """Add the ``compile`` and ``explain`` subcommands to ``sub``."""
    comp = sub.add_parser(
        "compile",
        epilog="example: capc compile extract_invoice openai/gpt-4o-mini > body.json",
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
    add_route_options(comp)
    explain = sub.add_parser(
        "explain",
        epilog="example: capc explain extract_invoice anthropic/claude-sonnet-4.5 --coverage first",
        help="print the adjustment report of STAGE for MODEL as a readable table",
        description="Compile STAGE for MODEL and print only the adjustment report: each "
        "setting that differs from the stage's intent, with the reason and the evidence.",
    )
    explain.add_argument("stage", metavar="STAGE")
    explain.add_argument("model", metavar="MODEL")
    explain.add_argument("--messages", metavar="FILE|-", help="as for capc compile")
    add_common_options(explain)
    add_route_options(explain)
    add_wide_option(explain)
    return {"compile": _cmd_compile, "explain": _cmd_explain}


def _not_finite(name: str) -> float:
    raise ValueError(f"{name} is not a finite number; JSON has no such value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} does not fit a finite number")
    return value


def _read_messages(spec: str | None) -> tuple[str, list[dict[str, Any]]]:
    if spec is None:
        return "", []
    where = STDIN_NAME if spec == "-" else spec
    try:
        text = read_input_text(spec, MAX_MESSAGES_BYTES, "messages")
        data = json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)
    except OSError as exc:
        raise CliError(f"{where}: cannot read messages: {exc.strerror or exc}", EXIT_INPUT) from exc
    except UnicodeDecodeError as exc:
        raise CliError(
            f"{where}: messages are not UTF-8 text (byte {exc.start}); save them as UTF-8",
            EXIT_INPUT,
        ) from exc
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{where}:{exc.lineno}:{exc.colno}: messages are not valid JSON: {exc.msg}", EXIT_INPUT
        ) from exc
    except ValueError as exc:  # a non-finite number: its token starts the message
        token = str(exc).split(" ", 1)[0]
        found = re.search(rf"(?<=[:\[,\s]){re.escape(token)}(?=[\s,\]}}])", text)
        at = "" if found is None else (
            f":{text.count(chr(10), 0, found.start()) + 1}"
            f":{found.start() - text.rfind(chr(10), 0, found.start())}")
        raise CliError(f"{where}{at}: messages: {exc}", EXIT_INPUT) from exc
    from compiler.schema.budgets import lone_surrogates

    for at, _ in sorted(lone_surrogates(data))[:1]:  # JSON joins a pair; a lone half stays
        raise CliError(f"{where}: messages: the string at {at} holds a lone surrogate "
                       "escape (such as \\ud83d), which UTF-8 cannot encode; write the "
                       "character itself, or both halves of the pair", EXIT_INPUT)
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not all(isinstance(m, dict) and "role" in m for m in data):
        raise CliError(
            f"{where}: expected a JSON list of messages, each an object with a 'role'", EXIT_INPUT
        )
    return text, data


def _is_pipe(path: str | Path) -> bool:
    candidate = Path(path)
    return candidate.exists() and not candidate.is_file()


def _cmd_compile(args: argparse.Namespace) -> int:
    text_in, messages = _read_messages(args.messages)
    stages = default_path(args.stages, "stages.yaml")
    models = default_path(args.models, "models.yaml")
    endpoints = None if args.endpoints is None else default_path(args.endpoints, "endpoints")
    slot = None
    piped = [p for p in (stages, models, args.metadata) if p is not None and _is_pipe(p)]
    if not args.no_cache and not piped:  # a pipe can be read only once: no cache key
        from compiler.artifacts.compile_cache import CompileCache

        slot = CompileCache.for_invocation(
            stage=args.stage, model=args.model, messages_text=text_in, stages=stages,
            models=models, metadata=args.metadata, endpoints=endpoints, coverage=args.coverage,
        )  # fmt: skip
        hit = None if slot is None else slot.get()
        if hit is not None:
            _print_compiled(args, hit["json"], hit["text"])
            return EXIT_OK
    from compiler.artifacts.compile_cache import stage_files
    from compiler.request import compile_request
    from registry.resolve.resolver import Registry

    with waiting(args, "reading the declarations and the metadata"):
        registry = Registry.load(metadata=args.metadata, models=models, stages=stages,
                                 endpoints=endpoints)
        compiled = compile_request(args.stage, args.model, messages, registry=registry,
                                   coverage=args.coverage)
    report = compiled.report
    payload = {
        "request": compiled.body,
        "adjustments": [a.to_dict() for a in report.adjustments],
        "report": report.to_dict(),  # its "metadata" stays the line (locks, hashes)
        "metadata": metadata_object(registry.catalog),
        **compiled.loop_settings(),
        **attempts_payload(compiled),
    }
    text = json.dumps(compiled.body, indent=2, ensure_ascii=False) + "\n\n" + report.to_text()
    text += attempts_text(compiled, bodies=True)
    _print_compiled(args, payload, text)
    decl = registry.stage(args.stage)
    if slot is not None and not decl.policy:
        slot.put(payload, text, stage_files(decl, registry.stage_dir()))
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from compiler.request import compile_request

    _, messages = _read_messages(args.messages)
    from compiler.errors import AdjustmentRefused

    registry = load_registry(args)
    refused: AdjustmentRefused | None = None
    compiled: CompiledRequest | None = None
    try:
        compiled = compile_request(args.stage, args.model, messages, registry=registry,
                                   coverage=args.coverage)
        report = compiled.report
    except AdjustmentRefused as exc:  # the report says why: print it, then refuse
        report, refused = exc.report, exc
    routes = {} if compiled is None else attempts_payload(compiled)
    if args.json:  # one object: the report, and on a refusal the error beside it
        failure = {} if refused is None else error_payload(refused, EXIT_FAILED)
        print_json({**report.to_dict(), "metadata": metadata_object(registry.catalog),
                    **routes, **failure})
    elif (console := stdout_console(args)) is not None:  # a terminal: tables that fit
        print_report(console, report, wide=args.wide)
        if compiled is not None:
            print_attempts(console, compiled, wide=args.wide)
    else:
        more = "" if compiled is None else attempts_text(compiled, bodies=False)
        print("\n".join(fresh_notes((report.to_text() + more).split("\n"))))
    if refused is not None:
        print_error(str(refused))
        return EXIT_FAILED
    return EXIT_OK


def _print_compiled(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    if args.json:
        print_json(payload)
    else:
        # Data on stdout, messages on stderr: `capc compile S M > body.json` is valid JSON.
        # The indented body has no blank line, so the first one ends it.
        body, _, report = text.partition("\n\n")
        print(body)
        if report:
            print_stderr("\n".join(fresh_notes(report.split("\n"))))
