"""The fault cases of ../shared/cases/faults.yaml as inputs of this project.

A case's ``input`` is translated field by field (:data:`INPUT_KEYS`) into what this
project reads: ``capabilities`` becomes a one-model metadata catalog (plus endpoint
lists), ``overrides`` a models.yaml entry, ``intent`` an :class:`compiler.Intent`, and
``output_model`` a contract built from the case's own snippet, compiled as written.
A key path the translator does not know fails loudly, naming the case and the path.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter

from compiler import Intent
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS, Dialect
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import EndpointList, ModelInfo
from registry.resolve.resolver import Registry
from tests.conftest import SHARED

FAULTS = SHARED / "cases" / "faults.yaml"

#: What the file's header says every snippet assumes ("output_model snippets assume: ...").
PRELUDE = (
    "from typing import Any, Literal, Annotated\n"
    "from datetime import date, datetime\n"
    "from pydantic import BaseModel, Field\n"
)
#: Names a snippet uses that the header's list omits (C24: ``EmailStr``, ``AnyUrl``).
PRELUDE_EXTRA = "from pydantic import AnyUrl, EmailStr\n"

#: Case ``intent.output`` -> our ``output.ceiling``.
CEILING = {"strict": "schema", "json": "json", "none": "prompt"}

# ----------------------------------------------------------------------------- key paths
#
# Key paths are relative to a case's ``input``: dotted, ``[]`` for the items of a list of
# mappings, ``<name>`` for a key that is a name (a sampling parameter, an effort, a
# routing field, a dialect flag, a body path). Each maps to where it lands here.

INPUT_KEYS: dict[str, str] = {
    "model_id": "the model id (metadata id, models.yaml key, compile target)",
    "output_model": "the contract: the snippet compiled as written, its last definition",
    "variants": "an empty variant list",
    # capabilities -> published metadata (registry.metadata.shapes)
    "capabilities.supported_parameters": "metadata supported_parameters",
    "capabilities.context_length": "metadata context_length",
    "capabilities.top_provider.context_length": "metadata top_provider.context_length",
    "capabilities.top_provider.max_completion_tokens":
        "metadata top_provider.max_completion_tokens",
    "capabilities.reasoning.mandatory": "metadata reasoning.mandatory",
    "capabilities.reasoning.supported_efforts": "metadata reasoning.supported_efforts",
    "capabilities.reasoning.default_effort": "metadata reasoning.default_effort",
    "capabilities.endpoints[].provider": "endpoint provider_name; tag = its slug",
    "capabilities.endpoints[].supported_parameters":
        "endpoint supported_parameters (absent: the endpoint publishes none)",
    "capabilities.endpoints[].context_length": "endpoint context_length",
    "capabilities.endpoints[].max_completion_tokens": "endpoint max_completion_tokens",
    # overrides -> models.yaml
    "overrides": "an empty models.yaml entry",
    "overrides.max_completion_tokens": "models.yaml limits.max_completion_tokens",
    "overrides.context_length": "models.yaml limits.context_length",
    "overrides.sampling.mutually_exclusive": "models.yaml sampling.mutually_exclusive",
    "overrides.sampling.precedence":
        "the order of the stage's sampling (the parameter set first is kept)",
    "overrides.sampling.<name>": "models.yaml sampling.unsupported (value 'unsupported')",
    "overrides.sampling.<name>.fixed": "models.yaml sampling.fixed.<name>",
    "overrides.reasoning.style": "models.yaml reasoning.style",
    "overrides.reasoning.budget_min": "models.yaml reasoning.budget_min",
    "overrides.reasoning.budget_max": "models.yaml reasoning.budget_max",
    "overrides.reasoning.can_disable": "models.yaml reasoning.can_disable",
    "overrides.reasoning.effort_to_budget.<name>": "models.yaml reasoning.effort_budgets",
    "overrides.reasoning.budget_must_be_less_than_max_tokens":
        "built in (a budget always stays below max_tokens); only true is accepted",
    "overrides.when_reasoning_enabled.<name>":
        "models.yaml sampling.while_reasoning.unsupported (value 'unsupported')",
    "overrides.when_reasoning_enabled.<name>.fixed":
        "models.yaml sampling.while_reasoning.fixed.<name>",
    "overrides.when_reasoning_enabled.tool_choice_forced":
        "models.yaml structured_output.forced_tool_with_reasoning",
    "overrides.schema_dialect.<name>":
        "models.yaml structured_output.dialect: the built-in dialect with every flag",
    # intent -> Intent (the stage)
    "intent.reasoning": "stage reasoning",
    "intent.max_output_tokens": "stage output_tokens (the answer budget)",
    "intent.output_budget_is_hard_cap": "max_output_tokens caps the whole completion: "
    "stage max_tokens, no separate answer budget (an answer budget equal to the cap "
    "would leave reasoning no room under the answer floor)",
    "intent.estimated_prompt_tokens": "stage estimated_prompt_tokens",
    "intent.output": "stage output.ceiling (strict/json/none -> schema/json/prompt)",
    "intent.sampling": "no sampling",
    "intent.sampling.<name>": "stage sampling",
    "intent.routing.<name>": "the caller's provider routing",
    # variants -> the same case with intent fields replaced, and its own expectations
    "variants[].name": "the variant's test id",
    "variants[].intent_sampling.<name>": "replaces intent.sampling",
    "variants[].intent_routing.<name>": "replaces intent.routing",
    "variants[].intent_max_output_tokens": "replaces intent.max_output_tokens",
    "variants[].intent_estimated_prompt_tokens": "replaces intent.estimated_prompt_tokens",
    "variants[].expected_outcome": "expected.outcome",
    "variants[].expected_alternatives": "the outcomes of a one_of",
    "variants[].expected_error_mentions": "words the refusal's message contains",
    "variants[].expected_must_include.<name>": "expected.request.must_include",
    "variants[].expected_must_not_include": "expected.request.must_not_include",
    "variants[].expected_adjustments": "expected.adjustments (empty: none of the kind)",
    "variants[].expected_adjustments[].field": "expected.adjustments[].field",
    "variants[].expected_adjustments[].action": "expected.adjustments[].action",
    "variants[].expected_adjustments[].from": "informative",
    "variants[].expected_adjustments[].to": "informative",
    "variants[].expected_adjustments[].reason": "informative",
}

#: Mappings whose keys are names, not fields (matched as ``<name>``).
_NAMED = (
    "overrides.sampling", "overrides.reasoning.effort_to_budget",
    "overrides.when_reasoning_enabled", "overrides.schema_dialect", "intent.sampling",
    "intent.routing", "variants[].intent_sampling", "variants[].intent_routing",
    "variants[].expected_must_include",
)


def key_paths(node: Any, prefix: str = "") -> Iterator[str]:
    """Yield the key path of every leaf (and empty mapping or list) under ``node``."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from key_paths(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        for item in node:
            yield from key_paths(item, prefix + "[]")
    else:
        yield prefix


