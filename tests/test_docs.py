"""The docs and the code cannot drift: reference pages are checked against the schema and code."""

from __future__ import annotations

import re

from compiler.kinds import KINDS
from registry.declarations.schema import models_json_schema, stages_json_schema
from tests.conftest import ROOT
from tests.schema_paths import key_paths

HEADING = re.compile(r"^#{2,4} `([^`]+)`$", re.MULTILINE)


def documented(page: str) -> set[str]:
    """Return the backticked headings of a docs page."""
    return set(HEADING.findall((ROOT / "docs" / page).read_text(encoding="utf-8")))


def test_configuration_reference_matches_published_schemas() -> None:
    """docs/configuration.md documents exactly the keys of both published JSON Schemas."""
    keys = {p for p, _ in key_paths(models_json_schema())}
    keys |= {p for p, _ in key_paths(stages_json_schema()) if ".overrides.<key>." not in p}
    assert documented("configuration.md") == keys


def test_adjustment_catalogue_matches_code() -> None:
    """docs/adjustments.md documents every kind the compiler can emit, and no other."""
    assert documented("adjustments.md") == set(KINDS)


def test_exclusion_reasons_are_documented() -> None:
    """docs/adjustments.md's exclusion table lists exactly the reasons the code can give."""
    from registry.resolve.routing import EXCLUSION_REASONS

    page = (ROOT / "docs" / "adjustments.md").read_text(encoding="utf-8")
    section = page.split("## Exclusion reasons", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `([a-z_:]+)` \|", section, re.MULTILINE))
    assert rows == set(EXCLUSION_REASONS)


def test_concepts_explain_route_plans_with_a_picture() -> None:
    """docs/concepts.md has a "Route plans" section with a diagram and the API names."""
    page = (ROOT / "docs" / "concepts.md").read_text(encoding="utf-8")
    section = page.split("## Route plans", 1)[1].split("\n## ", 1)[0]
    assert "```" in section and "attempt 1" in section and "attempt 2" in section
    for name in ("CompiledRequest.attempts", "CompiledRequest.routes", "excluded_by",
                 "coverage: first", "--endpoints", "NoEndpointError"):
        assert name in section, name
