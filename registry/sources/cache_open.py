"""Opening the metadata cache's database, read-write or, when that is refused, read-only.

:func:`open_diskcache` opens the :mod:`diskcache` directory read-write. When the directory or
its ``cache.db`` cannot be written (a read-only mount, files of another user, ``chmod
a-w``, a full disk: diskcache writes its settings on every open, so a full disk fails
the open itself) but the database is there and readable, it returns a :class:`ReadOnlyCache`
instead: the same read calls :class:`~registry.sources.cache.MetadataCache` makes
(``get``, ``in``, ``iterkeys``, ``volume``, ``transact``), over SQLite opened with
``mode=ro`` (or ``immutable=1`` when a write-ahead log cannot be created next to it;
https://www.sqlite.org/uri.html). Every write is refused by the caller, which checks
:attr:`ReadOnlyCache.read_only` and names the reason the read-write open gave.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "DISKCACHE_SETTINGS",
    "SQLITE_TIMEOUT",
    "ReadOnlyCache",
    "disk_full_advice",
    "is_disk_full",
    "open_diskcache",
]

SQLITE_TIMEOUT = 30.0
"""Seconds another process may hold the cache's write lock."""

DISKCACHE_SETTINGS: dict[str, object] = {
    "disk_min_file_size": 2**40,
    "eviction_policy": "none",
}
"""diskcache settings of every open (persisted in its Settings table): values inline in
SQLite (2**40 bytes is above anything ``CAPC_MAX_RESPONSE_BYTES`` allows), no eviction."""

_DATABASE = "cache.db"  # diskcache's file name in the directory
_MODE_RAW, _MODE_BINARY = 1, 2  # diskcache's Cache.mode: bytes inline, bytes in a file


def open_diskcache(directory: Path) -> Any:
    """Open ``directory`` as a diskcache, read-write, else read-only.

    Returns:
        A ``diskcache.Cache``, or a :class:`ReadOnlyCache` when the read-write open
        failed with an OS or SQLite error and ``cache.db`` can still be read.

    Raises:
        sqlite3.DatabaseError: ``cache.db`` is there but is not diskcache's database
            (:func:`registry.sources.cache_files.database_problem`); nothing is opened.
        OSError, sqlite3.Error, diskcache.Timeout: the read-write open failed and the
            database cannot be read either (absent, unreadable, not a database); the
            read-write error is raised.
    """
    import diskcache

    from registry.sources.cache_files import database_problem

    if (problem := database_problem(directory)) is not None:  # never write into it
        raise sqlite3.DatabaseError(f"{directory} is not a capc cache: {problem}")
    try:
        return diskcache.Cache(str(directory), timeout=SQLITE_TIMEOUT, **DISKCACHE_SETTINGS)
    except (OSError, sqlite3.Error) as exc:
        reader = ReadOnlyCache.open(directory, reason=f"{type(exc).__name__}: {exc}")
        if reader is None:
            raise
        reader.disk_full = is_disk_full(exc, directory)
        return reader


def disk_full_advice(reason: str) -> str:
    """The one wording of a full disk, whatever failed (the open, or a store):
    ``its disk is full (REASON); free some space, or set CAPC_CACHE_DIR ...``."""
    return (
        f"its disk is full ({reason}); free some space, or set CAPC_CACHE_DIR "
        "to a directory on another disk"
    )


def is_disk_full(exc: BaseException, directory: Path) -> bool:
    """Whether a failed open or write is a full disk (ENOSPC, EDQUOT, SQLite's "disk is full"),
    or an I/O error on a file system with no free space left."""
    import errno
    import shutil

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    if "disk is full" in text or "no space left" in text:
        return True
    try:
        return "disk i/o error" in text and shutil.disk_usage(directory).free == 0
    except OSError:
        return False


class ReadOnlyCache:
    """Read access to a diskcache database that cannot be written.

    Attributes:
        directory: the cache directory.
        reason: why the read-write open failed (shown when a write is refused).
        disk_full: the open failed because the disk is full (else: not writable).
        read_only: always True (a ``diskcache.Cache`` has no such attribute).
    """

    read_only = True

    def __init__(self, directory: Path, connection: sqlite3.Connection, reason: str) -> None:
        self.directory = directory
        self.reason = reason
        self.disk_full = False
        self._con = connection

    @property
    def why(self) -> str:
        """Why nothing can be written, and what to do about it (for error messages)."""
        if self.disk_full:
            return disk_full_advice(self.reason)
        return (
            f"it is read-only ({self.reason}); make it writable, or set CAPC_CACHE_DIR "
            "to a writable directory"
        )

    @classmethod
    def open(cls, directory: Path, *, reason: str) -> ReadOnlyCache | None:
        """Open ``directory/cache.db`` read-only; None when it is absent or unreadable."""
        path = Path(directory) / _DATABASE
        if not path.is_file():
            return None
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                con = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True,
                                      timeout=SQLITE_TIMEOUT, check_same_thread=False)  # fmt: skip
                con.execute("SELECT key FROM Cache LIMIT 1").fetchall()
            except sqlite3.Error:
                continue
            return cls(Path(directory), con, reason)
        return None

    def get(self, key: str, read: bool = False) -> object:
        """Return the stored value of ``key`` (bytes, or another stored object), else None."""
        row = self._con.execute(
            "SELECT mode, filename, value, expire_time FROM Cache WHERE key = ? AND raw = 1",
            (key,),
        ).fetchone()
        if row is None:
            return None
        mode, filename, value, expires = row
        if expires is not None and expires < time.time():
            return None
        if mode == _MODE_RAW and isinstance(value, bytes):
            return value
        if mode == _MODE_BINARY and filename:
            try:
                return (self.directory / filename).read_bytes()
            except OSError:
                return None
        return value  # text or a pickle: not an entry of ours; the caller ignores it

    def __contains__(self, key: object) -> bool:
        row = self._con.execute("SELECT 1 FROM Cache WHERE key = ? AND raw = 1", (key,))
        return row.fetchone() is not None

    def iterkeys(self) -> Iterator[object]:
        """Yield every stored key, in rowid order."""
        for (key,) in self._con.execute("SELECT key FROM Cache ORDER BY rowid").fetchall():
            yield key

    def volume(self) -> int:
        """Return the database's size in bytes plus the files it refers to."""
        pages = self._con.execute("PRAGMA page_count").fetchone()[0]
        size = self._con.execute("PRAGMA page_size").fetchone()[0]
        files = self._con.execute("SELECT COALESCE(SUM(size), 0) FROM Cache").fetchone()[0]
        return int(pages * size + files)

    @contextmanager
    def transact(self) -> Iterator[None]:
        """Nothing to lock: no one can write through this handle."""
        yield

    def close(self) -> None:
        """Close the connection."""
        self._con.close()
