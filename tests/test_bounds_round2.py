"""Issue 22, round 2: the nesting cap, deep files, unmendable protocol errors, empty variables.

Loopback servers only (the shared ``openrouter_server`` and a raw socket server for a
header that never ends); assertions on what fired and on exit codes, never on timings.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main
from registry.errors import MetadataError
from registry.jsondepth import MAX_JSON_DEPTH_CAP
from registry.sources.cache import MetadataCache, RejectedPayload, check_payload
from registry.sources.fetch import FetchError, fetch_url
from registry.sources.load import load_metadata
from registry.sources.settings import Settings, load_settings
from registry.sources.urls import models_url
from tests.conftest import SEED_MODELS, FakeOpenRouter, Reply, online_settings

MODELS = "/api/v1/models"
SEED = json.loads(SEED_MODELS.read_bytes())["data"]


def deep_list(levels: int) -> bytes:
    """The seed list with one field nested ``levels`` deep inside the first model (the
    list, its array and the model add 3 levels)."""
    body = json.dumps({"data": SEED})
    return body.replace('"id":', '"deep": ' + "[" * levels + "]" * levels + ', "id":', 1).encode()


def settings_for(server: FakeOpenRouter, tmp_path: Path, **overrides: Any) -> Settings:
    return online_settings(server, tmp_path / "cache", **overrides)  # type: ignore[return-value]


# -- 2: the CAPC_MAX_JSON_DEPTH cap ----------------------------------------------------


@pytest.mark.parametrize(("value", "code"), [("512", 0), ("513", 2), ("10000", 2)])
def test_the_depth_setting_is_capped(
    value: str, code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CAPC_MAX_JSON_DEPTH", value)
    assert main(["cache", "info"]) == code
    if code:
        assert "CAPC_MAX_JSON_DEPTH" in capsys.readouterr().err


def test_valid_json_deeper_than_pydantic_cores_limit_is_accepted(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """900 levels were "invalid JSON" (pydantic-core stops at 200); at the cap it parses."""
    openrouter_server.script(MODELS, Reply(deep_list(MAX_JSON_DEPTH_CAP - 3)))
    settings = settings_for(openrouter_server, tmp_path, max_json_depth=MAX_JSON_DEPTH_CAP)
    catalog = load_metadata(settings=settings, refresh=True)
    assert (catalog.origin, len(catalog)) == ("fetch", len(SEED))
    again = load_metadata(settings=settings.model_copy(update={"offline": True}))
    assert (again.origin, len(again)) == ("cache", len(SEED))  # and it reads back


def test_a_recursion_error_is_a_rejected_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    def too_deep(*args: object, **kwargs: object) -> object:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(json, "loads", too_deep)
    with pytest.raises(RejectedPayload, match="nested too deeply to parse"):
        check_payload("models", deep_list(300), source="x", max_depth=MAX_JSON_DEPTH_CAP)


def test_a_deep_payload_over_a_stale_copy_serves_the_copy(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    settings = settings_for(openrouter_server, tmp_path, max_json_depth=MAX_JSON_DEPTH_CAP)
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(models_url(settings), SEED_MODELS.read_bytes(), kind="models",
                    fetched_at=datetime.now(UTC) - timedelta(days=3), max_shrink=1)  # fmt: skip
    openrouter_server.script(MODELS, Reply(deep_list(2_000)))
    catalog = load_metadata(settings=settings)
    assert catalog.origin == "stale-cache"
    assert catalog.note is not None and "nested deeper than 512 levels" in catalog.note


# -- 4: deep files -----------------------------------------------------------------


@pytest.mark.parametrize("levels", [600, 3_000, 200_000])
def test_a_deeply_nested_metadata_file_is_exit_2_naming_it(
    levels: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(deep_list(levels))
    assert main(["models", "--metadata", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: nested deeper than 512 levels" in err and "Traceback" not in err
    with pytest.raises(MetadataError, match="nested deeper than 512"):
        load_metadata(path)


def test_a_file_at_the_cap_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_bytes(deep_list(MAX_JSON_DEPTH_CAP - 3))
    assert len(load_metadata(path)) == len(SEED)


# -- 5: protocol errors no retry mends ------------------------------------------------


@pytest.fixture
def endless_header() -> Iterator[tuple[str, list[int]]]:
    """A loopback server whose one header line never ends; yields its base URL and a
    list that counts the connections it accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(1)
            with conn:
                conn.settimeout(5)
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Long: ")
                    for _ in range(64):  # 4 MiB, far past the 100 KiB httpcore reads
                        conn.sendall(b"a" * 65536)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/api/v1", accepted
    stop.set()
    thread.join(5)
    listener.close()


def test_an_endless_header_line_is_named_and_not_retried(
    endless_header: tuple[str, list[int]], tmp_path: Path
) -> None:
    base, accepted = endless_header
    settings = Settings(base_url=base, cache_dir=tmp_path / "c", max_attempts=3, backoff=0,
                        read_timeout=5, deadline=30)  # fmt: skip
    with pytest.raises(FetchError) as info:
        fetch_url(models_url(settings), settings=settings)
    assert "a header line longer than 102,400 bytes (not retried)" in info.value.summary
    assert len(accepted) == 1


