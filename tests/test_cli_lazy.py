"""``capc`` builds the parser of the command it runs only: the command table in
``compiler/cli/main.py`` must name every command of every command module, in order."""

from __future__ import annotations

import argparse
import importlib

import pytest

from compiler.cli.main import COMMANDS, main

#: What ``capc --help`` lists, in this order (as before the table).
LISTED = ["compile", "explain", "routes", "reply", "show", "check", "schema", "lock", "audit",
          "diff", "refresh", "models", "cache"]


def test_the_table_names_what_each_module_registers() -> None:
    """Registering each module of the table (in table order) yields exactly the table's
    commands for it, and all of them in the order ``capc --help`` lists."""
    seen: list[str] = []
    for module in dict.fromkeys(COMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        names = list(importlib.import_module(module).register(sub))
        assert names == [c for c, m in COMMANDS.items() if m == module]
        seen += names
    assert seen == list(COMMANDS) == LISTED


def test_help_and_an_unknown_command_list_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With no known command first, every module is registered: ``--help`` lists all of
    them and a misspelt command is a usage error (exit 2) that lists them too."""
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in LISTED)
    assert main(["compil", "x", "y"]) == 2  # a usage error is reported, not raised (#21)
    error = capsys.readouterr().err
    assert "invalid choice: 'compil'" in error and "audit" in error


def test_a_command_gets_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    """``capc lock --help`` is the lock command's help, as before."""
    with pytest.raises(SystemExit) as done:
        main(["lock", "--help"])
    assert done.value.code == 0
    assert "usage: capc lock" in capsys.readouterr().out


def test_the_capc_process_raises_the_collector_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """run() (the console script), not the library, sets the first GC threshold."""
    import gc

    from compiler.cli import main as cli_main

    before = gc.get_threshold()
    monkeypatch.setattr(cli_main, "main", lambda: 0)
    try:
        with pytest.raises(SystemExit):
            cli_main.run()
        assert gc.get_threshold() == (cli_main.GC_THRESHOLD, *before[1:])
    finally:
        gc.set_threshold(*before)
