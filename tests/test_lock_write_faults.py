"""Faults while a lock (or a page) is written or compared: a full disk under the spool, a
killed writer, a FIFO or a folder as ``--output``, a closed standard output.

Each row is a class of fault a break test found as a traceback, a hang or leftovers.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts import lock_text as lock_text_module
from compiler.artifacts import output_file
from compiler.artifacts.lock import LockFileError, write_lock
from compiler.cli.main import main
from tests.conftest import ROOT


def _config(tmp_path: Path) -> list[str]:
    for name in ("models.yaml", "stages.yaml"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "contracts").symlink_to(ROOT / "contracts", target_is_directory=True)
    return ["--models", str(tmp_path / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]


class _FullDisk(tempfile.SpooledTemporaryFile):  # type: ignore[type-arg]
    """A spool whose file (past its memory) is on a full disk."""

    def write(self, data: Any) -> int:
        if self._rolled or self.tell() + len(data) > self._max_size:  # type: ignore[attr-defined]
            raise OSError(errno.ENOSPC, "No space left on device")
        return int(super().write(data))


def test_a_full_disk_under_the_spool_is_one_error_and_the_old_lock_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past SPOOL_MEMORY the spool is a file in the lock's folder: ENOSPC there is exit 2,
    one line naming the folder and the reason, the old lock as it was, nothing left."""
    config = _config(tmp_path)
    lock = tmp_path / "capc.lock.json"
    lock.write_text("old\n", encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr(lock_text_module, "SPOOL_MEMORY", 1000)
    monkeypatch.setattr(lock_text_module.tempfile, "SpooledTemporaryFile", _FullDisk)
    for extra in ([], ["--check"], ["--output", "-"]):
        assert main(["lock", *config, *extra]) == 2
        err = capsys.readouterr().err
        assert "cannot spool the lock while compiling" in err and "No space left" in err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert lock.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_error_names_the_lock_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    monkeypatch.setattr(lock_text_module, "SPOOL_MEMORY", 1000)
    monkeypatch.setattr(lock_text_module.tempfile, "SpooledTemporaryFile", _FullDisk)
    assert main(["lock", *config]) == 2
    assert capsys.readouterr().err.startswith(f"capc: error: {tmp_path}: cannot spool")


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="no O_TMPFILE on this system")
def test_a_killed_writer_leaves_no_named_temporary_file(tmp_path: Path) -> None:
    """While the pieces are written the temporary file has no name (O_TMPFILE): a child
    killed with SIGKILL mid-write leaves only the old lock, however often it happens."""
    target = tmp_path / "capc.lock.json"
    target.write_text("old\n", encoding="utf-8")
    script = (
        "import os, sys\n"
        "from compiler.artifacts.lock import write_lock\n"
        "def pieces():\n"
        "    yield b'{' * 70000\n"
        "    sys.stdout.write('writing\\n'); sys.stdout.flush()\n"
        "    sys.stdin.readline()\n"  # the parent kills it here
        "    yield b'}'\n"
        f"write_lock(pieces(), {str(target)!r})\n"
    )
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, cwd=ROOT)  # fmt: skip
        assert child.stdout is not None and child.stdout.readline() == b"writing\n"
        child.kill()
        child.wait()
        assert child.stdin is not None
        child.stdin.close()
        child.stdout.close()
    assert [p.name for p in tmp_path.iterdir()] == ["capc.lock.json"]
    assert target.read_text(encoding="utf-8") == "old\n"
    write_lock(iter([b"{", b"}\n"]), target)
    assert target.read_text(encoding="utf-8") == "{}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["capc.lock.json"]


def test_without_o_tmpfile_the_named_file_is_used_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback (no O_TMPFILE, or a file system without it): today's named file,
    removed on an error; the bits of an existing file are kept."""
    monkeypatch.setattr(output_file, "_unnamed", lambda folder: None)
    target = tmp_path / "capc.lock.json"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o600)

    def pieces() -> Any:
        yield b"{\n"
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_lock(pieces(), target)
    assert [p.name for p in tmp_path.iterdir()] == ["capc.lock.json"]
    write_lock(iter([b"{}\n"]), target)
    assert target.read_bytes() == b"{}\n" and target.stat().st_mode & 0o777 == 0o600


def test_an_unnamed_file_gets_the_targets_bits(tmp_path: Path) -> None:
    target = tmp_path / "capc.lock.json"
    write_lock(iter([b"{}\n"]), target)
    assert target.stat().st_mode & 0o777 == 0o644
    target.chmod(0o640)
    write_lock(iter([b"{ }\n"]), target)
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["capc.lock.json"]


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_check_refuses_a_fifo_or_a_folder(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check --output FIFO hung in open(); a folder was a traceback: both are the 'not
    a regular file' refusal, exit 2 (the FIFO is opened without blocking)."""
    config = _config(tmp_path)
    target = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    assert main(["lock", *config, "--check", "--output", str(target)]) == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err and err.count("\n") == 1
    with pytest.raises(LockFileError, match="not a regular file"):
        output_file.holds_text(target, [b"x"], option="--output", refuse=LockFileError)


