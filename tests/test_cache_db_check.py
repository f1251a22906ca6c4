"""A cache.db that is not diskcache's, and symbolic links, are never written through
(issue 22, round 3).

Another application's SQLite file named ``cache.db`` is refused (exit 2, the reason),
never opened read-write; the ``ab/cd/<28 hex>.val`` layout is ours only beside a verified
``cache.db``; ``capc cache clear`` refuses a symlinked ``compiled/`` and follows no link.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.sources.cache import CacheError, MetadataCache
from registry.sources.cache_files import database_problem, foreign_entries, sweep_orphans

VALUE = "ab/cd/" + "1" * 28 + ".val"


def _db(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()


def _diskcache(directory: Path) -> None:
    with MetadataCache(directory) as cache:
        cache.volume()  # opens: diskcache creates its tables


FOREIGN = [
    ("an app's tables", ["CREATE TABLE users (id INTEGER, name TEXT)"],
     "holds tables diskcache does not write (users)"),
    ("an app's table beside diskcache's",
     ["CREATE TABLE Settings (key TEXT NOT NULL UNIQUE, value)", "CREATE TABLE users (id)"],
     "holds tables diskcache does not write (users)"),
    (
        "Settings and Cache, other columns",
        ["CREATE TABLE Settings (key TEXT, value)", "CREATE TABLE Cache (id INTEGER, v)"],
        "lacks diskcache's columns",
    ),
    ("not SQLite", None, "is not an SQLite database"),
]


#: what another process opening a new cache leaves between its steps (diskcache sets its
#: pragmas, which writes the file, then creates its tables one by one)
BEING_CREATED = [
    ("no table yet", ["PRAGMA journal_mode=wal"]),
    ("Settings only", ["CREATE TABLE Settings (key TEXT NOT NULL UNIQUE, value)"]),
]


@pytest.mark.parametrize(("label", "statements"), BEING_CREATED,
                         ids=[r[0] for r in BEING_CREATED])  # fmt: skip
def test_a_cache_db_being_created_is_not_foreign(
    tmp_path: Path, label: str, statements: list[str]
) -> None:
    """Two processes opening one new cache at once: the second must not refuse the first's
    half-made database (a flaky failure of test_two_processes_refreshing_concurrently)."""
    _db(tmp_path / "cache.db", *statements)
    assert (tmp_path / "cache.db").stat().st_size > 0
    assert database_problem(tmp_path) is None
    _diskcache(tmp_path)  # and diskcache completes it
    assert database_problem(tmp_path) is None


@pytest.mark.parametrize(("label", "statements", "reason"), FOREIGN, ids=[r[0] for r in FOREIGN])
def test_a_foreign_cache_db_is_refused_and_untouched(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    label: str,
    statements: list[str] | None,
    reason: str,
) -> None:
    db = tmp_path / "cache.db"
    if statements is None:
        db.write_bytes(b"not a database at all, " * 10)
    else:
        _db(db, *statements)
    (tmp_path / VALUE).parent.mkdir(parents=True)
    (tmp_path / VALUE).write_bytes(b"the app's file")
    before = db.read_bytes()
    assert reason in (database_problem(tmp_path) or "")
    assert "ab/" in foreign_entries(tmp_path)  # the layout is not ours here
    assert sweep_orphans(tmp_path, lambda: []) == 0
    with pytest.raises(CacheError, match="is not a capc cache"):
        MetadataCache(tmp_path).volume()
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CAPC_OFFLINE", "1")
    for argv in (["cache", "clear"], ["cache", "info"], ["refresh"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "is not a capc cache" in err and reason in err and "Traceback" not in err
    assert db.read_bytes() == before
    assert (tmp_path / VALUE).read_bytes() == b"the app's file"


def test_diskcache_own_database_is_accepted(tmp_path: Path) -> None:
    assert database_problem(tmp_path) is None  # absent
    _diskcache(tmp_path)
    assert database_problem(tmp_path) is None
    (tmp_path / VALUE).parent.mkdir(parents=True)
    (tmp_path / VALUE).write_bytes(b"v")
    assert foreign_entries(tmp_path) == []  # beside a verified cache.db, the layout is ours
    assert sweep_orphans(tmp_path, lambda: []) == 1
    _db(tmp_path / "cache.db", "CREATE TABLE extra (x)")
    assert "tables diskcache does not write" in (database_problem(tmp_path) or "")


def test_a_symlinked_cache_db_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    _diskcache(other)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "cache.db").symlink_to(other / "cache.db")
    assert database_problem(tmp_path / "c") == "cache.db is a symbolic link"


def _user_data_beside_a_cache(tmp_path: Path) -> tuple[Path, Path]:
    """A folder of the user's (``userdata/important.json``) and a diskcache folder."""
    userdata = tmp_path / "userdata"
    userdata.mkdir()
    (userdata / "important.json").write_text("{}", encoding="utf-8")
    cache_dir = tmp_path / "cache"
    _diskcache(cache_dir)
    return userdata, cache_dir


def test_cache_clear_refuses_a_symlinked_compiled_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    userdata, cache_dir = _user_data_beside_a_cache(tmp_path)
    (cache_dir / "compiled").symlink_to(userdata)
    monkeypatch.setenv("CAPC_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("CAPC_OFFLINE", "1")
    assert main(["cache", "clear"]) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and "Traceback" not in err
    assert (userdata / "important.json").is_file()
    assert main(["cache", "info"]) == 0  # listing reads nothing through the link
    capsys.readouterr()


def test_cache_clear_follows_no_link_inside_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    userdata, cache_dir = _user_data_beside_a_cache(tmp_path)
    (cache_dir / "compiled").mkdir()
    (cache_dir / "compiled" / "x.json").symlink_to(userdata / "important.json")
    (cache_dir / "compiled" / "own.json").write_text("{}", encoding="utf-8")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("CAPC_OFFLINE", "1")
    assert main(["cache", "clear"]) == 0, capsys.readouterr().err
    assert (userdata / "important.json").is_file()
    assert not (cache_dir / "compiled" / "own.json").exists()
    capsys.readouterr()
