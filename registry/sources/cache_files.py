"""Which files in a cache directory are capc's own, and the sweep of leftover value files.

A cache directory holds only files capc writes: diskcache's database ``cache.db`` (with
SQLite's ``-wal``, ``-shm`` and ``-journal`` files beside it), the compile result cache
``compiled/`` (:mod:`compiler.artifacts.compile_cache`), and, written by older versions
(which stored values in files) or left by an interrupted store of theirs, diskcache value
files in its layout
``xx/yy/<28 hex digits>.val`` (``diskcache.Disk.filename``,
https://github.com/grantjenks/python-diskcache/blob/master/diskcache/core.py).

:func:`sweep_orphans` removes value files no database row refers to, and nothing else:
no other file, no folder that still holds anything. :func:`foreign_entries` lists what
else a directory holds, so that a ``CAPC_CACHE_DIR`` set by mistake to a project
folder, ``.`` or ``~`` is refused (:class:`registry.sources.settings.Settings`) instead
of being written into. :func:`database_problem` tells diskcache's ``cache.db`` (its
``Settings`` and ``Cache`` tables, with diskcache's columns, and no other table) from
another application's SQLite file of the same name: a directory whose ``cache.db`` is not
diskcache's is refused too, and the value-file layout counts as capc's only beside a
verified ``cache.db``. Symbolic links are never followed (a symlinked ``compiled/`` or
layout folder is foreign).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = [
    "DISKCACHE_TABLES",
    "OWN_FILES",
    "SWEEP_LIMIT",
    "database_problem",
    "foreign_entries",
    "sweep_orphans",
    "value_dirs",
]

OWN_FILES = frozenset({"cache.db", "cache.db-wal", "cache.db-shm", "cache.db-journal"})
"""The database files a cache directory holds (diskcache's ``cache.db`` and SQLite's logs)."""

SWEEP_LIMIT = 10_000
"""The most value files one sweep examines (a store's sweep stays bounded in time); the
rest are left for the next store."""

DISKCACHE_TABLES: dict[str, frozenset[str]] = {
    "Settings": frozenset({"key", "value"}),
    "Cache": frozenset({
        "rowid", "key", "raw", "store_time", "expire_time", "access_time", "access_count",
        "tag", "size", "mode", "filename", "value",
    }),
}
"""The tables (and their columns) of diskcache's ``cache.db``
(``diskcache.Cache.__init__``, https://github.com/grantjenks/python-diskcache/blob/master/diskcache/core.py)."""

_COMPILED = "compiled"  # compiler.artifacts.compile_cache's folder
_HEX2 = re.compile(r"[0-9a-f]{2}\Z")
_VALUE = re.compile(r"[0-9a-f]{28}\.val\Z")

_log = logging.getLogger("registry.sources.cache")


def database_problem(directory: Path) -> str | None:
    """Why ``directory/cache.db`` is not diskcache's database, else None.

    Read only (SQLite ``mode=ro``), never written. None when the file is absent or empty
    (nothing there to damage: diskcache creates its tables), or holds only tables of
    :data:`DISKCACHE_TABLES`, with their columns: some may be missing, since a process
    opening a new cache creates the file first and its tables one by one.

    Returns:
        A reason such as ``"cache.db is a symbolic link"``, ``"cache.db holds tables
        diskcache does not write (users)"`` or ``"cache.db is not an SQLite database
        (...)"``.
    """
    path = Path(directory) / "cache.db"
    if path.is_symlink():
        return "cache.db is a symbolic link"
    try:
        if not path.exists() or (path.is_file() and path.stat().st_size == 0):
            return None
    except OSError:
        return None
    if not path.is_file():
        return "cache.db is not a file"
    found = _tables(path)
    if isinstance(found, str):
        return found
    if found is None:
        return None  # cannot be read at all: the open itself reports that
    names, columns = found
    others = sorted(set(names) - set(DISKCACHE_TABLES))
    if others:
        return (f"cache.db holds tables diskcache does not write ({', '.join(others[:3])}): "
                "it is another application's database")
    for table, wanted in DISKCACHE_TABLES.items():
        # A table not there yet is one diskcache is about to create: another process is
        # opening the cache for the first time (its file exists, with no or some tables).
        if table in columns and not wanted <= columns[table]:
            missing = ", ".join(sorted(wanted - columns[table]))
            return f"cache.db's {table} table lacks diskcache's columns {missing}"
    return None


def _tables(path: Path) -> tuple[list[str], dict[str, frozenset[str]]] | str | None:
    """The tables of ``path`` and the columns of diskcache's; a reason when it is not an
    SQLite database; None when it cannot be opened (unreadable). Read-only, and
    ``immutable=1`` when a read-only folder refuses SQLite's log files
    (https://www.sqlite.org/uri.html)."""
    import sqlite3

    for flags in ("mode=ro", "mode=ro&immutable=1"):
        try:
            con = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True, timeout=5.0)
            try:
                names = [n for (n,) in con.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )]  # fmt: skip
                columns = {
                    name: frozenset(r[1] for r in con.execute(f'PRAGMA table_info("{name}")'))
                    for name in names if name in DISKCACHE_TABLES
                }  # fmt: skip
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                return f"cache.db is not an SQLite database ({exc})"
            continue
        return names, columns
    return None


