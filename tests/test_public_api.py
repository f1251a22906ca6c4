"""The public surface is pinned: each package's __all__ is sorted, complete and importable."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

import compiler
import registry


@pytest.mark.parametrize("package", [compiler, registry])
def test_all_is_sorted_and_every_name_resolves(package: object) -> None:
    """__all__ is sorted and each exported name resolves to an object from the package."""
    names = package.__all__  # type: ignore[attr-defined]
    assert names == sorted(names)
    for name in names:
        value = getattr(package, name)
        assert getattr(value, "__module__", "").split(".")[0] == package.__name__  # type: ignore[attr-defined]


def test_importing_packages_loads_no_heavy_dependency() -> None:
    """import compiler / registry alone loads neither pydantic, httpx, diskcache nor jsonschema."""
    code = (
        "import sys, compiler, registry; "
        "print(sorted(m for m in ('pydantic', 'httpx', 'diskcache', 'jsonschema', 'yaml') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _loaded_by_compile(stage: str, watched: tuple[str, ...], *extra: str) -> list[str]:
    """Which of ``watched`` a new interpreter has imported after ``capc compile`` of
    ``stage`` for openai/gpt-4o-mini from the bundled seed file."""
    from tests.conftest import ROOT

    argv = ["compile", stage, "openai/gpt-4o-mini", *extra,
            "--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml"),
            "--metadata", str(ROOT / "registry" / "data" / "seed-models-2026-08-19.json")]
    code = (
        f"import sys; from compiler.cli.main import main; main({argv!r}); "
        f"print(repr(sorted(m for m in {watched!r} if m in sys.modules)), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found: list[str] = ast.literal_eval(out.stderr.strip().splitlines()[-1])
    return found


def test_compile_path_does_not_import_network_stack() -> None:
    """Compiling from a metadata file imports neither httpx, diskcache, tenacity nor
    pydantic-settings (docs/performance.md says so)."""
    network = ("httpx", "diskcache", "tenacity", "pydantic_settings")
    assert _loaded_by_compile("classify_ticket", network, "--no-cache") == []


@pytest.mark.parametrize(("stage", "loaded"), [
    ("draft_reply", []),
    ("classify_ticket", []),
    ("extract_invoice", ["referencing"]),
])
def test_schema_libraries_load_only_for_a_contract(stage: str, loaded: list[str]) -> None:
    """referencing is imported when a contract with a ``$ref`` is projected (Invoice),
    not for one without (TicketLabel) nor for a stage without a contract; jsonschema only
    when the fast meta-schema check cannot vouch for a projection (docs/performance.md,
    "Lazy imports")."""
    assert _loaded_by_compile(stage, ("jsonschema", "referencing"), "--no-cache") == loaded


def test_compile_imports_only_what_it_runs() -> None:
    """``capc compile`` imports its own command module, not the other commands', nor the
    lock schema, the audit, the page or the reply side (docs/performance.md)."""
    others = ("compiler.cli.artifacts", "compiler.cli.declarations", "compiler.cli.metadata",
              "compiler.cli.refresh", "compiler.cli.reply", "compiler.artifacts.lock",
              "compiler.artifacts.lock_schema", "compiler.artifacts.audit",
              "compiler.page.page", "compiler.page.page_data", "compiler.reply.outcome",
              "compiler.reply.response", "compiler.pricing.cost", "compiler.cli.compile")
    assert _loaded_by_compile("classify_ticket", others, "--no-cache") == [
        "compiler.cli.compile"]


PUBLIC_API = {
    "compiler": [
        "Adjustment", "AdjustmentRefused", "AdjustmentReport", "AdjustmentWarning",
        "CompiledRequest", "CompilerError", "ContractError", "ConversationError",
        "ErrorVerdict", "Intent", "NoEndpointError", "OutputContract", "ParsedResponse",
        "ProjectionError", "PromptTooLongError", "ProviderError", "RepairsExhaustedError",
        "ReplyBlockedError", "ReplyTruncatedError", "ReplyValidationError", "RouteRow",
        "Tool", "ToolCall", "ToolError", "Usage", "UsageCost", "compile_request",
        "default_registry",
    ],
    "registry": [
        "Catalog", "DeclarationError", "MetadataError", "Provenance", "ReasoningCaps",
        "Registry", "RegistryError", "ResolvedModel", "SamplingRules", "UnknownModelError",
        "UnknownStageError", "bundled_catalog", "load_catalog",
    ],
}  # fmt: skip


@pytest.mark.parametrize("package", [compiler, registry])
def test_public_api_is_exactly_the_pinned_list(package: object) -> None:
    """Each package exports exactly the pinned names: moving modules changes no import of a
    user's code."""
    assert package.__all__ == PUBLIC_API[package.__name__]  # type: ignore[attr-defined]


@pytest.mark.parametrize("package", [compiler, registry])
def test_lazy_export_table_matches_all(package: object) -> None:
    """The lazy ``__getattr__`` table names exactly the exported names, each from a module
    of the package itself."""
    table = package._EXPORTS  # type: ignore[attr-defined]
    assert sorted(table) == package.__all__  # type: ignore[attr-defined]
    assert {module.split(".")[0] for module in table.values()} == {package.__name__}  # type: ignore[attr-defined]
