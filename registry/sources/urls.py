"""The metadata URLs of OpenRouter's API, and how a URL is shown.

OpenRouter publishes ``GET /api/v1/models`` (every model;
https://openrouter.ai/docs/guides/overview/models) and
``GET /api/v1/models/{author}/{slug}/endpoints`` (the providers serving one model;
https://openrouter.ai/docs/api/api-reference/endpoints/list-endpoints). The base URL
comes from ``Settings.base_url``; :mod:`registry.sources.fetch` requests these URLs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

from registry.errors import MetadataError

if TYPE_CHECKING:
    from registry.sources.settings import Settings

__all__ = ["endpoints_url", "models_url", "redact_url"]


def redact_url(url: str) -> str:
    """Remove a ``user:password@`` part from a URL so it can be shown.

    Args:
        url: any URL.

    Returns:
        The URL without credentials in its network location.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


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
