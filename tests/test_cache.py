"""registry.sources.cache: entries, the integrity guard, damage, and two processes at once."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import registry.sources.cache_entry as entry_module
from registry.metadata.core import CORE_FORMAT, core_json
from registry.metadata.shapes import EndpointList
from registry.sources.cache import CacheError, MetadataCache, RejectedPayload, check_payload
from registry.sources.cache_entry import CacheEntry
from tests.conftest import ROOT, SEED_MODELS, FakeOpenRouter, Reply, online_settings

URL = "https://openrouter.ai/api/v1/models"
NOW = datetime(2026, 8, 19, 10, 0, tzinfo=UTC)


def models_payload(count: int | None = None) -> bytes:
    """The seed's models list, cut to its first ``count`` models."""
    data = json.loads(SEED_MODELS.read_bytes())["data"]
    return json.dumps({"data": data if count is None else data[:count]}).encode()


SEED_COUNT = len(json.loads(SEED_MODELS.read_bytes())["data"])
ENDPOINTS = json.dumps(
    {
        "data": {
            "id": "openai/gpt-4o",
            "endpoints": [
                {"tag": "openai", "provider_name": "OpenAI", "supported_parameters": ["tools"]}
            ],
        }
    }
).encode()


@pytest.fixture
def cache(tmp_path: Path) -> MetadataCache:
    """An empty cache in a temporary directory."""
    with MetadataCache(tmp_path / "cache") as opened:
        yield opened  # type: ignore[misc]


def test_store_and_get_round_trip(cache: MetadataCache) -> None:
    """An entry keeps payload, source, kind, fetched_at and the model count."""
    payload = models_payload()
    entry, parsed = cache.store(URL, payload, kind="models", fetched_at=NOW, max_shrink=0.5)
    assert isinstance(parsed, list) and len(parsed) == SEED_COUNT == entry.count
    got = cache.get(URL)
    assert got == entry
    assert (got.source, got.kind, got.fetched_at, got.payload) == (URL, "models", NOW, payload)
    assert cache.get(URL + "?other") is None


def test_freshness_and_age() -> None:
    """Fresh means younger than the TTL; a timestamp in the future counts as age 0."""
    entry = CacheEntry(URL, "models", NOW, 1, b"{}")
    assert entry.age(NOW + timedelta(hours=3)) == timedelta(hours=3)
    assert entry.is_fresh(86400, NOW + timedelta(hours=23))
    assert not entry.is_fresh(86400, NOW + timedelta(hours=25))
    assert entry.age(NOW - timedelta(hours=1)) == timedelta(0)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (models_payload()[:-40], "looks truncated"),
        (b"<!DOCTYPE html><html><body>Bad gateway</body></html>", "looks like an HTML page"),
        (b'{"models": []}', "without a usable 'data' key"),
        (b'{"error": {"code": 401, "message": "No auth"}}', "API error response"),
        (b'{"data": []}', "the models list is empty"),
        (b"[]", "the models list is empty"),
        (b'{"data": [{"name": "no id"}]}', "has no string 'id'"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
    ids=["truncated", "html", "wrong-shape", "api-error", "empty", "empty-bare", "no-id", "bytes"],
)
def test_guard_rejects_bad_models_payloads(
    cache: MetadataCache, payload: bytes, reason: str
) -> None:
    """A payload that does not parse or is empty never replaces the cached copy."""
    good = models_payload()
    cache.store(URL, good, kind="models", fetched_at=NOW, max_shrink=0.5)
    with pytest.raises(RejectedPayload, match="payload rejected") as info:
        cache.store(URL, payload, kind="models", fetched_at=NOW, max_shrink=0.5)
    assert reason in info.value.reason
    entry = cache.get(URL)
    assert entry is not None and entry.payload == good


