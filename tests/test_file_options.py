"""Every file option of every command, read from ``/dev/zero`` and from a pipe (issue 21).

``/dev/zero`` ends at the option's size limit with one ``capc: error:`` line (exit 2),
never a ``MemoryError``; a pipe (``/dev/stdin``, as ``<(...)`` is) is read exactly once,
so it gives what the same bytes in a regular file give (the compile cache, which hashes
its inputs, is not used for a file that is not a regular one). The pipe is a real one on
file descriptor 0 for the length of one in-process ``main`` call.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.cli.main import _parser, main
from tests.conftest import ROOT, SEED_MODELS

SEED_ENDPOINTS = ROOT / "registry" / "data" / "seed-endpoints-2026-05-18.json"
REPLY = ROOT / "tests" / "fixtures" / "replies" / "plain.json"
STAGE, MODEL = "classify_ticket", "openai/gpt-4o-mini"

#: What a good copy of each kind of file holds.
GOOD = {"metadata": SEED_MODELS, "models": ROOT / "models.yaml",
        "stages": ROOT / "stages.yaml", "endpoints": SEED_ENDPOINTS, "reply": REPLY,
        "messages": None}
#: The command words before the file options, by command; the rows are (command, option
#: or "" for the positional file, the kind of file it takes), for every option offered.
COMMANDS: dict[str, list[str]] = {
    "compile": ["compile", STAGE, MODEL], "explain": ["explain", STAGE, MODEL],
    "routes": ["routes", STAGE, MODEL], "lock": ["lock", "--output", "-"],
    "audit": ["audit", "--stage", STAGE], "reply": ["reply", STAGE, MODEL],
    "show": ["show", MODEL], "check": ["check"], "models": ["models"],
    "diff": ["diff"],
}


def _options(name: str) -> set[str]:
    """The options ``capc NAME`` offers (read from its parser, so the table follows it)."""
    parser, _ = _parser([name])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o for action in sub.choices[name]._actions for o in action.option_strings}


ROWS: list[tuple[str, str, str]] = []
for name in COMMANDS:
    offered = _options(name)
    ROWS += [(name, f"--{kind}", kind) for kind in
             ("metadata", "models", "stages", "endpoints", "messages") if f"--{kind}" in offered]
ROWS += [("reply", "", "reply"), ("diff", "", "metadata")]


def argv_for(name: str, option: str, kind: str, path: str) -> list[str]:
    """The command line with ``path`` in the file position, the defaults elsewhere."""
    words = list(COMMANDS[name])
    if name == "reply":
        words.append(path if option == "" else str(REPLY))
    if name == "diff":
        words += [path if option == "" else str(SEED_MODELS), str(SEED_MODELS)]
    if option:
        words += [option, path]
    if option != "--metadata" and "--metadata" in _options(name):
        words += ["--metadata", str(SEED_MODELS)]
    return words


@contextlib.contextmanager
def stdin_pipe(data: bytes) -> Iterator[str]:
    """A real pipe holding ``data`` on descriptor 0; yields ``/dev/stdin``."""
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as pipe, contextlib.suppress(BrokenPipeError):
            pipe.write(data)  # ends when the reader closes its end too

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)
    try:
        yield "/dev/stdin"
    finally:
        os.dup2(saved, 0)  # closes the pipe's last read end: the writer stops
        os.close(saved)
        writer.join(timeout=30)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from the checkout (contracts resolve against the current directory for a
    stages file that is not a regular file), with a private cache and offline."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CAPC_OFFLINE", "1")
    return tmp_path


def good_bytes(kind: str) -> bytes:
    path = GOOD[kind]
    return b'[{"role": "user", "content": "hi"}]' if path is None else path.read_bytes()


@pytest.mark.parametrize(("name", "option", "kind"), ROWS)
def test_dev_zero_ends_at_the_limit(
    here: Path, name: str, option: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(argv_for(name, option, kind, "/dev/zero"), capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("capc: error: "), err
    assert "limit" in err and "Traceback" not in err


@pytest.mark.parametrize(("name", "option", "kind"), ROWS)
def test_a_pipe_is_read_once(
    here: Path, name: str, option: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data = good_bytes(kind)
    regular = GOOD[kind] or here / "messages.json"
    if GOOD[kind] is None:
        regular.write_bytes(data)
    want = run(argv_for(name, option, kind, str(regular)), capsys)
    assert want[0] in (0, 1), want[2]  # 1: a reply or audit verdict, not an input error
    if (name, option) == ("diff", "--stages"):  # read once per side: refused, said so
        want = (2, "", "")
    for _ in range(2):  # the second time a compile cache entry exists for regular files
        with stdin_pipe(data) as path:
            got = run(argv_for(name, option, kind, path), capsys)
        assert got[0] == want[0], got[2]
        assert "Traceback" not in got[2] and len(got[1].splitlines()) == len(
            want[1].splitlines())
