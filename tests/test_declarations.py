"""models.yaml and stages.yaml schemas: valid files, the invalid-file table, JSON Schemas."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from registry.declarations.files import decl_to_layer, load_models_file, load_stages_file
from registry.declarations.models import LimitsDecl, ModelDecl, PricingDecl
from registry.declarations.schema import models_json_schema, stages_json_schema
from registry.declarations.vocabulary import (
    EFFORTS,
    PARAMETERS,
    SAMPLING_PARAMETERS,
    Effort,
    is_glob,
)
from registry.errors import DeclarationError

FIXTURES = Path(__file__).parent / "fixtures" / "declarations"
INVALID: list[dict[str, Any]] = yaml.safe_load((FIXTURES / "invalid.yaml").read_text("utf-8"))
LOADERS = {"models": load_models_file, "stages": load_stages_file}


@pytest.mark.parametrize("case", INVALID, ids=[c["title"] for c in INVALID])
def test_invalid_file(case: dict[str, Any], tmp_path: Path) -> None:
    """Each invalid file fails with the expected message at the expected line."""
    path = tmp_path / f"{case['kind']}.yaml"
    path.write_text(case["text"], encoding="utf-8")
    with pytest.raises(DeclarationError) as caught:
        LOADERS[case["kind"]](path)
    assert case["message"] in str(caught.value)
    assert caught.value.line == case["line"]
    assert caught.value.file == str(path)


def test_invalid_table_is_large_enough() -> None:
    """The invalid-file table keeps at least fifteen cases with unique titles."""
    titles = [c["title"] for c in INVALID]
    assert len(titles) >= 15
    assert len(set(titles)) == len(titles)


def test_several_problems_are_listed_one_per_line(tmp_path: Path) -> None:
    """Every problem of a file is reported, each as file:line:col: path: message."""
    path = tmp_path / "models.yaml"
    path.write_text(
        "models:\n  a/b:\n    limits: {context_length: 0}\n    notes: 3\n    reasonin: {}\n"
    )
    with pytest.raises(DeclarationError) as caught:
        load_models_file(path)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"{path}:3:14: 3 problems:"
    assert lines[1:] == [
        f"  {path}:3:14: models.a/b.limits.context_length: must be > 0; got number 0",
        f"  {path}:4:5: models.a/b.notes: expected a string; got number 3",
        f"  {path}:5:5: models.a/b.reasonin: unknown key 'reasonin'; did you mean 'reasoning'?",
    ]


def test_valid_models_file() -> None:
    """The example models.yaml loads with keys in file order and values as written."""
    loaded = load_models_file(FIXTURES / "models.yaml")
    assert list(loaded.models) == ["anthropic/*", "openai/gpt-5*", "openai/gpt-4o-mini"]
    claude = loaded.models["anthropic/*"]
    assert claude.reasoning is not None and claude.reasoning.effort_budgets == {
        "low": 2048, "medium": 8192, "high": 16000,
    }  # fmt: skip
    assert claude.sampling is not None and claude.sampling.while_reasoning is not None
    assert claude.sampling.while_reasoning.fixed == {"temperature": 1}
    mini = loaded.models["openai/gpt-4o-mini"]
    assert mini.pricing == PricingDecl(prompt=Decimal("0.00000015"), completion=Decimal("6E-7"))
    assert mini.provider is not None and mini.provider.max_price == {"prompt": 1, "completion": 2}
    assert mini.notes is None


def test_efforts_are_stored_lowest_first() -> None:
    """Efforts may be written in any order and are stored in ascending order."""
    gpt5 = load_models_file(FIXTURES / "models.yaml").models["openai/gpt-5*"]
    assert gpt5.reasoning is not None
    assert gpt5.reasoning.efforts == ["minimal", "low", "medium", "high"]


def test_unset_is_recorded_and_removed() -> None:
    """A plain `unset` value leaves the field undeclared and its path in unset_paths."""
    models = load_models_file(FIXTURES / "models.yaml")
    assert models.unset_paths == {("models", "openai/gpt-4o-mini", "notes")}
    stages = load_stages_file(FIXTURES / "stages.yaml")
    override = ("stages", "extract", "overrides", "anthropic/claude-sonnet-4.5")
    assert stages.unset_paths == {(*override, "limits", "context_length")}
    limits = stages.stages["extract"].overrides["anthropic/claude-sonnet-4.5"].limits
    assert limits == LimitsDecl()


def test_unset_value_in_a_dict_checks_the_key(tmp_path: Path) -> None:
    """`unset` under a dict of sampling names still validates the name."""
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  a/b:\n    sampling:\n      fixed:\n        temprature: unset\n")
    with pytest.raises(DeclarationError, match="did you mean 'temperature'") as caught:
        load_models_file(path)
    assert caught.value.line == 5


def test_quoted_unset_is_a_string(tmp_path: Path) -> None:
    """A quoted "unset" is an ordinary string value."""
    path = tmp_path / "models.yaml"
    path.write_text('models:\n  a/b:\n    notes: "unset"\n')
    loaded = load_models_file(path)
    assert loaded.models["a/b"].notes == "unset"
    assert loaded.unset_paths == frozenset()


def test_valid_stages_file() -> None:
    """The example stages.yaml keeps sampling order and expands the output shorthand."""
    stages = load_stages_file(FIXTURES / "stages.yaml").stages
    extract = stages["extract"]
    assert list(extract.sampling.items()) == [
        ("temperature", 0.2), ("top_p", 0.9), ("seed", 42), ("stop", ["\n\n"]),
    ]  # fmt: skip
    assert (extract.output.ceiling, extract.output.policy) == ("json", "auto")
    assert extract.policy == {"param.*": "warn", "output.downgraded": "refuse"}
    assert extract.models == ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5"]
    summarise = stages["summarise"]
    assert summarise.contract == "contracts/summary.py:Summary"
    assert (summarise.output.ceiling, summarise.output.policy) == ("schema", "required")
    assert summarise.sampling == {} and summarise.overrides == {}


def test_marks_locate_nested_keys() -> None:
    """The document keeps the line of each nested key for provenance."""
    doc = load_models_file(FIXTURES / "models.yaml").document
    assert doc.locate(("models", "openai/gpt-4o-mini", "limits", "max_completion_tokens")) == (
        28,
        7,
    )
    assert doc.locate(("models", "anthropic/*", "sampling", "while_reasoning", "fixed")) == (14, 9)


def dump_entries(path: Path, top: str, entries: Mapping[str, BaseModel]) -> Path:
    """Write declarations back as YAML under ``top`` and return the path."""
    dumped = {top: {key: decl.model_dump(mode="json") for key, decl in entries.items()}}
    path.write_text(yaml.safe_dump(dumped, sort_keys=False), encoding="utf-8")
    return path


def test_models_round_trip(tmp_path: Path) -> None:
    """Dumping a loaded models.yaml and loading it again gives equal declarations."""
    first = load_models_file(FIXTURES / "models.yaml").models
    again = load_models_file(dump_entries(tmp_path / "models.yaml", "models", first)).models
    assert again == first


def test_stages_round_trip(tmp_path: Path) -> None:
    """Dumping a loaded stages.yaml and loading it again gives equal stages."""
    first = load_stages_file(FIXTURES / "stages.yaml").stages
    again = load_stages_file(dump_entries(tmp_path / "stages.yaml", "stages", first)).stages
    assert again == first


def test_decl_to_layer_keeps_declared_values_only() -> None:
    """decl_to_layer drops undeclared fields and keeps Python values such as Decimal."""
    decl = ModelDecl(limits=LimitsDecl(context_length=8192), pricing=PricingDecl(prompt=Decimal(1)))
    assert decl_to_layer(decl) == {
        "limits": {"context_length": 8192}, "pricing": {"prompt": Decimal(1)},
    }  # fmt: skip


def test_vocabularies() -> None:
    """Efforts are ascending and every sampling parameter is a request parameter."""
    assert EFFORTS == ("none", "minimal", "low", "medium", "high", "xhigh", "max")
    assert get_args(Effort) == EFFORTS
    assert set(SAMPLING_PARAMETERS) <= set(PARAMETERS)
    assert len(set(PARAMETERS)) == len(PARAMETERS) == 26


@pytest.mark.parametrize(
    ("key", "glob"), [("anthropic/*", True), ("openai/gpt-5?", True), ("a/[ab]", True),
                      ("openai/gpt-4o-mini", False)],
)  # fmt: skip
def test_is_glob(key: str, glob: bool) -> None:
    """is_glob tells glob keys from exact model ids."""
    assert is_glob(key) is glob


@pytest.mark.parametrize(
    ("schema", "name"), [(models_json_schema, "models.yaml"), (stages_json_schema, "stages.yaml")]
)
def test_json_schema_accepts_examples(schema: Any, name: str) -> None:
    """The published JSON Schema is valid Draft 2020-12 and accepts the example file."""
    published = schema()
    jsonschema.Draft202012Validator.check_schema(published)
    example = yaml.safe_load((FIXTURES / name).read_text("utf-8"))
    jsonschema.Draft202012Validator(published).validate(example)


def test_json_schema_rejects_typos_and_documents_fields() -> None:
    """The models schema refuses unknown keys and names, and carries field docstrings."""
    validator = jsonschema.Draft202012Validator(models_json_schema())
    assert not validator.is_valid({"models": {"a/b": {"reasonin": {}}}})
    assert not validator.is_valid({"models": {"a/b": {"sampling": {"unsupported": ["temp"]}}}})
    assert validator.is_valid({"models": {"a/b": {"reasoning": {"budget_min": "unset"}}}})
    props = models_json_schema()["$defs"]["ReasoningDecl"]["properties"]
    assert "tokens" in props["budget_min"]["description"]


def test_stages_schema_accepts_output_shorthand() -> None:
    """The stages schema accepts both `output: json` and the full output mapping."""
    validator = jsonschema.Draft202012Validator(stages_json_schema())
    assert validator.is_valid({"stages": {"s": {"output": "json"}}})
    assert validator.is_valid({"stages": {"s": {"output": {"ceiling": "prompt"}}}})
    assert not validator.is_valid({"stages": {"s": {"output": "jsno"}}})
