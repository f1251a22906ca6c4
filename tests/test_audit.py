"""capc audit: the stage x model matrix, and worst-case cost in exact USD with the right tier."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts.audit import audit, render_audit
from compiler.cli.main import main
from compiler.request import compile_request
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

TIERED = {
    "id": "example/tiered",
    "context_length": 1_000_000,
    "top_provider": {"max_completion_tokens": 8000},
    "supported_parameters": ["max_tokens", "temperature"],
    "pricing": {
        "prompt": "0.000001",
        "completion": "0.000002",
        "overrides": [
            {"min_prompt_tokens": 1000, "prompt": "0.000003"},
            {"min_prompt_tokens": 2000, "prompt": "0.000005", "completion": "0.000006"},
            {"utc_start": 100, "utc_end": 400, "prompt": "0.5", "completion": "0.5"},
        ],
    },
}
UNPRICED = {
    "id": "example/unpriced",
    "context_length": 100_000,
    "supported_parameters": ["max_tokens"],
    "pricing": {"prompt": "-1", "completion": "-1"},
}
SMALL = {
    "id": "example/small",
    "context_length": 900,
    "supported_parameters": ["max_tokens", "response_format", "structured_outputs"],
    "pricing": {"prompt": "0.000001", "completion": "0.000001"},
}


def stages_yaml(prompt_tokens: int) -> str:
    """Free-text stages (no instruction message), so the prompt estimate is exactly declared."""
    return f"""
stages:
  summarise:
    output_tokens: 1000
    estimated_prompt_tokens: {prompt_tokens}
    sampling: {{temperature: 0.5, top_p: 0.9}}
    models: [example/tiered, example/unpriced]
  label:
    contract: {ROOT / "contracts" / "examples.py"}:TicketLabel
    output_tokens: 2000
    estimated_prompt_tokens: 100
    models: [example/small]
"""


def registry_for(tmp_path: Path, prompt_tokens: int, models_yaml: str = "models: {}\n") -> Registry:
    """A registry over the hand-made catalog above."""
    catalog = tmp_path / "models-2026-08-01.json"
    catalog.write_text(json.dumps({"data": [TIERED, UNPRICED, SMALL]}), encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(stages_yaml(prompt_tokens), encoding="utf-8")
    (tmp_path / "models.yaml").write_text(models_yaml, encoding="utf-8")
    return Registry.load(
        metadata=catalog, models=tmp_path / "models.yaml", stages=tmp_path / "stages.yaml"
    )


@pytest.mark.parametrize(
    ("prompt", "prompt_price", "completion_price", "tier"),
    [
        (500, "0.000001", "0.000002", None),  # below every tier: base prices
        (1000, "0.000001", "0.000002", None),  # tiers apply strictly above min_prompt_tokens
        (1500, "0.000003", "0.000002", 1000),  # first tier sets the prompt price only
        (2500, "0.000005", "0.000006", 2000),  # the later tier wins for both prices
    ],
)
def test_cost_uses_the_tier_for_the_prompt_size(
    tmp_path: Path, prompt: int, prompt_price: str, completion_price: str, tier: int | None
) -> None:
    """Worst case = prompt x prompt price + max_tokens x completion price, exact, tier-aware."""
    [row] = audit(registry_for(tmp_path, prompt), stage="summarise", model="example/tiered")
    cost = row.cost
    assert cost is not None and row.max_tokens == 1000
    assert cost.prompt_tokens == prompt
    assert (cost.prompt_price, cost.completion_price) == (
        Decimal(prompt_price),
        Decimal(completion_price),
    )
    assert cost.tier == tier
    expected = prompt * Decimal(prompt_price) + 1000 * Decimal(completion_price)
    assert isinstance(cost.usd, Decimal) and cost.usd == expected
    assert any("time-of-day" in note for note in cost.notes), "timed tiers are said to be ignored"


def test_unknown_price_gives_unknown_cost(tmp_path: Path) -> None:
    """A model whose prices are unknown ("-1") has cost None, shown as 'unknown'."""
    registry = registry_for(tmp_path, 10)
    [row] = audit(registry, model="example/unpriced")
    assert row.cost is not None and row.cost.usd is None
    assert "price unknown" in row.cost.notes[0]
    assert "unknown" in render_audit([row], registry).splitlines()[1]


def test_declared_price_is_not_tiered(tmp_path: Path) -> None:
    """A price models.yaml declares wins, and the published tiers do not change it."""
    declared = 'models:\n  "example/tiered":\n    pricing: {prompt: "0.000002"}\n'
    [row] = audit(registry_for(tmp_path, 2500, declared), model="example/tiered")
    assert row.cost is not None
    assert row.cost.prompt_price == Decimal("0.000002")
    assert row.cost.completion_price == Decimal("0.000006"), "the metadata price keeps its tier"


def test_prompt_estimate_matches_the_budget_pass(tmp_path: Path) -> None:
    """The audit's prompt estimate is the one the token budget clamped the context with."""
    registry = registry_for(tmp_path, 10)
    [row] = audit(registry, stage="label")
    report = compile_request("label", "example/small", registry=registry).report
    [clamp] = report.by_kind("tokens.clamped")
    match = re.search(r"minus about (\d+) prompt tokens", clamp.reason)
    assert match and row.cost is not None
    assert row.cost.prompt_tokens == int(match.group(1))
    assert row.max_tokens == 900 - row.cost.prompt_tokens


