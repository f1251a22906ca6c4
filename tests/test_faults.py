"""Fault cases from ../shared/cases/faults.yaml, compiled through the real pipeline.

Each case's ``capabilities`` becomes a one-model metadata catalog, its ``overrides``
a models.yaml written to a temporary directory, and its ``intent`` an Intent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import Intent, compile_request
from compiler.contract import OutputContract
from registry.catalog import Catalog
from registry.declarations import load_models_file
from registry.metadata import ModelInfo
from registry.resolver import Registry
from tests.conftest import SHARED

FAULTS = SHARED / "cases" / "faults.yaml"
pytestmark = pytest.mark.skipif(not FAULTS.is_file(), reason="../shared/cases absent")

CEILING = {"strict": "schema", "json": "json", "none": "prompt"}


def load_case(case_id: str) -> dict[str, Any]:
    """Return one case of faults.yaml by id."""
    cases = yaml.safe_load(FAULTS.read_text(encoding="utf-8"))
    return next(c for c in cases if c["id"] == case_id)


def overrides_to_yaml(model_id: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Translate a case's override block into a models.yaml entry of ours."""
    entry: dict[str, Any] = {}
    sampling = overrides.get("sampling", {})
    if "mutually_exclusive" in sampling:
        entry.setdefault("sampling", {})["mutually_exclusive"] = sampling["mutually_exclusive"]
    reasoning = dict(overrides.get("reasoning", {}))
    if reasoning:
        mapped = {
            k: reasoning[k]
            for k in ("style", "budget_min", "budget_max", "can_disable")
            if k in reasoning
        }
        if "effort_to_budget" in reasoning:
            mapped["effort_budgets"] = reasoning["effort_to_budget"]
        entry["reasoning"] = mapped
    when = overrides.get("when_reasoning_enabled", {})
    if when:
        rules: dict[str, Any] = {}
        for name, rule in when.items():
            if rule == "unsupported":
                rules.setdefault("unsupported", []).append(name)
            elif isinstance(rule, dict) and "fixed" in rule:
                rules.setdefault("fixed", {})[name] = rule["fixed"]
        entry.setdefault("sampling", {})["while_reasoning"] = rules
    return {"models": {model_id: entry}} if entry else {"models": {}}


def build(case: dict[str, Any], tmp_path: Path, **intent_changes: Any) -> tuple[Registry, Intent]:
    """Build a registry and an intent from a fault case."""
    inp = case["input"]
    caps = dict(inp["capabilities"])
    caps.pop("endpoints", None)
    info = ModelInfo.model_validate({"id": inp["model_id"], **caps})
    catalog = Catalog(
        models={info.id: info},
        source=f"faults.yaml {case['id']}",
        fetched_at=str(case["date"]),
        origin="file",
    )
    models_yaml = tmp_path / "models.yaml"
    models_yaml.write_text(yaml.safe_dump(overrides_to_yaml(info.id, inp["overrides"])))
    registry = Registry(catalog=catalog, models_file=load_models_file(models_yaml))
    intent_in = inp["intent"]
    contract = None
    if inp.get("output_model"):
        namespace: dict[str, Any] = {}
        exec(  # the case's own snippet, defining pydantic models
            "from typing import Any, Literal, Annotated\nfrom datetime import date, datetime\n"
            "from pydantic import BaseModel, Field\n" + textwrap.dedent(inp["output_model"]),
            namespace,
        )
        target = (
            namespace.get("Outcome")
            or [
                v for v in namespace.values() if isinstance(v, type) and v.__module__ == "builtins"
            ][-1]
        )
        contract = OutputContract.from_type(target)
    fields: dict[str, Any] = {
        "stage": case["id"],
        "contract": contract,
        "reasoning": intent_in.get("reasoning"),
        "output_tokens": intent_in.get("max_output_tokens"),
        "sampling": tuple((intent_in.get("sampling") or {}).items()),
        "ceiling": CEILING[intent_in.get("output", "none")],
        "estimated_prompt_tokens": intent_in.get("estimated_prompt_tokens"),
    }
    fields.update(intent_changes)
    return registry, Intent(**fields)


def dotted(body: dict[str, Any], path: str) -> Any:
    """Return the value at a dotted path of the body, or a sentinel when absent."""
    node: Any = body
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


MISSING = object()


def test_c01_temperature_dropped_for_reasoning_model(tmp_path: Path) -> None:
    """C01: temperature is omitted (not listed) and the drop is reported."""
    case = load_case("C01")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    for path, value in case["expected"]["request"]["must_include"].items():
        assert dotted(req.body, path) == value
    for path in case["expected"]["request"]["must_not_include"]:
        assert dotted(req.body, path) is MISSING
    dropped = req.report.by_kind("param.dropped")
    assert [(a.path, a.requested, a.applied) for a in dropped] == [("temperature", 0.0, None)]
    assert dropped[0].evidence is not None and "supported_parameters" in dropped[0].evidence.field
    listed = set(case["input"]["capabilities"]["supported_parameters"])
    assert {k for k in req.body if k not in ("model", "messages", "provider")} <= listed


def test_c03_mutually_exclusive_keeps_first_declared(tmp_path: Path) -> None:
    """C03: temperature and top_p both set -> temperature kept, top_p dropped and reported."""
    case = load_case("C03")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["temperature"] == 0.3
    assert "top_p" not in req.body
    [adj] = req.report.by_kind("param.mutually_exclusive")
    assert (adj.path, adj.requested, adj.applied) == ("top_p", 0.9, None)
    assert adj.evidence is not None and adj.evidence.layer == "models.yaml"


def test_c03_variant_never_injects_unset_parameter(tmp_path: Path) -> None:
    """C03 variant: with only top_p set, top_p is sent and no temperature is added."""
    case = load_case("C03")
    registry, intent = build(case, tmp_path, sampling=(("top_p", 0.9),))
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["top_p"] == 0.9
    assert "temperature" not in req.body
    assert not [a for a in req.report.adjustments if a.kind.startswith("param.")]


def test_c07_minimal_maps_to_low(tmp_path: Path) -> None:
    """C07: minimal on a none/low/medium/high model maps to low (tie toward medium), reported."""
    case = load_case("C07")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["reasoning"] == {"effort": "low"}
    [adj] = req.report.by_kind("reasoning.effort_mapped")
    assert (adj.requested, adj.applied) == ("minimal", "low")
