"""Where metadata comes from: a file, or OpenRouter through the cache, with fallbacks.

:func:`load_metadata` returns the models :class:`~registry.catalog.Catalog`:

* a file path or ``file://`` URL is read as it is (origin ``"file"``);
* for OpenRouter (the default, or any ``http(s)://`` URL) the first of these that works
  is served: a **fresh cached copy** (origin ``"cache"``), a **fetch** (``"fetch"``,
  stored in the cache when it passes the integrity guard), the **stale cached copy**
  (``"stale-cache"``), the **bundled seed** (``"seed"``). With ``offline`` set no
  request is made.

:func:`load_endpoints_for` does the same for one model's ``/endpoints`` response,
without a seed: when nothing can be had it returns ``None``. Network faults never raise
from either function; what happened is said in one line (``Catalog.note``, or the
``notes`` list passed in) and logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from registry.catalog import (
    SEED_DATE,
    Catalog,
    bundled_catalog,
    format_age,
    load_catalog,
)
from registry.declarations import PARAMETERS
from registry.errors import MetadataError
from registry.metadata import EndpointList, ModelInfo
from registry.metadata_core import index_models, lazy_models

if TYPE_CHECKING:
    import httpx

    from registry.cache import CacheEntry, Kind, MetadataCache
    from registry.fetch import Progress, Sleep
    from registry.settings import Settings

__all__ = [
    "EndpointsResult",
    "is_remote",
    "load_endpoints_for",
    "load_endpoints_result",
    "load_metadata",
    "open_cache",
    "reporting_progress",
]

_log = logging.getLogger(__name__)

_PROGRESS: ContextVar[Progress | None] = ContextVar("capc_progress", default=None)


@contextmanager
def reporting_progress(progress: Progress | None) -> Iterator[None]:
    """Send a line before every request made in this context to ``progress``.

    Used by the CLI to show long fetches on a terminal when the registry is loaded by
    code that does not take a ``progress`` argument. An explicit ``progress`` argument
    of :func:`load_metadata` or :func:`load_endpoints_for` wins.

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


def is_remote(location: str | Path | None) -> bool:
    """Whether a metadata location is fetched over HTTP (``None`` means OpenRouter).

    Args:
        location: a file path, a ``file://``/``http(s)://`` URL, or ``None``.

    Returns:
        ``True`` for ``None`` and ``http(s)://`` URLs.
    """
    if location is None:
        return True
    return isinstance(location, str) and location.lower().startswith(("http://", "https://"))


def open_cache(settings: Settings) -> MetadataCache:
    """Return the metadata cache in ``settings.cache_dir`` (opened lazily).

    Args:
        settings: supplies ``cache_dir``.

    Returns:
        The cache; close it (or use it as a context manager) when done.
    """
    from registry.cache import MetadataCache

    return MetadataCache(settings.cache_dir)


_REPORTED_PARAMETERS: set[str] = set()


def _log_unknown_parameters(lists: Iterable[Iterable[str] | None], source: str) -> None:
    """Log each ``supported_parameters`` value this library does not know, once per process.

    Unknown values are kept (they never fail a load); the log line lets a maintainer
    notice that OpenRouter added a parameter.
    """
    fresh = set().union(*(values for values in lists if values))
    fresh.difference_update(PARAMETERS)
    fresh -= _REPORTED_PARAMETERS
    if fresh:
        _REPORTED_PARAMETERS.update(fresh)
        _log.info(
            "%s lists supported_parameters this version does not know (kept): %s",
            source,
            ", ".join(sorted(fresh)),
        )


def _parameter_lists(catalog: Catalog) -> Iterator[tuple[str, ...] | None]:
    """Every model's ``supported_parameters`` (from the core fields: builds nothing)."""
    for model_id in catalog.models:
        core = catalog._core(model_id)
        yield None if core is None else core.get("supported_parameters")


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ")


class _Attempt:
    """What happened while getting one payload: the data, the cache entry, a note."""

    def __init__(self) -> None:
        self.entry: CacheEntry | None = None
        self.parsed: Mapping[str, ModelInfo] | EndpointList | None = None
        self.origin = ""
        self.stale = False
        self.fetched_at: datetime | None = None
        self.note: str | None = None


def _parsed_entry(entry: CacheEntry) -> Mapping[str, ModelInfo] | EndpointList | None:
    """Parse a cached entry again; ``None`` (logged) when it no longer parses.

    A models list passed the full integrity guard when it was stored, so only its core
    fields are validated now (from the entry's core part when it has one) and the full
    models when first asked for (see :func:`~registry.metadata_core.lazy_models`).
    """
    from registry.cache import check_payload

    if entry.kind == "models":
        hint = "cached copy; `capc refresh` fetches a new one, `capc cache clear` drops it"
        models = lazy_models(entry.payload, source=entry.source, hint=hint, core=entry.core)
        if models is not None:
            return models
    try:
        parsed = check_payload(entry.kind, entry.payload, source=entry.source)
    except MetadataError as exc:
        _log.warning("cached copy of %s no longer parses (%s); ignored", entry.source, exc)
        return None
    return _indexed(parsed)


