"""A catalog read from a file or the seed carries the SHA-256 of the bytes it was parsed
from, hashed beside the load; the lock pins that hash, so a file rewritten after the
load does not change what the lock says it was made from."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from compiler.artifacts.lock_inputs import describe_inputs
from registry.digest import BackgroundDigest
from registry.metadata.catalog import SEED_RESOURCE, bundled_catalog, load_catalog
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

SEED = ROOT / "registry" / SEED_RESOURCE


def _models(path: Path, ids: list[str]) -> None:
    path.write_text(json.dumps({"data": [
        {"id": model, "name": model, "context_length": 8192,
         "supported_parameters": ["max_tokens"]} for model in ids]}), encoding="utf-8")


def test_a_file_catalog_carries_the_sha256_of_its_bytes(tmp_path: Path) -> None:
    target = tmp_path / "models.json"
    _models(target, ["a/one", "b/two"])
    catalog = load_catalog(target)
    assert catalog.sha256() == hashlib.sha256(target.read_bytes()).hexdigest()


def test_the_seed_catalog_carries_the_sha256_of_the_seed() -> None:
    assert bundled_catalog().sha256() == hashlib.sha256(SEED.read_bytes()).hexdigest()


def test_the_lock_pins_the_bytes_read_not_the_file_rewritten_after(tmp_path: Path) -> None:
    target = tmp_path / "models.json"
    _models(target, ["a/one"])
    read = hashlib.sha256(target.read_bytes()).hexdigest()
    registry = Registry.load(metadata=target)
    _models(target, ["a/one", "c/three"])  # rewritten after the load
    assert describe_inputs(registry)["metadata"] == {"source": "models.json", "sha256": read}


def test_the_digest_is_made_on_the_spot_when_no_thread_can_start(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    data = b"x" * 100_000
    assert BackgroundDigest(data).hexdigest() == hashlib.sha256(data).hexdigest()


def test_the_digest_is_made_on_the_spot_when_the_thread_is_gone(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in a process forked while the thread hashed: the thread never finishes there."""
    monkeypatch.setattr(BackgroundDigest, "_work", lambda self: None)
    digest = BackgroundDigest(b"abc")
    monkeypatch.undo()
    assert digest.hexdigest() == hashlib.sha256(b"abc").hexdigest()


def test_a_file_read_twice_has_no_digest_and_the_lock_hashes_the_file(tmp_path: Path) -> None:
    """A body the fast reader declines (a byte-order mark) is read again to be parsed
    whole: no digest of the first read is claimed, and the lock hashes the file."""
    target = tmp_path / "models.json"
    _models(target, ["a/one"])
    target.write_bytes(b"\xef\xbb\xbf" + target.read_bytes())
    registry = Registry.load(metadata=target)
    assert registry.catalog.sha256() is None
    read = hashlib.sha256(target.read_bytes()).hexdigest()
    assert describe_inputs(registry)["metadata"] == {"source": "models.json", "sha256": read}
