"""The bundled endpoints seed: offline ``/endpoints`` data of the example stages' models.

``registry/data/seed-endpoints-2026-05-18.json`` holds, for every model ``stages.yaml``
names, the ``GET /api/v1/models/{author}/{slug}/endpoints`` response of 2026-05-18,
trimmed to factual keys (no descriptions); ``scripts/make_seed_endpoints.py`` makes it.
Its shape is the endpoints bundle :func:`registry.metadata.catalog.load_endpoints` reads.
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from types import MappingProxyType

from registry.errors import MetadataError
from registry.metadata.parse import parse_endpoints_bundle, read_json
from registry.metadata.shapes import EndpointList

__all__ = ["SEED_ENDPOINTS_DATE", "SEED_ENDPOINTS_RESOURCE", "bundled_endpoints"]

SEED_ENDPOINTS_RESOURCE = "data/seed-endpoints-2026-05-18.json"
"""Path of the endpoints seed inside the ``registry`` package."""

SEED_ENDPOINTS_DATE = "2026-05-18"
"""Date of the OpenRouter fetch the endpoints seed was cut from."""

_SOURCE = "bundled endpoints seed"


def _resource() -> Traversable:
    """Locate the packaged endpoints seed (package data of ``registry``)."""
    return importlib.resources.files("registry").joinpath(SEED_ENDPOINTS_RESOURCE)


@functools.lru_cache(maxsize=1)
def bundled_endpoints() -> Mapping[str, EndpointList]:
    """Load the endpoints seed shipped with the package (cached after the first call).

    Returns:
        A read-only mapping of model id (as ``stages.yaml`` writes it) to that model's
        endpoint list, sorted by id; the same object on every call. The data is as of
        :data:`SEED_ENDPOINTS_DATE`.

    Raises:
        MetadataError: the packaged file is missing, unreadable or not an endpoints
            bundle (a broken install); the message names ``"bundled endpoints seed"``.
    """
    try:
        with importlib.resources.as_file(_resource()) as path:
            payload = read_json(path, source=_SOURCE)
    except OSError as exc:  # a zipped install whose member is missing
        raise MetadataError(f"{_SOURCE}: cannot read file: {exc}", source=_SOURCE) from exc
    return MappingProxyType(parse_endpoints_bundle(payload, source=_SOURCE))
