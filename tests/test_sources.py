"""registry.sources.load: the fallback order, every fault ending in good data plus a note."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from compiler.request import compile_request
from registry.errors import MetadataError
from registry.metadata.catalog import Catalog, format_age
from registry.resolve.resolver import Registry
from registry.sources.cache import MetadataCache
from registry.sources.load import load_endpoints_for, load_endpoints_result, load_metadata
from registry.sources.settings import Settings
from registry.sources.urls import endpoints_url, models_url
from tests.conftest import OPENROUTER, ROOT, SEED_MODELS, FakeOpenRouter, Reply, online_settings

MODELS = "/api/v1/models"
SEED = json.loads(SEED_MODELS.read_bytes())["data"]
FULL = json.dumps({"data": SEED, "total_count": len(SEED), "links": {"next": None}}).encode()
#: the newer list the server returns: the seed minus one model
NEWER = json.dumps({"data": SEED[1:]}).encode()


def settings_for(server: FakeOpenRouter, tmp_path: Path, **overrides: Any) -> Settings:
    """Online settings for ``server`` with the cache in ``tmp_path/cache``."""
    return online_settings(server, tmp_path / "cache", **overrides)  # type: ignore[return-value]


def cache_copy(settings: Settings, payload: bytes, *, days: float, path: str = "") -> None:
    """Put ``payload`` in the cache as if fetched ``days`` ago."""
    url = models_url(settings) if not path else settings.base_url + path
    kind = "endpoints" if url.endswith("/endpoints") else "models"
    when = datetime.now(UTC) - timedelta(days=days)
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(url, payload, kind=kind, fetched_at=when, max_shrink=1)  # type: ignore[arg-type]


# -- files and offline ----------------------------------------------------------------


def test_file_path_and_file_url_load_as_files(tmp_path: Path) -> None:
    """A path or file:// URL is read as it is: origin file, no note, no cache."""
    by_path = load_metadata(SEED_MODELS)
    by_url = load_metadata(SEED_MODELS.as_uri())
    assert by_path.origin == by_url.origin == "file"
    assert len(by_path) == len(by_url) == len(SEED)
    assert by_path.note is None and not by_path.stale
    with pytest.raises(MetadataError, match="cannot read"):
        load_metadata(tmp_path / "missing.json")


def test_offline_without_cache_serves_the_seed_quietly() -> None:
    """The test suite runs with CAPC_OFFLINE=1: the seed, described as before, with a note."""
    catalog = load_metadata()
    assert catalog.origin == "seed" and not catalog.stale
    assert catalog.describe() == "bundled seed (as of 2026-08-19)"
    assert catalog.note is not None and catalog.note.startswith("offline (CAPC_OFFLINE)")


