"""Kill ``MetadataCache.store`` at each of its file and database operations in turn.

Run by ``tests/test_cache_crash.py`` as ``python tests/crash_store.py DIR MODE``, where
MODE is ``inline`` (the previous entry was written by this version) or ``file`` (it was
written by an older version, in a value file, and an orphan file of an earlier crash
lies beside it). For kill point k = 1, 2, ... a forked child replaces the entry and
SIGKILLs itself just before or just after the k-th operation (every SQL statement
diskcache executes, every ``Disk`` store/fetch/remove, every ``os.remove``/``os.rmdir``);
the parent then reads the entry. It stops at the first k the store survives, and prints
one JSON object: the operations seen and, per kill point, what the entry read as.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import diskcache  # noqa: E402

from registry.sources.cache import MetadataCache  # noqa: E402
from registry.sources.cache_entry import CacheEntry  # noqa: E402

URL = "https://openrouter.ai/api/v1/models"
SEED = (ROOT / "registry" / "data" / "seed-models-2026-08-19.json").read_bytes()
OLD_DATA = json.loads(SEED)["data"]
OLD = json.dumps({"data": OLD_DATA}).encode()
NEW = json.dumps({"data": OLD_DATA[::-1]}).encode()  # same count, other bytes
OLD_AT = datetime(2026, 8, 19, tzinfo=UTC)
NEW_AT = datetime(2026, 8, 20, tzinfo=UTC)


def prepare(directory: Path, mode: str) -> None:
    """Leave ``directory`` with the previous (good) entry, as ``mode`` says."""
    shutil.rmtree(directory, ignore_errors=True)
    if mode == "inline":
        with MetadataCache(directory) as cache:
            cache.store(URL, OLD, kind="models", fetched_at=OLD_AT, max_shrink=0.5)
        return
    entry = CacheEntry(source=URL, kind="models", fetched_at=OLD_AT, count=52, payload=OLD)
    while True:
        legacy = diskcache.Cache(str(directory), disk_min_file_size=2**15)  # its defaults
        legacy.set(URL, entry.to_bytes())
        legacy.close()
        # diskcache names the value file's folders at random; one that shares the
        # orphan's folder would change which folders end up empty, so the number of
        # operations (the kill points) would differ from run to run (1 in 256)
        if not (directory / "ff").exists():
            break
        shutil.rmtree(directory)
    orphan = directory / "ff" / "ee"
    orphan.mkdir(parents=True, exist_ok=True)
    (orphan / ("0123456789abcdef" * 2)[:28]).with_suffix(".val").write_bytes(b"x" * 1000)


def value_files(directory: Path) -> int:
    """Files in the cache directory other than the SQLite database and its logs."""
    return sum(1 for p in directory.rglob("*") if p.is_file() and "cache.db" not in p.name)


def instrument(kill_at: int, seen: list[str]) -> None:
    """Count operations; SIGKILL this process at the ``kill_at``-th point."""

    def point(name: str) -> None:
        seen.append(name)
        if len(seen) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(name: str, function):  # type: ignore[no-untyped-def]
        def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
            point(f"before {name}")
            result = function(*args, **kwargs)
            point(f"after {name}")
            return result

        return wrapped

    real_sql = diskcache.Cache._sql

    def sql(self):  # type: ignore[no-untyped-def]
        execute = real_sql.fget(self)

        def run(statement: str, *args, **kwargs):  # type: ignore[no-untyped-def]
            return wrap("sql " + " ".join(statement.split()[:3]), execute)(
                statement, *args, **kwargs
            )

        return run

    diskcache.Cache._sql = property(sql)  # type: ignore[method-assign]
    for method in ("store", "fetch", "remove"):
        setattr(diskcache.Disk, method, wrap(f"Disk.{method}", getattr(diskcache.Disk, method)))
    os.remove = wrap("os.remove", os.remove)  # type: ignore[assignment]
    os.rmdir = wrap("os.rmdir", os.rmdir)  # type: ignore[assignment]


def one_run(directory: Path, kill_at: int) -> tuple[bool, list[str]]:
    """Store NEW in a child killed at ``kill_at``; return (was killed, operations)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: open the cache, then store under instrumentation
        os.close(read)
        seen: list[str] = []
        try:
            cache = MetadataCache(directory)
            cache.volume()  # opened: from here on every operation is the store's
            instrument(kill_at, seen)
            cache.store(URL, NEW, kind="models", fetched_at=NEW_AT, max_shrink=0.5)
            cache.close()
        finally:
            os.write(write, json.dumps(seen).encode())
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        report = pipe.read()
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return killed, [] if killed else json.loads(report)


def state(directory: Path) -> str:
    """What the entry reads as: ``old``, ``new``, ``missing``."""
    with MetadataCache(directory) as cache:
        entry = cache.get(URL)
    if entry is None:
        return "missing"
    return {OLD: "old", NEW: "new"}.get(entry.payload, "other")


def main() -> None:
    directory, mode = Path(sys.argv[1]), sys.argv[2]
    outcomes: list[dict[str, object]] = []
    kill_at = 1
    while True:
        prepare(directory, mode)
        killed, operations = one_run(directory, kill_at)
        if not killed:
            break
        after_kill = state(directory)
        with MetadataCache(directory) as cache:  # the next refresh, not killed
            cache.store(URL, NEW, kind="models", fetched_at=NEW_AT, max_shrink=0.5)
        files = value_files(directory)
        outcomes.append({"kill_at": kill_at, "entry": after_kill, "files_after_next_store": files})
        kill_at += 1
    final = state(directory)
    print(
        json.dumps(
            {
                "operations": operations,
                "outcomes": outcomes,
                "final": final,
                "final_files": value_files(directory),
            }
        )
    )


if __name__ == "__main__":
    main()