def _indexed(parsed: list[ModelInfo] | EndpointList) -> Mapping[str, ModelInfo] | EndpointList:
    return index_models(parsed) if isinstance(parsed, list) else parsed


def _obtain(
    url: str,
    kind: Kind,
    *,
    settings: Settings,
    client: httpx.Client | None,
    sleep: Sleep | None,
    progress: Progress | None,
    refresh: bool,
) -> _Attempt:
    """Run the fallback order for one URL (without the seed step).

    The cache key and every message use the URL without credentials; the request uses
    ``url`` as given.
    """
    from registry.cache import CacheError, MetadataCache, RejectedPayload, check_payload
    from registry.fetch import FetchError, fetch_url, redact_url

    key = redact_url(url)
    progress = progress if progress is not None else _PROGRESS.get()
    result = _Attempt()
    what = "models list" if kind == "models" else "endpoints"
    with MetadataCache(settings.cache_dir) as cache:
        cache_problem: str | None = None
        entry: CacheEntry | None = None
        try:
            entry = cache.get(key)
        except CacheError as exc:
            cache_problem = f"cache unavailable ({exc})"
            _log.warning("%s", cache_problem)
        parsed = None if entry is None else _parsed_entry(entry)
        if parsed is None:
            entry = None
        fresh = entry is not None and entry.is_fresh(settings.ttl)

        if entry is not None and parsed is not None and fresh and not refresh:
            result.entry, result.parsed, result.origin = entry, parsed, "cache"
            result.fetched_at = entry.fetched_at
            return result

        if settings.offline:
            problem = "offline (CAPC_OFFLINE)"
        else:
            try:
                fetched = fetch_url(
                    url, settings=settings, client=client, sleep=sleep, progress=progress
                )
            except FetchError as exc:
                problem = f"fetch failed ({exc.summary})"
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
                    )
                except RejectedPayload as exc:
                    problem = f"fetched {what} rejected: {exc.reason}"
                except CacheError as exc:
                    # The payload is good (it parsed) but could not be written: serve it.
                    result.parsed = _indexed(check_payload(kind, fetched.content, source=key))
                    result.origin, result.fetched_at = "fetch", fetched.fetched_at
                    result.note = f"fetched {what}; not cached ({exc})"
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


def load_metadata(
    location: str | Path | None = None,
    *,
    settings: Settings | None = None,
    client: httpx.Client | None = None,
    sleep: Sleep | None = None,
    progress: Progress | None = None,
    refresh: bool = False,
) -> Catalog:
    """Load the models catalog from a file or from OpenRouter, falling back as needed.

    For OpenRouter the order is: fresh cache -> fetch -> stale cache -> bundled seed.
    Fetch and cache faults never raise here; they end in a fallback, and
    :attr:`Catalog.note` says what happened in one line (also logged).

    Args:
        location: a file path or ``file://`` URL (read as it is); an ``http(s)://``
            URL of a models list; ``None`` for ``{settings.base_url}/models``.
        settings: sources, timeouts, cache and TTL; default :func:`load_settings`
            (the ``CAPC_`` environment).
        client: an :class:`httpx.Client` for the fetch (tests swap transports).
        sleep: how to wait between attempts (default :func:`time.sleep`).
        progress: receives a line before each request (for a terminal).
        refresh: skip the fresh-cache step and fetch (still falls back on failure).

    Returns:
        The catalog, with ``origin`` ``"file"``, ``"cache"``, ``"fetch"``,
        ``"stale-cache"`` or ``"seed"``, ``stale``, ``fetched_at`` (ISO UTC) and
        ``note``.

    Raises:
        MetadataError: a file location cannot be read or parsed (files have no
            fallback), or a ``CAPC_`` setting is invalid.
    """
    if not is_remote(location):
        assert location is not None
        catalog = load_catalog(location)
        _log_unknown_parameters(_parameter_lists(catalog), catalog.source)
        return catalog
    from registry.fetch import models_url, redact_url
    from registry.settings import load_settings

    settings = settings if settings is not None else load_settings()
    target = str(location) if location is not None else models_url(settings)
    url = redact_url(target)
    got = _obtain(
        target,
        "models",
        settings=settings,
        client=client,
        sleep=sleep,
        progress=progress,
        refresh=refresh,
    )
    if got.parsed is None or isinstance(got.parsed, EndpointList):
        seed = bundled_catalog()
        note = f"{got.note}; no usable cached copy, using the bundled seed (as of {SEED_DATE})"
        if settings.offline:
            note = f"offline (CAPC_OFFLINE): no cached copy of {url}; using the bundled seed"
        _log.log(logging.INFO if settings.offline else logging.WARNING, "%s", note)
        return replace(seed, note=note, stale=not settings.offline)
    if got.note:
        _log.log(logging.WARNING if got.stale else logging.INFO, "%s", got.note)
    assert got.fetched_at is not None
    catalog = Catalog(
        models=got.parsed,
        source=url,
        fetched_at=got.fetched_at.isoformat(timespec="seconds"),
        origin=got.origin,
        stale=got.stale,
        note=got.note,
    )
    _log_unknown_parameters(_parameter_lists(catalog), url)
    return catalog


