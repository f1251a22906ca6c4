"""A process-safe disk cache of fetched metadata, guarded against bad payloads.

Entries are kept in a :mod:`diskcache` directory (SQLite plus files), keyed by the
source URL. Each entry holds the raw response body, when it was fetched, the source URL,
what it is (a models list or one model's endpoints) and how many models or endpoints
it lists. The value is stored as bytes, never pickled (:mod:`registry.sources.cache_entry` has
the format); a models list also keeps its core fields
(:func:`registry.metadata.core.core_json`, 15-30% of the bytes) with their own SHA-256,
so a load reads those instead of scanning the whole body.

Before a new payload replaces a cached one it must pass :meth:`MetadataCache.store`'s
integrity guard: it decodes as JSON, parses with :func:`registry.metadata.parse.parse_models`
or :func:`registry.metadata.parse.parse_endpoints`, lists at least one model (endpoint), and,
for a models list, did not shrink by more than ``max_shrink`` against the cached copy.
The comparison and the write happen in one diskcache transaction, so several processes
refreshing at once leave one complete entry, never a mix.

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
from registry.metadata.parse import parse_endpoints, parse_models, parse_models_json
from registry.metadata.shapes import EndpointList, ModelInfo
from registry.sources.cache_entry import CacheEntry, Kind

__all__ = ["CacheError", "MetadataCache", "RejectedPayload", "check_payload"]

#: A child of the ``registry.sources`` logger (docs/metadata.md), named here so a move of
#: this module never renames it.
_log = logging.getLogger("registry.sources.cache")

_SQLITE_TIMEOUT = 30.0  # seconds another process may hold the cache's write lock


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
        json.loads(payload.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RejectedPayload(f"not UTF-8 text (byte {exc.start})", source=source) from exc
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(exc.doc.rstrip())
        truncated = at_end or exc.msg.startswith("Unterminated string")
        hint = ", looks truncated" if truncated else ""
        raise RejectedPayload(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}{hint}", source=source
        ) from exc
    raise RejectedPayload("invalid JSON", source=source)  # pragma: no cover - parsers agree


def check_payload(
    kind: Kind, payload: bytes, *, source: str
) -> list[ModelInfo] | EndpointList:
    """Decode and parse a payload, requiring at least one model or endpoint.

    Args:
        kind: ``"models"`` or ``"endpoints"``.
        payload: the response body.
        source: the URL, for messages.

    Returns:
        The parsed models (for ``"models"``) or endpoint list (for ``"endpoints"``).

    Raises:
        RejectedPayload: not JSON, the wrong shape, a field of an impossible type, or
            empty.
    """
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

    # -- plumbing ---------------------------------------------------------------

    def _open(self) -> Any:
        if self._cache is None:
            import diskcache

            with self._errors("open"):
                self._cache = diskcache.Cache(str(self.directory), timeout=_SQLITE_TIMEOUT)
        return self._cache

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Map diskcache, SQLite and OS errors to :class:`CacheError`."""
        import diskcache

        try:
            yield
        except (OSError, sqlite3.Error, diskcache.Timeout) as exc:
            raise CacheError(
                f"cache {self.directory}: cannot {action}: {exc}", source=str(self.directory)
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
            blob = cache.get(url)
            if blob is None and url in cache:
                # A concurrent store replaced the entry's file between diskcache reading
                # its row and its file, which diskcache reports as a miss: read again
                # while holding the write lock.
                with cache.transact():
                    blob = cache.get(url)
        if blob is None:
            return None
        if not isinstance(blob, bytes):
            _log.warning("cache %s: entry for %s is not ours; ignored", self.directory, url)
            return None
        try:
            return CacheEntry.from_bytes(blob)
        except ValueError as exc:  # from_bytes raises ValueError for any malformed entry
            _log.warning(
                "cache %s: entry for %s is damaged (%s); ignored", self.directory, url, exc
            )
            return None

    def store(
        self,
        url: str,
        payload: bytes,
        *,
        kind: Kind,
        fetched_at: datetime,
        max_shrink: float,
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

        Returns:
            The stored entry and the parsed payload.

        Raises:
            RejectedPayload: the payload failed the guard; the cached copy is untouched.
            CacheError: the cache cannot be read or written.
        """
        parsed = check_payload(kind, payload, source=url)
        entry = CacheEntry(
            source=url,
            kind=kind,
            fetched_at=fetched_at,
            count=_count(parsed),
            payload=payload,
            core=core_json(payload) if kind == "models" else None,
        )
        cache = self._open()
        with self._errors("write"), cache.transact():
            current = self.get(url)
            if (
                kind == "models"
                and current is not None
                and current.kind == "models"
                and entry.count < (1.0 - max_shrink) * current.count
            ):
                shrink = 1.0 - entry.count / current.count
                raise RejectedPayload(
                    f"{entry.count} models vs {current.count} cached: shrank by "
                    f"{shrink:.0%}, more than the {max_shrink:.0%} allowed",
                    source=url,
                )
            cache.set(url, entry.to_bytes())
        return entry, parsed

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
        cache = self._open()
        with self._errors("clear"):
            return int(cache.clear())
