"""Open :mod:`diskcache` databases, shared per directory for the life of the process.

Opening a ``diskcache.Cache`` costs 7-10 ms on a disk: it writes its settings to the
SQLite database on every open, and closing the last connection checkpoints the
write-ahead log to disk. A process that reads the metadata cache more than once (a
long-running pipeline that reloads its registry, a test suite, the benchmark) keeps
the database open instead, as an HTTP client keeps its connections.

Safety: a handle is reused only while the database file is the one it opened (same
device and inode), so a cache directory that was deleted or replaced is opened anew.
``diskcache`` itself opens one SQLite connection per thread and a new one after a
fork. At most :data:`POOL_SIZE` directories stay open (least recently used closed
first), and every handle is closed when the interpreter exits.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

__all__ = ["POOL_SIZE", "close_all", "shared_cache"]

POOL_SIZE = 4
"""How many cache directories may stay open at once."""

_OPEN: OrderedDict[str, tuple[Any, tuple[int, int] | None]] = OrderedDict()
_LOCK = threading.Lock()


def _identity(directory: str) -> tuple[int, int] | None:
    """The (device, inode) of the directory's database file, ``None`` when absent."""
    from diskcache.core import DBNAME

    try:
        stat = os.stat(os.path.join(directory, DBNAME))
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def shared_cache(directory: Path, *, timeout: float) -> Any:
    """Return the open ``diskcache.Cache`` of ``directory``, opening it when needed.

    Args:
        directory: the cache directory (created by diskcache when missing).
        timeout: seconds SQLite waits for another process's write lock.

    Returns:
        The cache; callers must not close it (:func:`close_all` does).

    Raises:
        OSError, sqlite3.Error: the directory or database cannot be opened.
    """
    import diskcache

    key = str(directory)
    with _LOCK:
        found = _OPEN.get(key)
        if found is not None:
            cache, opened = found
            if opened is not None and _identity(key) == opened:
                _OPEN.move_to_end(key)
                return cache
            del _OPEN[key]
            cache.close()
        cache = diskcache.Cache(key, timeout=timeout)
        _OPEN[key] = (cache, _identity(key))
        while len(_OPEN) > POOL_SIZE:
            _, (oldest, _) = _OPEN.popitem(last=False)
            oldest.close()
        return cache


def close_all() -> None:
    """Close every shared handle (they reopen on next use); runs at interpreter exit."""
    with _LOCK:
        while _OPEN:
            _, (cache, _) = _OPEN.popitem()
            cache.close()


atexit.register(close_all)
