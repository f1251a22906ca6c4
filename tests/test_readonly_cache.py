"""A cache that cannot be written (issue 21): refresh says so; reads still work.

The cache is filled by this process, then made read-only (``chmod a-w``), and each command
runs in a child process that cannot write it. Root writes through any mode only by the
capability ``CAP_DAC_OVERRIDE``, so when the tests run as root the child runs without it
(``setpriv --bounding-set=-dac_override``): still root, still able to read everything it
imports wherever the clone and the interpreter sit, but held to the modes like any user.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import FakeOpenRouter, Reply
from tests.test_sources import FULL, MODELS, SEED

_ROOT = os.name == "posix" and os.geteuid() == 0
_HELD_TO_MODES = (
    ["setpriv", "--inh-caps=-dac_override", "--bounding-set=-dac_override"] if _ROOT else []
)
pytestmark = pytest.mark.skipif(
    os.name != "posix" or (_ROOT and shutil.which("setpriv") is None),
    reason="needs POSIX permissions, and setpriv to drop root's CAP_DAC_OVERRIDE",
)


@pytest.fixture(scope="module")
def held_to_modes() -> Iterator[None]:
    """Skip (saying why) unless a child really cannot create a file in a read-only folder."""
    root = Path(tempfile.mkdtemp(prefix="capc-ro-probe-"))
    try:
        root.chmod(0o555)
        probe = subprocess.run(
            [*_HELD_TO_MODES, sys.executable, "-c",
             f"open({str(root / 'probe')!r}, 'w')"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if probe.returncode == 0:
            pytest.skip("a child process can write a read-only folder here")
        if "PermissionError" not in probe.stderr:
            pytest.skip(f"the child could not be started as needed: {probe.stderr[-300:]}")
        yield
    finally:
        root.chmod(0o755)
        shutil.rmtree(root)


@pytest.fixture
def read_only(
    openrouter_server: FakeOpenRouter, monkeypatch: pytest.MonkeyPatch, held_to_modes: None
) -> Iterator[tuple[Path, dict[str, str]]]:
    """A populated cache directory made read-only, and the environment that points at it."""
    root = Path(tempfile.mkdtemp(prefix="capc-ro-"))
    root.chmod(0o755)
    cache_dir = root / "cache"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(root), "CAPC_OFFLINE": "0",
           "CAPC_CACHE_DIR": str(cache_dir), "CAPC_BASE_URL": openrouter_server.base_url,
           "CAPC_MAX_ATTEMPTS": "1", "CAPC_BACKOFF": "0", "LC_ALL": "C.UTF-8"}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    openrouter_server.script(MODELS, Reply(FULL))
    assert main(["refresh"]) == 0
    for path in (cache_dir, *cache_dir.iterdir()):
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield cache_dir, env
    finally:
        for path in (cache_dir, *cache_dir.iterdir()):
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(root)


def _capc(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_HELD_TO_MODES, sys.executable, "-m", "compiler", *argv], capture_output=True,
        text=True, env=env, cwd="/", timeout=120, check=False,
    )  # fmt: skip


WRITE_CASES = [
    # (argv, exit code, stderr part)
    (["refresh"], 1, "cannot store: it is read-only"),
    (["refresh", "--json"], 1, "set CAPC_CACHE_DIR to a writable directory"),
    (["cache", "clear"], 2, "cannot clear: it is read-only"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "code", "message"), WRITE_CASES)
def test_a_write_into_a_read_only_cache_fails_with_the_reason(
    read_only: tuple[Path, dict[str, str]], argv: list[str], code: int, message: str
) -> None:
    """Never "fetched" with exit 0 while nothing is stored; one line, no traceback."""
    cache_dir, env = read_only
    before = sorted((p.name, p.stat().st_size) for p in cache_dir.iterdir())
    proc = _capc(env, *argv)
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    if "--json" in argv:
        assert json.loads(proc.stdout)["ok"] is False
    assert sorted((p.name, p.stat().st_size) for p in cache_dir.iterdir()) == before


READ_CASES = [
    # (argv, check of the JSON document)
    (["models", "--json"], lambda doc: len(doc["models"]) == len(SEED)
     and "cache" in doc["metadata"]["origin"]),
    (["cache", "info", "--json"], lambda doc: [e["kind"] for e in doc["entries"]] == ["models"]),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "check"), READ_CASES)
def test_a_read_only_populated_cache_is_still_read(
    read_only: tuple[Path, dict[str, str]], argv: list[str], check: object
) -> None:
    """Offline, the cached copy (not the bundled seed) is served from the read-only cache."""
    _, env = read_only
    proc = _capc({**env, "CAPC_OFFLINE": "1"}, *argv)
    assert proc.returncode == 0, proc.stderr
    assert "cache unavailable" not in proc.stderr
    assert callable(check) and check(json.loads(proc.stdout)), proc.stdout


def test_an_empty_read_only_directory_is_a_failed_refresh(
    openrouter_server: FakeOpenRouter, held_to_modes: None
) -> None:
    """The fetch succeeds, nothing can be stored: exit 1 naming the directory, not "fetched"."""
    openrouter_server.script(MODELS, Reply(FULL))
    root = Path(tempfile.mkdtemp(prefix="capc-ro-"))
    try:
        root.chmod(0o555)
        env = {"PATH": os.environ.get("PATH", ""), "CAPC_CACHE_DIR": str(root / "c"),
               "CAPC_OFFLINE": "0", "CAPC_BASE_URL": openrouter_server.base_url,
               "CAPC_MAX_ATTEMPTS": "1"}  # fmt: skip
        proc = _capc(env, "refresh")
        assert proc.returncode == 1 and str(root / "c") in proc.stderr, proc.stderr
        assert "not cached" in proc.stderr and "Traceback" not in proc.stderr
    finally:
        root.chmod(0o755)
        shutil.rmtree(root)


def test_cache_info_on_an_empty_read_only_directory_is_no_cache(held_to_modes: None) -> None:
    """No cache.db in a directory nobody may write: "no cache at ...", exit 0 (not an error)."""
    root = Path(tempfile.mkdtemp(prefix="capc-ro-"))
    try:
        root.chmod(0o555)
        env = {"PATH": os.environ.get("PATH", ""), "CAPC_CACHE_DIR": str(root),
               "CAPC_OFFLINE": "1"}  # fmt: skip
        proc = _capc(env, "cache", "info")
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"no cache at {root}\n", "")
        proc = _capc(env, "cache", "info", "--json")
        assert proc.returncode == 0 and json.loads(proc.stdout)["exists"] is False
    finally:
        root.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)
