"""The cached core part is bound to its payload: by the payload's SHA-256 (the one the
entry's checksum already computes) and by offsets that must be the elements of the data
array. A crafted or stale part is never read as the payload's; a corrupt entry is named
so in the offline note (it said "no cached copy")."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from registry.metadata.core import core_json, parse_core_part
from registry.metadata.lazy import lazy_models
from registry.sources.cache import MetadataCache
from registry.sources.cache_entry import CacheEntry
from registry.sources.load import load_metadata
from registry.sources.settings import load_settings
from registry.sources.urls import models_url
from tests.conftest import SEED_MODELS

NOW = datetime(2026, 8, 19, tzinfo=UTC)


def _model(model_id: str, context: int, **extra: object) -> dict[str, object]:
    return {**extra, "id": model_id, "name": model_id, "context_length": context,
            "pricing": {"prompt": "0.000001", "completion": "0.000002"}}


def _rebuilt(blob: bytes, payload: bytes, core: bytes | None = None) -> bytes:
    """``blob`` with another payload (and core), every checksum made to match: what an
    edit of the cache file that knows the format writes, without the core's binding."""
    end = blob.find(b"\n")
    header = json.loads(blob[:end])
    old_core = blob[end + 1 : end + 1 + header["core"]["length"]]
    core = old_core if core is None else core
    header["sha256"] = hashlib.sha256(payload).hexdigest()
    header["core"].update(length=len(core), sha256=hashlib.sha256(core).hexdigest())
    return json.dumps(header).encode() + b"\n" + core + payload


def test_a_part_made_for_another_payload_is_not_read() -> None:
    """The payload edited (its checksum fixed), the old core part kept: the part's
    ``body`` hash differs, so the payload is read, and its values are the ones served."""
    payload = json.dumps({"data": [_model("a/b", 1000), _model("c/d", 2000)]}).encode()
    entry = CacheEntry("u", "models", NOW, 2, payload, core_json(payload))
    blob = entry.to_bytes()
    assert CacheEntry.from_bytes(blob).core == entry.core  # bound, read
    edited = payload.replace(b"2000", b"5")
    decoded = CacheEntry.from_bytes(_rebuilt(blob, edited))
    assert decoded.core is None and decoded.payload == edited
    models = lazy_models(decoded.payload, source="u", core=decoded.core)
    assert models is not None and models["c/d"].context_length == 5


def test_an_unbound_part_from_before_is_not_read() -> None:
    payload = json.dumps({"data": [_model("a/b", 1000)]}).encode()
    blob = CacheEntry("u", "models", NOW, 1, payload, core_json(payload)).to_bytes()
    end = blob.find(b"\n")
    header = json.loads(blob[:end])
    del header["core"]["body"]
    assert CacheEntry.from_bytes(json.dumps(header).encode() + blob[end:]).core is None


def _spans(bounds: list[tuple[int, int]]) -> list[int]:
    steps, end = [], 0
    for start, stop in bounds:
        steps += [start - end, stop - start]
        end = stop
    return steps


@pytest.mark.parametrize("nest", ["object", "array"])
def test_offsets_into_a_nested_decoy_are_not_used(nest: str) -> None:
    """An entry holding a decoy ``{"id": "c/d", ...}`` (as an object's value, or in an
    array) and offsets that point c/d at it: the offsets are dropped (the bytes between
    entries are not one separator), and c/d is built from its own entry."""
    decoy = {"id": "c/d", "name": "DECOY", "context_length": 5}
    holder = {"decoy": decoy} if nest == "object" else {"decoys": [decoy]}
    payload = json.dumps({"data": [_model("a/b", 1000, **holder), _model("c/d", 2000)]},
                         separators=(",", ":")).encode()  # fmt: skip
    part = json.loads(core_json(payload) or b"")
    found = parse_core_part(json.dumps(part).encode(), payload)
    assert found is not None and found[1] is not None
    (a_start, _), _ = found[1]
    start = payload.index(b'{"id":"c/d","name":"DECOY"')
    stop = payload.index(b"}", start) + 1
    part["spans"] = _spans([(a_start, start - 1), (start, stop)])  # monotone, in the body
    crafted = json.dumps(part).encode()
    assert parse_core_part(crafted, payload) == (found[0], None)
    models = lazy_models(payload, source="u", core=crafted)
    assert models is not None and models["c/d"].name == "c/d"
    assert models["c/d"].context_length == 2000


def test_honest_offsets_with_whitespace_are_kept() -> None:
    raw = b' {"x": 1, "data" : [\n {"id":"a/b"} ,\n\t{"id":"c/d"}\r\n ]} '
    found = parse_core_part(core_json(raw) or b"", raw)
    assert found is not None and found[1] is not None
    assert [json.loads(raw[s:e]) for s, e in found[1]] == json.loads(raw)["data"]


def test_offline_a_corrupt_entry_is_named_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached entry failing its checksum: 'was corrupt (...) and is ignored', not 'no
    cached copy'."""
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    settings = load_settings()
    url = models_url(settings)
    with MetadataCache(tmp_path) as cache:
        cache.store(url, SEED_MODELS.read_bytes(), kind="models", fetched_at=NOW,
                    max_shrink=1)  # fmt: skip
        opened = cache._open()
        blob = bytearray(opened.get(url, read=False))
        blob[-10] ^= 1  # one bit of the payload
        opened.set(url, bytes(blob))
    note = load_metadata(settings=settings).note or ""
    assert f"the cached copy of {url} was corrupt" in note, note
    assert "payload does not match its checksum" in note and "no cached copy" not in note
