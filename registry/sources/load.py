"""Where metadata comes from: a file, or OpenRouter through the cache, with fallbacks.

:func:`load_metadata` returns the models :class:`~registry.metadata.catalog.Catalog`:

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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from registry.declarations.vocabulary import PARAMETERS
from registry.errors import MetadataError, SourceUnavailableError
from registry.metadata.catalog import SEED_DATE, Catalog, bundled_catalog, load_catalog
from registry.metadata.shapes import EndpointList
from registry.sources.fallback import obtain

if TYPE_CHECKING:
    import httpx

    from registry.sources.cache import MetadataCache
    from registry.sources.fetch import Progress, Sleep
    from registry.sources.settings import Settings

__all__ = [
    "EndpointsResult",
    "is_remote",
    "load_endpoints_for",
    "load_endpoints_result",
    "load_metadata",
    "open_cache",
]

#: Notes and unknown parameters are logged under the package's name, the logger callers know.
_log = logging.getLogger("registry.sources")


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
    from registry.sources.cache import MetadataCache

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
    from registry.redact import redact_url, register_url_secrets
    from registry.sources.settings import load_settings
    from registry.sources.urls import models_url

    settings = settings if settings is not None else load_settings()
    target = str(location) if location is not None else models_url(settings)
    register_url_secrets(target)  # masked in any text from now on, log records too
    url = redact_url(target)
    if location is not None:
        _check_url(target, url)
    got = obtain(
        target,
        "models",
        settings=settings,
        client=client,
        sleep=sleep,
        progress=progress,
        refresh=refresh,
    )
    if location is not None and (
        got.parsed is None
        or isinstance(got.parsed, EndpointList)
        or (got.origin == "stale-cache" and not settings.offline)
    ):
        # Only the default source falls back: a named one that fails is an error.
        raise SourceUnavailableError(
            f"{url}: {got.note or 'not available'}; this source was named with --metadata, "
            "so nothing stands in for it (drop --metadata to use OpenRouter's list with "
            "its fallbacks)",
            source=url,
        )
    if got.parsed is None or isinstance(got.parsed, EndpointList):
        seed = bundled_catalog()
        note = f"{got.note}; no usable cached copy, using the bundled seed (as of {SEED_DATE})"
        if settings.offline:
            copy = (f"the cached copy of {url} is unusable" if got.unusable
                    else f"the cached copy of {url} was corrupt ({got.corrupt}) and is "
                    "ignored" if got.corrupt else f"no cached copy of {url}")
            note = f"offline (CAPC_OFFLINE): {copy}; using the bundled seed"
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
        store_error=got.store_error,
    )
    _log_unknown_parameters(_parameter_lists(catalog), url)
    return catalog


def _check_url(target: str, shown: str) -> None:
    """Refuse a malformed metadata URL (``http://[::1``) as an input error."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(target)
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError as exc:
        raise MetadataError(f"{shown}: not a valid URL ({exc})", source=shown) from exc
    if not parts.hostname:
        raise MetadataError(f"{shown}: not a valid URL (no host)", source=shown)


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
        store_error: for origin ``"fetch"``, why the endpoints could not be cached.
    """

    model_id: str
    endpoints: EndpointList | None
    origin: str | None = None
    fetched_at: str | None = None
    stale: bool = False
    note: str | None = None
    store_error: str | None = None


def load_endpoints_result(
    model_id: str,
    *,
    settings: Settings | None = None,
    client: httpx.Client | None = None,
    sleep: Sleep | None = None,
    progress: Progress | None = None,
    refresh: bool = False,
    model_level: bool = False,
) -> EndpointsResult:
    """Load one model's endpoints (fresh cache -> fetch -> stale cache) and say how.

    Args:
        model_id: ``author/slug`` (a ``:variant`` suffix is requested as given).
        settings: as for :func:`load_metadata`.
        client: as for :func:`load_metadata`.
        sleep: as for :func:`load_metadata`.
        progress: as for :func:`load_metadata`.
        refresh: skip the fresh-cache step and fetch.
        model_level: the caller has the model's model-level figures to use when no
            endpoints can be had, so a fetch that is not a refresh has the short
            ``CAPC_STALE_DEADLINE`` even with no cached copy (the note says so).

    Returns:
        The endpoints (or ``None``) with their origin, date and a note. Never raises
        for network or cache faults.

    Raises:
        MetadataError: a ``CAPC_`` setting is invalid.
    """
    from registry.sources.settings import load_settings
    from registry.sources.urls import endpoints_url

    settings = settings if settings is not None else load_settings()
    try:
        url = endpoints_url(settings, model_id)
    except MetadataError as exc:
        return EndpointsResult(model_id, None, note=f"endpoints of {model_id}: {exc}")
    got = obtain(
        url,
        "endpoints",
        settings=settings,
        client=client,
        sleep=sleep,
        progress=progress,
        refresh=refresh,
        model_level=model_level,
    )
    if not isinstance(got.parsed, EndpointList):
        note = f"endpoints of {model_id}: {got.note or 'not available'}; none used"
        if got.short_deadline is not None and model_level:
            note += (
                f" (the fetch had CAPC_STALE_DEADLINE, {got.short_deadline:g} s, since the "
                "model-level figures stand in for them)"
            )
        return EndpointsResult(model_id, None, note=note)
    _log_unknown_parameters((e.supported_parameters for e in got.parsed.endpoints), url)
    return EndpointsResult(
        model_id,
        got.parsed,
        origin=got.origin,
        fetched_at=None if got.fetched_at is None else got.fetched_at.isoformat(timespec="seconds"),
        stale=got.stale,
        note=None if got.note is None else f"endpoints of {model_id}: {got.note}",
        store_error=got.store_error,
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
    model_level: bool = False,
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
        model_level: as for :func:`load_endpoints_result`.

    Returns:
        The endpoints, or ``None`` when no copy can be had (offline without a cached
        copy, every fetch failed, the payload was rejected, or the id is not
        ``author/slug``). Never raises for network or cache faults.

    Raises:
        MetadataError: a ``CAPC_`` setting is invalid.
    """
    from registry.sources.settings import load_settings

    settings = settings if settings is not None else load_settings()
    result = load_endpoints_result(
        model_id,
        settings=settings,
        client=client,
        sleep=sleep,
        progress=progress,
        refresh=refresh,
        model_level=model_level,
    )
    if result.note is not None:
        quiet = settings.offline and result.endpoints is None
        _log.log(logging.INFO if quiet else logging.WARNING, "%s", result.note)
        if notes is not None:
            notes.append(result.note)
    return result.endpoints