def test_guard_rejects_an_implausible_shrink(cache: MetadataCache) -> None:
    """10% of the cached list is rejected; 60% passes; the fraction is configurable."""
    cache.store(URL, models_payload(), kind="models", fetched_at=NOW, max_shrink=0.5)
    tenth = models_payload(SEED_COUNT // 10)
    with pytest.raises(RejectedPayload, match=r"shrank by \d+%, more than the 50% allowed"):
        cache.store(URL, tenth, kind="models", fetched_at=NOW, max_shrink=0.5)
    assert cache.get(URL).count == SEED_COUNT  # type: ignore[union-attr]
    most = models_payload(int(SEED_COUNT * 0.6))
    assert cache.store(URL, most, kind="models", fetched_at=NOW, max_shrink=0.5)[0].count < 52
    cache.store(URL, tenth, kind="models", fetched_at=NOW, max_shrink=0.95)
    assert cache.get(URL).count == SEED_COUNT // 10  # type: ignore[union-attr]


def test_endpoints_entries(cache: MetadataCache) -> None:
    """Endpoints payloads parse as EndpointList; an empty list or a models list is rejected."""
    url = "https://openrouter.ai/api/v1/models/openai/gpt-4o/endpoints"
    entry, parsed = cache.store(url, ENDPOINTS, kind="endpoints", fetched_at=NOW, max_shrink=0.5)
    assert isinstance(parsed, EndpointList) and entry.count == 1
    empty = b'{"data": {"id": "openai/gpt-4o", "endpoints": []}}'
    with pytest.raises(RejectedPayload, match="no endpoints"):
        cache.store(url, empty, kind="endpoints", fetched_at=NOW, max_shrink=0.5)
    with pytest.raises(RejectedPayload, match="looks like a models list"):
        check_payload("endpoints", models_payload(), source=url)


def test_damaged_entry_reads_as_absent(cache: MetadataCache, tmp_path: Path) -> None:
    """An entry whose bytes no longer match their checksum is ignored, not served."""
    import diskcache

    cache.store(URL, models_payload(), kind="models", fetched_at=NOW, max_shrink=0.5)
    blob = CacheEntry(URL, "models", NOW, 52, models_payload()).to_bytes()
    with diskcache.Cache(str(tmp_path / "cache")) as raw:
        raw.set(URL, blob[:-10] + b"0000000000")
        raw.set("https://other/models", "a pickled string, not ours")
    assert cache.get(URL) is None
    assert cache.get("https://other/models") is None


def test_damage_is_logged_under_the_documented_logger(
    cache: MetadataCache, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged or foreign entry is a warning of logger ``registry.sources.cache`` (a
    child of ``registry.sources``, docs/metadata.md), so one setting silences both."""
    import diskcache

    cache.store(URL, models_payload(), kind="models", fetched_at=NOW, max_shrink=0.5)
    with diskcache.Cache(str(tmp_path / "cache")) as raw:
        raw.set(URL, b"not an entry")
        raw.set("https://other/models", "a pickled string, not ours")
    with caplog.at_level(logging.WARNING, logger="registry.sources"):
        assert cache.get(URL) is None
        assert cache.get("https://other/models") is None
    assert [(r.name, r.levelno) for r in caplog.records] == [
        ("registry.sources.cache", logging.WARNING),
        ("registry.sources.cache", logging.WARNING),
    ]
    assert "damaged" in caplog.records[0].getMessage()
    assert "not ours" in caplog.records[1].getMessage()


def test_entries_are_bytes_never_pickles(cache: MetadataCache, tmp_path: Path) -> None:
    """Values are stored raw (a JSON header line, then the body): nothing is unpickled."""
    cache.store(URL, models_payload(), kind="models", fetched_at=NOW, max_shrink=0.5)
    db = sqlite3.connect(tmp_path / "cache" / "cache.db")
    try:
        modes = {row[0] for row in db.execute("SELECT mode FROM Cache")}
    finally:
        db.close()
    assert modes <= {1, 2}  # diskcache MODE_RAW / MODE_BINARY; MODE_PICKLE is 4


def test_entries_info_and_clear(cache: MetadataCache) -> None:
    """entries() lists every readable entry; clear() empties the cache."""
    cache.store(URL, models_payload(), kind="models", fetched_at=NOW, max_shrink=0.5)
    url = URL + "/openai/gpt-4o/endpoints"
    cache.store(url, ENDPOINTS, kind="endpoints", fetched_at=NOW, max_shrink=0.5)
    assert [e.source for e in cache.entries()] == [URL, url]
    assert cache.volume() > 0
    assert cache.clear() == 2
    assert cache.entries() == []


def test_unusable_directory_is_a_cache_error(tmp_path: Path) -> None:
    """A cache path that is a file fails with CacheError (mapped, not an OSError)."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CacheError, match="cannot open"), MetadataCache(blocker / "sub") as cache:
        cache.get(URL)


REFRESHER = """
import sys
from pathlib import Path
from registry.sources.settings import Settings
from registry.sources.load import load_metadata

settings = Settings(base_url=sys.argv[1], cache_dir=Path(sys.argv[2]), offline=False,
                    backoff=0, retry_after_cap=0, read_timeout=5, min_models=1)
origins = [load_metadata(settings=settings, refresh=True).origin for _ in range(int(sys.argv[3]))]
print(",".join(origins))
"""


def test_two_processes_refreshing_concurrently(
    openrouter_server: FakeOpenRouter, tmp_path: Path
) -> None:
    """Two processes refresh the same cache 10 times each; the cache is intact afterwards."""
    full, most = models_payload(), models_payload(40)
    openrouter_server.script("/api/v1/models", *([Reply(full), Reply(most)] * 30), Reply(full))
    cache_dir = tmp_path / "shared-cache"
    argv = [sys.executable, "-c", REFRESHER, openrouter_server.base_url, str(cache_dir), "10"]
    procs = [
        subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out.strip().split(",") == ["fetch"] * 10, err
    db = sqlite3.connect(cache_dir / "cache.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    from registry.sources.load import load_metadata

    settings = online_settings(openrouter_server, cache_dir)
    catalog = load_metadata(settings=settings)  # type: ignore[arg-type]
    assert catalog.origin == "cache"
    assert len(catalog) in (SEED_COUNT, 40)
    with MetadataCache(cache_dir) as cache:
        [entry] = cache.entries()
    assert entry.payload in (full, most)


def test_reads_during_a_concurrent_store_never_miss(tmp_path: Path) -> None:
    """While another thread keeps replacing the entry (a body large enough for diskcache
    to keep in its own file), every read returns one of the stored entries, never None
    (diskcache reports a file replaced under a reader as a miss; the read is retried)."""
    import threading

    seed = json.loads(SEED_MODELS.read_bytes())["data"]
    bodies = [json.dumps({"data": seed[: 40 + k]}).encode() for k in range(3)]
    url = "https://openrouter.ai/api/v1/models"
    with MetadataCache(tmp_path) as cache:
        cache.store(url, bodies[0], kind="models", fetched_at=datetime.now(UTC), max_shrink=1)
    stop = threading.Event()

    def refresh() -> None:
        with MetadataCache(tmp_path) as writer:
            index = 0
            while not stop.is_set():
                index += 1
                writer.store(url, bodies[index % 3], kind="models",
                             fetched_at=datetime.now(UTC), max_shrink=1)

    thread = threading.Thread(target=refresh)
    thread.start()
    try:
        with MetadataCache(tmp_path) as reader:
            counts = [entry.count if (entry := reader.get(url)) else None for _ in range(300)]
    finally:
        stop.set()
        thread.join()
    assert None not in counts
    assert set(counts) <= {40, 41, 42}


def test_a_models_entry_keeps_its_core_part(cache: MetadataCache) -> None:
    """A stored models list carries its core fields (a smaller body of the same shape,
    with two short numbers a model saying where its entry sits: about 53% of the seed,
    whose descriptions are cut short); endpoints entries carry none."""
    payload = models_payload()
    entry, _ = cache.store(URL, payload, kind="models", fetched_at=NOW, max_shrink=0.5)
    assert entry.core == core_json(payload)
    assert entry.core is not None and len(entry.core) < len(payload) * 3 // 5
    got = cache.get(URL)
    assert got is not None and (got.core, got.payload) == (entry.core, payload)
    url = "https://openrouter.ai/api/v1/models/openai/gpt-4o/endpoints"
    endpoints, _ = cache.store(url, ENDPOINTS, kind="endpoints", fetched_at=NOW, max_shrink=0.5)
    assert endpoints.core is None and cache.get(url).core is None  # type: ignore[union-attr]


def _format_1(entry: CacheEntry) -> bytes:
    """An entry as versions without the core part wrote it."""
    header = {"format": 1, "source": entry.source, "kind": entry.kind,
              "fetched_at": entry.fetched_at.isoformat(), "count": entry.count,
              "sha256": hashlib.sha256(entry.payload).hexdigest()}
    return json.dumps(header).encode() + b"\n" + entry.payload


def test_entries_without_a_current_core_part_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A format-1 entry reads with no core part; a core part written for another version
    of the core fields is dropped (the payload is read instead), not trusted."""
    payload = models_payload()
    entry = CacheEntry(URL, "models", NOW, SEED_COUNT, payload, core=core_json(payload))
    old = CacheEntry.from_bytes(_format_1(entry))
    assert (old.payload, old.core, old.count) == (payload, None, SEED_COUNT)
    monkeypatch.setattr(entry_module, "CORE_FORMAT", CORE_FORMAT + 1)
    newer = entry.to_bytes()
    monkeypatch.undo()
    read = CacheEntry.from_bytes(newer)
    assert (read.payload, read.core) == (payload, None)
    assert CacheEntry.from_bytes(entry.to_bytes()) == entry


@pytest.mark.parametrize(
    "damage",
    ["core byte", "core length", "payload byte", "length Infinity", "length 1.5",
     "length text", "count Infinity", "count text", "core not an object"],
)
def test_a_damaged_core_part_makes_the_entry_absent(
    cache: MetadataCache, tmp_path: Path, damage: str
) -> None:
    """A core part that fails its checksum or claims more bytes than the entry has, a
    payload that fails its own, or a header field of an impossible value or type (JSON
    allows ``Infinity``) makes the whole entry unreadable (logged, refetched)."""
    import diskcache

    payload = models_payload()
    blob = CacheEntry(URL, "models", NOW, SEED_COUNT, payload, core=core_json(payload)).to_bytes()
    head, _, rest = blob.partition(b"\n")
    header = json.loads(head)
    if damage == "core byte":
        rest = rest.replace(b'"context_length"', b'"context_lengtH"', 1)
    elif damage == "core length":
        header["core"]["length"] = len(rest) + 1
    elif damage == "payload byte":
        rest = rest[:-1] + b" "
    elif damage == "core not an object":
        header["core"] = [header["core"]]
    else:  # "<field> <value>": a header field with an impossible value
        name, value = damage.split()
        key = "count" if name == "count" else "length"
        where = header if key == "count" else header["core"]
        where[key] = {"Infinity": float("inf"), "1.5": 1.5, "text": "52"}[value]
    with diskcache.Cache(str(tmp_path / "cache")) as raw:
        raw.set(URL, json.dumps(header).encode() + b"\n" + rest)
    assert cache.get(URL) is None  # logged and ignored; never an exception