def known_pattern(path: str) -> str | None:
    """Return the :data:`INPUT_KEYS` pattern a concrete key path matches, or ``None``."""
    if path in INPUT_KEYS:
        return path
    for named in _NAMED:
        if path.startswith(named + "."):
            rest = path[len(named) + 1:].split(".", 1)
            pattern = f"{named}.<name>" + (f".{rest[1]}" if len(rest) > 1 else "")
            if pattern in INPUT_KEYS:
                return pattern
            fixed = f"{named}.{path[len(named) + 1:]}"
            if fixed in INPUT_KEYS:
                return fixed
    return None


def unknown_paths(case: dict[str, Any]) -> list[str]:
    """Key paths of a case's input that the translator does not know."""
    return [p for p in key_paths(case["input"]) if known_pattern(p) is None]


def check_known(case: dict[str, Any]) -> None:
    """Fail loudly on an input field the translator does not know."""
    unknown = unknown_paths(case)
    assert not unknown, (
        f"fault case {case['id']}: input field(s) the translator does not know: "
        + ", ".join(f"input.{p}" for p in unknown)
        + " (add each to tests/fault_cases.py INPUT_KEYS and map it)"
    )


# ----------------------------------------------------------------------------- cases


def load_cases() -> list[dict[str, Any]]:
    """Every case of faults.yaml, in file order."""
    cases: list[dict[str, Any]] = yaml.safe_load(FAULTS.read_text(encoding="utf-8"))
    return cases


def load_case(case_id: str) -> dict[str, Any]:
    """One case of faults.yaml by id."""
    require_faults()
    return next(c for c in load_cases() if c["id"] == case_id)


def header_prelude() -> str:
    """The import line of the file's header comment (what snippets assume)."""
    text = FAULTS.read_text(encoding="utf-8")
    match = re.search(r"output_model snippets assume:(.*?)\n(?!#   )", text, re.S)
    assert match, "faults.yaml: no 'output_model snippets assume:' line in the header"
    return " ".join(line.lstrip("# ").strip() for line in match.group(1).splitlines())


