"""registry.sources (settings, urls, fetch): URLs, retries and faults against a loopback server."""

from __future__ import annotations

import email.utils
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from registry.errors import MetadataError
from registry.paths import default_cache_dir
from registry.redact import redact_url
from registry.sources.failures import parse_retry_after
from registry.sources.fetch import (
    FetchError,
    fetch_endpoints,
    fetch_models,
    fetch_url,
)
from registry.sources.settings import DEFAULT_BASE_URL, Settings, load_settings
from registry.sources.urls import endpoints_url, models_url
from tests.conftest import ROOT, SEED_MODELS, FakeOpenRouter, Reply, online_settings

MODELS = "/api/v1/models"
KEY = "sk-or-v1-test-0123456789abcdef"


@pytest.fixture
def body() -> bytes:
    """A real models list (the bundled seed)."""
    return SEED_MODELS.read_bytes()


# -- settings -----------------------------------------------------------------------


def test_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without CAPC_ variables: OpenRouter's API, no key, 24 h TTL, 50% shrink guard."""
    monkeypatch.delenv("CAPC_OFFLINE")
    monkeypatch.delenv("CAPC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/tmp/xdg")
    settings = Settings()
    assert settings.base_url == DEFAULT_BASE_URL == "https://openrouter.ai/api/v1"
    assert settings.api_key is None
    assert settings.ttl == 24 * 3600
    assert settings.max_shrink == 0.5
    assert settings.offline is False
    assert settings.cache_dir == Path("/var/tmp/xdg/capability-compiler")


