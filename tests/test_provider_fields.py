"""Every field of OpenRouter's ``provider`` object is accepted in models.yaml (issue 21).

The rows are the fields of ``ProviderPreferences`` as listed in
``../shared/reference/openrouter-api.md`` section 4.3 (source: https://openrouter.ai/openapi.yaml
and https://openrouter.ai/docs/guides/routing/provider-selection). Each value loads, survives
into the compiled body's ``provider`` unchanged, and a wrong value is refused with its line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.declarations.files import load_models_file
from registry.declarations.models import ProviderDecl
from registry.errors import DeclarationError

ACCEPTED = [
    # (field, YAML value, value in the body)
    ("order", "[deepinfra, together/fp8]", ["deepinfra", "together/fp8"]),
    ("allow_fallbacks", "false", False),
    ("require_parameters", "true", True),
    ("data_collection", "deny", "deny"),
    ("zdr", "true", True),
    ("enforce_distillable_text", "true", True),
    ("only", "[openai]", ["openai"]),
    ("ignore", "[azure]", ["azure"]),
    ("quantizations", "[fp8, bf16]", ["fp8", "bf16"]),
    ("sort", "throughput", "throughput"),
    ("sort", "{by: price, partition: none}", {"by": "price", "partition": "none"}),
    ("sort", "{by: latency}", {"by": "latency"}),
    ("preferred_min_throughput", "50", 50),
    ("preferred_min_throughput", "12.5", 12.5),
    ("preferred_min_throughput", "{p50: 40, p90: 10}", {"p50": 40, "p90": 10}),
    ("preferred_max_latency", "1.5", 1.5),
    ("preferred_max_latency", "{p75: 2, p99: 8.5}", {"p75": 2, "p99": 8.5}),
    ("max_price", "{prompt: 1, completion: 2, request: 0.01, image: 0, audio: 3}",
     {"prompt": 1, "completion": 2, "request": 0.01, "image": 0, "audio": 3}),
]  # fmt: skip

REFUSED = [
    # (field, YAML value, message part)
    ("preferred_min_throughput", "-1", "must be >= 0"),
    ("preferred_max_latency", "{p95: 2}", "p95"),
    ("preferred_max_latency", "fast", "preferred_max_latency"),
    ("enforce_distillable_text", "'yes'", "enforce_distillable_text"),
    ("sort", "{by: prise}", "did you mean 'price'"),
    ("sort", "{by: price, partition: all}", "unknown sort.partition value 'all'"),
    ("sort_by", "price", "sort_by"),
]  # fmt: skip


def _load(tmp_path: Path, field: str, value: str) -> Any:
    path = tmp_path / "models.yaml"
    path.write_text(f"models:\n  openai/gpt-4o-mini:\n    provider:\n      {field}: {value}\n")
    return load_models_file(path).models["openai/gpt-4o-mini"].provider


@pytest.mark.parametrize(("field", "value", "sent"), ACCEPTED)
def test_every_documented_provider_field_loads_and_is_passed_through(
    tmp_path: Path, field: str, value: str, sent: Any
) -> None:
    """The value reaches the dumped ``provider`` object exactly as OpenRouter expects it."""
    provider = _load(tmp_path, field, value)
    dumped = provider.model_dump(exclude_none=True)
    assert dumped == {field: sent}
    assert json.loads(json.dumps(dumped)) == {field: sent}


def test_the_table_covers_every_field_of_the_reference() -> None:
    """Section 4.3's fields, no more and no fewer, are the declaration's fields."""
    reference = Path(__file__).resolve().parents[2] / "shared/reference/openrouter-api.md"
    if not reference.is_file():
        pytest.skip("../shared is absent")
    text = reference.read_text(encoding="utf-8")
    section = text.split("### 4.3", 1)[1].split("\n### ", 1)[0]
    fields = {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}
    assert fields == set(ProviderDecl.model_fields) == {row[0] for row in ACCEPTED}


@pytest.mark.parametrize(("field", "value", "message"), REFUSED)
def test_a_wrong_provider_value_is_refused_with_its_line(
    tmp_path: Path, field: str, value: str, message: str
) -> None:
    """``file:line`` of the field and what is wrong with it."""
    with pytest.raises(DeclarationError) as caught:
        _load(tmp_path, field, value)
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{tmp_path / 'models.yaml'}:4:")


def test_the_new_fields_reach_the_compiled_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``capc compile --json``: the body's ``provider`` carries them next to the compiler's."""
    from compiler.cli.main import main
    from tests.conftest import ROOT

    monkeypatch.setenv("CAPC_OFFLINE", "1")
    models = tmp_path / "models.yaml"
    models.write_text(
        "models:\n  openai/gpt-4o-mini:\n    provider:\n      enforce_distillable_text: true\n"
        "      preferred_max_latency: {p90: 2}\n      preferred_min_throughput: 30\n"
        "      sort: {by: price, partition: none}\n"
    )
    argv = ["compile", "classify_ticket", "openai/gpt-4o-mini", "--json", "--models",
            str(models), "--stages", str(ROOT / "stages.yaml")]  # fmt: skip
    assert main(argv) == 0
    provider = json.loads(capsys.readouterr().out)["request"]["provider"]
    assert provider["enforce_distillable_text"] is True
    assert provider["preferred_max_latency"] == {"p90": 2}
    assert provider["preferred_min_throughput"] == 30
    assert provider["sort"] == {"by": "price", "partition": "none"}
