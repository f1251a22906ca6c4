"""A loaded OpenRouter model catalog, together with where and when it came from.

A :class:`Catalog` is an immutable, id-indexed view of one ``GET /api/v1/models``
snapshot. :func:`load_catalog` reads a snapshot file, :func:`bundled_catalog` the seed
catalog shipped inside the package, and :func:`load_endpoints` reads ``/endpoints``
responses (one file per model, or a bundle of many).
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from urllib.parse import unquote, urlparse

from registry.digest import BackgroundDigest
from registry.errors import MetadataError, UnknownModelError, closest
from registry.metadata.core import CoreFields, core_of, read_only
from registry.metadata.lazy import LazyModels, index_models, lazy_models
from registry.metadata.parse import (
    parse_endpoints,
    parse_endpoints_bundle,
    parse_models,
    payload_problem,
    read_bounded,
    read_json,
)
from registry.metadata.shapes import EndpointList, ModelInfo

__all__ = ["SEED_DATE", "SEED_RESOURCE", "Catalog", "bundled_catalog", "load_catalog",
           "load_endpoints", "load_endpoints_file"]

SEED_RESOURCE = "data/seed-models-2026-08-19.json"
"""Path of the seed catalog inside the ``registry`` package."""

SEED_DATE = "2026-08-19"
"""Date of the OpenRouter snapshot the seed catalog was cut from."""

_SEED_SOURCE = "bundled seed"
_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


@dataclass(frozen=True)
class Catalog:
    """An immutable set of models by id, with its provenance.

    Attributes:
        models: models by id, in the order of the source (read-only mapping).
        source: file path, URL, or ``"bundled seed"``.
        fetched_at: when the data was fetched, as an ISO date (``"2026-08-19"``) or an
            ISO UTC datetime; ``None`` when unknown.
        origin: how the catalog was obtained: ``"file"``, ``"seed"``, ``"cache"`` (a
            fresh cached copy), ``"fetch"`` (fetched just now) or ``"stale-cache"`` (a
            cached copy older than its TTL, served because a fetch failed or was not
            allowed).
        stale: the data is known to be older than the caller wanted.
        note: one line on how the catalog was obtained when that is worth saying
            (a failed fetch, a rejected payload, offline mode); ``None`` otherwise.
        store_error: for origin ``"fetch"``, why the fetched list could not be cached
            (``capc refresh`` then fails); ``None`` when it was cached.

    A catalog loaded from a file, the seed or the cache validates the core fields when
    it loads and builds each model of :attr:`models` on that model's first lookup (see
    :class:`registry.metadata.lazy.LazyModels`); a malformed field outside the core is
    then reported by the lookup of that model (or by ``models.values()``, which builds
    every model), as :class:`~registry.errors.MetadataError`.
    """

    models: Mapping[str, ModelInfo] = field(repr=False, hash=False)
    source: str
    fetched_at: str | None
    origin: str
    stale: bool = False
    note: str | None = None
    store_error: str | None = None
    _digest: BackgroundDigest | None = field(default=None, repr=False, compare=False)

    def sha256(self) -> str | None:
        """Return the SHA-256 (64 hex digits) of the bytes this catalog was parsed from
        (a file given to :func:`load_catalog`, or the bundled seed), hashed beside the
        load; ``None`` for one from the cache, a fetch or built in memory, and for a file
        read again to be parsed whole (one the fast reader declines, e.g. with a BOM)."""
        return None if self._digest is None else self._digest.hexdigest()

    def core(self, model_id: str) -> CoreFields | None:
        """Return the fields of a model that resolution reads, without building the
        full :class:`ModelInfo` when the catalog was loaded lazily.

        Args:
            model_id: an OpenRouter model id.

        Returns:
            The core fields, read-only (see :class:`registry.metadata.core.MetadataCore`
            for the keys), or ``None`` when the catalog does not list the model.
        """
        found = self._core(model_id)
        return None if found is None else read_only(found)

    def _core(self, model_id: str) -> CoreFields | None:
        """:meth:`core` without the read-only view, for this package's resolver (which
        only reads it)."""
        models = self.models
        if isinstance(models, LazyModels):
            return models._stored_core(model_id)
        info = models.get(model_id)
        return None if info is None else core_of(info)

    def get(self, model_id: str) -> ModelInfo | None:
        """Look a model up by its exact id.

        Args:
            model_id: an OpenRouter model id such as ``"openai/gpt-4o-mini"``.

        Returns:
            The model, or ``None`` when the catalog does not list it.
        """
        return self.models.get(model_id)

    def require(self, model_id: str) -> ModelInfo:
        """Look a model up by its exact id, failing with suggestions.

        Args:
            model_id: an OpenRouter model id such as ``"openai/gpt-4o-mini"``.

        Returns:
            The model.

        Raises:
            UnknownModelError: the catalog does not list ``model_id``; the error carries
                up to three close matches.
        """
        model = self.models.get(model_id)
        if model is None:
            raise UnknownModelError(model_id, closest(model_id, self.models))
        return model

    def __contains__(self, model_id: object) -> bool:
        return model_id in self.models

    def __len__(self) -> int:
        return len(self.models)

    def ids(self) -> list[str]:
        """Return every model id, in source order.

        Returns:
            The ids as a new list.
        """
        return list(self.models)

    def describe(self, *, age: bool = True) -> str:
        """Describe the catalog in one line for reports.

        Returns:
            For example ``"models-2026-08-19.json (file, as of 2026-08-19)"``,
            ``"openrouter.ai/api/v1/models (cache, as of 2026-08-19T10:00:00+00:00)"``
            or ``"bundled seed (as of 2026-08-19)"``. When :attr:`stale` is set,
            ``"stale, 3 days old"`` (the age now) is appended inside the parentheses,
            or just ``"stale"`` when the date is unknown or ``age`` is false (the lock
            leaves the age out: it depends on the clock).
        """
        if self.stale:  # the age depends on the clock
            return self._describe(age)
        found: str | None = self.__dict__.get("_described")
        if found is None:  # every report names the catalog: worked out once
            found = self._describe(age)
            object.__setattr__(self, "_described", found)
        return found

    def _describe(self, age: bool) -> str:
        details: list[str] = []
        if self.origin == "seed" and self.source == _SEED_SOURCE:
            name = self.source
        else:
            name = _short_name(self.source)
            details.append(self.origin)
        if self.fetched_at:
            details.append(f"as of {self.fetched_at}")
        if self.stale:
            old = _age_text(self.fetched_at) if age else None
            details.append(f"stale, {old} old" if old else "stale")
        return f"{name} ({', '.join(details)})" if details else name


def _age_text(fetched_at: str | None, now: datetime | None = None) -> str | None:
    """Return how long ago ``fetched_at`` (ISO date or datetime) was, e.g. ``"3 days"``."""
    if not fetched_at:
        return None
    try:
        when = datetime.fromisoformat(fetched_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = max(((now or datetime.now(UTC)) - when).total_seconds(), 0.0)
    return format_age(seconds)


def format_age(seconds: float) -> str:
    """Render a duration for people: ``"45 s"``, ``"12 min"``, ``"5 h"``, ``"3 days"``.

    Args:
        seconds: the duration in seconds (negative counts as 0).

    Returns:
        The duration rounded down to its largest unit.
    """
    seconds = max(seconds, 0.0)
    if seconds < 120:
        return f"{int(seconds)} s"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h"
    days = int(seconds // 86400)
    return f"{days} days"


def _short_name(source: str) -> str:
    """Return host and path of an http(s) URL, else the last path segment of a file path or URL."""
    if source.startswith(("http://", "https://")):
        parsed = urlparse(source)
        host = parsed.netloc.rsplit("@", 1)[-1]  # never show user:password
        return f"{host}{parsed.path}" or source
    tail = source.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
    return tail or source


def _location_to_path(location: str | Path) -> tuple[Path, str]:
    """Turn a path or ``file://`` URL into a local path plus the name to report.

    Raises:
        MetadataError: ``location`` is a URL with a scheme other than ``file``.
    """
    if isinstance(location, Path):
        return location, str(location)
    parsed = urlparse(location)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise MetadataError(
                f"{location}: file URLs on another host are not supported", source=location
            )
        from urllib.request import url2pathname  # rare path; keeps http.client out of imports

        return Path(url2pathname(unquote(parsed.path))), location
    if len(parsed.scheme) > 1:  # one letter is a Windows drive ("C:\\...")
        raise MetadataError(
            f"{location}: unsupported location scheme {parsed.scheme!r}; "
            "give a file path or a file:// URL",
            source=location,
        )
    return Path(location), location


def _fetched_at_for(path: Path) -> str | None:
    """Date of a snapshot file: the first ``YYYY-MM-DD`` in its name, else unknown.

    Never the modification time: a ``touch`` or a copy must not change what a
    compile from the file says (a lock made from it stays byte-equal)."""
    match = _DATE_IN_NAME.search(path.name)
    return match.group(1) if match else None


def _read_models(
    path: Path, source: str
) -> tuple[Mapping[str, ModelInfo], BackgroundDigest | None]:
    """Read a models list file: core fields now when it is a well-formed
    ``{"data": [...]}`` body, else whole through :func:`read_json` and
    :func:`parse_models`, which explain what is wrong. With the models, the SHA-256 of
    the bytes they were read from (hashed in a thread while they are parsed), or
    ``None`` when they were read again to be parsed whole."""
    raw = read_bounded(path, source=source)
    digest = BackgroundDigest(raw)
    # payload_problem decodes the whole body into objects (1 GB for 50,000 models), so it
    # runs only when the body may hold what it looks for: a NaN or Infinity token, a
    # repeated id (the core fields count the entries), or a body the core fields do not
    # read (then it runs first, as the parsers' explanation comes after its own).
    models = None if b"NaN" in raw or b"Infinity" in raw else lazy_models(raw, source=source)
    if models is None or models.listed != len(models):
        problem = payload_problem(raw, models=True)
        if problem is not None:
            raise MetadataError(f"{source}: {problem}", source=source)
    if models is None:
        models = lazy_models(raw, source=source)
    if models is None:
        return index_models(parse_models(read_json(path, source=source), source=source)), None
    return models, digest


def load_catalog(location: str | Path) -> Catalog:
    """Load a ``GET /api/v1/models`` snapshot file as a catalog.

    ``fetched_at`` is the first ``YYYY-MM-DD`` in the file name when there is one (our
    snapshots carry their date in the name, e.g. ``models-2026-08-19.json``); otherwise
    it is ``None`` (unknown: the file's modification time says nothing about the data).

    Args:
        location: a file path, or a ``file://`` URL.

    Returns:
        A catalog with origin ``"file"`` and ``source`` set to ``location`` as given.

    Raises:
        MetadataError: the location is not a local file, cannot be read, is not valid
            JSON, is not a models list, or lists no models at all.
    """
    path, source = _location_to_path(location)
    models, digest = _read_models(path, source)
    if not models:
        raise MetadataError(f"{source}: the models list is empty", source=source)
    return Catalog(
        models=models,
        source=source,
        fetched_at=_fetched_at_for(path),
        origin="file",
        _digest=digest,
    )


def _seed_resource() -> Traversable:
    """Locate the packaged seed file (package data of ``registry``)."""
    return importlib.resources.files("registry").joinpath(SEED_RESOURCE)


@functools.lru_cache(maxsize=1)
def bundled_catalog() -> Catalog:
    """Load the seed catalog shipped with the package (cached after the first call).

    The seed is a subset of the 2026-08-19 OpenRouter snapshot with widely used models;
    see ``scripts/make_seed.py``.

    Returns:
        A catalog with origin ``"seed"``, source ``"bundled seed"`` and fetched_at
        ``"2026-08-19"``.

    Raises:
        MetadataError: the packaged seed file is missing or corrupt (a broken install).
    """
    with importlib.resources.as_file(_seed_resource()) as path:
        models, digest = _read_models(path, _SEED_SOURCE)
    return Catalog(
        models=models,
        source=_SEED_SOURCE,
        fetched_at=SEED_DATE,
        origin="seed",
        _digest=digest,
    )


def load_endpoints(location: str | Path) -> dict[str, EndpointList]:
    """Load ``/endpoints`` data from a file.

    Accepts either a single ``GET /api/v1/models/{author}/{slug}/endpoints`` response
    (``{"data": {"id", ..., "endpoints": [...]}}``) or a bundle of them
    (``{"fetched_at", "note", "endpoints": {model_id: <response>}}``).

    Args:
        location: a file path, or a ``file://`` URL.

    Returns:
        Endpoint lists by model id. For a single response the key is the response's
        ``data.id``; for a bundle it is the bundle's key (the id that was requested,
        which for ``:free`` variants differs from ``data.id``).

    Raises:
        MetadataError: the location cannot be read or parsed, or is neither shape.
    """
    return load_endpoints_file(location)[0]


def load_endpoints_file(
    location: str | Path,
) -> tuple[dict[str, EndpointList], str, str | None]:
    """:func:`load_endpoints`, with where the data is from: ``(lists, source, fetched_at)``.

    ``fetched_at`` is a bundle's top-level ``fetched_at`` (an ISO date or datetime
    string), else the first ``YYYY-MM-DD`` in the file's name (as for a models list:
    never the modification time), else ``None``.

    Raises:
        MetadataError: as :func:`load_endpoints`.
    """
    path, source = _location_to_path(location)
    payload = read_json(path, source=source)
    if (
        isinstance(payload, dict)
        and "data" not in payload
        and isinstance(payload.get("endpoints"), dict)
    ):
        stamp = payload.get("fetched_at")
        fetched_at = stamp if isinstance(stamp, str) and stamp else _fetched_at_for(path)
        return parse_endpoints_bundle(payload, source=source), source, fetched_at
    single = parse_endpoints(payload, source=source)
    return {single.id: single}, source, _fetched_at_for(path)
