"""Where capc's output goes (issue 21): ``--html`` follows ``lock --output``'s rules, and
a standard output that cannot be written is one ``capc: error:`` line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import ROOT

ARGS = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml"),
        "--stage", "extract_invoice", "--model", "openai/gpt-4o-mini"]  # fmt: skip


def _target(kind: str, tmp_path: Path) -> tuple[str, Path | None]:
    """The ``--html``/``--output`` argument for ``kind`` and the regular file it lands in."""
    if kind == "regular":
        (tmp_path / "out").write_text("old", encoding="utf-8")
        return str(tmp_path / "out"), tmp_path / "out"
    if kind == "symlink":
        (tmp_path / "real").write_text("old", encoding="utf-8")
        (tmp_path / "out").symlink_to(tmp_path / "real")
        return str(tmp_path / "out"), tmp_path / "real"
    if kind == "fifo":
        os.mkfifo(tmp_path / "out")
        return str(tmp_path / "out"), None
    if kind == "char device":
        return os.devnull, None
    if kind == "missing parent":
        return str(tmp_path / "a" / "b" / "out"), tmp_path / "a" / "b" / "out"
    return "-", None


KINDS = ["regular", "symlink", "fifo", "char device", "-", "missing parent"]


@pytest.mark.parametrize("kind", KINDS)
def test_html_follows_the_lock_output_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Both writers give the same exit code for every kind of target; a refused target is
    left as it was; a symlink stays a link and its target gets the output; ``-`` streams."""
    page_dir, lock_dir = tmp_path / "page", tmp_path / "lock"
    page_dir.mkdir()
    lock_dir.mkdir()
    page, page_file = _target(kind, page_dir)
    lock, lock_file = _target(kind, lock_dir)
    page_code = main(["audit", *ARGS, "--html", page])
    page_out, page_err = capsys.readouterr()
    lock_code = main(["lock", *ARGS[:4], "--output", lock])
    lock_out, lock_err = capsys.readouterr()
    assert page_code == lock_code, (page_err, lock_err)
    assert "Traceback" not in page_err
    if kind in ("fifo", "char device"):
        assert page_code == 2 and "not a regular file" in page_err and "--html" in page_err
        assert kind == "char device" or (page_dir / "out").is_fifo()
        return
    assert page_code == 0, page_err
    if kind == "-":
        assert page_out.startswith("<!DOCTYPE html>") and "STAGE" not in page_out
        assert lock_out.startswith("{") and not Path("-").exists()
        return
    assert page_file is not None and lock_file is not None
    assert page_file.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert lock_file.read_text(encoding="utf-8").startswith("{")
    if kind == "symlink":
        assert (page_dir / "out").is_symlink() and (lock_dir / "out").is_symlink()


def test_diff_html_dash_is_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = tmp_path / "a.lock.json"
    assert main(["lock", *ARGS[:4], "--output", str(lock)]) == 0
    capsys.readouterr()
    assert main(["diff", str(lock), str(lock), "--html", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("<!DOCTYPE html>") and not Path("-").exists()


FULL = [
    ["compile", "extract_invoice", "openai/gpt-4o-mini"],
    ["models", "--json"],
    ["models"],
]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("words", FULL, ids=" ".join)
def test_a_full_stdout_is_one_error_line(words: list[str]) -> None:
    """``capc ... > /dev/full``: one ``capc: error:`` line, exit 1, no traceback."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "compiler", *words],  # ROOT's models.yaml, stages.yaml
            stdout=full, stderr=subprocess.PIPE, text=True, check=False,
            env={**os.environ, "CAPC_OFFLINE": "1"}, cwd=ROOT,
        )  # fmt: skip
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "capc: error: cannot write standard output: No space left on device")
    assert proc.returncode == 1
