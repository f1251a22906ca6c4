"""capc never removes or writes into files that are not its own (issue 22, round 2).

A project tree planted in the cache directory survives ``refresh``, a store and ``cache
clear``; only diskcache value files (``xx/yy/<28 hex>.val``) no row refers to are swept.
A ``CAPC_CACHE_DIR`` that holds other files and no ``cache.db`` is refused (exit 2).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.sources.cache import MetadataCache
from registry.sources.cache_files import foreign_entries, sweep_orphans
from tests.conftest import SEED_MODELS, FakeOpenRouter, Reply

ORPHAN = "ab/cd/" + "0123456789abcdef0123456789ab.val"
PROJECT = {
    "README.md": "x",
    "src/main.py": "print(1)",
    ".git/HEAD": "ref: refs/heads/main",
    "ab/cd/notes.txt": "looks like the layout, is not a value file",
    "ab/cd/0123456789abcdef0123456789ab.txt": "not .val",
    "ab/ef/" + "f" * 27 + ".val": "27 hex digits: not diskcache's name",
    "0g/12/" + "a" * 28 + ".val": "not a hex folder",
    "compiled/keep.md": "the user's, beside the compile cache",
}


def plant(root: Path) -> None:
    for name, text in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def survivors(root: Path) -> dict[str, str]:
    return {n: (root / n).read_text(encoding="utf-8") for n in PROJECT if (root / n).is_file()}


def _env(monkeypatch: pytest.MonkeyPatch, server: FakeOpenRouter, directory: Path) -> None:
    for name, value in {
        "CAPC_OFFLINE": "0", "CAPC_BASE_URL": server.base_url,
        "CAPC_CACHE_DIR": str(directory), "CAPC_MAX_ATTEMPTS": "1",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)


def test_a_project_folder_without_cache_db_is_refused(
    openrouter_server: FakeOpenRouter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    plant(tmp_path)
    _env(monkeypatch, openrouter_server, tmp_path)
    openrouter_server.script("/api/v1/models", Reply(SEED_MODELS.read_bytes()))
    for argv in (["refresh"], ["cache", "clear"], ["cache", "info"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "is not a capc cache" in err and "README.md" in err and "Traceback" not in err
    assert survivors(tmp_path) == PROJECT
    assert not (tmp_path / "cache.db").exists()


@pytest.mark.parametrize("names", [[], ["cache.db-wal"], ["compiled/x.json"]])
def test_only_our_own_files_are_not_foreign(tmp_path: Path, names: list[str]) -> None:
    """The value-file layout (ab/cd/<hex>.val) is ours only beside a verified cache.db:
    see tests/test_cache_db_check.py."""
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    assert foreign_entries(tmp_path) == []
    assert foreign_entries(tmp_path / "absent") == []


def test_every_planted_file_survives_refresh_store_and_clear(
    openrouter_server: FakeOpenRouter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a cache.db in place (the directory is a cache), user files beside it and
    layout look-alikes survive; the one real orphan value file is swept."""
    payload = SEED_MODELS.read_bytes()
    url = f"{openrouter_server.base_url}/models"
    at = datetime(2026, 8, 19, tzinfo=UTC)
    with MetadataCache(tmp_path) as cache:
        cache.store(url, payload, kind="models", fetched_at=at, max_shrink=0.5)
    plant(tmp_path)
    (tmp_path / ORPHAN).write_bytes(b"x" * 100)
    _env(monkeypatch, openrouter_server, tmp_path)
    openrouter_server.script("/api/v1/models", Reply(payload))
    assert main(["refresh"]) == 0, capsys.readouterr().err
    assert survivors(tmp_path) == PROJECT
    assert not (tmp_path / ORPHAN).exists()
    with MetadataCache(tmp_path) as cache:
        cache.store(url, payload, kind="models", fetched_at=at, max_shrink=0.5)
    assert survivors(tmp_path) == PROJECT
    assert main(["cache", "clear"]) == 0
    assert survivors(tmp_path) == PROJECT
    capsys.readouterr()


def test_a_referenced_value_file_is_kept(tmp_path: Path) -> None:
    with MetadataCache(tmp_path) as cache:
        cache.volume()
    (tmp_path / ORPHAN).parent.mkdir(parents=True)
    (tmp_path / ORPHAN).write_bytes(b"v")
    assert sweep_orphans(tmp_path, lambda: [ORPHAN]) == 0
    assert (tmp_path / ORPHAN).is_file()
    assert sweep_orphans(tmp_path, lambda: []) == 1
    assert not (tmp_path / "ab").exists()  # the emptied layout folders go too


def test_a_compile_from_a_file_writes_nothing_into_a_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--metadata FILE needs no metadata cache, so the folder is not refused, but the
    compile result cache is not written into it either."""
    from tests.conftest import ROOT

    plant(tmp_path / "p")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path / "p"))
    monkeypatch.chdir(ROOT)
    argv = ["compile", "extract_invoice", "openai/gpt-4o-mini", "--metadata", str(SEED_MODELS)]
    assert main(argv) == 0, capsys.readouterr().err
    assert survivors(tmp_path / "p") == PROJECT
    assert not (tmp_path / "p" / "compiled").exists() or [
        p.name for p in (tmp_path / "p" / "compiled").iterdir()
    ] == ["keep.md"]
