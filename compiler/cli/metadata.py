"""``capc models`` and ``capc cache``: the metadata in use, and the cache it comes through.

``models`` lists the catalog in use as a table (or JSON). ``cache info`` and ``cache
clear`` show and empty the cache. Every fallback is said in one stderr line; network
faults never produce a traceback. ``capc refresh`` is in :mod:`compiler.cli.refresh`.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from compiler.cli.common import (
    EXIT_INPUT,
    EXIT_OK,
    CliError,
    Handler,
    add_common_options,
    load_registry,
    metadata_object,
    notes_printed_here,
    print_json,
    print_note,
)
from compiler.cli.terminal import add_wide_option, print_table, stdout_console

if TYPE_CHECKING:
    from registry.metadata.catalog import Catalog
    from registry.metadata.shapes import ModelInfo

__all__ = ["register"]


def register(sub: Any) -> dict[str, Handler]:
    """Add the ``models`` and ``cache`` subcommands.

    Args:
        sub: the ``capc`` subparsers object.

    Returns:
        The handlers by subcommand name.
    """
    models = sub.add_parser(
        "models",
        epilog="example: capc models --search claude --supports structured_outputs",
        help="list the models of the metadata in use",
        description="List models as published in the metadata in use (cache, fetch, "
        "file or seed), then those declared whole in models.yaml: id, context window "
        "and output limit in tokens, structured outputs, reasoning efforts.",
    )
    models.add_argument("--search", metavar="TEXT", help="only ids or names containing TEXT")
    models.add_argument(
        "--supports",
        nargs="+",
        action="extend",
        default=[],
        metavar="PARAM",
        help="only models whose supported_parameters list every PARAM",
    )
    add_common_options(models, stages=False)  # the models, not the stages
    add_wide_option(models)

    cache = sub.add_parser(
        "cache",
        help="show or clear the metadata cache",
        description="info: the cache directory, its size and every entry with its age, "
        "then the compile cache (capc compile's results); clear: remove every entry of "
        "both.",
        epilog="example: capc cache info --json",
    )
    cache.add_argument("action", choices=("info", "clear"))
    cache.add_argument("--json", action="store_true", help="print one JSON object")
    return {"models": _cmd_models, "cache": _cmd_cache}


# -- models -----------------------------------------------------------------------


def _efforts(model: ModelInfo) -> list[str] | None:
    """Published reasoning efforts: a list, ``["*"]`` for "any", ``None`` when none."""
    info = model.reasoning
    if info is None or not info.efforts_published:
        return None
    return ["*"] if info.supported_efforts is None else list(info.supported_efforts)


def _row(model: ModelInfo) -> dict[str, Any]:
    from registry.metadata.ranges import range_notes

    params = model.supported_parameters
    top = model.top_provider
    return {
        "id": model.id,
        "name": model.name,
        "context_length": model.context_length or None,
        "max_output_tokens": None if top is None else top.max_completion_tokens,
        "structured_outputs": None if params is None else "structured_outputs" in params,
        "reasoning": None if params is None else "reasoning" in params,
        "reasoning_mandatory": None if model.reasoning is None else model.reasoning.mandatory,
        "reasoning_efforts": _efforts(model),
        "supported_parameters": None if params is None else list(params),
        "declared_in": None,
        # one line per published limit or price read as unknown (out of range)
        "notes": range_notes(model.id, {"out_of_range": model.out_of_range or {}}),
    }


def _declared_rows(registry: Any) -> list[dict[str, Any]]:
    """Rows of the models absent from the metadata but declared whole in models.yaml,
    from their resolved capabilities; ``declared_in`` names the models file."""
    published = set(registry.catalog.models)
    rows = []
    for model_id in registry.known_ids():
        if model_id in published:
            continue
        model = registry.resolve(model_id)
        params = sorted(model.supported_parameters)
        efforts = model.reasoning.efforts if "reasoning" in params else None
        rows.append({
            "id": model_id, "name": None, "context_length": model.context_length,
            "max_output_tokens": model.max_completion_tokens,
            "structured_outputs": "structured_outputs" in params,
            "reasoning": "reasoning" in params,
            "reasoning_mandatory": not model.reasoning.can_disable if "reasoning" in params
            else None,
            "reasoning_efforts": None if efforts is None else list(efforts),
            "supported_parameters": params, "declared_in": registry.models_file.path,
            "notes": list(model.metadata_notes),
        })  # fmt: skip
    return rows


def _check_params(wanted: Iterable[str], catalog: Catalog) -> None:
    from registry.errors import closest

    known: set[str] = set()
    for model in catalog.models.values():
        known.update(model.supported_parameters or ())
    for param in wanted:
        if param not in known:
            hint = closest(param, sorted(known))
            more = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
            raise CliError(
                f"--supports {param}: no model in {catalog.describe()} lists it{more}",
                EXIT_INPUT,
            )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(value) if value else "-"
    return str(value)


def _yes_no_style(cell: str) -> str | None:
    return {"yes": "green", "no": "red"}.get(cell)


def _cmd_models(args: argparse.Namespace) -> int:
    with notes_printed_here():
        registry = load_registry(args)
    catalog: Catalog = registry.catalog
    _check_params(args.supports, catalog)
    needle = (args.search or "").lower()
    rows = []
    declared = _declared_rows(registry)
    for row in [_row(model) for model in catalog.models.values()] + declared:
        if needle and needle not in row["id"].lower() and needle not in (row["name"] or "").lower():
            continue
        if any(p not in (row["supported_parameters"] or ()) for p in args.supports):
            continue
        rows.append(row)
    if args.json:
        payload = {
            "metadata": metadata_object(catalog),
            "models": rows,
        }
        print_json(payload)
        return EXIT_OK
    table = [("ID", "CONTEXT", "MAX OUTPUT", "STRUCTURED", "REASONING EFFORTS")]
    for row in rows:
        efforts = _cell(row["reasoning_efforts"])
        if row["reasoning_mandatory"]:
            efforts += " (mandatory)"
        if row["declared_in"] is not None:
            efforts += f"  (declared whole in {row['declared_in']})"
        table.append(
            (
                row["id"],
                _cell(row["context_length"]),
                _cell(row["max_output_tokens"]),
                _cell(row["structured_outputs"]),
                efforts,
            )
        )
    console = stdout_console(args)
    if console is not None:  # a terminal: a table that fits, coloured
        print_table(console, table[0], table[1:], wrap=4, wide=args.wide,
                    styles={3: _yes_no_style})  # fmt: skip
    else:
        widths = [max(len(r[i]) for r in table) for i in range(4)]
        for r in table:
            print("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  "
                  + r[4])  # fmt: skip
    total = f"{len(catalog)}"
    if declared:
        total = (f"{len(catalog) + len(declared)} ({len(catalog)} in the metadata, "
                 f"{len(declared)} declared whole in {registry.models_file.path})")  # fmt: skip
    summary = f"{len(rows)} of {total} models; metadata: {catalog.describe()}"
    if console is not None:
        console.print(summary)  # wrapped at the terminal's width
    else:
        print(summary)
    if not rows:
        filters = [f"--search {args.search!r}"] if args.search else []
        filters += [f"--supports {' '.join(args.supports)}"] if args.supports else []
        print_note(f"no model matches {' and '.join(filters)}" if filters
                   else "the metadata in use lists no model")  # fmt: skip
    noted = [row["id"] for row in rows if row["notes"]]
    if noted:  # the table has no room for them: say where they are
        listed = ", ".join(noted[:3]) + (f" and {len(noted) - 3:,} more" if len(noted) > 3
                                         else "")
        print_note(f"{len(noted):,} of the models listed have a published field read as "
                   f"unknown (malformed or out of range): {listed}; capc show MODEL or "
                   "--json names each")  # fmt: skip
    if catalog.note:
        print_note(catalog.note)
    return EXIT_OK


# -- cache ------------------------------------------------------------------------


def _cmd_cache(args: argparse.Namespace) -> int:
    from registry.metadata.catalog import format_age
    from registry.sources.load import open_cache
    from registry.sources.settings import load_settings

    settings = load_settings()
    directory = settings.cache_dir
    # no cache yet: no directory, or one (read-only or not) that holds neither diskcache's
    # database nor capc compile's results; said plainly, nothing created, exit 0
    if not directory.exists() or (directory.is_dir() and not (directory / "cache.db").exists()
                                  and not (directory / "compiled").is_dir()):
        if args.json:
            payload = {"directory": str(directory), "exists": False, "entries": []}
            print_json(payload, ensure_ascii=True)
        else:
            print(f"no cache at {directory}")
        return EXIT_OK
    compiled = directory / "compiled"  # capc compile's result cache
    if args.action == "clear" and compiled.is_symlink():  # never followed
        raise CliError(
            f"cache {directory}: not clearing: {compiled} is a symbolic link (to "
            f"{compiled.readlink()}), not capc's folder; remove the link, then run "
            "capc cache clear again",
            EXIT_INPUT,
        )
    with open_cache(settings) as cache:
        if args.action == "clear":
            removed = cache.clear()
            if compiled.is_dir() and not compiled.is_symlink():  # its own files only
                for item in [*compiled.glob("*.json"), *compiled.glob("*.tmp")]:
                    if item.is_symlink() or not item.is_file():
                        continue  # a link, or a folder named *.json: not ours
                    with contextlib.suppress(OSError):
                        item.unlink()
                        removed += item.suffix == ".json"
                with contextlib.suppress(OSError):
                    compiled.rmdir()  # only when empty
            if args.json:
                print_json({"directory": str(directory), "removed": removed}, ensure_ascii=True)
            else:
                print_note(f"removed {removed} entries from {directory}")
            return EXIT_OK
        entries = cache.entries()
        volume = cache.volume()
    from compiler.artifacts.compile_cache import compile_cache_entries
    from registry.sources.fallback import parsed_entry

    compiled_rows = compile_cache_entries(directory)
    rows: list[dict[str, Any]] = [
        {
            "source": e.source,
            "kind": e.kind,
            "count": e.count,
            "fetched_at": e.fetched_at.isoformat(timespec="seconds"),
            "age_seconds": int(e.age().total_seconds()),
            "fresh": e.is_fresh(settings.ttl),
            # a copy that no longer parses is never served (fetched again instead)
            "usable": parsed_entry(e) is not None,
            "bytes": len(e.payload),
        }
        for e in entries
    ]
    if args.json:
        payload = {
            "directory": str(directory),
            "exists": True,
            "bytes": volume,
            "ttl_seconds": settings.ttl,
            "entries": rows,
            "compiled": compiled_rows,
        }
        print_json(payload, ensure_ascii=True)
        return EXIT_OK
    print(f"cache: {directory} ({volume} bytes, TTL {format_age(settings.ttl)})")
    if not rows:
        print("no metadata entries")
    for row in rows:
        state = "unusable" if not row["usable"] else "fresh" if row["fresh"] else "stale"
        print(
            f"{row['kind']:<9}  {row['count']:>5}  {row['fetched_at']}  "
            f"{format_age(row['age_seconds']):>8} old  {state}  {row['source']}"
        )
    size = sum(row["bytes"] for row in compiled_rows)
    print(f"compile cache: {directory / 'compiled'} ({len(compiled_rows)} entries, "
          f"{size} bytes; capc compile with a --metadata file)")  # fmt: skip
    for row in compiled_rows:
        what = "(unreadable entry)" if row["stage"] is None else f"{row['stage']} / {row['model']}"
        print(f"compiled   {row['bytes']:>7}  {row['modified']}  {what}")
    return EXIT_OK
