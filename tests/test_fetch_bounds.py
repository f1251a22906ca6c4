"""Network bounds after the break test (issue 22): one row per finding, each against a
loopback server the test starts, each asserting that the limit fired (its message or
the exit code), never a wall-clock time.

| finding | limit | asserted |
|---|---|---|
| headers dripped, endless | ``CAPC_DEADLINE`` (watchdog) | "... while waiting for the |
|   |   | response headers"; refresh exits 1, good copy kept |
| a redirect whose body is a gzip bomb | redirects by hand | 3xx body never read |
| a redirect whose body drips forever | redirects by hand | the target is served |
| a redirect chain that drips headers | ``CAPC_DEADLINE`` | "... (redirect 1)" |
| a redirect loop | 5 redirects | "more than 5 redirects", 6 requests |
| a redirect to another origin / ftp | credentials | no ``Authorization``; redacted |
| endpoints, no copy, hanging server | ``CAPC_STALE_DEADLINE`` | the note names it |
| a full disk at open | read-only open | cached copy, not the seed; refresh exits 1 |
| gzip of two members / trailing bytes | decoding | accepted whole / rejected |
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import sqlite3
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main
from registry.sources.cache import MetadataCache
from registry.sources.fetch import FetchError, fetch_url
from registry.sources.load import load_endpoints_for, load_metadata
from registry.sources.settings import Settings
from registry.sources.urls import models_url
from tests.conftest import SEED_MODELS, FakeOpenRouter, Reply, online_settings

MODELS = "/api/v1/models"
FULL = SEED_MODELS.read_bytes()

Handler = Callable[[socket.socket, bytes, threading.Event], None]


class RawServer:
    """A loopback HTTP/1.1 server written on raw sockets, so that a test can send any
    bytes at any pace: ``handler(connection, request head, stop event)`` per request."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.stop = threading.Event()
        self.heads: list[bytes] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/api/v1"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.heads.append(head)
            self.handler(conn, head, self.stop)

    def close(self) -> None:
        self.stop.set()
        self._listener.close()
        self._thread.join(5)


@pytest.fixture
def raw_server() -> Iterator[Callable[[Handler], RawServer]]:
    started: list[RawServer] = []

    def start(handler: Handler) -> RawServer:
        started.append(RawServer(handler))
        return started[-1]

    yield start
    for server in started:
        server.close()


def drip(conn: socket.socket, data: bytes, stop: threading.Event, every: float = 0.02) -> None:
    for at in range(len(data)):
        if stop.is_set():
            return
        conn.sendall(data[at : at + 1])
        time.sleep(every)


