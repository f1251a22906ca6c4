"""docs/contracts.md cannot drift from the code: its dialect table is checked against DIALECTS."""

from __future__ import annotations

import re

import pytest

from compiler.schema.dialects import DIALECTS, FALSE_IS_HARMLESS, VOCABULARY, Dialect
from compiler.schema.instructions import DEFAULT_TEMPLATE
from tests.conftest import ROOT

PAGE = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")
COLUMNS = ["Dialect", "Kept keywords", "Formats", "`$ref` / recursion", "Required / closed",
           "Root", "Limits", "Other rules", "Source"]
TICKED = re.compile(r"`([^`]+)`")


def table() -> dict[str, dict[str, str]]:
    """Return the dialect table: dialect name -> column -> cell text."""
    lines = PAGE.splitlines()
    header = "| " + " | ".join(COLUMNS) + " |"
    start = lines.index(header)
    rows: dict[str, dict[str, str]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == len(COLUMNS), line
        row = dict(zip(COLUMNS, cells, strict=True))
        (name,) = TICKED.findall(row["Dialect"])
        rows[name] = row
    return rows


def ticked(cell: str, *, everything: str) -> frozenset[str] | None:
    """The backticked names of a cell, or ``None`` when the cell says ``everything``."""
    return None if cell == everything else frozenset(TICKED.findall(cell))


def yes(flag: bool) -> str:
    return "yes" if flag else "no"


def test_every_dialect_has_one_row() -> None:
    """The table lists exactly the built-in dialects."""
    assert list(table()) == list(DIALECTS)


@pytest.mark.parametrize("name", list(DIALECTS))
def test_row_matches_the_dialect(name: str) -> None:
    """Keywords, formats, flags, limits and the source URL are those of the dialect."""
    d: Dialect = DIALECTS[name]
    row = table()[name]
    assert ticked(row["Kept keywords"], everything="all") == d.keywords
    assert ticked(row["Formats"], everything="any") == d.string_formats
    refs = "kept" if d.supports_ref else "inlined"
    beside = "allowed" if d.ref_siblings else "inlined"
    assert row["`$ref` / recursion"] == (
        f"refs: {refs}; recursion: {yes(d.supports_recursion)}; beside `$ref`: {beside}"
    )
    assert row["Required / closed"] == (
        f"all required: {yes(d.all_required)}; closed: {yes(d.closed_objects)}"
    )
    assert row["Root"] == (
        f"object: {yes(d.root_must_be_object)}; union: {yes(d.root_anyof_allowed)}"
    )
    limits = [
        f"{limit:,} {what}"
        for limit, what in ((d.max_properties, "properties"), (d.max_depth, "levels"),
                            (d.max_enum_values, "enum values"),
                            (d.max_total_chars, "characters"))
        if limit is not None
    ]
    assert row["Limits"] == ("; ".join(limits) or "none")
    other = []
    if d.oneof_as_anyof:
        other.append("`oneOf` as `anyOf`")
    if d.min_items_values is not None:
        other.append("`minItems` only " + ", ".join(map(str, sorted(d.min_items_values))))
    if d.typed_schemas:
        other.append("every schema typed")
    assert row["Other rules"] == ("; ".join(other) or "none")
    assert row["Source"] == d.source


def test_every_source_is_cited_in_the_notes_too() -> None:
    """Each dialect's source URL appears again where the page says what it took from it."""
    notes = PAGE.split("### Where the rules come from", 1)[1]
    for d in DIALECTS.values():
        assert f"**{d.name}**" in notes
        assert d.source in notes


def test_the_default_instruction_is_quoted_verbatim() -> None:
    """The page shows the built-in wording exactly as the code renders it."""
    assert f"```text\n{DEFAULT_TEMPLATE}\n```" in PAGE


def keyword_table() -> dict[str, dict[str, str]]:
    """Return the dropped-keyword table: keyword -> column -> cell text."""
    columns = ["Keyword", "Dropping it", "Lacked by", "What it carries"]
    lines = PAGE.splitlines()
    start = lines.index("| " + " | ".join(columns) + " |")
    rows: dict[str, dict[str, str]] = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        row = dict(zip(columns, cells, strict=True))
        (keyword,) = TICKED.findall(row["Keyword"])
        rows[keyword] = row
    return rows


def test_the_keyword_table_lists_the_vocabulary() -> None:
    """One row per keyword the dialect table classifies."""
    assert set(keyword_table()) == VOCABULARY


@pytest.mark.parametrize("keyword", sorted(VOCABULARY))
def test_keyword_row_matches_the_dialects(keyword: str) -> None:
    """Which dialects lack it, and harmless or blocker for each of them."""
    row = keyword_table()[keyword]
    lacking = [d for d in DIALECTS.values() if keyword in d.harmless_drops | d.blocking_drops]
    assert row["Lacked by"] == (", ".join(f"`{d.name}`" for d in lacking) or "none")
    blocks = {keyword in d.blocking_keywords for d in DIALECTS.values()}
    assert len(blocks) == 1  # the built-ins share one rule; a table per dialect otherwise
    expected = "blocker" if blocks.pop() else "harmless"
    if keyword in FALSE_IS_HARMLESS:
        expected += " (`false`: harmless)"
    assert row["Dropping it"] == expected
