"""A process-safe disk cache of fetched metadata, guarded against bad payloads.

Entries are kept in a :mod:`diskcache` directory (SQLite plus files), keyed by the
source URL. Each entry holds the raw response body, when it was fetched, the source URL,
what it is (a models list or one model's endpoints) and how many models or endpoints
it lists. The value is stored as bytes, never pickled (:mod:`registry.sources.cache_entry` has
the format); a models list also keeps its core fields and where each model's entry sits
(:func:`registry.metadata.core.core_json`, 15-30% of the bytes) with their own SHA-256,
so a load reads those instead of scanning the whole body, and a full model is decoded
from its own entry.

Before a new payload replaces a cached one it must pass :meth:`MetadataCache.store`'s
integrity guard: it decodes as JSON, parses with :func:`registry.metadata.parse.parse_models`
or :func:`registry.metadata.parse.parse_endpoints`, lists at least one model (endpoint), and,
for a models list, did not shrink by more than ``max_shrink`` against the cached copy.
The comparison and the write happen in one diskcache transaction, so several processes
refreshing at once leave one complete entry, never a mix.

**The write cannot lose the last good copy.** Every value is kept inside the SQLite
database (``disk_min_file_size`` above any payload the fetcher accepts), so replacing an
entry is one SQLite transaction, committed with ``synchronous=FULL``: at every instant
either the old row or the new one is the committed one. Nothing is ever evicted
(``eviction_policy="none"``), so no entry can push another out. An entry an older
version stored in a file is replaced in a transaction of its own, which commits before
diskcache removes the old file; files no row refers to (left by a crash of an older
version) are removed after a successful store. ``tests/test_cache_crash.py`` kills the
writer before and after each of these operations in turn.

A populated cache that cannot be written (read-only, or on a full disk) is still read
(:mod:`registry.sources.cache_open`); a store or clear into it is a :class:`CacheError`
saying so.

:mod:`diskcache` is imported when a cache is opened, not when this module is imported.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from registry.errors import MetadataError
from registry.metadata.core import core_json
from registry.metadata.parse import (
    parse_endpoints,
    parse_models,
    parse_models_json,
    payload_problem,
)
from registry.metadata.shapes import EndpointList, ModelInfo
from registry.sources.bounds import DEFAULT_MAX_JSON_DEPTH, check_depth
from registry.sources.cache_entry import CacheEntry, Kind
from registry.sources.cache_files import sweep_orphans, value_dirs
from registry.sources.cache_open import disk_full_advice, is_disk_full, open_diskcache

__all__ = ["CacheError", "MetadataCache", "RejectedPayload", "check_payload", "check_shrink"]

#: A child of the ``registry.sources`` logger (docs/metadata.md), named here so a move of
#: this module never renames it.
_log = logging.getLogger("registry.sources.cache")

_SYNC_FULL, _SYNC_NORMAL = 2, 1  # PRAGMA synchronous: FULL for a store, NORMAL otherwise


class CacheError(MetadataError):
    """The cache directory cannot be opened, read or written."""


class RejectedPayload(MetadataError):
    """A fetched payload failed the integrity guard and was not cached.

    Attributes:
        reason: what was wrong, e.g. ``"not JSON (looks like an HTML page)"`` or
            ``"41 models vs 414 cached: shrank by 90%, more than the 50% allowed"``.
    """

    def __init__(self, reason: str, *, source: str) -> None:
        super().__init__(f"{source}: payload rejected: {reason}", source=source)
        self.reason = reason


def _decode_json(payload: bytes, *, source: str) -> object:
    """Decode a response body as JSON, or raise :class:`RejectedPayload` saying why."""
    try:
        return from_json(payload)
    except ValueError:
        pass
    head = payload.lstrip()[:200].lower()
    if head.startswith(b"<") or b"<html" in head:
        raise RejectedPayload("not JSON (looks like an HTML page)", source=source)
    try:
        return json.loads(payload.decode("utf-8"))  # deeper than pydantic-core's 200 levels
    except RecursionError as exc:  # only below MAX_JSON_DEPTH_CAP's headroom
        raise RejectedPayload("nested too deeply to parse", source=source) from exc
    except UnicodeDecodeError as exc:
        raise RejectedPayload(f"not UTF-8 text (byte {exc.start})", source=source) from exc
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(exc.doc.rstrip())
        truncated = at_end or exc.msg.startswith("Unterminated string")
        hint = ", looks truncated" if truncated else ""
        raise RejectedPayload(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}{hint}", source=source
        ) from exc


def check_payload(
    kind: Kind, payload: bytes, *, source: str, max_depth: int = DEFAULT_MAX_JSON_DEPTH
) -> list[ModelInfo] | EndpointList:
    """Decode and parse a payload, requiring at least one model or endpoint.

    Args:
        kind: ``"models"`` or ``"endpoints"``.
        payload: the response body.
        source: the URL, for messages.
        max_depth: the deepest JSON nesting accepted, checked before any parser runs
            (``CAPC_MAX_JSON_DEPTH``).

    Returns:
        The parsed models (for ``"models"``) or endpoint list (for ``"endpoints"``).

    Raises:
        RejectedPayload: nested too deeply, not JSON, a non-finite number, a duplicate
            model id, the wrong shape, a field of an impossible type, or empty.
    """
    unfit = check_depth(payload, max_depth) or payload_problem(payload, models=kind == "models")
    if unfit is not None:
        raise RejectedPayload(unfit, source=source)
    if kind == "models":
        fast = parse_models_json(payload)
        if fast:
            return fast
    data = _decode_json(payload, source=source)
    try:
        if kind == "models":
            models = parse_models(data, source=source)
            if not models:
                raise RejectedPayload("the models list is empty", source=source)
            return models
        endpoints = parse_endpoints(data, source=source)
    except RejectedPayload:
        raise
    except MetadataError as exc:
        reason = str(exc).removeprefix(f"{source}: ")
        raise RejectedPayload(reason, source=source) from exc
    if not endpoints.endpoints:
        raise RejectedPayload("the model lists no endpoints", source=source)
    return endpoints


def _read(cache: Any, url: str) -> tuple[object, bool]:
    """Return the stored value of ``url`` (``None`` when absent) and whether it is kept
    in a file (an entry an older version wrote) rather than inline."""
    value = cache.get(url, read=True)
    if value is None or isinstance(value, bytes):
        return value, False
    if not hasattr(value, "read"):
        return value, False
    with value:
        return value.read(), True


def check_shrink(
    entry: CacheEntry | Any, current: CacheEntry | None, max_shrink: float, min_models: int
) -> None:
    """Raise :class:`RejectedPayload` when a models list (``entry``: its ``kind``,
    ``count`` and ``source``) shrank implausibly against the ``current`` copy."""
    if entry.kind != "models":
        return
    if current is None or current.kind != "models":
        if entry.count < min_models:
            raise RejectedPayload(
                f"{entry.count} models, fewer than the {min_models} required with no "
                "cached copy to compare with (CAPC_MIN_MODELS)",
                source=entry.source,
            )
        return
    if entry.count < (1.0 - max_shrink) * current.count:
        shrink = 1.0 - entry.count / current.count
        raise RejectedPayload(
            f"{entry.count} models vs {current.count} cached: shrank by "
            f"{shrink:.0%}, more than the {max_shrink:.0%} allowed",
            source=entry.source,
        )


def _count(parsed: list[ModelInfo] | EndpointList) -> int:
    return len(parsed.endpoints) if isinstance(parsed, EndpointList) else len(parsed)


class MetadataCache:
    """The metadata cache in one directory (safe to share between processes).

    Args:
        directory: the cache directory; created when first needed.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._cache: Any = None
        self.damaged: dict[str, str] = {}  # key -> why its entry was ignored (get())

    # -- plumbing ---------------------------------------------------------------

    def _open(self) -> Any:
        if self._cache is None:
            with self._errors("open"):  # read-only when it cannot be written (cache_open)
                self._cache = open_diskcache(self.directory)
        return self._cache

    def _writable(self, action: str) -> Any:
        cache = self._open()
        if getattr(cache, "read_only", False):
            raise CacheError(
                f"cache {self.directory}: cannot {action}: {cache.why}",
                source=str(self.directory),
            )
        return cache

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Map diskcache, SQLite and OS errors to :class:`CacheError`."""
        import diskcache

        try:
            yield
        except (OSError, sqlite3.Error, diskcache.Timeout) as exc:
            why = f"{exc}"
            if is_disk_full(exc, self.directory):
                why = disk_full_advice(f"{type(exc).__name__}: {exc}")
            raise CacheError(
                f"cache {self.directory}: cannot {action}: {why}", source=str(self.directory)
            ) from exc

    def close(self) -> None:
        """Close the underlying database connection (the cache can be reopened)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> MetadataCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- entries ----------------------------------------------------------------

    def get(self, url: str) -> CacheEntry | None:
        """Return the cached entry for ``url``.

        Args:
            url: the source URL (the key).

        Returns:
            The entry, or ``None`` when there is none or it is unreadable (a damaged
            entry is logged and treated as absent).

        Raises:
            CacheError: the cache directory cannot be opened or read.
        """
        cache = self._open()
        with self._errors("read"):
            blob, _ = _read(cache, url)
            if blob is None and url in cache:
                # A concurrent store replaced the entry's file between diskcache reading
                # its row and its file, which diskcache reports as a miss: read again
                # while holding the write lock.
                with cache.transact():
                    blob, _ = _read(cache, url)
        return self._decode(url, blob)

    def _decode(self, url: str, blob: object) -> CacheEntry | None:
        if blob is None:
            return None
        if not isinstance(blob, bytes):
            _log.warning("cache %s: entry for %s is not ours; ignored", self.directory, url)
            return None
        try:
            return CacheEntry.from_bytes(blob)
        except ValueError as exc:  # from_bytes raises ValueError for any malformed entry
            _log.warning("cache %s: entry for %s is damaged (%s); ignored", self.directory, url,
                         exc)  # fmt: skip
            self.damaged[url] = str(exc)
            return None

    def store(
        self,
        url: str,
        payload: bytes,
        *,
        kind: Kind,
        fetched_at: datetime,
        max_shrink: float,
        min_models: int = 1,
        max_depth: int = DEFAULT_MAX_JSON_DEPTH,
    ) -> tuple[CacheEntry, list[ModelInfo] | EndpointList]:
        """Check a fetched payload and, when it passes, make it the cached copy.

        Args:
            url: the source URL (the key).
            payload: the response body.
            kind: ``"models"`` or ``"endpoints"``.
            fetched_at: when it was fetched (UTC).
            max_shrink: fraction 0-1; a models list with fewer than
                ``(1 - max_shrink)`` times the cached count is rejected. Endpoint lists
                are small and change legitimately, so they are not compared.
            min_models: with no cached models list to compare with, a models list
                with fewer models is rejected (``CAPC_MIN_MODELS``; the seed's count by
                default, see :func:`registry.sources.fallback.obtain`).
            max_depth: see :func:`check_payload`.

        Returns:
            The stored entry and the parsed payload.

        Raises:
            RejectedPayload: the payload failed the guard; the cached copy is untouched.
            CacheError: the cache cannot be read or written.
        """
        parsed = check_payload(kind, payload, source=url, max_depth=max_depth)
        entry = CacheEntry(
            source=url,
            kind=kind,
            fetched_at=fetched_at,
            count=_count(parsed),
            payload=payload,
            core=core_json(payload) if kind == "models" else None,
        )
        blob = entry.to_bytes()
        cache = self._writable("store")
        with self._errors("store"):
            cache.reset("sqlite_synchronous", _SYNC_FULL, update=False)
            try:
                with cache.transact():
                    stored, in_file = _read(cache, url)
                    check_shrink(entry, self._decode(url, stored), max_shrink, min_models)
                    if not in_file:
                        cache.set(url, blob)
                if in_file:
                    # An older version's entry in a file: diskcache removes that file
                    # before an enclosing transaction commits, so write in a transaction
                    # of its own, which commits first.
                    cache.set(url, blob)
            finally:
                cache.reset("sqlite_synchronous", _SYNC_NORMAL, update=False)
            self._remove_orphans(cache)
        return entry, parsed

    def _remove_orphans(self, cache: Any) -> None:
        """Remove diskcache value files no row refers to (:func:`sweep_orphans`): values
        are stored inline, so they exist only where an older version stored files."""
        if not value_dirs(self.directory):
            return
        with cache.transact():
            sql = "SELECT filename FROM Cache WHERE filename IS NOT NULL"
            sweep_orphans(self.directory, lambda: [n for (n,) in cache._sql(sql).fetchall()])

    def entries(self) -> list[CacheEntry]:
        """Return every readable entry, ordered by source URL.

        Returns:
            The entries (damaged ones are skipped).

        Raises:
            CacheError: the cache cannot be opened or read.
        """
        cache = self._open()
        with self._errors("read"):
            keys = [k for k in cache.iterkeys() if isinstance(k, str)]
        found = [e for e in (self.get(k) for k in sorted(keys)) if e is not None]
        return found

    def volume(self) -> int:
        """Return the cache's size on disk in bytes (database plus files)."""
        cache = self._open()
        with self._errors("read"):
            return int(cache.volume())

    def clear(self) -> int:
        """Remove every entry.

        Returns:
            How many entries were removed.

        Raises:
            CacheError: the cache cannot be opened or written.
        """
        cache = self._writable("clear")
        with self._errors("clear"):
            return int(cache.clear())