def test_cache_dir_ignores_relative_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative XDG_CACHE_HOME is ignored, as the XDG spec says: ~/.cache is used."""
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert default_cache_dir() == Path.home() / ".cache" / "capability-compiler"


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every setting reads its CAPC_ variable; the key is masked in repr."""
    monkeypatch.setenv("CAPC_BASE_URL", "http://localhost:8080/api/v1/")
    monkeypatch.setenv("CAPC_API_KEY", KEY)
    monkeypatch.setenv("CAPC_READ_TIMEOUT", "2.5")
    monkeypatch.setenv("CAPC_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("CAPC_TTL", "60")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    settings = load_settings()
    assert settings.base_url == "http://localhost:8080/api/v1"
    assert settings.api_key is not None and settings.api_key.get_secret_value() == KEY
    assert (settings.read_timeout, settings.max_attempts, settings.ttl) == (2.5, 2, 60)
    assert settings.offline is True
    assert settings.cache_dir == tmp_path
    assert KEY not in repr(settings) and KEY not in str(settings)


def test_blank_key_is_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """CAPC_API_KEY= (empty) means no key, so no Authorization header is sent."""
    monkeypatch.setenv("CAPC_API_KEY", "  ")
    assert load_settings().api_key is None


def test_invalid_setting_names_variable_not_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad value fails with MetadataError naming the variable and the rule."""
    monkeypatch.setenv("CAPC_READ_TIMEOUT", "-1")
    monkeypatch.setenv("CAPC_API_KEY", KEY)
    with pytest.raises(MetadataError, match="CAPC_READ_TIMEOUT") as info:
        load_settings()
    assert KEY not in str(info.value)
    with pytest.raises(MetadataError, match="CAPC_BASE_URL"):
        load_settings(base_url="ftp://example.com")


# -- URLs and headers -----------------------------------------------------------------


def test_urls() -> None:
    """Models and endpoints URLs hang off base_url; ids are percent-encoded per segment."""
    settings = Settings(base_url="https://example.com/api/v1")
    assert models_url(settings) == "https://example.com/api/v1/models"
    assert (
        endpoints_url(settings, "openai/gpt-oss-120b:free")
        == "https://example.com/api/v1/models/openai/gpt-oss-120b:free/endpoints"
    )
    assert endpoints_url(settings, "a b/c?d").endswith("/models/a%20b/c%3Fd/endpoints")
    for bad in ("no-slash", "a/b/c", "/x"):
        with pytest.raises(MetadataError, match="author/slug"):
            endpoints_url(settings, bad)


def test_redact_url() -> None:
    """Credentials in a URL never reach a message."""
    assert redact_url("https://u:p@host/x?y=1") == "https://host/x?y=***"  # values go
    assert redact_url("https://host/x") == "https://host/x"


def test_parse_retry_after() -> None:
    """Retry-After is seconds or an HTTP-date; a past date is 0; junk is ignored."""
    now = datetime(2026, 8, 19, 10, 0, tzinfo=UTC)
    later = email.utils.format_datetime(now + timedelta(seconds=30), usegmt=True)
    earlier = email.utils.format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(later, now=now) == 30.0
    assert parse_retry_after(earlier, now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


# -- against a real loopback server ---------------------------------------------------


def test_success_sends_key_only_as_bearer(
    openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes
) -> None:
    """One GET with Accept JSON; the key is the Authorization header and nowhere else."""
    openrouter_server.script(MODELS, Reply(body))
    settings = online_settings(openrouter_server, tmp_path, api_key=KEY)
    result = fetch_models(settings)  # type: ignore[arg-type]
    assert result.content == body
    assert (result.status, result.attempts) == (200, 1)
    path, headers = openrouter_server.requests[0]
    assert path == MODELS and KEY not in path
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert headers["Accept"] == "application/json"
    assert [k for k, v in headers.items() if KEY in v] == ["Authorization"]


def test_no_key_no_authorization_header(
    openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes
) -> None:
    """Without a key no Authorization header is sent at all."""
    openrouter_server.script(MODELS, Reply(body))
    fetch_models(online_settings(openrouter_server, tmp_path))  # type: ignore[arg-type]
    assert "Authorization" not in openrouter_server.requests[0][1]


def test_gzip_is_decoded(openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes) -> None:
    """A gzip-encoded response arrives decoded."""
    openrouter_server.script(MODELS, Reply(body, gzip=True))
    result = fetch_models(online_settings(openrouter_server, tmp_path))  # type: ignore[arg-type]
    assert result.content == body
    assert "gzip" in openrouter_server.requests[0][1]["Accept-Encoding"]


def test_three_500s_then_success(
    openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes
) -> None:
    """5xx is retried with doubling waits; the fourth attempt succeeds."""
    openrouter_server.script(
        MODELS, Reply(status=500), Reply(status=502), Reply(status=503), Reply(body)
    )
    waits: list[float] = []
    settings = online_settings(openrouter_server, tmp_path, backoff=0.25, retry_after_cap=30)
    result = fetch_models(settings, sleep=waits.append)  # type: ignore[arg-type]
    assert result.attempts == 4 and result.content == body
    assert waits == [0.25, 0.5, 1.0]
    assert openrouter_server.hits(MODELS) == 4


def test_429_honours_retry_after_seconds_capped(
    openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes
) -> None:
    """429 waits what Retry-After asks, but never longer than retry_after_cap."""
    openrouter_server.script(
        MODELS,
        Reply(status=429, headers={"Retry-After": "2"}),
        Reply(status=429, headers={"Retry-After": "3600"}),
        Reply(body),
    )
    waits: list[float] = []
    settings = online_settings(openrouter_server, tmp_path, retry_after_cap=5)
    result = fetch_models(settings, sleep=waits.append)  # type: ignore[arg-type]
    assert result.attempts == 3
    assert waits == [2.0, 5.0]


def test_429_honours_retry_after_http_date(
    openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes
) -> None:
    """An HTTP-date Retry-After is turned into the seconds until then."""
    when = datetime.now(UTC) + timedelta(seconds=40)
    date = email.utils.format_datetime(when, usegmt=True)
    openrouter_server.script(MODELS, Reply(status=429, headers={"Retry-After": date}), Reply(body))
    waits: list[float] = []
    settings = online_settings(openrouter_server, tmp_path, retry_after_cap=600, deadline=600)
    fetch_models(settings, sleep=waits.append)  # type: ignore[arg-type]
    assert len(waits) == 1 and 30 <= waits[0] <= 41


def test_other_4xx_is_not_retried(openrouter_server: FakeOpenRouter, tmp_path: Path) -> None:
    """401/404 fail at once with the status and the URL in the message."""
    openrouter_server.script(MODELS, Reply(status=401))
    settings = online_settings(openrouter_server, tmp_path, api_key=KEY)
    with pytest.raises(FetchError) as info:
        fetch_models(settings)  # type: ignore[arg-type]
    assert (info.value.status, info.value.attempts) == (401, 1)
    assert openrouter_server.hits(MODELS) == 1
    assert f"{openrouter_server.base_url}/models" in str(info.value)
    assert KEY not in str(info.value)


def test_read_timeout_is_retried_then_fails(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """A server that never answers: each attempt times out; the error says so."""
    openrouter_server.script(MODELS, Reply(hang=True))
    settings = online_settings(openrouter_server, tmp_path, max_attempts=2)
    with pytest.raises(FetchError) as info:
        fetch_models(settings)  # type: ignore[arg-type]
    assert info.value.reason == "read timeout"
    assert info.value.attempts == 2
    assert info.value.summary == "read timeout after 2 attempts"


def test_connection_reset_is_retried(
    openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes
) -> None:
    """A TCP reset before the response is retried like any network error."""
    openrouter_server.script(MODELS, Reply(reset=True), Reply(body))
    result = fetch_models(online_settings(openrouter_server, tmp_path))  # type: ignore[arg-type]
    assert result.attempts == 2 and result.content == body


def test_body_cut_short_is_retried(
    openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes
) -> None:
    """Fewer bytes than Content-Length (connection closed mid-body) is retried."""
    openrouter_server.script(MODELS, Reply(body[:1000], short_by=500))
    settings = online_settings(openrouter_server, tmp_path, max_attempts=2)
    with pytest.raises(FetchError) as info:
        fetch_models(settings)  # type: ignore[arg-type]
    assert info.value.attempts == 2
    assert info.value.status is None


def test_connection_refused(tmp_path: Path) -> None:
    """Nothing listening: 'cannot connect', after every attempt."""
    settings = Settings(
        base_url="http://127.0.0.1:9/api/v1", cache_dir=tmp_path, max_attempts=2, backoff=0
    )
    with pytest.raises(FetchError, match="cannot connect after 2 attempts"):
        fetch_models(settings)


def test_deadline_bounds_the_whole_fetch(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """With many attempts allowed, the total deadline stops the retries."""
    openrouter_server.script(MODELS, Reply(hang=True))
    settings = online_settings(openrouter_server, tmp_path, max_attempts=20, deadline=0.5)
    with pytest.raises(FetchError, match=r"deadline of 0\.5 s reached") as info:
        fetch_models(settings)  # type: ignore[arg-type]
    assert info.value.attempts < 20


def test_retry_after_beyond_deadline_gives_up(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """A Retry-After that would end past the deadline stops at once instead of sleeping."""
    openrouter_server.script(MODELS, Reply(status=429, headers={"Retry-After": "120"}))
    waits: list[float] = []
    settings = online_settings(openrouter_server, tmp_path, retry_after_cap=600, deadline=60)
    with pytest.raises(FetchError, match="HTTP 429") as info:
        fetch_models(settings, sleep=waits.append)  # type: ignore[arg-type]
    assert waits == [] and info.value.attempts == 1


def test_endpoints_fetch(openrouter_server: FakeOpenRouter, tmp_path: Path) -> None:
    """fetch_endpoints requests /models/{author}/{slug}/endpoints."""
    path = "/api/v1/models/openai/gpt-4o/endpoints"
    openrouter_server.script(path, Reply({"data": {"id": "openai/gpt-4o", "endpoints": []}}))
    settings = online_settings(openrouter_server, tmp_path)
    assert b'"endpoints"' in fetch_endpoints("openai/gpt-4o", settings).content  # type: ignore[arg-type]
    assert openrouter_server.requests[0][0] == path


def test_caller_client_and_transport(tmp_path: Path, body: bytes) -> None:
    """A caller's httpx.Client (here with a mock transport) is used and left open."""
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(503) if len(calls) == 1 else httpx.Response(200, content=body)

    client = httpx.Client(transport=httpx.MockTransport(handler))
    settings = Settings(base_url="https://mock.invalid/api/v1", cache_dir=tmp_path, backoff=0)
    result = fetch_url("https://mock.invalid/api/v1/models", settings=settings, client=client)
    assert result.attempts == 2 and result.content == body
    assert not client.is_closed
    client.close()


def test_progress_lines(openrouter_server: FakeOpenRouter, tmp_path: Path, body: bytes) -> None:
    """progress receives one line per attempt, naming the URL and the attempt number."""
    openrouter_server.script(MODELS, Reply(status=500), Reply(body))
    lines: list[str] = []
    fetch_models(online_settings(openrouter_server, tmp_path), progress=lines.append)  # type: ignore[arg-type]
    assert lines[0] == f"GET {openrouter_server.base_url}/models"
    assert lines[1].endswith("(attempt 2 of 4)")


def test_importing_registry_loads_no_network_or_cache_library() -> None:
    """httpx, tenacity and diskcache are imported only when a fetch or cache is used."""
    code = (
        "import sys, registry, registry.sources.load, registry.sources.fetch, "
        "registry.sources.cache; "
        "print(sorted(m for m in ('httpx', 'tenacity', 'diskcache') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "[]"
