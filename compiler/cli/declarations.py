"""``capc show``, ``capc check`` and ``capc schema``: the declarations, explained."""

from __future__ import annotations

import argparse
import json
from decimal import Decimal
from typing import Any

from compiler.cli.common import (
    EXIT_INPUT,
    EXIT_OK,
    CliError,
    Handler,
    add_common_options,
    default_path,
    load_registry,
    metadata_object,
    print_error,
    print_json,
    print_note,
)
from compiler.cli.terminal import add_wide_option, print_table, stdout_console

__all__ = ["register"]


def register(sub: Any) -> dict[str, Handler]:
    """Add the ``show``, ``check`` and ``schema`` subcommands to ``sub``."""
    show = sub.add_parser(
        "show",
        epilog="example: capc show anthropic/claude-sonnet-4.5 --stage extract_invoice",
        help="print a model's resolved capabilities, each value with its source",
        description="Print every effective capability of MODEL (for STAGE when given), "
        "each with the layer and file:line or metadata field it came from.",
    )
    show.add_argument("model", metavar="MODEL")
    show.add_argument("--stage", metavar="STAGE", help="apply this stage's per-model overrides")
    add_common_options(show)
    add_wide_option(show)
    check = sub.add_parser(
        "check",
        epilog="example: capc check --models models.yaml --stages stages.yaml",
        help="validate models.yaml and stages.yaml and cross-check them with metadata",
        description="Validate both YAML files, import every stage's contract and project "
        "it as its compiles would (the json dialect and each listed model's), and check "
        "that every model id they name is published or declared whole. Exit 0 when all "
        "is well, 2 when a problem was found.",
    )
    add_common_options(check)
    schema = sub.add_parser(
        "schema",
        epilog="example: capc schema stages > stages.schema.json",
        help="print the JSON Schema of models.yaml, stages.yaml or the lock file",
        description="Print a JSON Schema editors can use (# yaml-language-server: $schema=...); "
        "lock: the format capc lock writes.",
    )
    schema.add_argument("kind", choices=("models", "stages", "lock"),
                        help="which JSON Schema: models.yaml's, stages.yaml's or the lock's")
    return {"show": _cmd_show, "check": _cmd_check, "schema": _cmd_schema}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _declared_in(registry: Any, model: Any) -> str | None:
    """The models.yaml path of a model declared whole (absent from the metadata), else None."""
    if not model.declared_only or registry.models_file is None:
        return None
    return str(registry.models_file.path)


def _show_notes(registry: Any, model: Any) -> list[str]:
    """The resolved model's notes, then one per malformed field resolution does not
    read (``name``, ``description``: only the full model records them), as ``capc
    models`` words them."""
    from registry.errors import MetadataError
    from registry.metadata.ranges import range_notes

    notes = list(model.metadata_notes)
    try:
        info = registry.catalog.get(model.id)
    except MetadataError:  # the lookup's own error is the resolve's business, not a note's
        return notes
    if info is not None and info.out_of_range:
        notes += [note for note in range_notes(model.id, {"out_of_range": info.out_of_range})
                  if note not in notes]
    return notes


def _cmd_show(args: argparse.Namespace) -> int:
    registry = load_registry(args)
    model = registry.resolve(args.model, args.stage)
    notes = _show_notes(registry, model)
    rows: list[dict[str, Any]] = []
    for path in sorted(model.values):
        source = model.provenance.get(path)
        rows.append(
            {
                "path": path,
                "value": _plain(model.values[path]),
                "source": None if source is None else source.to_dict(),
            }
        )
    if args.json:
        payload = {
            "model": model.id,
            "stage": args.stage,
            "metadata": metadata_object(registry.catalog),
            "declared_only": model.declared_only,
            "declared_in": _declared_in(registry, model),
            "alias_target": model.alias_target,
            "notes": notes,
            "values": rows,
        }
        print_json(payload)
        return EXIT_OK
    header = f"{model.id}" + (f" (stage {args.stage})" if args.stage else "")
    declared_in = _declared_in(registry, model)
    if declared_in is not None:  # the metadata in use does not list it: say where it is from
        source = (f"source: declared whole in {declared_in} (not in the metadata: "
                  f"{registry.catalog.describe()})")  # fmt: skip
    else:
        source = f"metadata: {registry.catalog.describe()}"
    head = [header, source]
    if model.alias_target is not None:
        head.append(f"alias of: {model.alias_target} (published alias_target; its "
                    "declarations apply)")  # fmt: skip
    head += [f"note: {note}" for note in notes]
    console = stdout_console(args)
    for line in head:
        if console is None:
            print(line)
        else:
            console.print(line)  # wrapped at the terminal's width
    if console is not None:  # a terminal: the provenance column wraps
        cells = [(r["path"], json.dumps(r["value"], ensure_ascii=False),
                  str(model.provenance.get(r["path"]))) for r in rows]  # fmt: skip
        print_table(console, ("PATH", "VALUE", "SOURCE"), cells, wrap=2, wide=args.wide,
                    styles={0: lambda _: "cyan"})  # fmt: skip
        return EXIT_OK
    width = max(len(r["path"]) for r in rows)
    for row in rows:
        value = json.dumps(row["value"], ensure_ascii=False)
        print(f"  {row['path'].ljust(width)}  {value}  <- {model.provenance.get(row['path'])}")
    return EXIT_OK


