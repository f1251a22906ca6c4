"""Bounds on what comes in (issue 22): one row per input class, each ending in a clear
refusal with the good copy kept. Nothing here asserts a wall-clock time: each test
asserts that the limit fired (its message), and the gzip bomb also asserts memory.

| input | limit (setting) | what is asserted |
|---|---|---|
| a 3 MB body | ``CAPC_MAX_RESPONSE_BYTES`` | refresh fails, good copy intact |
| a gzip bomb (150 KB -> 150 MB) | ``CAPC_MAX_RESPONSE_BYTES`` | refused; < 3x the limit allocated |
| a drip, 1 byte per 20 ms | ``CAPC_DEADLINE`` | "deadline ... while reading" |
| a hanging server, stale copy | ``CAPC_STALE_DEADLINE`` | stale copy served at that deadline |
| 200,000 levels of nesting | ``CAPC_MAX_JSON_DEPTH`` | rejected payload, stale copy served |
| 41 models, no cached copy | ``CAPC_MIN_MODELS`` (seed's 52) | rejected, seed served |
"""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main
from registry.jsondepth import json_depth_over
from registry.sources.cache import MetadataCache, RejectedPayload, check_payload
from registry.sources.fetch import FetchError, fetch_url
from registry.sources.load import load_endpoints_for, load_metadata
from registry.sources.settings import Settings
from registry.sources.urls import models_url
from tests.conftest import SEED_MODELS, FakeOpenRouter, Reply, online_settings

MODELS = "/api/v1/models"
FULL = SEED_MODELS.read_bytes()
SEED = json.loads(FULL)["data"]


def settings_for(server: FakeOpenRouter, tmp_path: Path, **overrides: Any) -> Settings:
    return online_settings(server, tmp_path / "cache", **overrides)  # type: ignore[return-value]


def good_copy(settings: Settings, *, days: float = 3, url: str | None = None) -> bytes:
    """Cache the seed list as fetched ``days`` ago; return its bytes."""
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(
            url or models_url(settings),
            FULL,
            kind="models",
            fetched_at=datetime.now(UTC) - timedelta(days=days),
            max_shrink=1,
        )
    return FULL


def cached_payload(settings: Settings) -> bytes | None:
    with MetadataCache(settings.cache_dir) as cache:
        entry = cache.get(models_url(settings))
    return None if entry is None else entry.payload


def padded_list(size: int) -> bytes:
    """A valid models list padded with whitespace to ``size`` bytes."""
    return FULL[:-2] + b" " * max(size - len(FULL), 0) + FULL[-2:]


