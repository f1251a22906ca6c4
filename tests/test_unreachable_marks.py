"""The per-host unreachable mark skips only what it should (issue 22, round 3).

An HTTP status never marks a host (a 429 whose Retry-After is longer than the time left
included: the host answered); a mark made under a short deadline (CAPC_STALE_DEADLINE)
skips later fetches with that deadline or a shorter one, never one with a longer
deadline (``capc refresh``'s CAPC_DEADLINE). And a good list fetched into a cache that
cannot store it is served from memory, not replaced by the older copy.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from registry.sources.cache import MetadataCache
from registry.sources.failures import mark_unreachable, unreachable_reason
from registry.sources.fetch import FetchError, fetch_url
from registry.sources.load import load_metadata
from registry.sources.settings import Settings
from registry.sources.urls import models_url
from tests.conftest import SEED_MODELS, FakeOpenRouter, Reply, online_settings

MODELS = "/api/v1/models"


def _settings(server: FakeOpenRouter, tmp_path: Path, **kw: object) -> Settings:
    settings = online_settings(server, tmp_path / "cache", **kw)
    assert isinstance(settings, Settings)
    return settings


@pytest.mark.parametrize(("status", "retry_after"), [(429, "100"), (503, "100"), (429, None)])
def test_an_http_status_never_marks_the_host(
    openrouter_server: FakeOpenRouter, tmp_path: Path, status: int, retry_after: str | None
) -> None:
    """Retry-After of 100 s with 1 s left: the fetch stops at once (deadline reached),
    and the next fetch from the host is attempted."""
    settings = _settings(openrouter_server, tmp_path, deadline=1.0, retry_after_cap=1000.0,
                         max_attempts=1 if retry_after is None else 4)
    headers = {"Retry-After": retry_after} if retry_after else {}
    openrouter_server.script(MODELS, Reply(status=status, headers=headers),
                             Reply(SEED_MODELS.read_bytes()))
    with pytest.raises(FetchError) as caught:
        fetch_url(models_url(settings), settings=settings, sleep=lambda _: None)
    assert f"HTTP {status}" in str(caught.value)
    assert unreachable_reason(models_url(settings)) is None
    assert fetch_url(models_url(settings), settings=settings).status == 200


def test_a_mark_skips_only_fetches_with_no_longer_deadline() -> None:
    url = "http://127.0.0.1:9/api/v1/models"
    mark_unreachable(url, "read timeout (deadline of 2 s reached)", for_seconds=60, deadline=2)
    assert unreachable_reason(url, deadline=2) is not None
    assert unreachable_reason(url, deadline=0.5) is not None
    assert unreachable_reason(url, deadline=60) is None  # a refresh is attempted
    assert unreachable_reason(url) is not None  # no deadline given: any mark counts
    mark_unreachable(url, "read timeout (deadline of 60 s reached)", for_seconds=60, deadline=60)
    assert unreachable_reason(url, deadline=60) is not None


def test_a_refresh_after_a_short_deadline_timeout_is_attempted(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """A stale copy, a hanging host, CAPC_STALE_DEADLINE 0.2 s: the compile-style load
    serves the stale copy and marks the host; refresh=True in the same process still
    asks (full deadline) and gets the new list."""
    settings = _settings(openrouter_server, tmp_path, deadline=10.0, read_timeout=5.0,
                         stale_deadline=0.2, max_attempts=1)
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(models_url(settings), SEED_MODELS.read_bytes(), kind="models",
                    fetched_at=datetime.now(UTC) - timedelta(days=3), max_shrink=1)
    openrouter_server.script(MODELS, Reply(hang=True), Reply(SEED_MODELS.read_bytes()))
    assert load_metadata(settings=settings).origin == "stale-cache"
    assert unreachable_reason(models_url(settings), deadline=0.2) is not None
    assert load_metadata(settings=settings).origin == "stale-cache"  # skipped: same deadline
    assert openrouter_server.hits(MODELS) == 1
    openrouter_server.release.set()  # let the hung handler go
    assert load_metadata(settings=settings, refresh=True).origin == "fetch"
    assert openrouter_server.hits(MODELS) == 2


# -- a good list that cannot be stored is served from memory ------------------------------

@pytest.mark.parametrize("kept", [1, 52])
def test_a_fetched_list_the_cache_cannot_take_is_served_fresh(
    openrouter_server: FakeOpenRouter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    kept: int,
) -> None:
    """A stale copy of 52 models; the fetch succeeds but the store fails (read-only or
    full cache): the fetched list is served, with a note, not the older copy; a list
    that shrank past CAPC_MAX_SHRINK is still refused (the stale copy is served)."""
    import json

    from registry.sources.cache import CacheError

    settings = _settings(openrouter_server, tmp_path, max_attempts=1)
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(models_url(settings), SEED_MODELS.read_bytes(), kind="models",
                    fetched_at=datetime.now(UTC) - timedelta(days=3), max_shrink=1)
    listed = json.loads(SEED_MODELS.read_bytes())
    listed["data"] = listed["data"][:kept]
    openrouter_server.script(MODELS, Reply(listed))

    def refuse(*_: object, **__: object) -> None:
        raise CacheError("cache x: cannot store: it is read-only (test)", source="x")

    monkeypatch.setattr(MetadataCache, "store", refuse)
    catalog = load_metadata(settings=settings)
    if kept == 52:
        assert catalog.origin == "fetch" and "not cached" in (catalog.note or "")
    else:
        assert catalog.origin == "stale-cache" and "shrank" in (catalog.note or "")