def _problem(error: Any) -> dict[str, Any]:
    """One ``check --json`` problem: ``{file, line, column, key, message}`` (key ``None``
    when the problem has no key path, line and column ``None`` without a position; for
    metadata that cannot be read, ``file`` is its source and the message says where)."""
    from registry.boundedread import shown_paths
    from registry.redact import redact_text

    if not hasattr(error, "key_path"):  # a metadata problem: its source is the file
        source = getattr(error, "source", None)
        return {"file": source if source is None else shown_paths(str(source)), "line": None,
                "column": None, "key": None, "message": redact_text(str(error))}  # fmt: skip
    return {"file": shown_paths(str(error.file)), "line": error.line, "column": error.column,
            "key": error.key_path or None, "message": redact_text(error.detail)}  # fmt: skip


def _report(problems: list[Any], args: argparse.Namespace, notes: list[str] | None = None) -> int:
    """Print the notes and problems (``--json``: one object ``{ok, problems, notes}``;
    text: one ``capc: note:`` / ``capc: error:`` line each)."""
    if args.json:
        payload = {"ok": not problems, "problems": [_problem(p) for p in problems],
                   "notes": list(notes or ())}  # fmt: skip
        print_json(payload)
    else:
        for note in notes or ():
            print_note(note)
    for problem in problems:
        print_error(str(problem))
    return EXIT_INPUT if problems else EXIT_OK


def _file_problems(args: argparse.Namespace, first: Any) -> list[Any]:
    """The problems of every declaration file, not only of the first that failed to
    load (``first``): each file is parsed on its own, and its problems are added."""
    from registry.boundedread import STDIN, is_stdin_path
    from registry.declarations.files import load_models_file, load_stages_file
    from registry.errors import DeclarationError

    problems = list(first.problems or (first,))
    seen = {str(p) for p in problems}
    models = default_path(args.models, "models.yaml")
    stages = default_path(args.stages, "stages.yaml")
    for path, load in ((models, load_models_file), (stages, load_stages_file)):
        if path is None or is_stdin_path(str(path)) or str(path) in (STDIN, "/dev/stdin"):
            continue  # stdin is read once: its problems, if any, are in `first`
        try:
            load(path)
        except DeclarationError as exc:
            problems += [p for p in exc.problems or (exc,) if str(p) not in seen]
            seen |= {str(p) for p in exc.problems or (exc,)}
    return problems


