"""Settings of the metadata sources: where to fetch, how long to wait, where to cache.

Every setting can be given as an environment variable with the prefix ``CAPC_``
(``CAPC_BASE_URL``, ``CAPC_API_KEY``, ``CAPC_OFFLINE=1``, ...) or as a keyword to
:class:`Settings`. ``docs/metadata.md`` lists them all.

The API key is a :class:`~pydantic.SecretStr`: its ``repr`` and ``str`` are masked, and
the fetcher only ever puts it in the ``Authorization`` request header.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from registry.jsondepth import MAX_JSON_DEPTH_CAP
from registry.paths import default_cache_dir
from registry.redact import register_secret, register_url_secrets
from registry.sources.bounds import DEFAULT_MAX_JSON_DEPTH

__all__ = ["DEFAULT_BASE_URL", "Settings", "load_settings"]

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
"""OpenRouter's public API root; ``/models`` and ``/models/{id}/endpoints`` hang off it."""


class Settings(BaseSettings):
    """Where metadata comes from and how hard to try.

    Attributes:
        base_url: API root without a trailing slash (``CAPC_BASE_URL``).
        api_key: optional OpenRouter API key (``CAPC_API_KEY``). Sent only as
            ``Authorization: Bearer``; never cached, reported or logged.
        connect_timeout: seconds to wait for a TCP/TLS connection, per attempt.
        read_timeout: seconds to wait for each read from the socket, per attempt.
        deadline: total seconds one fetch may take: connect, headers, body, redirects,
            all attempts and the waits between them.
        max_attempts: attempts per fetch, the first one included (at least 1).
        backoff: seconds to wait before the second attempt; doubles after each
            further failure (capped by ``retry_after_cap``). Not used when the server
            sends ``Retry-After``.
        retry_after_cap: the longest wait in seconds between two attempts, whatever
            ``Retry-After`` asks for.
        ttl: seconds a cached copy stays fresh (served without a request).
        cache_dir: the cache directory (default: XDG cache location). A directory that
            holds other files but no ``cache.db`` is refused (ValueError): see
            :mod:`registry.sources.cache_files`.
        offline: never make a request; serve the cache (even stale) or the bundled seed.
        max_shrink: fraction 0-1; a fetched models list with fewer than
            ``(1 - max_shrink)`` times the cached copy's models is rejected.
        min_models: with no cached copy to compare with, a fetched models list with
            fewer models is rejected; ``None`` (the default) means the bundled seed's
            count (52).
        stale_deadline: the deadline in seconds of a fetch that is not a refresh when
            something usable stands in for it: a stale copy, or for endpoints the
            model's model-level figures (that is served when it passes).
        max_response_bytes: the most decoded bytes one response may have.
        max_json_depth: the deepest nesting of JSON arrays and objects accepted in a
            fetched payload (8 to 512: see
            :data:`~registry.jsondepth.MAX_JSON_DEPTH_CAP`).
    """

    model_config = SettingsConfigDict(
        env_prefix="CAPC_",
        extra="ignore",
        frozen=True,
        validate_default=True,
        env_ignore_empty=True,  # CAPC_TTL= (empty) means unset, for every setting
    )

    base_url: str = DEFAULT_BASE_URL
    api_key: SecretStr | None = None
    connect_timeout: float = Field(default=5.0, gt=0)
    read_timeout: float = Field(default=20.0, gt=0)
    deadline: float = Field(default=60.0, gt=0)
    max_attempts: int = Field(default=4, ge=1, le=20)
    backoff: float = Field(default=0.5, ge=0)
    retry_after_cap: float = Field(default=30.0, ge=0)
    ttl: float = Field(default=24 * 3600.0, ge=0)
    cache_dir: Path = Field(default_factory=default_cache_dir)
    offline: bool = False
    max_shrink: float = Field(default=0.5, ge=0, le=1)
    min_models: int | None = Field(default=None, ge=0)
    stale_deadline: float = Field(default=5.0, gt=0)
    max_response_bytes: int = Field(default=64 * 2**20, ge=1024, le=512 * 2**20)
    max_json_depth: int = Field(default=DEFAULT_MAX_JSON_DEPTH, ge=8, le=MAX_JSON_DEPTH_CAP)

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        """Require an absolute http(s) URL and drop a trailing slash; its query values
        and fragment are registered as secrets (``register_url_secrets``)."""
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http:// or https:// URL")
        register_url_secrets(value.strip())
        return value.strip().rstrip("/")

    @field_validator("api_key")
    @classmethod
    def _blank_key_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        """Treat an empty or blank key (``CAPC_API_KEY=``) as no key."""
        if value is None or not value.get_secret_value().strip():
            return None
        key = value.get_secret_value().strip()
        if any(ord(c) < 32 or ord(c) == 127 for c in key):
            # It would inject a header, and httpx would quote it in its error message.
            raise ValueError("contains a control character (a newline?); the key is not shown")
        if not key.isascii():  # a header cannot carry it; found at load, not at send
            raise ValueError("contains a character that is not ASCII (a pasted quote or "
                             "space?); the key is not shown")
        register_secret(key)
        return SecretStr(key)

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _empty_cache_dir_is_unset(cls, value: object) -> object:
        """``CAPC_CACHE_DIR=`` (empty) means unset, never the current directory."""
        if isinstance(value, str) and not value.strip():
            return default_cache_dir()
        return value

    @field_validator("cache_dir")
    @classmethod
    def _expand_cache_dir(cls, value: Path) -> Path:
        """Expand ``~``; refuse a directory that holds other files and no ``cache.db``
        (``CAPC_CACHE_DIR=.`` or ``~`` by mistake), or a ``cache.db`` that is not
        diskcache's (another application's SQLite file): capc would write into it."""
        from registry.sources.cache_files import database_problem, foreign_entries

        value = value.expanduser()
        if (problem := database_problem(value)) is not None:
            raise ValueError(
                f"{value} is not a capc cache: {problem}; capc would write diskcache's "
                "tables into it; set CAPC_CACHE_DIR to a new or empty directory (or unset "
                f"it for {default_cache_dir()})"
            )
        if not (value / "cache.db").is_file() and (found := foreign_entries(value)):
            raise ValueError(
                f"{value} is not a capc cache: it holds {', '.join(found)} and no cache.db; "
                "set CAPC_CACHE_DIR to a new or empty directory (or unset it for "
                f"{default_cache_dir()})"
            )
        return value