def _own(entry: os.DirEntry[str], verified: bool) -> bool:
    if entry.name in OWN_FILES:
        return entry.is_file(follow_symlinks=False)
    if entry.name == _COMPILED or (verified and _HEX2.match(entry.name)):
        return entry.is_dir(follow_symlinks=False)
    return False


def foreign_entries(directory: Path, *, limit: int = 3) -> list[str]:
    """Name up to ``limit`` entries directly in ``directory`` that capc did not create.

    Args:
        directory: a would-be cache directory.
        limit: stop after this many (the caller only names a few).

    Returns:
        Entry names, sorted (folders with a trailing ``/``); empty when ``directory``
        is absent, not a folder, empty, or holds only capc's own files (the ``xx/``
        value-file folders count as capc's only beside a ``cache.db`` that
        :func:`database_problem` accepts).
    """
    found: list[str] = []
    verified = (Path(directory) / "cache.db").is_file() and database_problem(directory) is None
    try:
        with os.scandir(directory) as listing:
            for entry in listing:
                if not _own(entry, verified):
                    found.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
                    if len(found) >= limit:
                        break
    except OSError:
        return []
    return sorted(found)


def value_dirs(directory: Path) -> list[Path]:
    """The ``xx`` folders of diskcache's value-file layout directly in ``directory``."""
    try:
        with os.scandir(directory) as listing:
            return sorted(
                Path(e.path)
                for e in listing
                if _HEX2.match(e.name) and e.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def _value_files(directory: Path, limit: int) -> list[str]:
    """Relative names (``xx/yy/<hex>.val``) of up to ``limit`` value files."""
    found: list[str] = []
    for first in value_dirs(directory):
        for second in sorted(first.iterdir()):
            if not (_HEX2.match(second.name) and second.is_dir() and not second.is_symlink()):
                continue
            for file in sorted(second.iterdir()):
                if _VALUE.match(file.name) and file.is_file() and not file.is_symlink():
                    found.append(f"{first.name}/{second.name}/{file.name}")
                    if len(found) >= limit:
                        return found
    return found


def sweep_orphans(
    directory: Path, referenced: Callable[[], Iterable[str]], *, limit: int = SWEEP_LIMIT
) -> int:
    """Remove diskcache value files that no database row refers to.

    Only files named as diskcache names them (``xx/yy/<28 hex digits>.val``, ``xx`` and
    ``yy`` two lowercase hex digits) are candidates; a folder of that layout is removed
    only once it is empty. Nothing else in ``directory`` is ever touched, no symbolic link
    followed, and nothing at all is removed unless ``directory/cache.db`` is diskcache's
    (:func:`database_problem`).

    Args:
        directory: the cache directory.
        referenced: returns the ``filename`` column of every row (relative paths,
            either separator); called after the candidates are listed, so a file
            written while listing is never taken for an orphan.
        limit: the most value files examined (see :data:`SWEEP_LIMIT`).

    Returns:
        How many files were removed.

    Raises:
        OSError: a folder of the layout cannot be listed.
    """
    if not (directory / "cache.db").is_file() or database_problem(directory) is not None:
        return 0  # not a verified cache: no file of the layout is ours
    candidates = _value_files(directory, limit)
    if not candidates:
        return 0
    keep = {name.replace(os.sep, "/") for name in referenced()}
    removed = 0
    for name in candidates:
        if name in keep:
            continue
        try:
            (directory / name).unlink()
        except FileNotFoundError:
            continue
        removed += 1
        for parent in ((directory / name).parent, (directory / name).parent.parent):
            try:
                parent.rmdir()  # only when empty
            except OSError:
                break
    if removed:
        _log.info("cache %s: removed %d leftover value file(s)", directory, removed)
    return removed