def _cmd_check(args: argparse.Namespace) -> int:
    from compiler.errors import ContractError, ToolError
    from compiler.intent import Intent
    from compiler.kinds import policy_key_problem
    from registry.errors import DeclarationError, MetadataError, SourceUnavailableError
    from registry.resolve.checks import check_model_ids, metadata_notes

    try:
        registry = load_registry(args)
    except DeclarationError as exc:  # the YAML itself: its problems, located
        return _report(_file_problems(args, exc), args)
    except MetadataError as exc:  # the metadata: a problem too, so --json has one shape
        if isinstance(exc, SourceUnavailableError):  # a failed fetch: exit 1, as elsewhere
            raise
        return _report([exc], args)
    if registry.models_file is None and registry.stages_file is None:
        raise CliError(
            "neither models.yaml nor stages.yaml found in the current directory; "
            "give their paths with --models and --stages",
            EXIT_INPUT,
        )
    problems: list[DeclarationError] = list(check_model_ids(registry))
    stages = registry.stages_file
    for name in registry.stage_names():
        for key in registry.stage(name).policy:
            problem = policy_key_problem(key)
            if problem is not None and stages is not None:
                problems.append(stages.document.error(problem, ("stages", name, "policy", key)))
        try:
            intent = Intent.from_stage(name, registry.stage(name), base_dir=registry.stage_dir())
        except ContractError as exc:
            assert stages is not None
            problems.append(stages.document.error(str(exc), ("stages", name, "contract")))
            continue
        except ToolError as exc:
            assert stages is not None
            problems.append(stages.document.error(str(exc), ("stages", name, *exc.at)))
            continue
        if intent.contract is not None and stages is not None:
            problems.extend(
                stages.document.error(problem, ("stages", name, "contract"))
                for problem in _contract_problems(registry, name, intent))
        if intent.tools and stages is not None:
            problems.extend(
                stages.document.error(problem, ("stages", name, "tools", index))
                for index, problem in _tool_problems(registry, name, intent))
    notes = metadata_notes(registry)
    if problems or args.json:
        return _report(problems, args, notes)
    for note in notes:
        print_note(note)
    declared = 0 if registry.models_file is None else len(registry.models_file.models)
    print(
        f"ok: {declared} model declarations, {len(registry.stage_names())} stages, "
        f"checked against {registry.catalog.describe()}"
    )
    return EXIT_OK


def _contract_problems(registry: Any, stage: str, intent: Any) -> list[str]:
    """Why compiling ``stage`` refuses its contract, one line per cause: the projection's
    refusals (budget, external references, alias cycles, ...) under ``json``, which every
    compile shows, and, when the stage asks for rung ``schema``, under the dialect of
    each model it lists (a compile projects for that dialect first)."""
    from compiler.errors import CompilerError
    from compiler.schema.dialects import get_dialect
    from compiler.schema.projection import project
    from registry.errors import RegistryError

    users: dict[str, list[str]] = {"json": []}
    if intent.effective_ceiling == "schema":
        for model_id in registry.stage(stage).models:
            try:
                dialect = registry.resolve(model_id, stage).dialect
            except RegistryError:  # an unknown id: check_model_ids reports it
                continue
            users.setdefault(dialect, []).append(model_id)
    found: dict[str, str] = {}
    for dialect, models in users.items():
        try:
            project(intent.contract, get_dialect(dialect))
        except CompilerError as exc:
            where = ("every compile" if not models else
                     f"compiles for {', '.join(models)} ({dialect} dialect)")
            found.setdefault(str(exc), where)
    return [f"contract {intent.contract.name}: {where} refused: {message}"
            for message, where in found.items()]


def _tool_problems(registry: Any, stage: str, intent: Any) -> list[tuple[int, str]]:
    """``(tool index, why)`` for each tool a compile for a model the stage lists refuses:
    the same projection per dialect and the same recursion rule as the compile
    (:func:`compiler.tools.projection.recursion_refusal`); a model without the ``tools``
    parameter drops the tools (reported, not refused) and is skipped."""
    from compiler.errors import CompilerError
    from compiler.schema.dialects import get_dialect
    from compiler.tools.projection import project_tools, recursion_refusal
    from registry.errors import RegistryError

    by_dialect: dict[str, list[str]] = {}
    for model_id in registry.stage(stage).models:
        try:
            model = registry.resolve(model_id, stage)
        except RegistryError:  # an unknown id: check_model_ids reports it
            continue
        if model.supports("tools"):
            by_dialect.setdefault(model.dialect, []).append(model_id)
    found: dict[tuple[int, str], list[str]] = {}
    for dialect_name, models in by_dialect.items():
        dialect = get_dialect(dialect_name)
        for index, tool in enumerate(intent.tools):
            try:
                (item,) = project_tools([tool], dialect)
            except CompilerError as exc:
                found.setdefault((index, str(exc)), []).extend(models)
                continue
            refusal = recursion_refusal(item, dialect, models[0])
            if refusal is not None:
                found.setdefault((index, refusal), []).extend(models)
    return [(index, f"{why} (compiles for {', '.join(models)} refuse it)")
            for (index, why), models in found.items()]


def _cmd_schema(args: argparse.Namespace) -> int:
    from registry.declarations.schema import models_json_schema, stages_json_schema

    if args.kind == "lock":  # as capc lock --schema printed it
        from compiler.artifacts.lock_schema import lock_json_schema

        print_json(lock_json_schema(), sort_keys=True)
        return EXIT_OK
    schema = models_json_schema() if args.kind == "models" else stages_json_schema()
    print_json(schema)
    return EXIT_OK
