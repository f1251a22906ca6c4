"""Where metadata and endpoint values come from: provenance functions for their layers.

A layer's provenance function maps a capability path (``("limits",
"context_length")``) to a :class:`~registry.resolve.capabilities.Provenance` naming the
metadata field, the source (file, URL, ``bundled seed``) and when it was fetched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from registry.metadata.catalog import Catalog
from registry.resolve.capabilities import EndpointCaps, Provenance
from registry.resolve.layers import METADATA_FIELDS

__all__ = ["endpoint_provenance", "metadata_provenance", "top_context_provenance"]

ProvenanceOf = Callable[[tuple[str, ...]], Provenance]


def metadata_provenance(catalog: Catalog) -> ProvenanceOf:
    """Provenance of a model's published metadata in ``catalog``."""

    def provenance(path: tuple[str, ...]) -> Provenance:
        dotted = ".".join(path)
        return Provenance(
            layer="metadata",
            source=catalog.source,
            field=METADATA_FIELDS.get(dotted, dotted),
            fetched_at=catalog.fetched_at,
        )

    return provenance


def endpoint_provenance(
    caps: tuple[EndpointCaps, ...], source: str, fetched_at: str | None
) -> ProvenanceOf:
    """Provenance of the values of endpoints ``caps``, read from ``source``
    (``fetched_at``: when that endpoint data was fetched, ``None`` when unknown)."""
    where = f"/endpoints of {', '.join(c.label for c in caps)} ({source})"

    def provenance(path: tuple[str, ...]) -> Provenance:
        dotted = ".".join(path)
        return Provenance(
            layer="endpoints",
            source=where,
            field=METADATA_FIELDS.get(dotted, dotted).replace("top_provider.", ""),
            fetched_at=fetched_at,
        )

    return provenance


def top_context_provenance(base: ProvenanceOf) -> ProvenanceOf:
    """``base``, except that ``limits.context_length`` is read from
    ``top_provider.context_length`` (smaller than the model's ``context_length``)."""

    def provenance(path: tuple[str, ...]) -> Provenance:
        found = base(path)
        if path == ("limits", "context_length"):
            found = replace(found, field="top_provider.context_length")
        return found

    return provenance