def endless_headers(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
    """A status line and then headers, one byte every 20 ms, forever."""
    drip(conn, b"HTTP/1.1 200 OK\r\n", stop)
    while not stop.is_set():
        drip(conn, b"X-Slow: a\r\n", stop)


def answer(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def settings_at(base_url: str, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "base_url": base_url, "cache_dir": tmp_path / "cache", "offline": False,
        "connect_timeout": 1.0, "read_timeout": 0.5, "deadline": 0.6, "max_attempts": 3,
        "backoff": 0.0, "retry_after_cap": 0.0, "min_models": 1,
    }  # fmt: skip
    values.update(overrides)
    return Settings(**values)


def good_copy(settings: Settings, *, days: float = 3) -> None:
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(
            models_url(settings), FULL, kind="models",
            fetched_at=datetime.now(UTC) - timedelta(days=days), max_shrink=1,
        )  # fmt: skip


def cached(settings: Settings) -> bytes | None:
    with MetadataCache(settings.cache_dir) as cache:
        entry = cache.get(models_url(settings))
    return None if entry is None else entry.payload


def use_env(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    for name, value in {
        "CAPC_OFFLINE": "0", "CAPC_BASE_URL": settings.base_url,
        "CAPC_CACHE_DIR": str(settings.cache_dir), "CAPC_MAX_ATTEMPTS": "1",
        "CAPC_BACKOFF": "0", "CAPC_READ_TIMEOUT": str(settings.read_timeout),
        "CAPC_DEADLINE": str(settings.deadline), "CAPC_MIN_MODELS": "1",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)


# -- 1. the deadline bounds the whole fetch -------------------------------------------


def test_endless_header_drip_is_cut_at_the_deadline(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path
) -> None:
    """Each byte comes well within CAPC_READ_TIMEOUT, so only the watchdog can stop it."""
    server = raw_server(endless_headers)
    settings = settings_at(server.base_url, tmp_path)
    with pytest.raises(FetchError) as caught:
        fetch_url(models_url(settings), settings=settings)
    assert "deadline of 0.6 s reached while waiting for the response headers" in str(caught.value)
    assert len(server.heads) == 1  # not retried


def test_a_slow_status_line_is_cut_too(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path
) -> None:
    server = raw_server(lambda conn, head, stop: drip(conn, answer(200, FULL), stop))
    settings = settings_at(server.base_url, tmp_path)
    with pytest.raises(FetchError, match=r"deadline of 0.6 s reached while waiting for the resp"):
        fetch_url(models_url(settings), settings=settings)


def test_a_header_drip_is_a_failed_refresh_that_keeps_the_good_copy(
    raw_server: Callable[[Handler], RawServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = raw_server(endless_headers)
    settings = settings_at(server.base_url, tmp_path)
    good_copy(settings)
    use_env(monkeypatch, settings)
    assert main(["refresh"]) == 1
    err = capsys.readouterr().err
    assert "refresh failed" in err and "deadline of 0.6 s reached while waiting" in err
    assert "serving the cached copy from" in err
    assert cached(settings) == FULL


# -- 2. redirects are followed by hand, bodies unread -----------------------------------


def redirecting(first: bytes, final: bytes = FULL) -> Handler:
    """``/api/v1/models`` answers ``first``; ``/api/v1/final`` serves ``final``."""

    def handle(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        if head.startswith(b"GET /api/v1/final"):
            conn.sendall(answer(200, final))
        else:
            conn.sendall(first)
            while not stop.is_set() and first.endswith(b"\r\n\r\n"):  # a body that never ends
                drip(conn, b"x" * 50, stop)

    return handle


def test_a_redirect_body_that_is_a_gzip_bomb_is_never_read(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path
) -> None:
    bomb = gzip.compress(b"\0" * 64 * 2**20, compresslevel=9)  # 64 MiB in ~64 KB
    head = answer(302, b"", {"Location": "/api/v1/final", "Content-Encoding": "gzip"})
    head = head.replace(b"Content-Length: 0", f"Content-Length: {len(bomb)}".encode())
    server = raw_server(redirecting(head + bomb))
    settings = settings_at(server.base_url, tmp_path, deadline=10, max_response_bytes=2**20)
    tracemalloc.start()
    try:
        result = fetch_url(models_url(settings), settings=settings)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.content == FULL
    assert peak < 8 * 2**20  # httpx alone inflated the whole 64 MiB before following
    assert [h.split(b" ")[1] for h in server.heads] == [b"/api/v1/models", b"/api/v1/final"]


def test_a_redirect_whose_body_never_ends_is_followed_at_once(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path
) -> None:
    head = b"HTTP/1.1 301 X\r\nLocation: /api/v1/final\r\nTransfer-Encoding: chunked\r\n\r\n"
    server = raw_server(redirecting(head))
    settings = settings_at(server.base_url, tmp_path, deadline=30)
    assert fetch_url(models_url(settings), settings=settings).content == FULL


def test_redirect_hops_count_inside_the_deadline(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path
) -> None:
    def handle(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        if head.startswith(b"GET /api/v1/final"):
            endless_headers(conn, head, stop)
        else:
            conn.sendall(answer(307, b"", {"Location": "/api/v1/final"}))

    server = raw_server(handle)
    settings = settings_at(server.base_url, tmp_path)
    with pytest.raises(FetchError, match=r"deadline of 0.6 s reached while waiting for the "
                       r"response headers \(redirect 1\)"):  # fmt: skip
        fetch_url(models_url(settings), settings=settings)


def test_a_redirect_loop_stops_after_five_hops(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path
) -> None:
    server = raw_server(lambda c, h, s: c.sendall(answer(302, b"", {"Location": "/api/v1/models"})))
    settings = settings_at(server.base_url, tmp_path, deadline=30)
    with pytest.raises(FetchError, match=r"more than 5 redirects \(not retried\)") as caught:
        fetch_url(models_url(settings), settings=settings)
    assert caught.value.attempts == 1 and len(server.heads) == 6


def test_same_origin_redirects_keep_the_key_and_other_origins_never_get_credentials(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path, openrouter_server: FakeOpenRouter
) -> None:
    openrouter_server.script("/api/v1/models", Reply(FULL))
    elsewhere = f"{openrouter_server.base_url}/models"

    def handle(conn: socket.socket, head: bytes, stop: threading.Event) -> None:
        if head.startswith(b"GET /api/v1/models"):
            conn.sendall(answer(308, b"", {"Location": "/api/v1/next"}))
        else:
            conn.sendall(answer(302, b"", {"Location": elsewhere.replace("//", "//u:p@")}))

    server = raw_server(handle)
    for extra in ({"api_key": "sk-or-v1-" + "7" * 20}, {}):
        base = server.base_url if extra else server.base_url.replace("//", "//me:pw@")
        settings = settings_at(base, tmp_path, deadline=30, **extra)
        assert fetch_url(models_url(settings), settings=settings).content == FULL
        assert [b"authorization:" in h.lower() for h in server.heads[-2:]] == [True, True]
        assert "Authorization" not in openrouter_server.requests[-1][1]


def test_a_redirect_to_another_scheme_is_refused_and_redacted(
    raw_server: Callable[[Handler], RawServer], tmp_path: Path
) -> None:
    target = "ftp://mirror.example/models?api_key=sk-or-v1-secret-value"
    server = raw_server(lambda c, h, s: c.sendall(answer(302, b"", {"Location": target})))
    settings = settings_at(server.base_url, tmp_path, deadline=30)
    with pytest.raises(FetchError, match=r"redirected to an unsupported URL") as caught:
        fetch_url(models_url(settings), settings=settings)
    assert "secret-value" not in str(caught.value) and "api_key=***" in str(caught.value)


# -- 3. endpoints over a models cache get the short deadline ----------------------------


def test_endpoints_with_no_copy_get_the_stale_deadline_when_model_figures_exist(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """CAPC_DEADLINE 60 s and a 20 s read timeout against a hanging server: only the
    short deadline (0.2 s) can end this fetch in time for the test's own timeout."""
    path = "/api/v1/models/openai/gpt-4o-mini/endpoints"
    openrouter_server.script(path, Reply(hang=True))
    settings = online_settings(openrouter_server, tmp_path / "cache", deadline=60,
                               read_timeout=20, stale_deadline=0.2)  # fmt: skip
    assert isinstance(settings, Settings)
    notes: list[str] = []
    assert load_endpoints_for("openai/gpt-4o-mini", settings=settings, notes=notes,
                              model_level=True) is None  # fmt: skip
    assert "deadline of 0.2 s reached" in notes[0]
    assert "CAPC_STALE_DEADLINE, 0.2 s, since the model-level figures stand in" in notes[0]


def test_a_compile_over_a_stale_models_cache_gives_endpoints_the_short_deadline(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    from registry.resolve.resolver import Registry

    path = "/api/v1/models/openai/gpt-4o-mini/endpoints"
    openrouter_server.script(MODELS, Reply(hang=True))
    openrouter_server.script(path, Reply(hang=True))
    settings = online_settings(openrouter_server, tmp_path / "cache", deadline=60,
                               read_timeout=20, stale_deadline=0.2)  # fmt: skip
    assert isinstance(settings, Settings)
    good_copy(settings)
    registry = Registry.load(settings=settings)
    assert registry.catalog.origin == "stale-cache"
    assert registry.endpoints("openai/gpt-4o-mini") is None
    assert any("model-level figures stand in" in note for note in registry.notes)


# -- 4. a full disk at open -------------------------------------------------------------


def test_a_full_disk_at_open_serves_the_cached_copy_and_refresh_names_it(
    openrouter_server: FakeOpenRouter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import diskcache

    openrouter_server.script(MODELS, Reply(FULL))
    settings = settings_at(openrouter_server.base_url, tmp_path, ttl=10**9, deadline=30)
    good_copy(settings, days=0)
    opened = diskcache.Cache.__init__
    opens: list[int] = []

    def full(self: object, *args: Any, **kwargs: Any) -> None:
        opens.append(1)
        if len(opens) == 1 or always:
            raise sqlite3.OperationalError("database or disk is full")
        opened(self, *args, **kwargs)  # type: ignore[arg-type]

    always = False
    monkeypatch.setattr(diskcache.Cache, "__init__", full)
    catalog = load_metadata(settings=settings.model_copy(update={"offline": True}))
    assert (catalog.origin, catalog.note, len(catalog)) == ("cache", None, 52)
    always = True
    use_env(monkeypatch, settings)
    assert main(["refresh"]) == 1
    err = capsys.readouterr().err
    assert "refresh failed" in err and "its disk is full (OperationalError: database or" in err
    assert "free some space" in err and "fetched 52 models, not cached" in err  # from memory
    monkeypatch.undo()
    assert cached(settings) == FULL


# -- 5. gzip members and trailing bytes -------------------------------------------------


def test_a_gzip_body_of_two_members_is_accepted_whole(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    half = len(FULL) // 2
    body = gzip.compress(FULL[:half]) + gzip.compress(FULL[half:])
    openrouter_server.script(MODELS, Reply(body, headers={"Content-Encoding": "gzip"}))
    settings = settings_at(openrouter_server.base_url, tmp_path, deadline=30)
    assert fetch_url(models_url(settings), settings=settings).content == FULL
    small = settings.model_copy(update={"max_response_bytes": len(FULL) - 1})
    with pytest.raises(FetchError, match="byte limit"):  # the members count together
        fetch_url(models_url(small), settings=small)


@pytest.mark.parametrize("tail", [b"garbage", b"\x1f", b"\0\0\0\0"])
def test_bytes_after_the_gzip_stream_are_refused_and_the_good_copy_kept(
    openrouter_server: FakeOpenRouter, tmp_path: Path, tail: bytes
) -> None:
    body = gzip.compress(FULL) + tail
    openrouter_server.script(MODELS, Reply(body, headers={"Content-Encoding": "gzip"}))
    settings = settings_at(openrouter_server.base_url, tmp_path, deadline=30)
    good_copy(settings)
    catalog = load_metadata(settings=settings, refresh=True)
    assert catalog.origin == "stale-cache" and catalog.note is not None
    assert "trailing bytes after the last gzip member" in catalog.note
    assert cached(settings) == FULL
    assert json.loads(FULL)  # the good copy is the seed list, intact


@pytest.mark.parametrize(
    ("first", "target", "kept"),
    [
        ("http://h/a", "http://h:80/b", True),
        ("http://h/a", "https://h/b", True),  # the upgrade httpx allows too
        ("https://h/a", "http://h/b", False),  # a downgrade
        ("http://h:8080/a", "https://h/b", False),
        ("https://h/a", "https://h:8443/b", False),
        ("https://h/a", "https://other/b", False),
    ],
)
def test_which_redirects_keep_the_credentials(first: str, target: str, kept: bool) -> None:
    import httpx

    from registry.sources.transfer import _same_origin

    assert _same_origin(httpx.URL(first), httpx.URL(target)) is kept


def test_bytes_after_a_deflate_stream_are_refused(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    import zlib

    body = zlib.compress(FULL) + b"x"
    openrouter_server.script(MODELS, Reply(body, headers={"Content-Encoding": "deflate"}))
    settings = settings_at(openrouter_server.base_url, tmp_path, deadline=30)
    with pytest.raises(FetchError, match="trailing bytes after the deflate stream"):
        fetch_url(models_url(settings), settings=settings)
    deflate = {"Content-Encoding": "deflate"}
    openrouter_server.script(MODELS, Reply(zlib.compress(FULL), headers=deflate))
    assert fetch_url(models_url(settings), settings=settings).content == FULL