@pytest.mark.parametrize(("kind", "reason"), [
    ("symlink loop", "Too many levels of symbolic links"),
    ("under a file", "Not a directory"),
])  # fmt: skip
def test_check_of_a_lock_that_cannot_be_opened_is_one_line(
    tmp_path: Path, kind: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any other open error of the existing lock (ELOOP, ENOTDIR, EACCES) was a
    traceback with exit 1, which --check uses for "out of date": now one line, exit 2."""
    config = _config(tmp_path)
    if kind == "symlink loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        target = tmp_path / "a"
    else:
        (tmp_path / "file").write_text("x")
        target = tmp_path / "file" / "capc.lock.json"
    assert main(["lock", *config, "--check", "--output", str(target)]) == 2
    err = capsys.readouterr().err
    assert err == f"capc: error: {target}: cannot read it: {reason}\n"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="chown needs root")
def test_a_rewritten_lock_keeps_its_group(tmp_path: Path) -> None:
    """A 0640 lock shared with a group stayed 0640 but lost the group (root:root after
    the rename), so the group could no longer read it."""
    config = _config(tmp_path)
    target = tmp_path / "capc.lock.json"
    target.write_text("an older lock")
    os.chown(target, -1, 65534)
    target.chmod(0o640)
    assert main(["lock", *config, "--output", str(target)]) == 0
    info = target.stat()
    assert (info.st_gid, info.st_mode & 0o777) == (65534, 0o640)
    assert target.read_text() != "an older lock"


def test_the_page_left_as_it_is_check_never_blocks(tmp_path: Path) -> None:
    """keep_same reads the old page without blocking: a FIFO is refused, not waited on."""
    from compiler.page.page import PageTargetError, write_page

    target = tmp_path / "page.html"
    os.mkfifo(target)
    with pytest.raises(PageTargetError, match="not a regular file"):
        write_page("x", target)
    target.unlink()
    write_page("x", target)
    stamp = target.stat().st_mtime_ns
    write_page("x", target)  # the same text: left as it is
    assert target.stat().st_mtime_ns == stamp


@pytest.mark.parametrize("command", [
    ["lock", "--output", "-"], ["audit", "--json"], ["audit"], ["schema", "lock"],
    ["compile", "extract_invoice", "openai/gpt-4o-mini", "--no-cache"],
])  # fmt: skip
def test_a_closed_stdout_is_one_error_line(command: list[str]) -> None:
    """``capc ... >&-``: sys.stdout is None; one stderr line, the documented exit 1 of an
    unwritable standard output (it was AttributeError, a traceback)."""
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", *command, "--models", str(ROOT / "models.yaml"),
         "--stages", str(ROOT / "stages.yaml")] if command[0] != "schema"
        else [sys.executable, "-m", "compiler", *command],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, cwd=ROOT,
        env={**os.environ, "CAPC_OFFLINE": "1"}, close_fds=True,
        preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert "capc: error: cannot write standard output: it is closed" in err
    assert "Traceback" not in err


def test_a_refused_link_copies_to_a_named_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where linking the unnamed file is refused (EPERM in a sandbox), the complete text
    is copied to a named file and renamed: the same bytes, nothing left behind."""
    def refused(fd: int, target: Path) -> str:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(output_file, "_link", refused)
    target = tmp_path / "capc.lock.json"
    write_lock(iter([b"{", b"}\n"]), target)
    assert target.read_bytes() == b"{}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["capc.lock.json"]


def test_check_lists_a_loop_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A stage's timeout_seconds 60 -> 70 changes only the entry's loop: --check lists
    loop.timeout_seconds (it said 'no setting changed')."""
    config = _config(tmp_path)
    stages = tmp_path / "stages.yaml"
    text = stages.read_text(encoding="utf-8")
    head, sep, rest = text.partition("  extract_invoice:\n")
    assert sep
    stages.write_text(f"{head}{sep}    timeout_seconds: 60.0\n{rest}", encoding="utf-8")
    assert main(["lock", *config]) == 0
    stages.write_text(f"{head}{sep}    timeout_seconds: 70.0\n{rest}", encoding="utf-8")
    capsys.readouterr()
    assert main(["lock", *config, "--check"]) == 1
    captured = capsys.readouterr()
    assert "loop.timeout_seconds" in captured.out and "70.0" in captured.out
    assert "no setting changed" not in captured.err