def test_offline_serves_a_stale_cached_copy(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """Offline, a cached copy is served (marked stale when past its TTL); no request."""
    settings = settings_for(openrouter_server, tmp_path, offline=True)
    cache_copy(settings, FULL, days=3)
    catalog = load_metadata(settings=settings)
    assert (catalog.origin, catalog.stale, len(catalog)) == ("stale-cache", True, len(SEED))
    assert catalog.note is not None and "offline" in catalog.note and "3 days old" in catalog.note
    assert openrouter_server.requests == []


# -- the happy path -------------------------------------------------------------------


def test_fetch_then_fresh_cache_without_a_request(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """The first load fetches and caches; the next one is served from cache, no request."""
    openrouter_server.script(MODELS, Reply(FULL))
    settings = settings_for(openrouter_server, tmp_path)
    first = load_metadata(settings=settings)
    assert (first.origin, first.stale, first.note, len(first)) == ("fetch", False, None, len(SEED))
    shown = openrouter_server.base_url.removeprefix("http://")
    assert first.describe().startswith(f"{shown}/models (fetch, as of 20")
    second = load_metadata(settings=settings)
    assert second.origin == "cache" and second.fetched_at == first.fetched_at
    assert openrouter_server.hits(MODELS) == 1


def test_stale_copy_is_refetched(openrouter_server: FakeOpenRouter, tmp_path: Path) -> None:
    """Past its TTL the copy is refetched and replaced."""
    openrouter_server.script(MODELS, Reply(NEWER))
    settings = settings_for(openrouter_server, tmp_path)
    cache_copy(settings, FULL, days=2)
    catalog = load_metadata(settings=settings)
    assert (catalog.origin, len(catalog)) == ("fetch", len(SEED) - 1)
    assert load_metadata(settings=settings).origin == "cache"


# -- every fault ends in fresh data or the previous good copy, with a note -------------

FAULTS: dict[str, tuple[list[Reply], str | None]] = {
    # name: (server script, None = fresh data expected, else a phrase of the note)
    "read-timeout": ([Reply(hang=True)], "read timeout after 2 attempts"),
    "connection-reset": ([Reply(reset=True)], "after 2 attempts"),
    "429-retry-after": ([Reply(status=429, headers={"Retry-After": "1"}), Reply(NEWER)], None),
    "three-500s": ([Reply(status=500), Reply(status=500), Reply(status=500), Reply(NEWER)], None),
    "truncated-json": ([Reply(NEWER[: len(NEWER) // 2])], "looks truncated"),
    "html-200": (
        [Reply("<html><body>502 Bad Gateway</body></html>", headers={"Content-Type": "text/html"})],
        "looks like an HTML page",
    ),
    "wrong-shape": ([Reply({"models": SEED})], "without a usable 'data' key"),
    "empty-list": ([Reply({"data": []})], "the models list is empty"),
    "shrunk-to-10%": ([Reply({"data": SEED[: len(SEED) // 10]})], "more than the 50% allowed"),
    "gzip": ([Reply(NEWER, gzip=True)], None),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_with_a_cached_copy(
    fault: str, openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """Each fault ends with fresh data, or the stale cached copy plus a note saying so."""
    script, phrase = FAULTS[fault]
    openrouter_server.script(MODELS, *script)
    settings = settings_for(openrouter_server, tmp_path, max_attempts=4)
    if fault in ("read-timeout", "connection-reset"):
        settings = settings_for(openrouter_server, tmp_path, max_attempts=2)
    cache_copy(settings, FULL, days=3)
    catalog = load_metadata(settings=settings)
    if phrase is None:
        assert (catalog.origin, catalog.stale, len(catalog)) == ("fetch", False, len(SEED) - 1)
        assert "(fetch, as of " in catalog.describe()
        attempts = openrouter_server.hits(MODELS)
        retried = f"fetched models list after {attempts} attempts" if attempts > 1 else None
        assert catalog.note == retried
        return
    assert (catalog.origin, catalog.stale, len(catalog)) == ("stale-cache", True, len(SEED))
    assert catalog.note is not None and "\n" not in catalog.note
    assert phrase in catalog.note
    assert "serving the cached copy from" in catalog.note and "stale: 3 days old" in catalog.note
    assert "stale-cache" in catalog.describe() and "stale, 3 days old" in catalog.describe()
    with MetadataCache(settings.cache_dir) as cache:
        assert cache.get(models_url(settings)).payload == FULL  # type: ignore[union-attr]


@pytest.mark.parametrize("fault", ["http-503", "html-200"])
def test_fault_without_a_cache_falls_back_to_the_seed(
    fault: str, openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """No cached copy: the bundled seed, marked stale, with the reason in the note."""
    reply = Reply(status=503) if fault == "http-503" else Reply("<html></html>")
    openrouter_server.script(MODELS, reply)
    settings = settings_for(openrouter_server, tmp_path, max_attempts=3)
    catalog = load_metadata(settings=settings)
    assert (catalog.origin, catalog.stale) == ("seed", True)
    assert catalog.note is not None
    assert catalog.note.endswith("using the bundled seed (as of 2026-08-19)")
    expected = "HTTP 503 after 3 attempts" if fault == "http-503" else "HTML page"
    assert expected in catalog.note
    assert catalog.describe().startswith("bundled seed (as of 2026-08-19, stale, ")


def test_refresh_failure_keeps_a_fresh_copy(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """refresh=True fetches even when fresh; when that fails the fresh copy is kept."""
    openrouter_server.script(MODELS, Reply(status=500))
    settings = settings_for(openrouter_server, tmp_path, max_attempts=1)
    cache_copy(settings, FULL, days=0)
    catalog = load_metadata(settings=settings, refresh=True)
    assert (catalog.origin, catalog.stale) == ("cache", False)
    assert catalog.note is not None and "still fresh" in catalog.note


def test_unwritable_cache_still_serves_the_fetch(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """A cache directory that cannot be used does not stop a successful fetch."""
    openrouter_server.script(MODELS, Reply(FULL))
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    settings = online_settings(openrouter_server, blocker / "cache")
    catalog = load_metadata(settings=settings)  # type: ignore[arg-type]
    assert catalog.origin == "fetch" and len(catalog) == len(SEED)
    assert catalog.note is not None and "not cached" in catalog.note


def test_notes_are_logged(
    openrouter_server: FakeOpenRouter, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A fallback is logged once as a warning with the same one-line note."""
    openrouter_server.script(MODELS, Reply(status=503))
    settings = settings_for(openrouter_server, tmp_path, max_attempts=1)
    cache_copy(settings, FULL, days=3)
    with caplog.at_level(logging.WARNING, logger="registry.sources"):
        catalog = load_metadata(settings=settings)
    assert [r.getMessage() for r in caplog.records if r.name == "registry.sources"] == [
        catalog.note
    ]


# -- what reports say -----------------------------------------------------------------


def test_describe_states_origin_staleness_and_age() -> None:
    """describe() names source, origin and date; when stale also the age."""
    day_ago = (datetime.now(UTC) - timedelta(days=3, hours=1)).isoformat(timespec="seconds")
    stale = Catalog(
        models={},
        source="https://openrouter.ai/api/v1/models",
        fetched_at=day_ago,
        origin="stale-cache",
        stale=True,
    )
    assert stale.describe() == (
        f"openrouter.ai/api/v1/models (stale-cache, as of {day_ago}, stale, 3 days old)"
    )
    ages = [format_age(s) for s in (5, 600, 4 * 3600, 50 * 3600)]
    assert ages == ["5 s", "10 min", "4 h", "2 days"]


def test_compile_report_says_the_copy_is_stale(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """A compile served from a stale copy says so, and how old, in its report."""
    openrouter_server.script(MODELS, Reply(status=503))
    settings = settings_for(openrouter_server, tmp_path, max_attempts=1)
    cache_copy(settings, FULL, days=3)
    registry = Registry.load(
        models=ROOT / "models.yaml", stages=ROOT / "stages.yaml", settings=settings
    )
    report = compile_request("classify_ticket", "openai/gpt-4o-mini", [], registry=registry).report
    assert "stale-cache" in report.metadata and "stale, 3 days old" in report.metadata
    assert registry.catalog.note is not None and "HTTP 503" in registry.catalog.note


# -- endpoints ------------------------------------------------------------------------

EP_PATH = "/api/v1/models/openai/gpt-4o/endpoints"
EP_BODY = {
    "data": {
        "id": "openai/gpt-4o",
        "endpoints": [
            {
                "tag": "openai",
                "provider_name": "OpenAI",
                "supported_parameters": ["max_tokens", "response_format", "structured_outputs"],
                "context_length": 128000,
                "max_completion_tokens": 16384,
            },
            {
                "tag": "azure",
                "provider_name": "Azure",
                "supported_parameters": ["max_tokens", "response_format"],
                "context_length": 128000,
                "max_completion_tokens": 4096,
            },
        ],
    }
}


def test_endpoints_fetched_then_cached(openrouter_server: FakeOpenRouter, tmp_path: Path) -> None:
    """Endpoints are fetched once, then served from the cache."""
    openrouter_server.script(EP_PATH, Reply(EP_BODY))
    settings = settings_for(openrouter_server, tmp_path)
    first = load_endpoints_result("openai/gpt-4o", settings=settings)
    assert first.origin == "fetch" and first.endpoints is not None
    assert [e.tag for e in first.endpoints.endpoints] == ["openai", "azure"]
    again = load_endpoints_for("openai/gpt-4o", settings=settings)
    assert again == first.endpoints
    assert openrouter_server.hits(EP_PATH) == 1


def test_endpoints_failure_serves_stale_copy_or_none(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """A failed endpoints fetch serves the stale copy; with none it returns None + a note."""
    openrouter_server.script(EP_PATH, Reply(status=502))
    settings = settings_for(openrouter_server, tmp_path, max_attempts=2)
    notes: list[str] = []
    assert load_endpoints_for("openai/gpt-4o", settings=settings, notes=notes) is None
    assert notes == [
        "endpoints of openai/gpt-4o: fetch failed (HTTP 502 after 2 attempts); none used"
    ]
    body = json.dumps(EP_BODY).encode()
    cache_copy(settings, body, days=2, path=EP_PATH.removeprefix("/api/v1"))
    result = load_endpoints_result("openai/gpt-4o", settings=settings)
    assert (result.origin, result.stale) == ("stale-cache", True)
    assert result.note is not None and "2 days old" in result.note
    assert load_endpoints_for("not-a-model-id", settings=settings) is None


def test_offline_endpoints_without_cache_are_none(tmp_path: Path) -> None:
    """Offline and uncached: None, never a request, never an exception."""
    notes: list[str] = []
    assert load_endpoints_for("openai/gpt-4o", notes=notes) is None
    assert notes and "offline" in notes[0]


def test_registry_fetches_endpoints_only_for_restricted_routing(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """Registry.endpoints() is lazy: only a pinned resolve asks, once per model."""
    openrouter_server.script(MODELS, Reply(FULL))
    openrouter_server.script(EP_PATH, Reply(EP_BODY))
    registry = Registry.load(settings=settings_for(openrouter_server, tmp_path))
    plain = registry.resolve("openai/gpt-4o")
    assert openrouter_server.hits(EP_PATH) == 0 and not plain.routing_restricted
    pinned = registry.resolve("openai/gpt-4o", provider={"only": ["azure"]})
    assert openrouter_server.hits(EP_PATH) == 1
    assert pinned.routing_restricted and "structured_outputs" not in pinned.supported_parameters
    assert pinned.max_completion_tokens == 4096
    registry.resolve("openai/gpt-4o", provider={"only": ["openai"]})
    assert openrouter_server.hits(EP_PATH) == 1


def test_registry_endpoints_from_a_file_never_fetch(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """Registry.load(endpoints=FILE) uses the file only; unknown models give None."""
    path = tmp_path / "ep.json"
    path.write_text(json.dumps(EP_BODY))
    settings = settings_for(openrouter_server, tmp_path)
    registry = Registry.load(metadata=SEED_MODELS, endpoints=path, settings=settings)
    assert registry.endpoints("openai/gpt-4o") is not None
    assert registry.endpoints("openai/gpt-4o-mini") is None
    assert openrouter_server.requests == []


SHARED_ENDPOINTS = sorted(OPENROUTER.glob("endpoints-*.json")) if OPENROUTER.is_dir() else []


@pytest.mark.skipif(not SHARED_ENDPOINTS, reason="../shared/data/openrouter is absent")
def test_every_shared_endpoints_response_goes_through_the_cache(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """Each real /endpoints response (and 25 bodies of the 356-model bundle) passes the guard."""
    settings = settings_for(openrouter_server, tmp_path)
    bodies: dict[str, Any] = {}
    for path in SHARED_ENDPOINTS:
        payload = json.loads(path.read_bytes())
        if "endpoints" in payload and "data" not in payload:
            bundle = payload["endpoints"]
            picked = [k for k, v in bundle.items() if v["data"]["endpoints"]][::15]
            bodies.update({k: bundle[k] for k in picked})
        else:
            bodies[payload["data"]["id"]] = payload
    assert len(bodies) > 25
    for model_id, body in bodies.items():
        url = endpoints_url(settings, model_id)
        openrouter_server.script(urlsplit(url).path, Reply(body))
    for model_id, body in bodies.items():
        listed = load_endpoints_for(model_id, settings=settings)
        assert listed is not None, model_id
        assert len(listed.endpoints) == len(body["data"]["endpoints"])


def test_unknown_parameters_are_kept_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A supported_parameters value this version does not know loads, and is logged once."""
    models = [dict(SEED[0], supported_parameters=["max_tokens", "telepathy_test_only"])]
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"data": models}))
    with caplog.at_level(logging.INFO, logger="registry.sources"):
        first = load_metadata(path)
        load_metadata(path)
    model = first.require(SEED[0]["id"])
    assert model.supported_parameters == ("max_tokens", "telepathy_test_only")
    logged = [r.getMessage() for r in caplog.records if "telepathy_test_only" in r.getMessage()]
    assert len(logged) == 1 and "does not know (kept)" in logged[0]
