"""Lone surrogates in user text: ``"\\ud83d\\ude00"`` written as two escapes is two
surrogate code points in Python (and in YAML), not one emoji, and UTF-8 cannot encode
either. Every way user text enters is refused with where it is and the fix, exit 2
(it was a UnicodeEncodeError traceback in canonical_sha256 or on stdout, exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from compiler.cli.main import main
from compiler.errors import ContractError
from compiler.schema.contract import OutputContract
from tests.conftest import ROOT

PAIR = "\ud83d\ude00"  # two code points: the UTF-16 halves of U+1F600


class Smile(BaseModel):
    a: str = Field(description=f"smile {PAIR}")


class Lone(BaseModel):
    b: list[str] = Field(examples=["x\udc00"])


def test_a_contract_string_with_surrogates_is_a_contract_error() -> None:
    assert len(PAIR) == 2
    with pytest.raises(ContractError, match=r"lone surrogate at /properties/a/description.*"
                       r'write the character itself \("\\U0001F600"\)'):
        OutputContract.from_type(Smile)
    with pytest.raises(ContractError, match=r"lone surrogate at /properties/b/examples/0.*"
                       r"remove the lone surrogate \(\\udc00\)"):
        OutputContract.from_type(Lone)


def _stage_dir(tmp_path: Path, contract: str, extra: str = "") -> list[str]:
    (tmp_path / "c.py").write_text(
        "from pydantic import BaseModel, Field\n"
        "class S(BaseModel):\n"
        f"    a: str = Field(description={contract!r})\n"
        "class T(BaseModel):\n"
        "    a: str\n", encoding="utf-8")  # fmt: skip
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  s:\n    contract: c.py:S\n    models: [openai/gpt-4o-mini]\n"
        f"  t:\n    contract: c.py:T\n    models: [openai/gpt-4o-mini]\n{extra}",
        encoding="utf-8")  # fmt: skip
    return ["--models", str(ROOT / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]


def test_compile_and_lock_refuse_the_contract_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _stage_dir(tmp_path, f"smile {PAIR}")
    assert main(["compile", "s", "openai/gpt-4o-mini", *config, "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "contract 'c.py:S'" in err and "/properties/a/description" in err
    assert "\\U0001F600" in err and "Traceback" not in err
    assert main(["lock", *config, "--output", str(tmp_path / "l.json")]) == 2
    assert "lone surrogate" in capsys.readouterr().err
    assert not (tmp_path / "l.json").exists()


def test_yaml_text_with_a_lone_surrogate_escape_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Instructions (any string or key) in stages.yaml: file:line:column: key, the fix."""
    extra = '    instructions: "smile \\ud83d\\ude00 {schema}"\n'
    config = _stage_dir(tmp_path, "fine", extra)
    assert main(["compile", "t", "openai/gpt-4o-mini", *config, "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "stages.yaml:8:" in err and "stages.t.instructions" in err
    assert "lone surrogate" in err and "\\U0001F600" in err


def test_messages_with_a_lone_surrogate_name_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON joins an escaped pair into one character (fine); a lone half is refused."""
    config = _stage_dir(tmp_path, "fine")
    ok = tmp_path / "ok.json"
    ok.write_text('[{"role": "user", "content": "\\ud83d\\ude00"}]', encoding="utf-8")
    argv = ["compile", "t", "openai/gpt-4o-mini", *config, "--no-cache", "--messages"]
    assert main([*argv, str(ok)]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": "x\\ud83d"}]', encoding="utf-8")
    assert main([*argv, str(bad)]) == 2
    assert "/0/content holds a lone surrogate" in capsys.readouterr().err