def test_an_oversized_body_is_a_failed_refresh_with_the_good_copy_intact(
    openrouter_server: FakeOpenRouter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    openrouter_server.script(MODELS, Reply(padded_list(3 * 2**20)))
    settings = settings_for(openrouter_server, tmp_path, max_response_bytes=2**20)
    good = good_copy(settings)
    for name, value in {
        "CAPC_OFFLINE": "0",
        "CAPC_BASE_URL": openrouter_server.base_url,
        "CAPC_CACHE_DIR": str(settings.cache_dir),
        "CAPC_MAX_RESPONSE_BYTES": str(2**20),
        "CAPC_MAX_ATTEMPTS": "3",
    }.items():
        monkeypatch.setenv(name, value)
    assert main(["refresh"]) == 1
    err = capsys.readouterr().err
    assert "larger than the 1,048,576-byte limit (CAPC_MAX_RESPONSE_BYTES" in err
    assert "serving the cached copy" in err
    assert openrouter_server.hits(MODELS) == 1  # not retried
    assert cached_payload(settings) == good


def test_a_gzip_bomb_stops_at_the_limit_in_bounded_memory(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    inflated = 150 * 2**20
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as out:
        out.write(FULL[:-2])
        block = b" " * 2**20
        for _ in range(inflated // len(block)):
            out.write(block)
        out.write(FULL[-2:])
    bomb = buffer.getvalue()
    assert len(bomb) < 2**20 < inflated  # what is announced passes; what it inflates to not
    openrouter_server.script(
        MODELS, Reply(bomb, headers={"Content-Encoding": "gzip"})
    )
    settings = settings_for(openrouter_server, tmp_path, max_response_bytes=8 * 2**20)
    good = good_copy(settings)
    tracemalloc.start()
    try:
        catalog = load_metadata(settings=settings, refresh=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert catalog.origin == "stale-cache"
    assert catalog.note is not None and "8,388,608-byte limit" in catalog.note
    assert peak < 3 * settings.max_response_bytes  # 17 MB measured; never the 150 MB
    assert cached_payload(settings) == good


def test_a_drip_is_cut_at_the_deadline(openrouter_server: FakeOpenRouter, tmp_path: Path) -> None:
    """1 byte every 20 ms (a 66 KB list would take 22 minutes); each read is quick, so
    only the deadline across reads stops it."""
    openrouter_server.script(MODELS, Reply(FULL, drip=0.02))
    settings = settings_for(openrouter_server, tmp_path, deadline=0.5, read_timeout=0.3)
    with pytest.raises(FetchError, match=r"deadline of 0.5 s reached while reading the body"):
        fetch_url(models_url(settings), settings=settings)
    assert openrouter_server.hits(MODELS) == 1


def test_a_stale_copy_is_served_after_the_short_deadline(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """Not a refresh, and a usable copy exists: CAPC_STALE_DEADLINE, not CAPC_DEADLINE."""
    openrouter_server.script(MODELS, Reply(hang=True))
    settings = settings_for(
        openrouter_server, tmp_path, deadline=60, read_timeout=20, stale_deadline=0.2
    )
    good_copy(settings)
    catalog = load_metadata(settings=settings)
    assert catalog.origin == "stale-cache"
    assert catalog.note is not None and "deadline of 0.2 s reached" in catalog.note


def test_refresh_keeps_the_whole_deadline(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    openrouter_server.script(MODELS, Reply(FULL, drip=0.02))
    settings = settings_for(
        openrouter_server, tmp_path, deadline=0.4, read_timeout=0.3, stale_deadline=0.1
    )
    good_copy(settings)
    catalog = load_metadata(settings=settings, refresh=True)
    assert catalog.note is not None and "deadline of 0.4 s reached" in catalog.note


def nested(depth: int) -> bytes:
    return b'{"data": [' + b"[" * depth + b"]" * depth + b"]}"


def test_deep_nesting_is_a_rejected_payload_and_the_stale_copy_is_served(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    openrouter_server.script(MODELS, Reply(nested(200_000)))
    path = "/api/v1/models/openai/gpt-4o/endpoints"
    openrouter_server.script(path, Reply(b'{"data": {"endpoints": ' + nested(200_000) + b"}}"))
    settings = settings_for(openrouter_server, tmp_path)
    good_copy(settings)
    catalog = load_metadata(settings=settings)
    assert catalog.origin == "stale-cache"
    assert catalog.note is not None
    assert "rejected: nested deeper than 64 levels (CAPC_MAX_JSON_DEPTH)" in catalog.note
    notes: list[str] = []
    assert load_endpoints_for("openai/gpt-4o", settings=settings, notes=notes) is None
    assert "nested deeper than 64 levels" in notes[0]


@pytest.mark.parametrize(
    ("payload", "over"),
    [
        (FULL, False),
        (nested(64)[len(b'{"data": [') : -2], False),
        (nested(62), False),  # 62 + the object and "data" = 64 levels
        (nested(63), True),
        (b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', False),
        (b'{"data": [{"a": [' + b"[" * 100, False),  # truncated: unmatched, not depth
    ],
)
def test_the_depth_scan(payload: bytes, over: bool) -> None:
    assert json_depth_over(payload, 64) is over


def test_a_too_deep_payload_never_reaches_a_parser() -> None:
    with pytest.raises(RejectedPayload, match="nested deeper than 10 levels"):
        check_payload("models", nested(11), source="x", max_depth=10)


def test_with_no_cached_copy_a_short_list_is_compared_with_the_seed(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    short = json.dumps({"data": SEED[:41]}).encode()
    openrouter_server.script(MODELS, Reply(short))
    settings = settings_for(openrouter_server, tmp_path)
    catalog = load_metadata(settings=settings)
    assert catalog.origin == "seed"
    assert catalog.note is not None
    assert "41 models, fewer than the 52 required with no cached copy" in catalog.note
    assert cached_payload(settings) is None
    allowed = load_metadata(settings=settings.model_copy(update={"min_models": 1}))
    assert (allowed.origin, len(allowed)) == ("fetch", 41)


def test_the_nesting_check_reads_a_body_of_escaped_quotes_in_one_pass() -> None:
    """200 KB of ``\\"`` (an unterminated string) is scanned once: before, each quote
    restarted the string pattern (76 s for 160 KB); a regression hangs this test."""
    from registry.jsondepth import json_depth_over

    assert json_depth_over(b'\\"' * 100_000, 64) is False
    assert json_depth_over(b'{"s": "\\"[[[[\\"", "t": [[]]}', 1) is True
