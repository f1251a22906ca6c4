"""``capc lock`` streams: entries are written one by one (a spool, then the atomic file),
and the bytes are those of ``json.dumps(indent=2, sort_keys=True)`` of the whole
document, whatever the order, size or content of the entries."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from compiler.artifacts import lock_text as lock_text_module
from compiler.artifacts.lock import build_lock, compile_all, dump_lock, spool_lock, write_lock
from compiler.artifacts.lock_inputs import _endpoints_record
from compiler.artifacts.lock_text import LockSpool, lock_text
from compiler.cli.main import main
from compiler.schema.frozen_json import freeze_json
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER, ROOT
from tests.test_lock_text import _random, reference


def _spooled(spool: LockSpool) -> str:
    return b"".join(spool.chunks()).decode("utf-8")


def test_the_example_lock_streams_to_the_same_bytes() -> None:
    """Bundled seed (route plans from the seed's endpoints): compiled one pair at a time,
    from compile_all's list, and as an iterator, the text of dump_lock(build_lock())."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    items = compile_all(registry)
    expected = dump_lock(build_lock(registry, items))
    for given in (None, items, iter(items)):
        with spool_lock(registry, given) as spool:
            assert _spooled(spool) == expected
            assert spool.pairs == len(items) == 14


def test_a_lock_past_the_spools_memory_goes_to_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tiny spool memory and chunk size, the spool is a file in the folder given
    and the bytes are unchanged; closing removes it."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    expected = dump_lock(build_lock(registry)).encode("utf-8")
    monkeypatch.setattr(lock_text_module, "SPOOL_MEMORY", 1000)
    monkeypatch.setattr(lock_text_module, "_CHUNK", 100)
    with spool_lock(registry, spool_dir=tmp_path) as spool:
        assert spool._file._rolled  # type: ignore[attr-defined]
        chunks = list(spool.chunks())
    assert b"".join(chunks) == expected
    assert len(chunks) > 14  # in pieces (an entry, a table), not the whole text
    assert list(tmp_path.iterdir()) == []  # an unnamed file, or one removed on close


def test_random_entries_in_any_order_give_jsons_text() -> None:
    """Random stages, models (escapes, non-ASCII, empty names), entries (nested values,
    read-only ones shared between entries), added in random order, some pairs twice
    (the last wins, as in a dict), some stages empty: json.dumps of the whole."""
    rng = random.Random(1919)
    shared = freeze_json({"type": "object", "properties": {"a": {"type": ["string", "null"]}},
                          "required": ["a"], "list": [1, [2, {"x": None}]]})
    for _ in range(60):
        names = rng.sample(["s", "é", "a\"b", "", "z\n", "m/n", "\u2028"], rng.randrange(1, 5))
        document: dict[str, Any] = {"stages": {name: {} for name in names}}
        spool = LockSpool(names)
        pairs = [(s, m) for s in names for m in rng.sample(["x", "ü", "", "q\\"], 3)]
        rng.shuffle(pairs)
        for stage, model in [*pairs, *rng.sample(pairs, 2)]:
            entry = {"request": _random(rng, 2), "schema": shared,
                     "nested": {"again": shared, "n": rng.random()}}
            document["stages"][stage][model] = entry
            spool.add(stage, model, entry)
        rest = {"$schema": "x", "metadata": _random(rng, 3), "zzz": shared, "schemas": {}}
        spool.finish(rest)
        document.update(rest)
        with spool:
            assert _spooled(spool) == reference(document) + "\n"


def test_no_entry_and_empty_stages() -> None:
    """A document without entries, and with only empty stages."""
    for stages in ((), ("a", "b")):
        with LockSpool(stages) as spool:
            spool.finish({"format": 2})
            assert _spooled(spool) == reference(
                {"format": 2, "stages": {s: {} for s in stages}}) + "\n"


def test_text_at_a_level_is_the_nested_text() -> None:
    """lock_text(value, level) is the value's text inside the whole document, for values
    the writer handles and for those handed to json.dumps (a non-string key)."""
    for value in ({"a": [1, {"b": "c\nd"}], "e": {}}, [[], {}], {1: "int key"}, "x", 7):
        whole = reference({"a": {"b": {"c": value}}})
        start = whole.index('"c": ') + len('"c": ')
        assert lock_text(value, 3) == whole[start:whole.rindex("\n    }\n  }\n}")]
        assert lock_text(value, 3, {}) == lock_text(value, 3)


def test_a_failed_stream_leaves_the_old_lock(tmp_path: Path) -> None:
    """An error while the pieces are made: the target is untouched, no temporary file."""
    target = tmp_path / "capc.lock.json"
    target.write_text("old\n", encoding="utf-8")

    def pieces() -> Any:
        yield b"{\n"
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        write_lock(pieces(), target)
    assert target.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["capc.lock.json"]
    write_lock(iter([b"{", b"}\n"]), target)
    assert target.read_text(encoding="utf-8") == "{}\n"


def test_check_reads_the_file_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check compares piece by piece with the file read as text (CRLF line ends are
    the same lock, as before); one changed byte is out of date; - is the same text."""
    for name in ("models.yaml", "stages.yaml"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "contracts").symlink_to(ROOT / "contracts", target_is_directory=True)
    config = ["--models", str(tmp_path / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]
    assert main(["lock", *config]) == 0
    lock = tmp_path / "capc.lock.json"
    text = lock.read_bytes()
    assert main(["lock", "--output", "-", *config]) == 0
    assert capsys.readouterr().out.encode("utf-8") == text
    lock.write_bytes(text.replace(b"\n", b"\r\n"))
    assert main(["lock", "--check", *config]) == 0
    lock.write_bytes(text[:-3] + b"\n")
    assert main(["lock", "--check", *config]) == 1
    lock.write_bytes(text + b" ")
    assert main(["lock", "--check", *config]) == 1
    lock.write_bytes(b"\xff" + text)
    assert main(["lock", "--check", *config]) == 1
    assert "is not a valid lock" in capsys.readouterr().err


def test_the_fetched_endpoints_hash_is_the_whole_dicts() -> None:
    """Endpoint lists from a fetch are hashed one model at a time, to the SHA-256 of
    json.dumps of them all (sort_keys) as before."""
    lists = {"b/m": {"data": {"endpoints": [{"name": "é", "x": [1, 2]}]}}, "a/m": None,
             "c/\u00fc": {"data": {"id": "c"}}}

    def endpoints(model: str) -> Any:
        found = lists[model]
        return None if found is None else SimpleNamespace(model_dump=lambda mode: found)

    registry: Any = SimpleNamespace(catalog=SimpleNamespace(origin="live"), endpoints=endpoints)
    record = _endpoints_record(registry, None, ["c/\u00fc", "b/m", "a/m", "b/m"])
    assert record is not None
    assert record["sha256"] == hashlib.sha256(
        json.dumps(lists, sort_keys=True).encode()).hexdigest()


@pytest.mark.skipif(not OPENROUTER.is_dir(), reason="../shared is absent")
def test_route_plans_of_a_snapshot_stream_to_the_same_bytes(tmp_path: Path) -> None:
    """The 2026-05-18 models with their endpoints (attempts and routes in the entries)."""
    endpoints = OPENROUTER / "endpoints-all-2026-05-18.json"
    registry = Registry.load(metadata=OPENROUTER / "models-2026-05-18.json",
                             endpoints=endpoints, models=ROOT / "models.yaml",
                             stages=ROOT / "stages.yaml")
    expected = dump_lock(build_lock(registry, endpoints=endpoints))
    with spool_lock(registry, endpoints=endpoints, spool_dir=tmp_path) as spool:
        assert _spooled(spool) == expected
    assert os.listdir(tmp_path) == []