def test_matrix_columns(tmp_path: Path) -> None:
    """Rows carry rung, reasoning, limit, dropped parameters and counts by kind."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    rows = {(r.stage, r.model): r for r in audit(registry)}
    assert len(rows) == 14
    gpt5 = rows[("draft_reply", "openai/gpt-5.1")]
    assert gpt5.rung == "none" and gpt5.reasoning == {"effort": "low"}
    assert gpt5.dropped == ("temperature", "top_p")
    assert gpt5.adjustments["param.dropped"] == 2
    claude = rows[("deep_analysis", "anthropic/claude-sonnet-4.5")]
    assert claude.reasoning == {"max_tokens": 32000} and claude.length_param == "max_tokens"
    assert claude.cost is not None and claude.cost.usd is not None and claude.cost.usd > 0


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """Run capc audit --json and parse its output."""
    assert main(["audit", *argv, "--json"]) == 0
    payload: dict[str, Any] = json.loads(capsys.readouterr().out)
    return payload


def test_cli_filters_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--stage and --model GLOB filter rows; --json gives costs as exact decimal strings."""
    registry_for(tmp_path, 1500)
    config = [
        "--metadata",
        str(tmp_path / "models-2026-08-01.json"),
        "--models",
        str(tmp_path / "models.yaml"),
        "--stages",
        str(tmp_path / "stages.yaml"),
    ]
    payload = run_json(capsys, *config, "--stage", "summarise", "--model", "example/t*")
    [row] = payload["rows"]
    assert row["model"] == "example/tiered" and row["dropped"] == ["top_p"]
    assert row["cost"]["usd"] == "0.0065"  # 1500 x 0.000003 + 1000 x 0.000002
    assert row["cost"]["tier_min_prompt_tokens"] == 1000
    assert main(["audit", *config]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[:7] == [
        "STAGE",
        "MODEL",
        "RUNG",
        "REASONING",
        "LIMIT",
        "DROPPED",
        "COST_USD",
    ]
    assert "note: summarise / example/tiered: 1 time-of-day price override(s)" in text
    assert main(["audit", *config, "--stage", "nope"]) == 2


def test_docs_show_a_real_audit(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit table in docs/lock-and-audit.md is the output of the command it shows."""
    monkeypatch.chdir(ROOT)
    page = (ROOT / "docs" / "lock-and-audit.md").read_text(encoding="utf-8")
    shown = re.search(
        r"<!-- real audit -->\n```console\n\$ (capc [^\n]+)\n(.*?)```", page, re.DOTALL
    )
    assert shown, "docs/lock-and-audit.md lost its real audit"
    assert main(shown.group(1).split()[1:]) == 0
    assert capsys.readouterr().out == shown.group(2)


def test_failed_pairs_are_rows_with_errors(tmp_path: Path) -> None:
    """A refused or impossible compile is a row with its error and no cost, not an abort."""
    from tests.test_lock import REFUSING_STAGES

    (tmp_path / "stages.yaml").write_text(REFUSING_STAGES, encoding="utf-8")
    registry = Registry.load(models=ROOT / "models.yaml", stages=tmp_path / "stages.yaml")
    rows = {(r.stage, r.model): r for r in audit(registry)}
    refused = rows[("strict_sampling", "openai/gpt-5.1")]
    assert refused.error is not None and refused.error.startswith("AdjustmentRefused: ")
    assert refused.cost is None and refused.adjustments["param.dropped"] == 1
    assert rows[("strict_sampling", "openai/gpt-4o-mini")].error is None
    text = render_audit(list(rows.values()), registry)
    line = next(x for x in text.splitlines() if x.startswith("strict_sampling  openai/gpt-5.1"))
    assert line.split()[2] == "error"
    assert "note: huge_prompt / openai/gpt-4o-mini: PromptTooLongError: " in text
