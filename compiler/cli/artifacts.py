"""``capc lock``, ``capc audit`` and ``capc diff``: the lock file, the audit matrix, diffs.

Exit codes follow :mod:`compiler.cli.common`: 0 success (``diff``: nothing changed; ``lock
--check``: the lock is up to date); 1 ``diff`` found changes or ``lock --check`` found
the lock out of date or missing; 2 invalid input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
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
    load_registry,
    metadata_object,
    print_document,
    print_error,
    print_json,
    print_note,
)
from compiler.cli.inputs import output_path
from compiler.cli.terminal import add_wide_option, print_table, stdout_console, waiting

__all__ = ["register"]



def register(sub: Any) -> dict[str, Handler]:
    """Add the ``lock``, ``audit`` and ``diff`` subcommands to ``sub``.

    Args:
        sub: the ``capc`` subparsers object.

    Returns:
        Handlers by subcommand name; each returns the exit code.
    """
    lock = sub.add_parser(
        "lock",
        epilog="example: capc lock --metadata models-2026-08-19.json --check",
        help="compile every stage for every listed model into a lock file",
        description="Compile each stage for each model in its stages.yaml 'models' list and "
        "write one deterministic JSON document (default: capc.lock.json next to stages.yaml).",
    )
    lock.add_argument("--output", metavar="PATH", type=output_path("capc.lock.json"),
                      help="where to write the lock ('-': standard output); a symlink is "
                      "followed, missing directories are created")
    lock.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 when the lock on disk differs from a fresh one")
    lock.add_argument(  # kept for scripts; capc schema lock is the offered spelling
        "--schema", action="store_true", help=argparse.SUPPRESS
    )
    add_common_options(lock)
    add_route_options(lock)

    audit = sub.add_parser(
        "audit",
        epilog="example: capc audit --model 'anthropic/*' --html audit.html",
        help="print a stage x model matrix of what each model receives, and its cost",
        description="For each stage and listed model: enforcement rung, reasoning sent, "
        "length limit, parameters dropped, adjustments by kind and the worst-case cost "
        "of one call in USD.",
    )
    audit.add_argument("--stage", metavar="S", help="only this stage")
    audit.add_argument("--model", metavar="GLOB", help="only model ids matching this glob")
    audit.add_argument("--html", metavar="FILE", type=output_path("audit.html"),
                       help="also write the audit as one self-contained HTML page")
    add_common_options(audit)
    add_route_options(audit)
    add_wide_option(audit)

    diff = sub.add_parser(
        "diff",
        epilog="example: capc diff old.lock.json capc.lock.json",
        help="list the settings that changed between two lock files or two metadata snapshots",
        description="Compare two lock files, or two OpenRouter models lists compiled against "
        "the same models.yaml and stages.yaml. Exit 0 when nothing changed, 1 when something "
        "did, 2 for unreadable or mixed inputs.",
    )
    diff.add_argument("old", metavar="OLD", help="old lock file or models list (- for stdin)")
    diff.add_argument("new", metavar="NEW", help="new lock file or models list (- for stdin)")
    diff.add_argument("--html", metavar="FILE", type=output_path("diff.html"),
                      help="also write the changed pairs as one self-contained HTML page")
    add_common_options(diff, metadata=False)  # OLD and NEW are the metadata
    return {"lock": _cmd_lock, "audit": _cmd_audit, "diff": _cmd_diff}


def _cmd_lock(args: argparse.Namespace) -> int:
    from compiler.artifacts.lock import (
        DEFAULT_LOCK_NAME,
        Compilation,
        LockFileError,
        build_lock,
        iter_compilations,
        spool_lock,
        write_lock,
    )
    from compiler.artifacts.lock_schema import lock_json_schema

    if args.schema:
        given = [name for name, value in (("--check", args.check), ("--output", args.output))
                 if value]  # fmt: skip
        if given:
            raise CliError(f"{given[0]} does not apply to the lock schema; use capc schema "
                           "lock", EXIT_INPUT, kind="usage")  # fmt: skip
        print_json(lock_json_schema(), sort_keys=True)
        return EXIT_OK
    registry = load_registry(args)
    if registry.stages_file is None:
        raise CliError("no stages.yaml here; give --stages PATH", EXIT_INPUT)
    if args.output == "-" and args.check:
        raise CliError("--check compares a lock file; give --output PATH, not '-'", EXIT_INPUT)
    output = Path(args.output or Path(registry.stages_file.path).parent / DEFAULT_LOCK_NAME)
    # Written as it compiles, one entry at a time (spooled beside the lock while the
    # tables that come first fill up); --check keeps the compilations, for its diff.
    kept: list[Compilation] = []  # every pair with --check, else the failed ones

    def tally(items: Iterator[Compilation]) -> Iterator[Compilation]:
        for item in items:
            if args.check or item.error is not None:
                kept.append(item)
            yield item

    folder = None if args.check or args.output == "-" else Path(os.path.realpath(output)).parent
    spool_dir = folder if folder is not None and folder.is_dir() else None
    try:  # past SPOOL_MEMORY the spool is a file: a full disk (ulimit -f) lands here
        with waiting(args, "compiling every stage for its models"):  # fetches endpoints too
            items = tally(iter_compilations(registry, coverage=args.coverage))
            spool = spool_lock(registry, items, endpoints=args.endpoints, spool_dir=spool_dir)
    except OSError as exc:
        raise CliError(f"{spool_dir or tempfile.gettempdir()}: cannot spool the lock while "
                       f"compiling (the lock is not changed): {exc.strerror or exc}",
                       EXIT_INPUT) from exc
    with spool:
        failed = [{"stage": i.stage, "model": i.model, "error": f"{type(i.error).__name__}: "
                   f"{i.error}"} for i in kept if i.error is not None]
        summary: dict[str, Any] = {"path": str(output), "pairs": spool.pairs, "failed": failed}
        if args.check:
            return _check(output, spool.chunks(),
                          lambda: build_lock(registry, kept, endpoints=args.endpoints),
                          summary, args.json)
        if args.output == "-":
            print_document(chunk.decode("utf-8") for chunk in spool.chunks())
            return EXIT_OK
        try:
            write_lock(spool.chunks(), output)
        except LockFileError as exc:
            raise CliError(str(exc), EXIT_INPUT) from exc
        except OSError as exc:
            raise CliError(f"{output}: cannot write the lock: {exc.strerror or exc}",
                           EXIT_INPUT) from exc
    if args.json:
        print_json({**summary, "written": True}, ensure_ascii=True)
    else:
        # a status, not data: on stderr (stdout is for data), as a note
        print_note(f"wrote {output}: {spool.pairs} stage/model pair(s), {len(failed)} failed")
        for failure in failed:
            print_note(f"{failure['stage']} / {failure['model']} failed: {failure['error']}")
    return EXIT_OK


def _check(
    output: Path, chunks: Iterable[bytes], fresh: Callable[[], dict[str, Any]],
    summary: dict[str, Any], as_json: bool,
) -> int:
    """``lock --check``: ``chunks`` against the file; ``fresh()`` only for a diff."""
    from compiler.artifacts.diff import count_pairs, diff_locks, render_changes
    from compiler.artifacts.lock import LockFileError, read_lock
    from compiler.artifacts.lock_inputs import input_changes
    from compiler.artifacts.lock_schema import LOCK_FORMAT
    from compiler.artifacts.output_file import holds_text

    try:  # a FIFO or a folder is refused without blocking (it was a hang, a traceback)
        same = holds_text(output, chunks, option="--output", refuse=LockFileError)
    except LockFileError as exc:
        raise CliError(str(exc), EXIT_INPUT) from exc
    except OSError as exc:  # a symlink loop, a path through a file, no permission
        raise CliError(f"{output}: cannot read it: {exc.strerror}", EXIT_INPUT) from exc
    if same:
        if as_json:
            print_json({**summary, "up_to_date": True, "changes": []}, ensure_ascii=True)
        else:
            print_note(f"{output} is up to date ({summary['pairs']} stage/model pair(s))")
        return EXIT_OK
    try:  # not UTF-8: read_lock says it is not a valid lock (it was a traceback)
        current = None if same is None else output.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        current = None
    changes: list[Any] = []
    inputs: list[str] = []
    why = "does not exist"
    if current is not None:
        try:
            old = read_lock(output)
        except LockFileError as exc:
            found = _format_of(current)
            why = (f"is in lock format {found}; this version writes format {LOCK_FORMAT}"
                   if found is not None and found != LOCK_FORMAT
                   else f"is not a valid lock ({exc})")
        else:
            document = fresh()
            changes = diff_locks(old, document)
            inputs = input_changes(old.get("inputs") or {}, document["inputs"])
            why = (f"is out of date: {len(changes)} setting(s) changed" if changes else
                   "is out of date: no setting changed, but its generator version, inputs "
                   "or formatting differ")
            if inputs:
                why += "; changed input(s): " + "; ".join(inputs)
            if not as_json:
                print(render_changes(changes, old_label=f"{output} ({old['metadata']['text']})",
                                     new_label=f"fresh compile ({document['metadata']['text']})",
                                     pairs=count_pairs(old, document)))
    if as_json:
        payload = {**summary, "up_to_date": False, "inputs_changed": inputs,
                   "changes": [c.to_dict() for c in changes]}
        print_json(payload)
    print_error(f"lock {output} {why}; run 'capc lock' to update it")
    return EXIT_FAILED


def _format_of(text: str) -> object:
    """The ``format`` of a lock that does not validate, when it is JSON with one."""
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        return data.get("format") if isinstance(data, dict) else None
    return None


def _cmd_audit(args: argparse.Namespace) -> int:
    from compiler.artifacts.audit import audit, audit_to_json, render_audit

    registry = load_registry(args)
    if registry.stages_file is None:  # as capc lock: no matrix without stages
        raise CliError("no stages.yaml here; give --stages PATH", EXIT_INPUT)
    if args.stage is not None:
        registry.stage(args.stage)  # an unknown stage is an error with a did-you-mean
    if not args.html:
        with waiting(args, "compiling every stage for its models"):
            rows = audit(registry, stage=args.stage, model=args.model, coverage=args.coverage)
    else:
        from concurrent.futures import ThreadPoolExecutor

        from compiler.page.page import audit_page, registry_inputs

        # Hashing the input files (a megabyte of metadata) releases the GIL: it runs
        # beside the audit instead of after it.
        with ThreadPoolExecutor(max_workers=1) as pool, waiting(args, "compiling the audit"):
            hashing = pool.submit(registry_inputs, registry, getattr(args, "endpoints", None))
            rows = audit(registry, stage=args.stage, model=args.model, coverage=args.coverage)
            inputs = hashing.result()
        _write_page(args.html, audit_page(rows, registry, inputs=inputs))
        if args.html == "-":  # the page is standard output's document
            return EXIT_OK
    console = stdout_console(args)
    if console is not None:  # a terminal: the table fits its width
        from compiler.artifacts.audit import audit_table

        header, table, after = audit_table(rows, registry)
        print_table(console, header, table, wrap=len(header) - 1, wide=args.wide,
                    styles={2: _rung_style})  # fmt: skip
        for line in after:
            console.print(line)
    else:
        if args.json:
            print_document(audit_to_json(rows, registry,
                                         metadata=metadata_object(registry.catalog)) + "\n")
        else:
            print(render_audit(rows, registry))
    if not rows:
        _say_no_match(args, registry)
    return EXIT_OK


def _rung_style(cell: str) -> str | None:
    return {"error": "bold red", "n/a": "dim", "prompt": "yellow"}.get(cell)


def _say_no_match(args: argparse.Namespace, registry: Any) -> None:
    """A note for an audit whose filters (or models lists) leave no pair."""
    filters = " and ".join(f"{flag} {value!r}" for flag, value in
                           (("--stage", args.stage), ("--model", args.model)) if value is not None)
    if filters:
        listed = sorted({m for s in registry.stage_names() for m in registry.stage(s).models})
        hint = f" (the stages list {', '.join(listed[:6])}{', ...' if len(listed) > 6 else ''})"
        print_note(f"no stage/model pair matches {filters}{hint if listed else ''}")
    else:
        print_note("no stage lists a model: nothing to audit (add a models: list to a stage)")


def _write_page(path: str, text: str) -> None:
    """The one writer of ``audit --html`` and ``diff --html``, by the rules of ``lock
    --output``: ``-`` is standard output, anything else goes through ``write_page``."""
    from compiler.page.page import PageTargetError, write_page

    if path == "-":
        print_document(text)
        return
    try:
        write_page(text, path)
    except PageTargetError as exc:
        raise CliError(str(exc), EXIT_INPUT) from exc
    except OSError as exc:
        raise CliError(f"{path}: cannot write the page: {exc.strerror or exc}",
                       EXIT_INPUT) from exc
    print_note(f"wrote {path} ({len(text.encode('utf-8')):,} bytes)")


def _label(location: str, document: dict[str, Any]) -> str:
    text = str(document["metadata"]["text"])
    if text.split(" ", 1)[0] == Path(location).name:
        return text
    return f"{location} ({text})"


def _diff_page(
    args: argparse.Namespace, registries: dict[str, Any], documents: tuple[Any, Any],
    labels: tuple[str, str], changes: list[Any], pairs: int,
) -> None:
    """Write ``capc diff --html``: each side's rows come from its audit (a models list,
    with costs) or from its lock (no prices)."""
    from compiler.artifacts.audit import audit
    from compiler.page.page import diff_page, input_file, registry_inputs
    from compiler.page.page_rows import rows_from_lock

    sides, rows = [], []
    for name, location, document, label in zip(
            ("old", "new"), (args.old, args.new), documents, labels, strict=True):
        registry = registries.get(location) if len(registries) == 2 else None
        if registry is not None:
            rows.append(audit(registry))
            inputs = registry_inputs(registry, getattr(args, "endpoints", None))
        else:
            rows.append(rows_from_lock(document))
            inputs = [input_file("lock", location)]
        sides.append({"label": name, "text": label, "inputs": inputs})
    _write_page(args.html, diff_page(changes, rows[0], rows[1], sides=sides, pairs=pairs))


def _cmd_diff(args: argparse.Namespace) -> int:
    from compiler.artifacts.diff import count_pairs, diff_locks, load_locks, render_changes
    from compiler.artifacts.lock import LockFileError
    from compiler.cli.inputs import spooled

    registries: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="capc-diff-") as spool:
        # A pipe is read once, bounded, into a file: each side is tried as a models
        # list and then as a lock, which reads it twice.
        sides = spooled(args.old, Path(spool) / "old"), spooled(args.new, Path(spool) / "new")
        # Each side loads models.yaml and stages.yaml again: a pipe is read once, here.
        if args.models is not None:
            args.models = spooled(args.models, Path(spool) / "models.yaml")
        if args.stages is not None and spooled(args.stages, Path(spool) / "s") != args.stages:
            raise CliError(f"{args.stages}: capc diff reads --stages once per side, and "
                           "its contract paths are relative to its directory: give it as "
                           "a regular file", EXIT_INPUT)
        paths = dict(zip(sides, (args.old, args.new), strict=True))

        def registry_for(location: str) -> Any:
            name = paths.get(location, location)
            registries[name] = load_registry(
                argparse.Namespace(**{**vars(args), "metadata": location}))
            return registries[name]

        try:
            old, new = load_locks(*sides, registry_for)
        except LockFileError as exc:
            raise CliError(str(exc), EXIT_INPUT) from exc
        changes = diff_locks(old, new)
        old_label, new_label = _label(args.old, old), _label(args.new, new)
        pairs = count_pairs(old, new)
        if args.html:
            _diff_page(args, registries, (old, new), (old_label, new_label), changes, pairs)
            if args.html == "-":  # the page is standard output's document
                return EXIT_FAILED if changes else EXIT_OK
        if args.json:
            payload = {
                "old": old_label,
                "new": new_label,
                "pairs": pairs,
                "changed": bool(changes),
                "changes": [c.to_dict() for c in changes],
            }
            print_json(payload)
        else:
            print(render_changes(changes, old_label=old_label, new_label=new_label, pairs=pairs))
        return EXIT_FAILED if changes else EXIT_OK
