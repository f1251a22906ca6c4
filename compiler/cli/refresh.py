"""``capc refresh``: fetch OpenRouter's models list, and models' endpoints, into the cache.

``--endpoints MODEL...`` also refreshes those models' endpoints; ``--endpoints`` alone
those of every model the stages file names; ``--all-endpoints`` those of every model in
the models list just refreshed. Exit 0 when everything was fetched, 1 when a fetch
failed and an older copy (or none) is still served, 2 when offline or the stages file
cannot be used. Every failure is one stderr line; network faults never produce a
traceback.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.cli.common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    CliError,
    Handler,
    default_path,
    notes_printed_here,
    print_error,
    print_json,
    print_note,
)
from compiler.cli.terminal import Wait, waiting

if TYPE_CHECKING:
    from registry.sources.settings import Settings

__all__ = ["register"]


def register(sub: Any) -> dict[str, Handler]:
    """Add the ``refresh`` subcommand.

    Args:
        sub: the ``capc`` subparsers object.

    Returns:
        The handler by subcommand name.
    """
    refresh = sub.add_parser(
        "refresh",
        epilog="example: capc refresh --endpoints",
        help="fetch OpenRouter's models list (and endpoints) into the cache",
        description="Fetch GET {base_url}/models, and GET .../models/MODEL/endpoints for "
        "each --endpoints MODEL (with --endpoints alone: each model the stages file "
        "names; with --all-endpoints: each model of the models list), into the cache, "
        "even when the cached copy is still fresh. A payload that fails the integrity "
        "guard never replaces the cached copy. Exit 0 when everything was fetched, 1 "
        "when an older copy is still served.",
    )
    refresh.add_argument(
        "--endpoints",
        nargs="*",
        action="extend",
        default=None,
        metavar="MODEL",
        help="also refresh these models' per-provider endpoints; with no MODEL, those of "
        "every model the stages file names",
    )
    refresh.add_argument(
        "--all-endpoints",
        action="store_true",
        help="also refresh the endpoints of every model in the refreshed models list",
    )
    refresh.add_argument(
        "--stages",
        metavar="PATH",
        help="stages.yaml read by --endpoints without MODEL (default: ./stages.yaml when "
        "present)",
    )
    refresh.add_argument("--json", action="store_true", help="print one JSON object")
    return {"refresh": _cmd_refresh}


def _cmd_refresh(args: argparse.Namespace) -> int:
    from registry.sources.settings import load_settings

    settings = load_settings()
    if settings.offline:
        raise CliError("refresh needs the network, but CAPC_OFFLINE is set", EXIT_INPUT)
    named = list(args.endpoints or ())
    if args.endpoints == []:  # --endpoints with no MODEL
        named += _stage_models(default_path(args.stages, "stages.yaml"))
    with notes_printed_here():
        return _refresh(args, settings, named)


def _stage_models(path: Path | None) -> tuple[str, ...]:
    """The model ids a stages file names, for ``--endpoints`` without MODEL.

    Raises:
        CliError: (exit 2) there is no stages file, or it names no model.
        DeclarationError: the stages file is invalid (exit 2 at the CLI).
    """
    from registry.declarations.files import load_stages_file

    if path is None:
        raise CliError(
            "--endpoints without MODEL refreshes the models of stages.yaml, but there is "
            "no ./stages.yaml; give --stages PATH or MODEL...",
            EXIT_INPUT,
        )
    ids = load_stages_file(path).model_ids()
    if not ids:
        raise CliError(f"{path}: names no model; give --endpoints MODEL...", EXIT_INPUT)
    return ids


def _failed(note: str | None) -> str:
    """The error line of a fetch that did not succeed: the loader's note says what a
    command does now ("using the bundled seed"); for refresh that is what commands use
    until a refresh succeeds, not what this refresh did."""
    text = (note or "no detail").replace(
        "no usable cached copy, using the bundled seed",
        "no usable cached copy: until a refresh succeeds, commands use the bundled seed")
    return f"refresh failed: {text}"


def _refresh(args: argparse.Namespace, settings: Settings, named: list[str]) -> int:
    """Refresh the models list, then the endpoints of ``named`` and (``--all-endpoints``)
    of every model of that list, each once; print the result; return the exit code."""
    with waiting(args, "refreshing the models list") as wait:
        return _refresh_in(args, settings, named, wait)


def _refresh_in(
    args: argparse.Namespace, settings: Settings, named: list[str], wait: Wait
) -> int:
    from registry.sources.load import load_endpoints_result, load_metadata

    progress = wait if wait.active else None
    catalog = load_metadata(None, settings=settings, refresh=True, progress=progress)
    wanted = list(dict.fromkeys(named + (catalog.ids() if args.all_endpoints else [])))
    ok = catalog.origin == "fetch" and catalog.store_error is None
    models_row = {
        "source": catalog.source,
        "origin": catalog.origin,
        "fetched_at": catalog.fetched_at,
        "stale": catalog.stale,
        "count": len(catalog),
        "note": catalog.note,
    }
    lines = []
    if ok:
        lines.append(f"models: fetched {len(catalog)} models from {catalog.describe()}")
    elif catalog.origin == "fetch":
        lines.append(f"models: fetched {len(catalog)} models, not cached")
    else:
        lines.append(f"models: kept {len(catalog)} models from {catalog.describe()}")
    endpoint_rows = []
    failures = [] if ok else [_failed(catalog.note)]
    for number, model_id in enumerate(wanted, 1):
        if progress is not None:
            progress(f"endpoints {number}/{len(wanted)} {model_id}")
        result = load_endpoints_result(model_id, settings=settings, refresh=True, progress=progress)
        count = None if result.endpoints is None else len(result.endpoints.endpoints)
        endpoint_rows.append(
            {
                "model": model_id,
                "origin": result.origin,
                "fetched_at": result.fetched_at,
                "stale": result.stale,
                "count": count,
                "note": result.note,
            }
        )
        if result.origin == "fetch" and result.store_error is None:
            lines.append(f"endpoints of {model_id}: fetched {count} endpoints")
        else:
            ok = False
            failures.append(_failed(result.note))
            if result.endpoints is not None:
                lines.append(
                    f"endpoints of {model_id}: kept {count} endpoints "
                    f"({result.origin}, as of {result.fetched_at})"
                )
    fetched = sum(1 for row in endpoint_rows if row["origin"] == "fetch")
    if len(wanted) > 1:
        lines.append(f"endpoints: fetched for {fetched} of {len(wanted)} models")
    wait.close()  # the spinner goes before the result is printed
    if args.json:
        payload = {
            "ok": ok,
            "models": models_row,
            "endpoints": endpoint_rows,
            "endpoints_requested": len(wanted),
            "endpoints_fetched": fetched,
        }
        if failures:  # as every --json error: ok false and an error object
            from registry.redact import redact_text

            payload["error"] = {"message": redact_text("; ".join(failures)),
                                "kind": "refresh_failed", "exit_code": EXIT_FAILED}
        print_json(payload)
    else:  # what was fetched is a status, not data: notes on stderr
        for line in lines:
            print_note(line)
    for failure in failures:
        print_error(failure)
    return EXIT_OK if ok else EXIT_FAILED
