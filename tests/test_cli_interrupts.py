"""Ctrl-C in a real ``capc`` process (issue 21, round 2): a SIGINT capc receives is exit
130 and ``capc: interrupted`` wherever it lands (a contract's import too, and with
``--json`` an error object when nothing was printed); a ``KeyboardInterrupt`` a contract
module raises itself stays a ContractError (exit 2); after the work is done a SIGINT does
not kill the process. Each test waits (bounded) for a file the child writes, then signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

CAPC = [sys.executable, "-m", "compiler"]
MODEL = "from pydantic import BaseModel\n\n\nclass Ok(BaseModel):\n    x: int\n"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CAPC_")}
    return {**env, "CAPC_OFFLINE": "1"}


def _project(tmp_path: Path, body: str) -> list[str]:
    """A stages.yaml whose one stage's contract module runs ``body`` at import."""
    (tmp_path / "c.py").write_text(body + MODEL, encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  s:\n    contract: c.py:Ok\n    output_tokens: 100\n", encoding="utf-8"
    )
    return ["--models", str(ROOT / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]


def _signal_when(
    proc: subprocess.Popen[str], marker: Path, then: Path | None = None
) -> tuple[str, str]:
    """Wait (bounded) until ``marker`` exists, send SIGINT (then write the file ``then``,
    when given), return (stdout, stderr)."""
    try:
        for _ in range(3000):
            if marker.exists():
                break
            try:
                proc.wait(0.01)
            except subprocess.TimeoutExpired:
                continue
            break  # the child ended before writing the marker
        assert marker.exists(), f"no marker; child ended with {proc.poll()}"
        proc.send_signal(signal.SIGINT)
        if then is not None:
            then.write_text("go")
        return proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


SLEEPS = (
    "import pathlib, time\n"
    "pathlib.Path(__file__).with_name('marker').write_text('in')\n"
    "time.sleep(60)\n"
)

COMMANDS = {
    "compile": ["compile", "s", "openai/gpt-4o-mini"],
    "check": ["check"],
}


@pytest.mark.parametrize("json_flag", [False, True])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_ctrl_c_during_a_contract_import_is_130_not_a_contract_error(
    tmp_path: Path, command: str, json_flag: bool
) -> None:
    """The module sleeps at import; the SIGINT capc gets there is an interruption."""
    argv = [*CAPC, *COMMANDS[command], *_project(tmp_path, SLEEPS), *(["--json"] * json_flag)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=tmp_path)  # fmt: skip
    out, err = _signal_when(proc, tmp_path / "marker")
    assert proc.returncode == 130, err
    assert err == "capc: interrupted\n"
    if json_flag:  # nothing was printed yet: the error object, whole
        assert json.loads(out) == {"ok": False, "error": {
            "message": "interrupted (SIGINT, Ctrl-C)", "kind": "interrupted",
            "exit_code": 130}}  # fmt: skip
    else:
        assert out == ""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_keyboard_interrupt_the_module_raises_is_a_contract_error(
    tmp_path: Path, command: str
) -> None:
    """``raise KeyboardInterrupt`` in the contract module: exit 2, the module named."""
    argv = [*CAPC, *COMMANDS[command], *_project(tmp_path, "raise KeyboardInterrupt\n")]
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          check=False)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "raised KeyboardInterrupt" in proc.stderr and "c.py" in proc.stderr
    assert "Traceback" not in proc.stderr and "interrupted" not in proc.stderr.splitlines()


def test_ctrl_c_during_shutdown_leaves_the_exit_code_alone(tmp_path: Path) -> None:
    """A SIGINT after the work is done (here in an atexit hook, as the interpreter exits)
    is ignored: exit 0 with the whole body, no traceback, no death by the signal."""
    body = (
        "import atexit, pathlib, time\n"
        "here = pathlib.Path(__file__).parent\n"
        "def _linger():\n"
        "    (here / 'marker').write_text('exiting')\n"
        "    for _ in range(3000):\n"
        "        if (here / 'go').exists():\n"
        "            return\n"
        "        time.sleep(0.01)\n"
        "atexit.register(_linger)\n"
    )
    argv = [*CAPC, "compile", "s", "openai/gpt-4o-mini", "--coverage", "first",
            *_project(tmp_path, body)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=tmp_path)  # fmt: skip
    out, err = _signal_when(proc, tmp_path / "marker", then=tmp_path / "go")
    assert proc.returncode == 0, err
    assert json.loads(out)["model"] == "openai/gpt-4o-mini"
    assert "Traceback" not in err and "interrupted" not in err


def test_the_entry_point_installs_the_handler_before_the_heavy_imports() -> None:
    """``compiler.cli.main`` (what the console script and ``-m compiler`` import before
    ``run()``) pulls in no argparse, pydantic or command module, so the window where
    Python's own handler prints a traceback is the interpreter's start alone."""
    code = ("import sys, compiler.cli.main as m\n"
            "heavy = [n for n in ('argparse', 'pydantic', 'httpx', 'yaml', 'compiler.cli.common')"
            " if n in sys.modules]\n"
            "print(heavy)\n")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), check=True)  # fmt: skip
    assert proc.stdout.strip() == "[]"
