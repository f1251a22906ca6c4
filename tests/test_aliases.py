"""Alias ids (``~vendor/name-latest``) resolve their declarations through ``alias_target``.

The real 2026-08-19 snapshot (skipped without ../shared) and a small project fixture:
which entries apply and in which order, the provenance that says so, the ``model.alias``
adjustment, the core format, and ``capc diff`` flagging an alias whose target moved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler import Intent, compile_request
from compiler.artifacts.lock import build_lock, dump_lock
from compiler.cli.main import main
from registry.metadata.catalog import load_catalog
from registry.metadata.core import core_json, parse_core_json
from registry.resolve.aliases import matching_keys
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

ALIAS = "~acme/model-latest"
TARGET = "acme/model-5"
PARAMETERS = ["max_tokens", "temperature", "top_p", "reasoning", "response_format",
              "structured_outputs"]


def snapshot(path: Path, target: str = TARGET) -> Path:
    """A models list with the alias, its target and another acme model."""
    def model(model_id: str, **extra: Any) -> dict[str, Any]:
        return {"id": model_id, "context_length": 100000, "supported_parameters": PARAMETERS,
                "top_provider": {"max_completion_tokens": 8000}, **extra}

    data = [model(ALIAS, alias_target={"name": "Acme Model 5", "slug": target}),
            model(TARGET), model("acme/model-6")]
    path.write_text(json.dumps({"data": data}), encoding="utf-8")
    return path


MODELS_YAML = """\
models:
  "*":
    notes: everyone
  "acme/*":
    structured_output: {dialect: anthropic}
    reasoning: {style: budget, budget_min: 1024, budget_max: 4000}
  "acme/model-5":
    sampling: {ranges: {temperature: {min: 0, max: 1}}}
