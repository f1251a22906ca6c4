"""The fallback order for one metadata URL: fresh cache -> fetch -> stale cache.

:func:`obtain` is the step :func:`registry.sources.load.load_metadata` and
:func:`registry.sources.load.load_endpoints_for` share (they add the bundled seed, or
``None``, when it finds nothing). It never raises for network or cache faults: the
:class:`Attempt` it returns says what was served and why, in one line. Messages are
logged under ``registry.sources``, the logger callers know.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING

from registry.errors import MetadataError
from registry.jsondepth import MAX_JSON_DEPTH_CAP
from registry.metadata.catalog import format_age
from registry.metadata.lazy import index_models, lazy_models
from registry.metadata.shapes import EndpointList, ModelInfo

if TYPE_CHECKING:
    import httpx

    from registry.sources.cache_entry import CacheEntry, Kind
    from registry.sources.fetch import Progress, Sleep
    from registry.sources.settings import Settings

__all__ = ["Attempt", "cache_key", "obtain", "parsed_entry", "reporting_progress"]

_log = logging.getLogger("registry.sources")

_PROGRESS: ContextVar[Progress | None] = ContextVar("capc_progress", default=None)


@contextmanager
def reporting_progress(progress: Progress | None) -> Iterator[None]:
    """Send a line before every request made in this context to ``progress``.

    Used by the CLI to show long fetches on a terminal when the registry is loaded by
    code that does not take a ``progress`` argument. An explicit ``progress`` argument
    of :func:`registry.sources.load.load_metadata` or
    :func:`registry.sources.load.load_endpoints_for` wins.

    Args:
        progress: the callback, or ``None`` for no progress.

    Yields:
        Nothing; the callback is active until the block ends.
    """
    token = _PROGRESS.set(progress)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ")


class Attempt:
    """What happened while getting one payload: the data, the cache entry, a note."""

    def __init__(self) -> None:
        self.entry: CacheEntry | None = None
        self.parsed: Mapping[str, ModelInfo] | EndpointList | None = None
        self.origin = ""
        self.stale = False
        self.fetched_at: datetime | None = None
        self.note: str | None = None
        self.store_error: str | None = None  # a fetched payload served but not cached
        self.short_deadline: float | None = None  # CAPC_STALE_DEADLINE applied (seconds)
        self.unusable = False  # a cached copy exists but no longer parses (logged)
        self.corrupt: str | None = None  # why a stored entry was ignored (a checksum...)


def parsed_entry(entry: CacheEntry) -> Mapping[str, ModelInfo] | EndpointList | None:
    """Parse a cached entry again; ``None`` (logged) when it no longer parses.

    A models list passed the full integrity guard when it was stored, so only its core
    fields are validated now (from the entry's core part when it has one) and the full
    models when first asked for (see :func:`~registry.metadata.lazy.lazy_models`).
    """
    from registry.sources.cache import check_payload

    if entry.kind == "models":
        hint = "cached copy; `capc refresh` fetches a new one, `capc cache clear` drops it"
        models = lazy_models(entry.payload, source=entry.source, hint=hint, core=entry.core)
        if models is not None:
            return models
    try:
        # It passed the guard with the CAPC_MAX_JSON_DEPTH of its store: the cap bounds
        # the parser, not the setting of this process.
        parsed = check_payload(
            entry.kind, entry.payload, source=entry.source, max_depth=MAX_JSON_DEPTH_CAP
        )
    except MetadataError as exc:
        _log.warning("cached copy of %s no longer parses (%s); ignored", entry.source, exc)
        return None
    return _indexed(parsed)


def _indexed(parsed: list[ModelInfo] | EndpointList) -> Mapping[str, ModelInfo] | EndpointList:
    return index_models(parsed) if isinstance(parsed, list) else parsed


def _min_models(kind: Kind, settings: Settings) -> int:
    """The fewest models a list needs when there is no cached copy to compare with."""
    if kind != "models":
        return 1
    if settings.min_models is not None:
        return settings.min_models
    from registry.metadata.catalog import bundled_catalog

    return len(bundled_catalog())



def cache_key(url: str) -> str:
    """The cache key of ``url``: the URL as shown (:func:`registry.redact.redact_url`:
    no credentials, query values or fragment), plus, when it has a query, a digest of the
    whole URL, so two URLs that differ in a query value never share an entry while the
    value itself is stored nowhere (``.../models?jwt=*** [query sha256 1a2b...]``)."""
    import hashlib
    from urllib.parse import urlsplit

    from registry.redact import redact_url

    shown = redact_url(url)
    try:
        query = urlsplit(url).query
    except ValueError:
        query = url
    if not query:
        return shown
    return f"{shown} [query sha256 {hashlib.sha256(url.encode()).hexdigest()[:16]}]"

def obtain(
    url: str,
    kind: Kind,
    *,
    settings: Settings,
    client: httpx.Client | None,
    sleep: Sleep | None,
    progress: Progress | None,
    refresh: bool,
    model_level: bool = False,
) -> Attempt:
    """Run the fallback order for one URL (without the seed step).

    The cache key and every message use the URL without credentials; the request uses
    ``url`` as given. Unless ``refresh`` is set, the fetch has ``settings.stale_deadline``
    instead of ``settings.deadline`` when something usable can be served in its place:
    a cached copy of the URL (even stale), or, for endpoints with ``model_level`` set,
    the model-level figures the caller holds (:attr:`Attempt.short_deadline` says so).
    """
    from registry.sources.cache import (
        CacheError,
        MetadataCache,
        RejectedPayload,
        check_payload,
        check_shrink,
    )
    from registry.sources.fetch import FetchError, fetch_url

    key = cache_key(url)
    progress = progress if progress is not None else _PROGRESS.get()
    result = Attempt()
    what = "models list" if kind == "models" else "endpoints"
    with MetadataCache(settings.cache_dir) as cache:
        cache_problem: str | None = None
        entry: CacheEntry | None = None
        try:
            entry = cache.get(key)
        except CacheError as exc:
            cache_problem = f"cache unavailable ({exc})"
            _log.warning("%s", cache_problem)
        result.corrupt = cache.damaged.get(key)
        parsed = None if entry is None else parsed_entry(entry)
        if parsed is None:
            result.unusable = entry is not None  # there is a copy, but it does not parse
            entry = None
        fresh = entry is not None and entry.is_fresh(settings.ttl)

        if entry is not None and parsed is not None and fresh and not refresh:
            result.entry, result.parsed, result.origin = entry, parsed, "cache"
            result.fetched_at = entry.fetched_at
            return result

        usable = entry is not None and parsed is not None
        stand_in = usable or (kind == "endpoints" and model_level)
        if stand_in and not refresh and settings.stale_deadline < settings.deadline:
            # Something can be served at once: do not keep the caller waiting long for
            # a better one (`capc refresh` waits the whole CAPC_DEADLINE).
            settings = settings.model_copy(update={"deadline": settings.stale_deadline})
            result.short_deadline = settings.stale_deadline
        if settings.offline:
            problem = "offline (CAPC_OFFLINE)"
        else:
            try:
                fetched = fetch_url(
                    url, settings=settings, client=client, sleep=sleep, progress=progress
                )
            except FetchError as exc:
                problem = f"fetch failed ({exc.summary})"
                if exc.skipped:  # the host did not answer an earlier fetch of this run
                    problem = f"not fetched ({exc.reason.removeprefix('not attempted: ')})"
            except MetadataError as exc:  # e.g. a model id that is not author/slug
                problem = f"cannot fetch ({exc})"
            else:
                try:
                    _, new = cache.store(
                        key,
                        fetched.content,
                        kind=kind,
                        fetched_at=fetched.fetched_at,
                        max_shrink=settings.max_shrink,
                        min_models=_min_models(kind, settings),
                        max_depth=settings.max_json_depth,
                    )
                except RejectedPayload as exc:
                    problem = f"fetched {what} rejected: {exc.reason}"
                except CacheError as exc:
                    # The cache cannot take it (read-only, full): serve the fetched copy
                    # from memory when it passes the checks a store applies, never the
                    # older copy in its place.
                    problem = f"fetched {what} but could not store it ({exc})"
                    try:
                        fetched_list = check_payload(
                            kind, fetched.content, source=key, max_depth=settings.max_json_depth
                        )
                        count = (len(fetched_list.endpoints)
                                 if isinstance(fetched_list, EndpointList) else len(fetched_list))
                        if usable:  # the shrink guard against the copy it would replace
                            check_shrink(SimpleNamespace(kind=kind, count=count, source=key),
                                         entry, settings.max_shrink, _min_models(kind, settings))
                    except RejectedPayload as rejected:
                        problem = f"fetched {what} rejected: {rejected.reason}"
                    else:
                        result.parsed = _indexed(fetched_list)
                        result.origin, result.fetched_at = "fetch", fetched.fetched_at
                        result.note = f"fetched {what}; not cached ({exc})"
                        result.store_error = str(exc)
                        return result
                else:
                    result.parsed, result.origin = _indexed(new), "fetch"
                    result.fetched_at = fetched.fetched_at
                    if fetched.attempts > 1:
                        result.note = f"fetched {what} after {fetched.attempts} attempts"
                    if cache_problem:
                        result.note = f"fetched {what}; {cache_problem}"
                    return result

        if entry is not None and parsed is not None:
            result.entry, result.parsed = entry, parsed
            result.fetched_at = entry.fetched_at
            age = format_age(entry.age().total_seconds())
            if fresh:
                result.origin = "cache"
                result.note = (
                    f"{problem}; kept the cached copy from {_when(entry.fetched_at)} "
                    f"({age} old, still fresh)"
                )
            else:
                result.origin, result.stale = "stale-cache", True
                result.note = (
                    f"{problem}; serving the cached copy from {_when(entry.fetched_at)}, "
                    f"stale: {age} old"
                )
            return result
        result.note = problem if cache_problem is None else f"{problem}; {cache_problem}"
        return result