@dataclass(frozen=True)
class EndpointsResult:
    """What :func:`load_endpoints_result` found for one model.

    Attributes:
        model_id: the model asked for.
        endpoints: the endpoints, or ``None`` when no copy could be had.
        origin: ``"cache"``, ``"fetch"`` or ``"stale-cache"``; ``None`` with no data.
        fetched_at: when the data was fetched (ISO UTC), or ``None``.
        stale: the data is older than the TTL (a fetch failed or was not allowed).
        note: one line on what went wrong or was unusual, or ``None``.
    """

    model_id: str
    endpoints: EndpointList | None
    origin: str | None = None
    fetched_at: str | None = None
    stale: bool = False
    note: str | None = None


def load_endpoints_result(
    model_id: str,
    *,
    settings: Settings | None = None,
    client: httpx.Client | None = None,
    sleep: Sleep | None = None,
    progress: Progress | None = None,
    refresh: bool = False,
) -> EndpointsResult:
    """Load one model's endpoints (fresh cache -> fetch -> stale cache) and say how.

    Args:
        model_id: ``author/slug`` (a ``:variant`` suffix is requested as given).
        settings: as for :func:`load_metadata`.
        client: as for :func:`load_metadata`.
        sleep: as for :func:`load_metadata`.
        progress: as for :func:`load_metadata`.
        refresh: skip the fresh-cache step and fetch.

    Returns:
        The endpoints (or ``None``) with their origin, date and a note. Never raises
        for network or cache faults.

    Raises:
        MetadataError: a ``CAPC_`` setting is invalid.
    """
    from registry.fetch import endpoints_url
    from registry.settings import load_settings

    settings = settings if settings is not None else load_settings()
    try:
        url = endpoints_url(settings, model_id)
    except MetadataError as exc:
        return EndpointsResult(model_id, None, note=f"endpoints of {model_id}: {exc}")
    got = _obtain(
        url,
        "endpoints",
        settings=settings,
        client=client,
        sleep=sleep,
        progress=progress,
        refresh=refresh,
    )
    if not isinstance(got.parsed, EndpointList):
        note = f"endpoints of {model_id}: {got.note or 'not available'}; none used"
        return EndpointsResult(model_id, None, note=note)
    _log_unknown_parameters((e.supported_parameters for e in got.parsed.endpoints), url)
    return EndpointsResult(
        model_id,
        got.parsed,
        origin=got.origin,
        fetched_at=None if got.fetched_at is None else got.fetched_at.isoformat(timespec="seconds"),
        stale=got.stale,
        note=None if got.note is None else f"endpoints of {model_id}: {got.note}",
    )


def load_endpoints_for(
    model_id: str,
    *,
    settings: Settings | None = None,
    client: httpx.Client | None = None,
    sleep: Sleep | None = None,
    progress: Progress | None = None,
    refresh: bool = False,
    notes: list[str] | None = None,
) -> EndpointList | None:
    """Load one model's endpoints: fresh cache -> fetch -> stale cache -> ``None``.

    Args:
        model_id: ``author/slug`` (a ``:variant`` suffix is requested as given).
        settings: as for :func:`load_metadata`.
        client: as for :func:`load_metadata`.
        sleep: as for :func:`load_metadata`.
        progress: as for :func:`load_metadata`.
        refresh: skip the fresh-cache step and fetch.
        notes: when given, the one-line note (a fallback, a failure, stale data) is
            appended to it; the note is logged in any case.

    Returns:
        The endpoints, or ``None`` when no copy can be had (offline without a cached
        copy, every fetch failed, the payload was rejected, or the id is not
        ``author/slug``). Never raises for network or cache faults.

    Raises:
        MetadataError: a ``CAPC_`` setting is invalid.
    """
    from registry.settings import load_settings

    settings = settings if settings is not None else load_settings()
    result = load_endpoints_result(
        model_id,
        settings=settings,
        client=client,
        sleep=sleep,
        progress=progress,
        refresh=refresh,
    )
    if result.note is not None:
        quiet = settings.offline and result.endpoints is None
        _log.log(logging.INFO if quiet else logging.WARNING, "%s", result.note)
        if notes is not None:
            notes.append(result.note)
    return result.endpoints
