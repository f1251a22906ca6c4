"""On a terminal only (issue 21): progress on long waits, tables that fit the width,
colour unless ``NO_COLOR``; piped output is plain and never imports rich. Each case runs
``capc`` in a pseudo-terminal (``os.openpty``), so the process sees a real TTY."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SEED_MODELS, FakeOpenRouter, Reply

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

CAPC = [sys.executable, "-m", "compiler"]
EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--metadata", str(SEED_MODELS)]
STAGES = ["--stages", str(ROOT / "stages.yaml")]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("CAPC_") and k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    return {**env, "CAPC_OFFLINE": "1", "CAPC_CACHE_DIR": str(tmp_path / "cache"),
            "TERM": "xterm-256color", **extra}  # fmt: skip


class Terminal:
    """``capc ARGV`` with stdout (and, unless ``stderr_pipe``, stderr) on a pty."""

    def __init__(self, argv: list[str], env: dict[str, str], *, stderr_pipe: bool = False):
        master, slave = os.openpty()
        self.proc = subprocess.Popen(
            [*CAPC, *argv], stdin=slave, stdout=slave,
            stderr=subprocess.PIPE if stderr_pipe else slave, env=env, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.output = b""

    def read_until(self, needle: bytes, *, limit: float = 60.0) -> bool:
        """Read until ``needle`` has appeared or the process closed the terminal."""
        deadline = time.monotonic() + limit
        while needle not in self.output and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            self.output += chunk
        return needle in self.output

    def finish(self) -> tuple[int, str, str]:
        """Read to the end; return (exit code, terminal text, piped stderr)."""
        self.read_until(b"\x00never\x00")
        err = ""
        if self.proc.stderr is not None:
            err = self.proc.stderr.read().decode()
            self.proc.stderr.close()
        code = self.proc.wait(60)
        os.close(self.master)
        return code, self.output.decode("utf-8", "replace").replace("\r\n", "\n"), err


def _on_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    return Terminal(argv, env, stderr_pipe=True).finish()


def _widest(text: str) -> int:
    return max(len(ANSI.sub("", line)) for line in text.splitlines())


MODELS = ["models", "--search", "claude", *EXAMPLE]
EXPLAIN = ["explain", "extract_invoice", "anthropic/claude-sonnet-4.5", *EXAMPLE, *STAGES]
SHOW = ["show", "openai/gpt-4o-mini", *EXAMPLE]
AUDIT = ["audit", "--stage", "extract_invoice", *EXAMPLE, *STAGES]
ROUTES = ["routes", "extract_invoice", "anthropic/claude-sonnet-4.5", *STAGES,  # the seed's
          "--models", str(ROOT / "models.yaml")]  # endpoints: no --metadata file


@pytest.mark.parametrize("argv", [MODELS, EXPLAIN, SHOW, AUDIT, ROUTES],
                         ids=["models", "explain", "show", "audit", "routes"])
def test_tables_fit_the_terminal_and_wide_shows_everything(
    tmp_path: Path, argv: list[str]
) -> None:
    """COLUMNS=60: no line is wider, in colour; --wide: every cell whole, wider."""
    code, out, _ = _on_terminal(argv, _env(tmp_path, COLUMNS="60"))
    assert code == 0 and "\x1b[" in out
    assert _widest(out) <= 60, out
    code, wide, _ = _on_terminal([*argv, "--wide"], _env(tmp_path, COLUMNS="60"))
    assert code == 0 and _widest(wide) > 60


@pytest.mark.parametrize("columns", [40, 200])
def test_a_dumb_terminal_fits_columns_without_colour(tmp_path: Path, columns: int) -> None:
    """TERM=dumb on a pty: no ANSI code, and the table fits COLUMNS (not rich's 80)."""
    code, out, _ = _on_terminal(EXPLAIN, _env(tmp_path, COLUMNS=str(columns), TERM="dumb"))
    assert code == 0 and "\x1b" not in out
    assert _widest(out) <= columns, out
    if columns > 80:  # the reason column uses the room: wider than 80
        assert _widest(out) > 80, out


def test_no_colour_with_no_color_nor_when_piped(tmp_path: Path) -> None:
    """NO_COLOR on a terminal: the fitted table without one ANSI code; piped: the plain
    table of old, with no ANSI code on stdout or stderr."""
    code, out, _ = _on_terminal(MODELS, _env(tmp_path, COLUMNS="60", NO_COLOR="1"))
    assert code == 0 and "\x1b" not in out and _widest(out) <= 60
    piped = subprocess.run([*CAPC, *MODELS], capture_output=True, text=True,
                           env=_env(tmp_path, COLUMNS="60"), check=False)  # fmt: skip
    assert piped.returncode == 0 and "\x1b" not in piped.stdout + piped.stderr
    assert piped.stdout.splitlines()[0].split() == [
        "ID", "CONTEXT", "MAX", "OUTPUT", "STRUCTURED", "REASONING", "EFFORTS"]
    assert _widest(piped.stdout) > 60  # piped output is whole: no terminal to fit


def test_notes_are_coloured_on_a_terminal_only(tmp_path: Path) -> None:
    """``capc: note:`` in colour when stderr is the terminal, plain when it is piped."""
    argv = ["models", "--search", "zzzz", *EXAMPLE]
    code, text, _ = Terminal(argv, _env(tmp_path)).finish()
    assert code == 0 and re.search(r"\x1b\[[0-9;]*mcapc: note:", text)
    code, text, _ = Terminal(argv, _env(tmp_path, NO_COLOR="1")).finish()
    assert code == 0 and "capc: note: no model matches" in text and "\x1b[" not in text
    code, _, err = _on_terminal(argv, _env(tmp_path))
    assert err.startswith("capc: note: no model matches") and "\x1b" not in err


@pytest.mark.parametrize("command", ["compile", "lock"])
def test_a_long_fetch_shows_progress_on_a_terminal(
    tmp_path: Path, openrouter_server: FakeOpenRouter, command: str
) -> None:
    """A request that hangs: its line appears in a spinner on the terminal; released,
    the command ends (exit 1: the named source failed) and the spinner is cleared."""
    openrouter_server.script("/api/v1/models", Reply(hang=True))
    url = f"{openrouter_server.base_url}/models"
    argv = ["compile", "extract_invoice", "openai/gpt-4o-mini"] if command == "compile" \
        else ["lock", "--output", str(tmp_path / "capc.lock.json")]
    env = _env(tmp_path, CAPC_OFFLINE="0", CAPC_MAX_ATTEMPTS="1")
    terminal = Terminal([*argv, "--models", str(ROOT / "models.yaml"), *STAGES,
                         "--metadata", url], env)  # fmt: skip
    try:
        assert terminal.read_until(f"GET {url} ...".encode()), terminal.output
    finally:
        openrouter_server.release.set()
    code, text, _ = terminal.finish()
    assert code == 1 and "capc: error:" in text and "Traceback" not in text


def test_reading_the_yaml_files_is_a_wait_too(tmp_path: Path) -> None:
    """Loading the declarations (a large YAML file) is inside a wait: a load made slow
    (half a second, the delay at 0) shows a spinner naming the files, then clears it."""
    code = ("import sys, time; from compiler.cli import terminal; terminal.PROGRESS_DELAY = 0.0\n"
            "from registry.resolve.resolver import Registry\n"
            "load = Registry.load.__func__\n"
            "Registry.load = classmethod(lambda cls, **kw: (time.sleep(0.5), load(cls, **kw))[1])\n"
            "from compiler.cli.main import main; sys.exit(main(sys.argv[1:]))")
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code, "check", *EXAMPLE, *STAGES],
                            stdin=slave, stdout=slave, stderr=slave,
                            env=_env(tmp_path), close_fds=True)  # fmt: skip
    os.close(slave)
    terminal = Terminal.__new__(Terminal)
    terminal.proc, terminal.master, terminal.output = proc, master, b""
    code_, text, _ = terminal.finish()
    assert code_ == 0 and "reading models.yaml, stages.yaml and the metadata ..." in text
    assert text.rstrip().endswith("(file, as of 2026-08-19)")  # the spinner is gone


