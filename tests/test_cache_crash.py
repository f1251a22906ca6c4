"""The cache's write path never loses the last good copy (issue 22).

``tests/crash_store.py`` kills the writer (SIGKILL, in a forked child) before and after
each of the store's file and database operations in turn; after every kill the previous
entry (or, once the commit happened, the new one) reads back intact, and the next store
leaves no orphan file. A full disk is a failed refresh that names the copy kept.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.sources.cache import MetadataCache
from tests.conftest import ROOT, SEED_MODELS, FakeOpenRouter, Reply

MODELS = "/api/v1/models"


@pytest.mark.parametrize("mode", ["inline", "file"])
def test_killing_the_writer_at_every_step_keeps_an_intact_entry(
    tmp_path: Path, mode: str
) -> None:
    """inline: the previous entry is ours; file: an older version's, in a value file,
    with an orphan of an earlier crash beside it."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "crash_store.py"), str(tmp_path / "c"), mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout)
    operations, outcomes = report["operations"], report["outcomes"]
    assert len(outcomes) == len(operations) >= 20  # every point was a kill
    assert any("COMMIT" in op for op in operations)
    states = [o["entry"] for o in outcomes]
    assert set(states) <= {"old", "new"}, outcomes  # never missing, never damaged
    first_new = states.index("new")
    assert set(states[first_new:]) == {"new"}  # once committed, it stays
    assert operations[first_new] == "after sql COMMIT"  # killed right after the commit
    assert all(o["files_after_next_store"] == 0 for o in outcomes)  # orphans cleaned
    assert (report["final"], report["final_files"]) == ("new", 0)


def test_a_full_disk_is_a_failed_refresh_naming_the_kept_copy(
    openrouter_server: FakeOpenRouter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SQLITE_FULL while storing: exit 1, the reason; the fetched list is served from
    memory (issue 22 round 3: not the older copy) and the stored copy is kept."""
    import diskcache

    payload = SEED_MODELS.read_bytes()
    with MetadataCache(tmp_path) as cache:
        cache.store(
            f"{openrouter_server.base_url}/models",
            payload,
            kind="models",
            fetched_at=datetime(2026, 8, 19, tzinfo=UTC),
            max_shrink=0.5,
        )
    openrouter_server.script(MODELS, Reply(payload))

    def full(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(diskcache.Cache, "set", full)
    for name, value in {
        "CAPC_OFFLINE": "0",
        "CAPC_BASE_URL": openrouter_server.base_url,
        "CAPC_CACHE_DIR": str(tmp_path),
        "CAPC_MAX_ATTEMPTS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    assert main(["refresh"]) == 1
    captured = capsys.readouterr()
    assert "fetched 52 models, not cached" in captured.err
    assert "not cached" in captured.err and "disk is full" in captured.err
    assert "cannot store: its disk is full" in captured.err  # one wording, with the hint
    assert "free some space" in captured.err
    assert "serving the cached copy" not in captured.err
    monkeypatch.undo()
    with MetadataCache(tmp_path) as cache:
        kept = cache.get(f"{openrouter_server.base_url}/models")
    assert kept is not None and kept.payload == payload


def test_a_full_disk_with_no_cached_copy_is_a_failed_refresh(
    openrouter_server: FakeOpenRouter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The fetched list is served (nothing older exists), but refresh still exits 1."""
    import diskcache

    openrouter_server.script(MODELS, Reply(SEED_MODELS.read_bytes()))

    def full(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(diskcache.Cache, "set", full)
    monkeypatch.setenv("CAPC_OFFLINE", "0")
    monkeypatch.setenv("CAPC_BASE_URL", openrouter_server.base_url)
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    assert main(["refresh"]) == 1
    captured = capsys.readouterr()
    assert "fetched 52 models, not cached" in captured.err
    assert "refresh failed" in captured.err and "disk is full" in captured.err
