"""Text of outside origin is shown bounded and on one line, wherever it is quoted.

One row per place that quotes a user module's exception or a provider's body: the
whole text is never shown past 500 characters (300 for a provider's message), the
length is named, control characters are escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from compiler.errors import ContractError
from compiler.reply.classify import classify_error
from compiler.schema.contract import load_contract
from registry.outside import bounded, exception_text

HUGE = "A" * 5_000_000


def _contract(tmp_path: Path) -> str:
    (tmp_path / "huge_c.py").write_text(f"raise ValueError('A' * {len(HUGE)})\n")
    with pytest.raises(ContractError) as caught:
        load_contract("huge_c.py:X", base_dir=tmp_path)
    return str(caught.value)


def _getattr(tmp_path: Path) -> str:
    (tmp_path / "ga_c.py").write_text(
        f"def __getattr__(name):\n    raise ValueError('A' * {len(HUGE)})\n")
    with pytest.raises(ContractError) as caught:
        load_contract("ga_c.py:X", base_dir=tmp_path)
    return str(caught.value)


def _provider(tmp_path: Path) -> str:
    return classify_error(500, {"error": {"code": 500, "message": HUGE}}).detail


PLACES: list[tuple[str, Callable[[Path], str], int]] = [
    # (where, the text shown, the most characters it may have)
    ("contract import", _contract, 700),
    ("contract module __getattr__", _getattr, 700),
    ("provider error message", _provider, 400),
]  # fmt: skip


@pytest.mark.parametrize(("where", "shown", "most"), PLACES, ids=[p[0] for p in PLACES])
def test_outside_text_is_bounded_where_it_is_shown(
    tmp_path: Path, where: str, shown: Callable[[Path], str], most: int
) -> None:
    text = shown(tmp_path)
    assert len(text) <= most, (where, len(text))
    assert "... (5,000,000 characters)" in text and "\n" not in text


CASES = [
    # (text, limit, shown)
    ("a\n  b", 500, "a b"),
    ("\x1b[31mred", 500, "\\x1b[31mred"),
    ("A" * 501, 500, "A" * 500 + "... (501 characters)"),
    ("A" * 500, 500, "A" * 500),
    ("", 500, ""),
]  # fmt: skip


@pytest.mark.parametrize(("text", "limit", "shown"), CASES)
def test_bounded(text: str, limit: int, shown: str) -> None:
    assert bounded(text, limit) == shown


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError

    def __repr__(self) -> str:
        raise RuntimeError


def test_an_exception_that_cannot_be_printed_has_a_placeholder() -> None:
    assert exception_text(_Unprintable()) == (
        "_Unprintable: <message not shown: __str__ raised RuntimeError>")
    assert exception_text(ValueError("x\n\ny"), first_line=True) == "ValueError: x"
