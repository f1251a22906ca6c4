"""The route table: for every endpoint of a model, the attempt that serves it or why none does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from registry.resolve.capabilities import EndpointCaps

__all__ = ["RouteRow", "row_for", "table_text"]


@dataclass(frozen=True, slots=True)
class RouteRow:
    """One endpoint of the model in a route plan.

    Attributes:
        endpoint: its routing slug (the published ``tag``; for tagless data the slug
            derived from the provider name).
        provider_name: its display name, or ``None``.
        attempt: 0-based index of the attempt that serves it, or ``None`` when excluded.
        excluded_by: a key of
            :data:`registry.resolve.routing.EXCLUSION_REASONS`, or ``None``.
        detail: the figures behind the exclusion, or the attempt's summary.
        rung: the enforcement rung of its attempt, or ``None``.
        max_tokens: the length limit its attempt sends, in tokens, or ``None``.
        status: the published ``status`` (``0`` operational), or ``None``.
        assumed_parameters: it publishes no ``supported_parameters``; the model's
            list was assumed.
        merged: how many published endpoints share its tag.
    """

    endpoint: str
    provider_name: str | None
    attempt: int | None
    excluded_by: str | None
    detail: str
    rung: str | None = None
    max_tokens: int | None = None
    status: int | None = None
    assumed_parameters: bool = False
    merged: int = 1

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping of the attributes."""
        return {
            "endpoint": self.endpoint,
            "provider_name": self.provider_name,
            "attempt": self.attempt,
            "excluded_by": self.excluded_by,
            "detail": self.detail,
            "rung": self.rung,
            "max_tokens": self.max_tokens,
            "status": self.status,
            "assumed_parameters": self.assumed_parameters,
            "merged": self.merged,
        }


def row_for(
    endpoint: EndpointCaps,
    *,
    attempt: int | None = None,
    excluded_by: str | None = None,
    detail: str = "",
    rung: str | None = None,
    max_tokens: int | None = None,
) -> RouteRow:
    """Build the row of ``endpoint``."""
    return RouteRow(
        endpoint=endpoint.label,
        provider_name=endpoint.provider_name,
        attempt=attempt,
        excluded_by=excluded_by,
        detail=detail,
        rung=rung,
        max_tokens=max_tokens,
        status=endpoint.status,
        assumed_parameters=endpoint.assumed_parameters,
        merged=endpoint.merged,
    )


def table_text(rows: Sequence[RouteRow]) -> str:
    """One line for messages: ``slug: excluded_by (detail); ...``."""
    return "; ".join(f"{r.endpoint}: {r.excluded_by} ({r.detail})" for r in rows)