def test_piped_progress_is_quiet(tmp_path: Path, openrouter_server: FakeOpenRouter) -> None:
    """The same hanging fetch with stderr piped: no spinner, only the error line."""
    openrouter_server.script("/api/v1/models", Reply(hang=True))
    url = f"{openrouter_server.base_url}/models"
    env = _env(tmp_path, CAPC_OFFLINE="0", CAPC_MAX_ATTEMPTS="1")
    proc = subprocess.Popen([*CAPC, "compile", "extract_invoice", "openai/gpt-4o-mini",
                             "--models", str(ROOT / "models.yaml"), *STAGES, "--metadata", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for _ in range(600):  # until the request is in flight (bounded)
            if openrouter_server.requests:
                break
            time.sleep(0.05)
        time.sleep(1.5)  # past the spinner's delay
    finally:
        openrouter_server.release.set()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out == ""
    assert err.startswith("capc: error: ") and err.count("\n") == 1 and "GET" not in err


def test_rich_is_imported_only_on_a_terminal() -> None:
    """``import compiler`` and a piped ``capc compile`` never import rich."""
    from tests.test_public_api import _loaded_by_compile

    code = "import sys, compiler, registry; print('rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.strip() == "False"
    assert _loaded_by_compile("classify_ticket", ("rich",), "--no-cache") == []
