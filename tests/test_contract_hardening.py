"""A contract names a type and its module only defines types: issue 21, one table per class.

Anything pydantic would take that is not a reply's type (a function, a string, ``Any``) is a
``ContractError``; a module that exits, is interrupted or prints while it is imported can
neither end ``capc`` with exit 0 nor write into stdout (a body or a ``--json`` document).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.errors import ContractError
from compiler.schema.contract import OutputContract, load_contract
from tests.conftest import ROOT

MODEL = "from pydantic import BaseModel\n\nclass Ok(BaseModel):\n    n: int\n"

NOT_A_TYPE = [
    # (module source defining X, message part)
    ("def X(n: int) -> int:\n    return n\n", "a function (a callable), not a type"),
    ("X = lambda: 1\n", "a function (a callable), not a type"),
    ("X = len\n", "a builtin_function_or_method (a callable)"),
    ("import os as X\n", "pydantic cannot build its JSON Schema"),
    ("X = 'Ok'\n", "the string 'Ok', not a type"),
    ("from typing import Any as X\n", "its JSON Schema is {}"),
    ("X = object\n", "its JSON Schema is {}"),
    ("class C:\n    def m(self) -> int:\n        return 1\nX = C().m\n", "a method (a callable)"),
]  # fmt: skip


@pytest.mark.parametrize(("source", "message"), NOT_A_TYPE)
def test_what_is_no_reply_type_is_a_contract_error(
    tmp_path: Path, source: str, message: str
) -> None:
    """The error names the spec and says what to name instead."""
    path = tmp_path / "notype.py"
    path.write_text(MODEL + source, encoding="utf-8")
    with pytest.raises(ContractError, match="cannot be used as an output contract") as caught:
        load_contract(f"{path.name}:X", base_dir=tmp_path)
    assert message in str(caught.value)
    assert "notype.py:X" in str(caught.value)


def test_types_that_are_no_model_still_work() -> None:
    """A union, a generic alias, a plain scalar type stay contracts (they describe a reply)."""
    for tp in (int | None, list[int], dict[str, float]):
        assert OutputContract.from_type(tp).schema


IMPORT_TIME = [
    # (module body run at import, exception class named)
    ("raise SystemExit(0)\n", "SystemExit (code 0)"),
    ("import sys\nsys.exit(3)\n", "SystemExit (code 3)"),
    ("raise SystemExit\n", "SystemExit (code None)"),
    ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    # issue 21 follow-up: what cannot be printed, BaseException, huge or multi-line text,
    # a NUL byte: still the one line "file:N: Type: message", never a traceback
    ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError()\nraise E()\n",
     ".py:4: E: E()"),
    ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError()\n"
     "    def __repr__(self):\n        raise RuntimeError()\nraise E()\n",
     ".py:6: E: <message not shown: __str__ raised RuntimeError>"),
    ("class B(BaseException):\n    pass\nraise B('b')\n", ".py:3: B: b"),
    ("raise GeneratorExit()\n", ".py:1: GeneratorExit"),
    ("raise MemoryError()\n", ".py:1: MemoryError"),
    ("raise ValueError('A' * 5_000_000)\n", "A" * 500 + "... (5,000,000 characters)"),
    ("raise ValueError('one\\ntwo\\x1b[31m')\n", ".py:1: ValueError: one two\\x1b[31m"),
    ("x = 1\x00\n", ".py: SyntaxError: source code string cannot contain null bytes"),
]  # fmt: skip


@pytest.mark.parametrize("how", ["file", "module"])
@pytest.mark.parametrize(("body", "message"), IMPORT_TIME)
def test_an_exit_at_import_is_a_contract_error_naming_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, body: str, message: str
) -> None:
    """``SystemExit``/``KeyboardInterrupt`` in a contract's import never leave ``capc``."""
    name = f"capc_exits_{how}_{abs(hash(body))}"
    (tmp_path / f"{name}.py").write_text(body + MODEL, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{name}.py:Ok" if how == "file" else f"{name}:Ok"
    with pytest.raises(ContractError, match="cannot be imported") as caught:
        load_contract(spec, base_dir=tmp_path)
    assert message in str(caught.value)
    assert f"contract {spec!r} cannot be imported" in str(caught.value)
    assert len(str(caught.value)) < 1_000 and "\n" not in str(caught.value)
    assert not any(key.endswith(name) or key.startswith(f"_capc_contract_{name}")
                   for key in sys.modules)  # fmt: skip


@pytest.mark.parametrize("how", ["file", "module"])
def test_a_print_at_import_goes_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:  # fmt: skip
    """The module loads; what it printed is on stderr, and stdout is untouched."""
    name = f"capc_prints_{how}"
    (tmp_path / f"{name}.py").write_text("print('hello from import')\n" + MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = f"{name}.py:Ok" if how == "file" else f"{name}:Ok"
    assert load_contract(spec, base_dir=tmp_path).name == "Ok"
    out, err = capsys.readouterr()
    assert out == "" and "hello from import" in err


CLI_CASES = [
    # (module body, exit code, a problem names)
    ("print('noise')\n", 0, None),
    ("raise SystemExit(0)\n", 2, "raised SystemExit (code 0)"),
    ("raise KeyboardInterrupt\n", 2, "raised KeyboardInterrupt"),
    ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError()\n"
     "    def __repr__(self):\n        raise RuntimeError()\nraise E()\n", 2,
     "c.py:6: E: <message not shown"),
    ("class B(BaseException):\n    pass\nraise B('b')\n", 2, "c.py:3: B: b"),
    ("raise GeneratorExit()\n", 2, "c.py:1: GeneratorExit"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "code", "problem"), CLI_CASES)
def test_capc_check_json_stays_json_and_never_exits_0_on_a_contract_exit(
    tmp_path: Path, body: str, code: int, problem: str | None
) -> None:
    """``capc check --json`` with a noisy or exiting contract module, in a real process."""
    (tmp_path / "c.py").write_text(body + MODEL, encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  s:\n    contract: c.py:Ok\n    output_tokens: 100\n", encoding="utf-8"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "check", "--json",
         "--models", str(ROOT / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")],
        capture_output=True, text=True, check=False, env={"CAPC_OFFLINE": "1"}, cwd=tmp_path,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr
    assert proc.returncode == code, proc.stderr
    document = json.loads(proc.stdout)  # nothing the module printed is in it
    if problem is None:
        assert "noise" in proc.stderr and "noise" not in proc.stdout
    else:
        assert problem in proc.stdout and "'c.py:Ok'" in proc.stdout, document


BYPASSES = [
    # (module body writing past sys.stdout at import, the marker it writes)
    ("import os\nos.write(1, b'RAWMARK\\n')\n", "RAWMARK"),
    ("import subprocess\nsubprocess.run(['echo', 'SUBMARK'], check=False)\n", "SUBMARK"),
    ("import sys\nsys.__stdout__.write('DUNDERMARK\\n')\n", "DUNDERMARK"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "marker"), BYPASSES, ids=["os.write", "child", "__stdout__"])
def test_output_below_sys_stdout_at_import_goes_to_stderr(
    tmp_path: Path, body: str, marker: str
) -> None:
    """File descriptor 1 points at stderr during the import: the body stays a document."""
    (tmp_path / "c.py").write_text(body + MODEL, encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  s:\n    contract: c.py:Ok\n    output_tokens: 100\n", encoding="utf-8"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "compile", "s", "openai/gpt-4o-mini",
         "--models", str(ROOT / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={"CAPC_OFFLINE": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert marker not in proc.stdout and marker in proc.stderr
    assert proc.stdout.startswith("{")
    json.loads(proc.stdout)
