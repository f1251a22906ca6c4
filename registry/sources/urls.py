"""The metadata URLs of OpenRouter's API (how a URL is shown: :mod:`registry.redact`).

OpenRouter publishes ``GET /api/v1/models`` (every model;
https://openrouter.ai/docs/guides/overview/models) and
``GET /api/v1/models/{author}/{slug}/endpoints`` (the providers serving one model;
https://openrouter.ai/docs/api/api-reference/endpoints/list-endpoints). The base URL
comes from ``Settings.base_url``; :mod:`registry.sources.fetch` requests these URLs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from registry.errors import MetadataError

if TYPE_CHECKING:
    from registry.sources.settings import Settings

__all__ = ["endpoints_url", "models_url"]


def models_url(settings: Settings) -> str:
    """Return the models-list URL for these settings.

    Args:
        settings: supplies ``base_url``.

    Returns:
        ``{base_url}/models``.
    """
    return f"{settings.base_url}/models"


def endpoints_url(settings: Settings, model_id: str) -> str:
    """Return the ``/endpoints`` URL of one model.

    Args:
        settings: supplies ``base_url``.
        model_id: ``author/slug`` (a ``:variant`` suffix is kept as given).

    Returns:
        ``{base_url}/models/{author}/{slug}/endpoints``, each segment percent-encoded.

    Raises:
        MetadataError: ``model_id`` is not of the form ``author/slug``.
    """
    author, _, slug = model_id.partition("/")
    if not author or not slug or "/" in slug:
        raise MetadataError(
            f"{model_id!r} is not a model id of the form author/slug", source=model_id
        )
    safe = ":-._~"
    return f"{settings.base_url}/models/{quote(author, safe)}/{quote(slug, safe)}/endpoints"