def test_a_malformed_location_is_an_invalid_url_not_retried(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    openrouter_server.script(MODELS, Reply(status=302, headers={"Location": "http://[::1"}))
    settings = settings_for(openrouter_server, tmp_path, max_attempts=3)
    with pytest.raises(FetchError) as info:
        fetch_url(models_url(settings), settings=settings)
    assert "redirected to an invalid URL" in info.value.summary
    assert "not retried" in info.value.summary and "connection closed" not in info.value.summary
    assert openrouter_server.hits(MODELS) == 1


# -- 6: an empty variable is unset --------------------------------------------------


@pytest.mark.parametrize("name", sorted(f"CAPC_{n.upper()}" for n in Settings.model_fields))
def test_an_empty_variable_means_unset(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(name, raising=False)
    defaults = load_settings()
    monkeypatch.setenv(name, "")
    field = name.removeprefix("CAPC_").lower()
    assert getattr(load_settings(), field) == getattr(defaults, field)


# -- 3: one wait per dead host and command ----------------------------------------------


def test_a_host_that_hit_its_deadline_is_not_asked_again(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """A stale models copy and three stale endpoints copies against a hanging server:
    one request is made (the models list, cut at CAPC_STALE_DEADLINE); the endpoints
    are served stale with a note saying why they were not fetched."""
    from registry.sources.load import load_endpoints_for
    from registry.sources.urls import endpoints_url

    models = ["openai/gpt-4o-mini", "openai/gpt-5.1", "anthropic/claude-sonnet-4.5"]
    settings = settings_for(openrouter_server, tmp_path, deadline=60, read_timeout=20,
                            stale_deadline=0.2)  # fmt: skip
    seeds = (Path(__file__).parents[1] / "registry" / "data").glob("seed-endpoints*")
    listed = json.loads(next(iter(seeds)).read_bytes())["endpoints"]
    old = datetime.now(UTC) - timedelta(days=3)
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(models_url(settings), SEED_MODELS.read_bytes(), kind="models",
                    fetched_at=old, max_shrink=1)  # fmt: skip
        for model in models:
            body = json.dumps(listed[model])
            cache.store(endpoints_url(settings, model), body.encode(), kind="endpoints",
                        fetched_at=old, max_shrink=1)  # fmt: skip
    openrouter_server.script(MODELS, Reply(hang=True))
    for model in models:
        openrouter_server.script(f"/api/v1/models/{model}/endpoints", Reply(hang=True))
    assert load_metadata(settings=settings).origin == "stale-cache"
    notes: list[str] = []
    for model in models:
        assert load_endpoints_for(model, settings=settings, notes=notes) is not None
    assert len(openrouter_server.requests) == 1  # the models list only
    assert all("not fetched (127.0.0.1:" in n and "did not answer an earlier fetch" in n
               and "deadline of 0.2 s reached" in n for n in notes), notes  # fmt: skip


def test_the_deadline_note_follows_the_attempts() -> None:
    """"HTTP 429 after 3 attempts (deadline of 6 s reached)", not "HTTP 429 (deadline of
    6 s reached) after 3 attempts"."""
    failed = FetchError("HTTP 429", source="x", status=429, attempts=3,
                        why_stopped=" (deadline of 6 s reached)")  # fmt: skip
    assert failed.summary == "HTTP 429 after 3 attempts (deadline of 6 s reached)"
    once = FetchError("HTTP 429", source="x", attempts=1, why_stopped=" (deadline of 6 s reached)")
    assert once.summary == "HTTP 429 (deadline of 6 s reached)"


def test_raw_deflate_without_a_zlib_header_is_refused(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: no RFC 1950 header
    body = packer.compress(SEED_MODELS.read_bytes()) + packer.flush()
    openrouter_server.script(MODELS, Reply(body, headers={"Content-Encoding": "deflate"}))
    settings = settings_for(openrouter_server, tmp_path, max_attempts=3)
    with pytest.raises(FetchError, match=r"undecodable response \(Content-Encoding\)"):
        fetch_url(models_url(settings), settings=settings)
    assert openrouter_server.hits(MODELS) == 1  # not retried


def test_registry_warnings_print_as_capc_notes(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from compiler.cli.common import notes_on_stderr

    with notes_on_stderr():
        logging.getLogger("registry.sources").warning("endpoints of a/b: fetch failed (x)")
    assert capsys.readouterr().err == "capc: note: endpoints of a/b: fetch failed (x)\n"


def test_the_no_endpoint_data_note_gives_the_reason(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    from compiler.intent import Intent
    from compiler.request import compile_request
    from registry.resolve.resolver import Registry

    model = "openai/gpt-4o-mini"
    openrouter_server.script(f"/api/v1/models/{model}/endpoints", Reply(hang=True))
    settings = settings_for(openrouter_server, tmp_path, deadline=60, read_timeout=20,
                            stale_deadline=0.2)  # fmt: skip
    with MetadataCache(settings.cache_dir) as cache:
        cache.store(models_url(settings), SEED_MODELS.read_bytes(), kind="models",
                    fetched_at=datetime.now(UTC), max_shrink=1)  # fmt: skip
    registry = Registry.load(settings=settings)
    request = compile_request(Intent(stage="t", output_tokens=100), model, registry=registry,
                              coverage="full")  # fmt: skip
    [note] = [n for n in request.report.notes if n.startswith("no endpoint data")]
    assert note.startswith(f"no endpoint data for {model} (fetch failed (")
    assert "deadline of 0.2 s reached" in note  # a read timeout or the watchdog, whichever first
    assert note.endswith("the model-level figures were used, which an endpoint that serves "
                         "it may not meet")  # fmt: skip