_WARNED: set[str] = set()


def _warn_unknown_variables() -> None:
    """Warn once per process about each ``CAPC_*`` variable no setting reads
    (``CAPC_OFLINE=1`` would otherwise be ignored silently), with a did-you-mean."""
    import os
    import warnings

    from registry.errors import closest

    known = [f"CAPC_{name.upper()}" for name in Settings.model_fields]
    for name in sorted(os.environ):
        upper = name.upper()
        if not upper.startswith("CAPC_") or upper in known or upper in _WARNED:
            continue
        _WARNED.add(upper)
        hint = closest(upper, known)
        tail = f"; did you mean {hint[0]}?" if hint else " (docs/metadata.md lists them)"
        warnings.warn(f"unknown setting {name} is ignored{tail}", UserWarning, stacklevel=3)


def load_settings(**overrides: object) -> Settings:
    """Build :class:`Settings` from the environment plus keyword overrides.

    Args:
        **overrides: setting values that win over the environment (``offline=True``).

    Returns:
        The validated settings.

    Raises:
        MetadataError: a ``CAPC_`` variable or an override is invalid; the message names
            the variable and the rule, never the value (it could be the API key).
    """
    from pydantic import ValidationError

    from registry.errors import MetadataError

    _warn_unknown_variables()
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"CAPC_{'.'.join(str(p) for p in err['loc']).upper()}: "
            + err["msg"].removeprefix("Value error, ")
            for err in exc.errors(include_url=False)
        )
        raise MetadataError(f"invalid settings: {problems}", source="environment") from exc
