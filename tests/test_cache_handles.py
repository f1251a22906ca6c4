"""registry.cache_handles: one open database per directory, never a stale one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from registry import cache_handles
from registry.cache import MetadataCache
from tests.conftest import ROOT, SEED_MODELS

URL = "https://openrouter.ai/api/v1/models"


def _store(directory: Path, payload: bytes) -> None:
    with MetadataCache(directory) as cache:
        cache.store(URL, payload, kind="models", fetched_at=datetime.now(UTC), max_shrink=1)


def test_caches_of_one_directory_share_one_open_database(tmp_path: Path) -> None:
    """Two MetadataCache objects of a directory use one handle, which outlives close()."""
    first, second = MetadataCache(tmp_path), MetadataCache(tmp_path)
    assert first._open() is second._open()
    first.close()
    assert MetadataCache(tmp_path)._open() is second._open()


def test_a_replaced_directory_is_opened_anew(tmp_path: Path) -> None:
    """After the directory is deleted and recreated, the old entry is gone: the handle to
    the deleted database is not reused."""
    directory = tmp_path / "cache"
    _store(directory, SEED_MODELS.read_bytes())
    old = MetadataCache(directory)._open()
    shutil.rmtree(directory)
    directory.mkdir()
    with MetadataCache(directory) as cache:
        assert cache._open() is not old
        assert cache.get(URL) is None


def test_writes_reach_other_processes_while_the_handle_stays_open(tmp_path: Path) -> None:
    """An entry stored through the shared handle is read by a new process at once."""
    _store(tmp_path, SEED_MODELS.read_bytes())
    code = (
        "import sys; from pathlib import Path; from registry.cache import MetadataCache; "
        f"e = MetadataCache(Path({str(tmp_path)!r})).get({URL!r}); print(e.count)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert int(out) > 0


def test_at_most_pool_size_directories_stay_open(tmp_path: Path) -> None:
    """Opening more directories than POOL_SIZE closes the least recently used ones."""
    cache_handles.close_all()
    for index in range(cache_handles.POOL_SIZE + 3):
        MetadataCache(tmp_path / str(index))._open()
    assert len(cache_handles._OPEN) == cache_handles.POOL_SIZE
    assert str(tmp_path / str(cache_handles.POOL_SIZE + 2)) in cache_handles._OPEN
    assert str(tmp_path / "0") not in cache_handles._OPEN
