"""CLI conventions and failures that must not look like success (issue 21), run as
subprocesses where the process boundary is what is tested (exit codes, streams, SIGINT)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import ROOT, FakeOpenRouter, Reply, refusing_stages

EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]
CAPC = [sys.executable, "-m", "compiler"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CAPC_")}
    return {**env, "CAPC_OFFLINE": "1", **extra}


def test_version_and_the_stdout_stderr_split(tmp_path: Path) -> None:
    """--version prints one line; compile's body alone is on stdout, the report on stderr."""
    proc = subprocess.run([*CAPC, "--version"], capture_output=True, text=True, env=_env())
    assert proc.returncode == 0 and proc.stdout.startswith("capc ")
    env = _env(CAPC_CACHE_DIR=str(tmp_path))
    argv = [*CAPC, "compile", "extract_invoice", "openai/gpt-4o-mini", *EXAMPLE]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["model"] == "openai/gpt-4o-mini"
    assert "output enforcement:" in proc.stderr


def test_ctrl_c_during_a_fetch_is_one_line_and_130(
    tmp_path: Path, openrouter_server: FakeOpenRouter
) -> None:
    """SIGINT while a request hangs: ``capc: interrupted``, exit 130, no traceback."""
    openrouter_server.script("/api/v1/models", Reply(hang=True))
    env = _env(
        CAPC_OFFLINE="0", CAPC_BASE_URL=openrouter_server.base_url, CAPC_CACHE_DIR=str(tmp_path)
    )
    proc = subprocess.Popen(
        [*CAPC, "refresh"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        for _ in range(2000):  # wait (bounded) until the request is in flight
            if openrouter_server.requests:
                break
            try:
                proc.wait(0.01)
            except subprocess.TimeoutExpired:
                continue
        assert openrouter_server.requests, "the request never arrived"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert err == "capc: interrupted\n"


def test_explain_prints_the_report_when_the_policy_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The refusal carries the report: explain prints it, then the error, and exits 1."""
    argv = ["explain", "draft_reply", "anthropic/claude-sonnet-4.5",
            *refusing_stages(tmp_path)]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out.startswith("stage draft_reply / model anthropic/claude-sonnet-4.5")
    assert "param.fixed" in out and err.startswith("capc: error:")


@pytest.mark.parametrize(
    ("url", "code", "message"),
    [
        ("http://[::1", 2, "not a valid URL"),
        ("http://127.0.0.1:notaport/models", 2, "not a valid URL"),
        ("http://127.0.0.1:9/api/v1/models", 1, "nothing stands in for it"),
    ],
)
def test_an_explicit_metadata_url_that_fails_is_an_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    url: str,
    code: int,
    message: str,
) -> None:
    """No bundled seed in its place, and no lock written from one."""
    monkeypatch.setenv("CAPC_OFFLINE", "0")
    monkeypatch.setenv("CAPC_MAX_ATTEMPTS", "1")
    lock = tmp_path / "capc.lock.json"
    assert main(["lock", "--metadata", url, "--output", str(lock), *EXAMPLE]) == code
    assert message in capsys.readouterr().err
    assert not lock.exists()


def test_empty_and_mistyped_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CAPC_CACHE_DIR= means unset (no cache.db here); CAPC_OFLINE gets a did-you-mean."""
    from registry.sources import settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAPC_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CAPC_OFLINE", "1")
    monkeypatch.setattr(settings, "_WARNED", set())
    with pytest.warns(UserWarning, match="CAPC_OFLINE is ignored; did you mean CAPC_OFFLINE"):
        assert settings.load_settings().cache_dir == tmp_path / "xdg" / "capability-compiler"
    assert not (tmp_path / "cache.db").exists()