"""


def project(tmp_path: Path, models_yaml: str = MODELS_YAML, target: str = TARGET) -> Registry:
    (tmp_path / "models.yaml").write_text(models_yaml, encoding="utf-8")
    return Registry.load(metadata=snapshot(tmp_path / "models-2026-08-19.json", target),
                         models=tmp_path / "models.yaml")


def test_the_alias_gets_the_globs_and_exact_entry_of_its_target(tmp_path: Path) -> None:
    """acme/* and the target's exact entry apply; their evidence names the target."""
    model = project(tmp_path).resolve(ALIAS)
    assert model.alias_target == TARGET
    assert (model.dialect, model.reasoning.style) == ("anthropic", "budget")
    assert model.sampling.ranges["temperature"] == (0, 1)
    assert model.notes == "everyone"
    assert str(model.source_of("structured_output.dialect")).startswith(
        "models.yaml:5, via alias_target acme/model-5 (models.acme/*.")
    assert "via alias_target" not in str(model.source_of("notes"))  # "*" matches the alias
    source = model.source_of("alias_target")
    assert source is not None and (source.layer, source.field) == ("metadata", "alias_target.slug")


def test_a_model_that_is_not_an_alias_is_unchanged(tmp_path: Path) -> None:
    """The target's own resolution, and another model's, know nothing of the alias."""
    registry = project(tmp_path)
    assert registry.resolve(TARGET).alias_target is None
    other = registry.resolve("acme/model-6")
    assert other.sampling.ranges["temperature"] == (0.0, 2.0)  # the target's entry stays its own


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (["acme/*"], [("acme/*", True)]),
        (["~acme/*"], [("~acme/*", False)]),
        (["acme/model-5", "acme/*"], [("acme/*", True), ("acme/model-5", True)]),
        ([ALIAS, "acme/model-5"], [("acme/model-5", True), (ALIAS, False)]),
        (["*", "acme/model-*", "acme/*"], [("*", False), ("acme/*", True), ("acme/model-*", True)]),
        (["other/*", "other/x"], []),
    ],
)
def test_matching_keys_order(keys: list[str], expected: list[tuple[str, bool]]) -> None:
    """Globs least specific first, then the target's exact entry, then the alias's."""
    assert matching_keys(keys, ALIAS, TARGET) == expected


def test_the_aliases_own_exact_entry_wins(tmp_path: Path) -> None:
    """An exact entry for the alias id beats the target's entry and every glob."""
    text = MODELS_YAML + f'  "{ALIAS}":\n    structured_output: {{dialect: openai-strict}}\n'
    model = project(tmp_path, text).resolve(ALIAS)
    assert model.dialect == "openai-strict"
    assert str(model.source_of("structured_output.dialect")).startswith("models.yaml:10 (")


def test_stage_overrides_apply_through_the_target(tmp_path: Path) -> None:
    """A stage's overrides for the target apply to the alias too; the alias's own win."""
    (tmp_path / "models.yaml").write_text("models: {}\n", encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(
        f"stages:\n  s:\n    overrides:\n      {TARGET}:\n"
        "        limits: {max_completion_tokens: 777, context_length: 5000}\n"
        f"      '{ALIAS}':\n        limits: {{context_length: 6000}}\n", encoding="utf-8")
    registry = Registry.load(metadata=snapshot(tmp_path / "m.json"),
                             models=tmp_path / "models.yaml", stages=tmp_path / "stages.yaml")
    model = registry.resolve(ALIAS, "s")
    assert (model.max_completion_tokens, model.context_length) == (777, 6000)


def test_the_report_says_so_with_evidence(tmp_path: Path) -> None:
    """model.alias: requested the alias, applied the target; the body keeps the alias."""
    registry = project(tmp_path)
    request = compile_request(Intent(stage="t", output_tokens=100), ALIAS, registry=registry)
    assert request.body["model"] == ALIAS
    [adjustment] = request.report.by_kind("model.alias")
    assert (adjustment.path, adjustment.requested, adjustment.applied) == ("model", ALIAS, TARGET)
    assert "alias_target.slug (" in str(adjustment.evidence)
    assert not compile_request(Intent(stage="t", output_tokens=100), TARGET,
                               registry=registry).report.by_kind("model.alias")


def test_the_core_format_carries_the_target(tmp_path: Path) -> None:
    """The cached core part keeps alias_target.slug (CORE_FORMAT 3), read back the same."""
    raw = snapshot(tmp_path / "m.json").read_bytes()
    core = core_json(raw)
    assert core is not None
    cores = parse_core_json(core)
    assert cores is not None and cores[0]["alias_target"] == {"slug": TARGET}
    assert cores == parse_core_json(raw)


def test_capc_show_names_the_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Text and --json."""
    project(tmp_path)
    argv = ["show", ALIAS, "--metadata", str(tmp_path / "models-2026-08-19.json"),
            "--models", str(tmp_path / "models.yaml")]
    assert main(argv) == 0
    assert f"alias of: {TARGET}" in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alias_target"] == TARGET


def _diff_setup(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    (tmp_path / "contracts").symlink_to(ROOT / "contracts", target_is_directory=True)
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  label:\n    contract: contracts/examples.py:TicketLabel\n"
        f"    output_tokens: 100\n    models: ['{ALIAS}']\n", encoding="utf-8")
    (tmp_path / "models.yaml").write_text(MODELS_YAML, encoding="utf-8")
    old = snapshot(tmp_path / "models-2026-08-19.json")
    new = snapshot(tmp_path / "models-2026-09-01.json", "acme/model-6")
    return old, new, ["--models", str(tmp_path / "models.yaml"),
                      "--stages", str(tmp_path / "stages.yaml")]


def test_diff_flags_an_alias_whose_target_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Between two snapshots and between two locks: model.alias_target, explained."""
    old, new, config = _diff_setup(tmp_path)
    assert main(["diff", str(old), str(new), *config, "--json"]) == 1
    changes = json.loads(capsys.readouterr().out)["changes"]
    moved = [c for c in changes if c["path"] == "model.alias_target"]
    assert [(c["old"], c["new"]) for c in moved] == [(TARGET, "acme/model-6")]
    assert {(e["change"], e["kind"]) for e in moved[0]["explanations"]} == {
        ("now", "model.alias"), ("no longer", "model.alias")}
    locks = []
    for snap in (old, new):
        registry = Registry.load(metadata=snap, models=tmp_path / "models.yaml",
                                 stages=tmp_path / "stages.yaml")
        path = tmp_path / f"{snap.stem}.lock.json"
        path.write_text(dump_lock(build_lock(registry)), encoding="utf-8")
        locks.append(str(path))
    assert main(["diff", *locks, "--json"]) == 1
    changes = json.loads(capsys.readouterr().out)["changes"]
    assert [c["path"] for c in changes if c["path"].startswith("model.")] == ["model.alias_target"]
    assert main(["diff", str(old), str(old), *config]) == 0
    assert "no setting changed" in capsys.readouterr().out


# -- the real snapshot ---------------------------------------------------------------------


def test_every_alias_of_the_2026_08_19_snapshot_gets_its_targets_rules(shared_dir: Path) -> None:
    """11 aliases: each resolves like its target for every declared rule of models.yaml."""
    snapshot_path = shared_dir / "models-2026-08-19.json"
    registry = Registry.load(metadata=snapshot_path, models=ROOT / "models.yaml")
    catalog = load_catalog(snapshot_path)
    aliases = {i: (catalog.core(i) or {}).get("alias_target") for i in catalog.ids()}
    aliases = {i: a["slug"] for i, a in aliases.items() if a}
    assert len(aliases) == 11 and all(i.startswith("~") for i in aliases)
    for alias, target in aliases.items():
        model, wanted = registry.resolve(alias), registry.resolve(target)
        assert model.alias_target == target
        assert (model.dialect, model.reasoning.style, model.sampling) == (
            wanted.dialect, wanted.reasoning.style, wanted.sampling), alias
    sonnet = registry.resolve("~anthropic/claude-sonnet-latest")
    assert (sonnet.dialect, sonnet.reasoning.budget_min) == ("anthropic", 1024)
    assert sonnet.forced_tool_with_reasoning is False


def test_a_stage_can_refuse_a_moving_alias(tmp_path: Path) -> None:
    """policy {model.alias: refuse}: the alias is refused with the report, its target not."""
    from compiler import AdjustmentRefused
    from compiler.kinds import policy_key_problem

    assert policy_key_problem("model.alias") is None and policy_key_problem("model.*") is None
    registry = project(tmp_path)
    intent = Intent(stage="t", output_tokens=100, policy={"model.alias": "refuse"})
    with pytest.raises(AdjustmentRefused) as refused:
        compile_request(intent, ALIAS, registry=registry)
    assert refused.value.report.by_kind("model.alias")
    assert compile_request(intent, TARGET, registry=registry).body["model"] == TARGET
