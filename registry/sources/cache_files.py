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
of being written into.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["OWN_FILES", "SWEEP_LIMIT", "foreign_entries", "sweep_orphans", "value_dirs"]

OWN_FILES = frozenset({"cache.db", "cache.db-wal", "cache.db-shm", "cache.db-journal"})
"""The database files a cache directory holds (diskcache's ``cache.db`` and SQLite's logs)."""

SWEEP_LIMIT = 10_000
"""The most value files one sweep examines (a store's sweep stays bounded in time); the
rest are left for the next store."""

_COMPILED = "compiled"  # compiler.artifacts.compile_cache's folder
_HEX2 = re.compile(r"[0-9a-f]{2}\Z")
_VALUE = re.compile(r"[0-9a-f]{28}\.val\Z")

_log = logging.getLogger("registry.sources.cache")


def _own(entry: os.DirEntry[str]) -> bool:
    if entry.name in OWN_FILES:
        return entry.is_file(follow_symlinks=False)
    if entry.name == _COMPILED or _HEX2.match(entry.name):
        return entry.is_dir(follow_symlinks=False)
    return False


def foreign_entries(directory: Path, *, limit: int = 3) -> list[str]:
    """Name up to ``limit`` entries directly in ``directory`` that capc did not create.

    Args:
        directory: a would-be cache directory.
        limit: stop after this many (the caller only names a few).

    Returns:
        Entry names, sorted (folders with a trailing ``/``); empty when ``directory``
        is absent, not a folder, empty, or holds only capc's own files.
    """
    found: list[str] = []
    try:
        with os.scandir(directory) as listing:
            for entry in listing:
                if not _own(entry):
                    found.append(entry.name + ("/" if entry.is_dir() else ""))
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
    only once it is empty. Nothing else in ``directory`` is ever touched.

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
