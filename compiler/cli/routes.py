"""``capc routes``: one line per endpoint of a model, with its attempt or exclusion.

Also the route-plan parts of ``compile`` and ``explain``: the later attempts and the
route table, as text and as JSON.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from compiler.cli.common import (
    EXIT_OK,
    Handler,
    add_common_options,
    add_route_options,
    load_registry,
    metadata_object,
    print_json,
)
from compiler.cli.terminal import add_wide_option, print_table, stdout_console
from compiler.compiled import CompiledRequest

__all__ = [
    "ROUTE_HEADER",
    "attempts_payload",
    "attempts_text",
    "print_attempts",
    "print_report",
    "print_routes",
    "register",
    "route_rows",
    "routes_text",
]


def register(sub: Any) -> dict[str, Handler]:
    """Add the ``routes`` subcommand to ``sub``."""
    routes = sub.add_parser(
        "routes",
        epilog="example: capc routes extract_invoice anthropic/claude-sonnet-4.5",
        help="show how STAGE for MODEL is routed: each endpoint's attempt or exclusion",
        description="Compile STAGE for MODEL and print one line per endpoint of the model: "
        "the route-plan attempt that serves it (its rung and max_tokens), or why none does "
        "(excluded_by, see docs/adjustments.md). Without endpoint data there is nothing "
        "to show, and the command says so.",
    )
    routes.add_argument("stage", metavar="STAGE")
    routes.add_argument("model", metavar="MODEL")
    add_common_options(routes)
    add_route_options(routes)
    add_wide_option(routes)
    return {"routes": _cmd_routes}


def attempts_payload(compiled: CompiledRequest) -> dict[str, Any]:
    """Return ``{"endpoints", "attempts", "routes"}`` for ``--json`` output: the first
    attempt's endpoints, each later attempt's request, endpoints and report, and the
    route table (lists, empty without endpoint data)."""
    return {
        "endpoints": list(compiled.endpoints),
        "attempts": [
            {"request": a.body, "endpoints": list(a.endpoints), "report": a.report.to_dict()}
            for a in compiled.attempts
        ],
        "routes": [r.to_dict() for r in compiled.routes],
    }


#: The columns of the route table.
ROUTE_HEADER = ("endpoint", "attempt", "rung", "max_tokens", "excluded_by / detail")


def route_rows(compiled: CompiledRequest) -> list[tuple[str, str, str, str, str]]:
    """The route table's cells, one row per endpoint (columns :data:`ROUTE_HEADER`)."""
    return [
        (
            r.endpoint,
            "-" if r.attempt is None else str(r.attempt + 1),
            r.rung or "-",
            "-" if r.max_tokens is None else str(r.max_tokens),
            r.detail if r.excluded_by is None else f"{r.excluded_by}: {r.detail}",
        )
        for r in compiled.routes
    ]


def routes_text(compiled: CompiledRequest) -> str:
    """Return the route table as aligned text lines (no trailing newline)."""
    rows = [ROUTE_HEADER, *route_rows(compiled)]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4]
        for row in rows
    )


def _attempt_style(cell: str) -> str | None:
    return "yellow" if cell == "-" else "green"


def print_routes(console: Any, compiled: CompiledRequest, *, wide: bool) -> None:
    """Print the route table on a terminal console, fitted to its width (``wide``: whole)."""
    print_table(console, ROUTE_HEADER, route_rows(compiled), wrap=4, wide=wide,
                styles={1: _attempt_style})  # fmt: skip


def print_report(console: Any, report: Any, *, wide: bool) -> None:
    """Print an adjustment report on a terminal console: its header lines, then the
    table with the reason column wrapped to the width (``wide``: whole)."""
    from compiler.cli.common import fresh_notes
    from compiler.report import TABLE_HEADER

    for line in fresh_notes(report.header_lines()):
        console.print(line)
    rows = report.table_rows()
    if not rows:
        console.print("no adjustments: the request is exactly what the stage asked for")
        return
    print_table(console, TABLE_HEADER, rows, wrap=4, wide=wide,
                styles={0: lambda _: "cyan", 3: lambda c: "dim" if c == "(omitted)" else None})


def print_attempts(console: Any, compiled: CompiledRequest, *, wide: bool) -> None:
    """The terminal form of :func:`attempts_text` without bodies (``capc explain``)."""
    total = len(compiled.plan)
    for number, attempt in enumerate(compiled.attempts, start=2):
        console.print()
        console.print(f"attempt {number} of {total}, for {', '.join(attempt.endpoints)}:",
                      style="bold" if console.color_system else None)
        console.print()
        print_report(console, attempt.report, wide=wide)
    if compiled.routes:
        console.print()
        print_routes(console, compiled, wide=wide)


def attempts_text(compiled: CompiledRequest, *, bodies: bool) -> str:
    """Return the later attempts (with their bodies when ``bodies``) and the route table
    as text to append after the first attempt's report ("" when there is neither)."""
    parts = []
    total = len(compiled.plan)
    for number, attempt in enumerate(compiled.attempts, start=2):
        parts.append(f"attempt {number} of {total}, for {', '.join(attempt.endpoints)}:")
        if bodies:
            parts.append(json.dumps(attempt.body, indent=2, ensure_ascii=False))
        parts.append(attempt.report.to_text())
    if compiled.routes:
        parts.append(routes_text(compiled))
    return "".join("\n\n" + part for part in parts)


def _cmd_routes(args: argparse.Namespace) -> int:
    from compiler.request import compile_request

    registry = load_registry(args)
    compiled = compile_request(args.stage, args.model, registry=registry,
                               coverage=args.coverage)
    if args.json:
        print_json({"stage": args.stage, "model": args.model,
                    "metadata": metadata_object(registry.catalog), **attempts_payload(compiled)})
    elif compiled.routes and (console := stdout_console(args)) is not None:
        print_routes(console, compiled, wide=args.wide)
    elif compiled.routes:
        print(routes_text(compiled))
    else:
        print(f"no endpoint data for {args.model}: one body from the model-level figures "
              "(give --endpoints FILE, or use live or cached metadata)")
    return EXIT_OK