def snippet_namespace(case: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Run a case's ``output_model`` snippet as written; return its namespace and target.

    The snippet is compiled with ``dont_inherit=True``, so no ``from __future__`` flag
    of this module applies: annotations are evaluated as the case's author wrote them.
    The target is the snippet's last top-level definition (class or assignment).
    """
    cached = _NAMESPACES.get(case["id"])
    if cached is not None and cached[0] == case["input"]["output_model"]:
        return cached[1], cached[2]
    source = case["input"]["output_model"]
    assert source, f"fault case {case['id']}: no output_model"
    tree = ast.parse(source)
    names = [
        n.name if isinstance(n, ast.ClassDef) else n.targets[0].id  # type: ignore[attr-defined]
        for n in tree.body
        if isinstance(n, ast.ClassDef)
        or (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name))
    ]
    assert names, f"fault case {case['id']}: the output_model snippet defines nothing"
    namespace: dict[str, Any] = {"__name__": f"faults_{case['id']}"}
    code = compile(PRELUDE + PRELUDE_EXTRA, "<faults.yaml prelude>", "exec", dont_inherit=True)
    exec(code, namespace)
    code = compile(source, f"<faults.yaml {case['id']}.output_model>", "exec",
                   dont_inherit=True)
    exec(code, namespace)  # the case's own snippet, defining pydantic models
    _NAMESPACES[case["id"]] = (source, namespace, names[-1])
    return namespace, names[-1]


#: One namespace per case (by id and snippet text), so its classes are the same objects
#: in every test that asks for them.
_NAMESPACES: dict[str, tuple[str, dict[str, Any], str]] = {}


def case_contract(case_id: str | dict[str, Any]) -> OutputContract:
    """The contract of a case, built from its own snippet."""
    case = load_case(case_id) if isinstance(case_id, str) else case_id
    namespace, target = snippet_namespace(case)
    value = namespace[target]
    if not isinstance(value, type):
        TypeAdapter(value)  # a union or another annotated type: must have a schema
    return OutputContract.from_type(value)


def case_class(case_id: str, name: str) -> Any:
    """One class the case's snippet defines."""
    namespace, _ = snippet_namespace(load_case(case_id))
    return namespace[name]


# ----------------------------------------------------------------------------- translation


def slug(provider: str) -> str:
    """The endpoint tag we give a case's provider name."""
    return provider.lower().replace(" ", "-")


def dialect_for(case_id: str, flags: dict[str, Any]) -> str:
    """The built-in dialect that has every ``schema_dialect`` flag of a case."""

    def keyword(d: Dialect, word: str) -> bool:
        return d.keywords is None or word in d.keywords

    checks = {
        "root_must_be_object": lambda d, v: d.root_must_be_object == v,
        "supports_ref": lambda d, v: d.supports_ref == v,
        "supports_recursion": lambda d, v: d.supports_recursion == v,
        "supports_oneOf": lambda d, v: (keyword(d, "oneOf") and not d.oneof_as_anyof) == v,
        "supports_discriminator": lambda d, v: keyword(d, "discriminator") == v,
        "string_formats": lambda d, v: d.string_formats == frozenset(v),
    }
    for flag in flags:
        assert flag in checks, (
            f"fault case {case_id}: input.overrides.schema_dialect.{flag} has no mapping")
    matching = [name for name, d in DIALECTS.items()
                if all(checks[f](d, v) for f, v in flags.items())]
    assert matching, (
        f"fault case {case_id}: no built-in dialect has every flag of "
        f"input.overrides.schema_dialect {flags}")
    return matching[0]


def models_entry(case: dict[str, Any]) -> dict[str, Any]:
    """A case's ``overrides`` as a models.yaml entry of ours."""
    overrides = case["input"]["overrides"] or {}
    entry: dict[str, Any] = {}
    sampling: dict[str, Any] = {}
    for name, rule in (overrides.get("sampling") or {}).items():
        if name == "mutually_exclusive":
            sampling["mutually_exclusive"] = rule
        elif name == "precedence":
            continue  # applied to the stage's sampling order (build_intent)
        elif rule == "unsupported":
            sampling.setdefault("unsupported", []).append(name)
        else:
            assert isinstance(rule, dict) and set(rule) == {"fixed"}, (
                f"fault case {case['id']}: input.overrides.sampling.{name} = {rule!r}")
            sampling.setdefault("fixed", {})[name] = rule["fixed"]
    while_reasoning: dict[str, Any] = {}
    for name, rule in (overrides.get("when_reasoning_enabled") or {}).items():
        if name == "tool_choice_forced":
            entry.setdefault("structured_output", {})["forced_tool_with_reasoning"] = rule
        elif rule == "unsupported":
            while_reasoning.setdefault("unsupported", []).append(name)
        else:
            assert isinstance(rule, dict) and set(rule) == {"fixed"}, (
                f"fault case {case['id']}: input.overrides.when_reasoning_enabled.{name}"
                f" = {rule!r}")
            while_reasoning.setdefault("fixed", {})[name] = rule["fixed"]
    if while_reasoning:
        sampling["while_reasoning"] = while_reasoning
    if sampling:
        entry["sampling"] = sampling
    reasoning = dict(overrides.get("reasoning") or {})
    if reasoning:
        less = reasoning.pop("budget_must_be_less_than_max_tokens", True)
        assert less is True, (
            f"fault case {case['id']}: input.overrides.reasoning."
            "budget_must_be_less_than_max_tokens: only true is built in")
        if "effort_to_budget" in reasoning:
            reasoning["effort_budgets"] = reasoning.pop("effort_to_budget")
        entry["reasoning"] = reasoning
    limits = {k: overrides[k] for k in ("context_length", "max_completion_tokens")
              if k in overrides}
    if limits:
        entry["limits"] = limits
    if "schema_dialect" in overrides:
        entry.setdefault("structured_output", {})["dialect"] = dialect_for(
            case["id"], overrides["schema_dialect"])
    return entry


def build_registry(case: dict[str, Any], tmp_path: Path) -> Registry:
    """A registry holding the case's model: its metadata, endpoints and models.yaml."""
    check_known(case)
    inp = case["input"]
    caps = dict(inp["capabilities"])
    endpoints = caps.pop("endpoints", None)
    info = ModelInfo.model_validate({"id": inp["model_id"], **caps})
    catalog = Catalog(models={info.id: info}, source=f"faults.yaml {case['id']}",
                      fetched_at=str(case["date"]), origin="file")
    models_yaml = tmp_path / "models.yaml"
    entry = models_entry(case)
    models_yaml.write_text(yaml.safe_dump({"models": {info.id: entry} if entry else {}}),
                           encoding="utf-8")
    endpoint_lists = {}
    if endpoints:
        endpoint_lists[info.id] = EndpointList.model_validate({
            "id": info.id,
            "endpoints": [
                {"provider_name": e["provider"], "tag": slug(e["provider"]),
                 **{k: e[k] for k in ("supported_parameters", "context_length",
                                      "max_completion_tokens") if k in e}}
                for e in endpoints
            ],
        })
    return Registry(catalog=catalog, models_file=load_models_file(models_yaml),
                    endpoint_lists=endpoint_lists)


def intent_fields(case: dict[str, Any], variant: dict[str, Any] | None = None) -> dict[str, Any]:
    """A case's intent (with a variant's ``intent_*`` replacements) as Intent fields."""
    intent = dict(case["input"]["intent"])
    for key, value in (variant or {}).items():
        if key.startswith("intent_"):
            intent[key.removeprefix("intent_")] = value
    sampling = list((intent.get("sampling") or {}).items())
    precedence = ((case["input"]["overrides"] or {}).get("sampling") or {}).get("precedence")
    if precedence:
        rank = {name: i for i, name in enumerate(precedence)}
        sampling.sort(key=lambda kv: rank.get(kv[0], len(rank)))
    output_tokens = intent.get("max_output_tokens")
    hard_cap = bool(intent.get("output_budget_is_hard_cap"))
    return {
        "stage": case["id"] + ("" if variant is None else f":{variant['name']}"),
        "contract": case_contract(case) if case["input"]["output_model"] else None,
        "reasoning": intent.get("reasoning"),
        "output_tokens": None if hard_cap else output_tokens,
        "sampling": tuple(sampling),
        "ceiling": CEILING[intent.get("output") or "none"],
        "estimated_prompt_tokens": intent.get("estimated_prompt_tokens"),
        "provider": intent.get("routing"),
        "max_tokens": output_tokens if hard_cap else None,
    }


def build(case: dict[str, Any], tmp_path: Path, variant: dict[str, Any] | None = None,
          **changes: Any) -> tuple[Registry, Intent]:
    """The registry and intent of a case (or one of its variants)."""
    registry = build_registry(case, tmp_path)
    return registry, Intent(**{**intent_fields(case, variant), **changes})


def require_faults() -> None:
    """Skip the calling test when ../shared/cases/faults.yaml is absent."""
    if not FAULTS.is_file():
        pytest.skip("../shared/cases/faults.yaml is absent")


# ----------------------------------------------------------------------------- schemas


def normalise(schema: Any, root: Any = None, ignore: frozenset[str] = frozenset()) -> Any:
    """Resolve local refs, drop title/description/$defs (and ``ignore``), nullable as anyOf.

    This is the comparison the file's header prescribes: "ignoring title and description,
    after resolving local $ref", with ``type: [X, 'null']`` equal to ``anyOf [X, null]``.
    """
    root = schema if root is None else root
    if isinstance(schema, list):
        return [normalise(item, root, ignore) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return normalise({**target, **rest}, root, ignore)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "description", "$defs") or key in ignore:
            continue
        if key == "properties":
            out[key] = {name: normalise(sub, root, ignore) for name, sub in value.items()}
        else:
            out[key] = normalise(value, root, ignore)
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind and len(kind) == 2:
        (other,) = [k for k in kind if k != "null"]
        rest = {k: v for k, v in out.items() if k != "type"}
        return {"anyOf": [{"type": other, **rest}, {"type": "null"}]}
    return out
