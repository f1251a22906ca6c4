"""Strict schemas of models.yaml and stages.yaml, and their loaders.

Both files are read with :func:`registry.yamlsource.load_yaml` and validated by
frozen pydantic models that forbid unknown keys and never coerce types (a quoted
``"128000"`` is not an integer). Every problem becomes a
:class:`~registry.errors.DeclarationError` that names file, line, column and key path,
and suggests the closest valid name for a misspelt key or value.

``unset``: any mapping value may be the plain scalar ``unset`` (the
:data:`~registry.yamlsource.UNSET` sentinel), meaning "remove the value inherited from
an earlier layer". The loaders take those entries out before validation (so the
validated declaration shows the field as not declared, ``None``) and report their
key paths in ``unset_paths``; the key itself is still checked (``reasonin: unset``
is an unknown key). ``unset`` is refused as a list item.

>>> sorted(EFFORTS, key=EFFORTS.index)[:3]
['none', 'minimal', 'low']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Final, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from registry.errors import DeclarationError, closest
from registry.yamlsource import UNSET, KeyPath, YamlDocument, load_yaml

__all__ = [
    "EFFORTS",
    "KNOWN_DIALECTS",
    "PARAMETERS",
    "SAMPLING_PARAMETERS",
    "Effort",
    "LimitsDecl",
    "ModelDecl",
    "ModelsFile",
    "OutputDecl",
    "PricingDecl",
    "ProviderDecl",
    "RangeDecl",
    "ReasoningDecl",
    "ReasoningSamplingDecl",
    "SamplingDecl",
    "StageDecl",
    "StagesFile",
    "StructuredOutputDecl",
    "decl_to_layer",
    "is_glob",
    "load_models_file",
    "load_stages_file",
    "models_json_schema",
    "stages_json_schema",
]

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
EFFORTS: Final[tuple[str, ...]] = get_args(Effort)
"""OpenRouter's reasoning efforts, lowest first."""

_SAMPLING_KINDS: Final = {
    "temperature": "number", "top_p": "number", "top_k": "integer", "min_p": "number",
    "top_a": "number", "frequency_penalty": "number", "presence_penalty": "number",
    "repetition_penalty": "number", "seed": "integer", "stop": "stop",
}  # fmt: skip
SAMPLING_PARAMETERS: Final[tuple[str, ...]] = tuple(_SAMPLING_KINDS)
"""Sampling parameters as OpenRouter names them."""
PARAMETERS: Final[tuple[str, ...]] = (
    "temperature", "top_p", "top_k", "min_p", "top_a", "frequency_penalty", "presence_penalty",
    "repetition_penalty", "max_tokens", "max_completion_tokens", "logit_bias", "logprobs",
    "top_logprobs", "prediction", "seed", "response_format", "structured_outputs", "stop",
    "tools", "tool_choice", "parallel_tool_calls", "include_reasoning", "reasoning",
    "reasoning_effort", "web_search_options", "verbosity",
)  # fmt: skip
"""Every request parameter name OpenRouter lists in ``supported_parameters``."""
KNOWN_DIALECTS: Final[tuple[str, ...]] = ("openai-strict", "anthropic", "gemini", "json")
"""Schema dialects the output projection knows."""
_QUANTIZATIONS: Final = ("int4", "int8", "fp4", "mxfp4", "nvfp4", "fp6", "fp8", "mxfp8",
                         "fp16", "bf16", "fp32", "unknown")  # fmt: skip
_SORTS: Final = ("price", "throughput", "latency", "exacto")
_PRICE_KEYS: Final = ("prompt", "completion", "request", "image", "audio")
_GLOB_CHARS: Final = frozenset("*?[")
_IDENT: Final = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"


def _problem(message: str, *at: str | int) -> PydanticCustomError:
    """An error pydantic reports as-is; ``at`` extends its location below the field."""
    return PydanticCustomError("declaration", "{detail}", {"detail": message, "at": at})


def _one_of(value: str, allowed: tuple[str, ...], what: str, *at: str | int) -> str:
    if value not in allowed:
        hint = closest(value, allowed)
        tail = f"; did you mean {hint[0]!r}?" if hint else f"; expected one of {', '.join(allowed)}"
        raise _problem(f"unknown {what} {value!r}{tail}", *at)
    return value


def _sampling_name(value: str) -> str:
    return _one_of(value, SAMPLING_PARAMETERS, "sampling parameter")


def _parameter_name(value: str) -> str:
    return _one_of(value, PARAMETERS, "parameter")


def is_glob(key: str) -> bool:
    """Tell whether a models.yaml key is a glob (``*``, ``?`` or ``[...]``) or an exact id.

    >>> is_glob("anthropic/*"), is_glob("openai/gpt-4o-mini")
    (True, False)
    """
    return not _GLOB_CHARS.isdisjoint(key)


def _model_key(value: str) -> str:
    if not value or value != value.strip() or any(c.isspace() for c in value):
        raise _problem(f"bad model key {value!r}: expected a model id or glob without spaces")
    start = value.find("[")
    while start != -1:
        end = start + 1 + (value[start + 1 : start + 2] == "!")
        end += value[end : end + 1] == "]"
        close = value.find("]", end)
        if close == -1:
            raise _problem(f"bad glob {value!r}: '[' at position {start + 1} is never closed")
        start = value.find("[", close + 1)
    return value


def _model_id(value: str) -> str:
    _model_key(value)
    if is_glob(value):
        raise _problem(f"expected an exact model id, not the glob {value!r}")
    return value


def _names_enum(names: tuple[str, ...]) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": list(names)})


SamplingName = Annotated[str, AfterValidator(_sampling_name), _names_enum(SAMPLING_PARAMETERS)]
ParameterName = Annotated[str, AfterValidator(_parameter_name), _names_enum(PARAMETERS)]
ModelKey = Annotated[str, AfterValidator(_model_key)]
ModelId = Annotated[str, AfterValidator(_model_id)]
StageName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
PolicyKey = Annotated[str, Field(pattern=r"^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?)$")]
Scalar = float | int | bool | str


def _check_value(name: str, value: Any, *at: str | int) -> None:
    """Check a sampling value's type against what the parameter takes."""
    kind = _SAMPLING_KINDS[name]
    ok = not isinstance(value, bool) and (
        (kind == "number" and isinstance(value, int | float))
        or (kind == "integer" and isinstance(value, int))
        or (kind == "stop" and isinstance(value, str | list))
    )
    if not ok:
        want = {"number": "a number", "integer": "an integer", "stop": "a string or list"}[kind]
        raise _problem(f"{name} takes {want}; got {value!r}", *at)


def _check_fixed(fixed: dict[str, Any] | None) -> dict[str, Any] | None:
    for name, value in (fixed or {}).items():
        _check_value(name, value, name)
    return fixed


def _no_duplicates(items: list[str] | None, *at: str | int) -> None:
    """Refuse a repeated item; ``at`` is the list's location below the validated field."""
    seen: set[str] = set()
    for index, item in enumerate(items or ()):
        if item in seen:
            raise _problem(f"{item!r} is listed twice", *at, index)
        seen.add(item)


class _Decl(BaseModel):
    # Attribute docstrings document each field; they reach the published JSON Schema
    # through _attribute_docs() rather than pydantic's use_attribute_docstrings, which
    # parses this module's source while building every class (about 90 ms at import).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ReasoningDecl(_Decl):
    """How the model reasons and which reasoning settings it accepts."""

    style: Literal["effort", "budget", "toggle"] | None = None
    """How reasoning is requested: an effort level, a token budget, or on/off only."""
    efforts: list[Effort] | None = None
    """Efforts the model accepts, in any order; stored lowest first."""
    can_disable: bool | None = None
    """Whether reasoning can be turned off (false for reasoning-mandatory models)."""
    budget_min: Annotated[int, Field(ge=0)] | None = None
    """Smallest reasoning budget in tokens the provider accepts."""
    budget_max: Annotated[int, Field(ge=1)] | None = None
    """Largest reasoning budget in tokens the provider accepts."""
    effort_budgets: dict[Effort, Annotated[int, Field(gt=0)]] | None = None
    """Reasoning budget in tokens sent for each effort (budget-style models)."""
    default_effort: Effort | None = None
    """Effort the model uses when none is requested."""

    @field_validator("efforts")
    @classmethod
    def _sort_efforts(cls, efforts: list[str] | None) -> list[str] | None:
        _no_duplicates(efforts)
        return None if efforts is None else sorted(efforts, key=EFFORTS.index)

    @model_validator(mode="after")
    def _consistent(self) -> ReasoningDecl:
        low, high = self.budget_min, self.budget_max
        if low is not None and high is not None and low > high:
            raise _problem(f"budget_min ({low}) is greater than budget_max ({high})", "budget_min")
        if self.efforts is not None and self.default_effort not in (None, *self.efforts):
            raise _problem(
                f"default_effort {self.default_effort!r} is not among efforts {self.efforts}",
                "default_effort",
            )
        previous = 0
        for effort in sorted(self.effort_budgets or {}, key=EFFORTS.index):
            tokens = (self.effort_budgets or {})[effort]
            at = ("effort_budgets", effort)
            if effort == "none":
                raise _problem("effort 'none' takes no budget", *at)
            if (low is not None and tokens < low) or (high is not None and tokens > high):
                raise _problem(f"{tokens} is outside budget_min..budget_max ({low}..{high})", *at)
            if tokens < previous:
                raise _problem(f"{tokens} is less than the budget of a lower effort", *at)
            previous = tokens
        return self


class RangeDecl(_Decl):
    """An inclusive range a sampling parameter must stay in."""

    min: float | None = None
    """Lowest accepted value."""
    max: float | None = None
    """Highest accepted value."""

    @model_validator(mode="after")
    def _ordered(self) -> RangeDecl:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise _problem(f"min ({self.min}) is greater than max ({self.max})", "min")
        return self


class ReasoningSamplingDecl(_Decl):
    """Sampling rules that apply only while the model is reasoning."""

    unsupported: list[SamplingName] | None = None
    """Parameters the provider rejects or ignores while reasoning."""
    fixed: dict[SamplingName, Scalar] | None = None
    """Parameters that must take this value while reasoning."""

    @field_validator("fixed")
    @classmethod
    def _fixed_values(cls, fixed: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_fixed(fixed)


class SamplingDecl(_Decl):
    """Sampling rules that metadata cannot express."""

    unsupported: list[SamplingName] | None = None
    """Parameters to treat as unsupported, whatever the metadata lists."""
    supported: list[SamplingName] | None = None
    """Parameters to treat as supported, whatever the metadata lists."""
    ranges: dict[SamplingName, RangeDecl] | None = None
    """Narrower accepted ranges per parameter; values outside are clamped."""
    fixed: dict[SamplingName, Scalar] | None = None
    """Parameters that only accept this one value."""
    mutually_exclusive: list[Annotated[list[SamplingName], Field(min_length=2)]] | None = None
    """Groups of parameters of which at most one may be sent."""
    while_reasoning: ReasoningSamplingDecl | None = None
    """Extra rules while reasoning is on."""

    @field_validator("fixed")
    @classmethod
    def _fixed_values(cls, fixed: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_fixed(fixed)

    @model_validator(mode="after")
    def _consistent(self) -> SamplingDecl:
        _no_duplicates(self.unsupported, "unsupported")
        _no_duplicates(self.supported, "supported")
        for index, name in enumerate(self.supported or ()):
            if name in (self.unsupported or ()):
                raise _problem(f"{name!r} is both supported and unsupported", "supported", index)
        for index, group in enumerate(self.mutually_exclusive or ()):
            _no_duplicates(group, "mutually_exclusive", index)
        return self


class LimitsDecl(_Decl):
    """Token limits that override or fill in the published ones."""

    context_length: Annotated[int, Field(gt=0)] | None = None
    """Context window in tokens (prompt plus completion)."""
    max_completion_tokens: Annotated[int, Field(gt=0)] | None = None
    """Largest ``max_tokens`` the serving endpoint accepts."""


class StructuredOutputDecl(_Decl):
    """How the model's structured output is constrained."""

    dialect: str | None = None
    """JSON Schema dialect of the provider: one of openai-strict, anthropic, gemini, json."""
    forced_tool_with_reasoning: bool | None = None
    """Whether a forced tool call (``tool_choice`` naming a function) is allowed while the model reasons; false for providers that forbid it."""  # noqa: E501

    @field_validator("dialect")
    @classmethod
    def _known(cls, dialect: str | None) -> str | None:
        return None if dialect is None else _one_of(dialect, KNOWN_DIALECTS, "dialect")


class ProviderDecl(_Decl):
    """OpenRouter provider routing, passed through as the request's ``provider`` object."""

    order: list[str] | None = None
    """Provider slugs to try, in order."""
    only: list[str] | None = None
    """Allow-list of provider slugs."""
    ignore: list[str] | None = None
    """Provider slugs never to use."""
    allow_fallbacks: bool | None = None
    """Whether providers outside ``order`` may serve the request."""
    require_parameters: bool | None = None
    """Only route to providers that support every parameter sent."""
    zdr: bool | None = None
    """Only route to Zero-Data-Retention endpoints."""
    quantizations: list[str] | None = None
    """Accepted quantizations (int4, int8, fp4, mxfp4, nvfp4, fp6, fp8, mxfp8, fp16, bf16, fp32, unknown)."""  # noqa: E501
    data_collection: Literal["allow", "deny"] | None = None
    """``deny`` routes only to providers that neither store nor train on data."""
    sort: str | dict[str, str] | None = None
    """``price``, ``throughput``, ``latency`` or ``exacto``, or ``{by, partition}``."""
    max_price: dict[str, float] | None = None
    """Price ceilings in USD per million tokens (not per token), keyed prompt, completion, ..."""

    @model_validator(mode="after")
    def _vocabulary(self) -> ProviderDecl:
        for index, quant in enumerate(self.quantizations or ()):
            _one_of(quant, _QUANTIZATIONS, "quantization", "quantizations", index)
        for key in self.max_price or {}:
            _one_of(key, _PRICE_KEYS, "price key", "max_price", key)
        if isinstance(self.sort, str):
            _one_of(self.sort, _SORTS, "sort", "sort")
        elif self.sort is not None:
            for key, value in self.sort.items():
                _one_of(key, ("by", "partition"), "sort key", "sort", key)
                allowed = _SORTS if key == "by" else ("model", "none")
                _one_of(value, allowed, f"sort.{key} value", "sort", key)
        return self


# Written out rather than left to pydantic, whose JSON Schema for Decimal changes
# between releases; the published schema must not depend on the installed version.
_PRICE_SCHEMA = WithJsonSchema(
    {
        "anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": r"^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$"},
        ]
    }
)


class PricingDecl(_Decl):
    """Prices in USD per token (as OpenRouter publishes them), overriding metadata."""

    prompt: Annotated[Decimal, Field(ge=0, strict=False), _PRICE_SCHEMA] | None = None
    """USD per prompt token."""
    completion: Annotated[Decimal, Field(ge=0, strict=False), _PRICE_SCHEMA] | None = None
    """USD per completion token."""


class ModelDecl(_Decl):
    """What metadata cannot say about a model (or every model a glob matches)."""

    reasoning: ReasoningDecl | None = None
    """Reasoning style, accepted efforts and budgets."""
    sampling: SamplingDecl | None = None
    """Sampling parameter rules."""
    limits: LimitsDecl | None = None
    """Token limits."""
    structured_output: StructuredOutputDecl | None = None
    """Structured output dialect."""
    provider: ProviderDecl | None = None
    """OpenRouter provider routing."""
    supported_parameters: list[ParameterName] | None = None
    """Replaces the published list of supported request parameters."""
    pricing: PricingDecl | None = None
    """Prices in USD per token."""
    notes: str | None = None
    """Free text for people; ignored by the compiler."""

    @field_validator("supported_parameters")
    @classmethod
    def _unique(cls, names: list[str] | None) -> list[str] | None:
        _no_duplicates(names)
        return names


class OutputDecl(_Decl):
    """How strictly the output's form is enforced. A bare string sets only the ceiling."""

    ceiling: Literal["schema", "json", "prompt"] = "schema"
    """Strongest enforcement wanted: strict JSON Schema, JSON mode with the schema shown, or the schema shown only."""  # noqa: E501
    policy: Literal["auto", "required"] = "auto"
    """``auto`` uses the nearest supported enforcement and reports it; ``required`` refuses."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"ceiling": data} if isinstance(data, str) else data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        full = handler(core_schema)
        return {"anyOf": [{"enum": ["schema", "json", "prompt"]}, full]}


class StageDecl(_Decl):
    """One pipeline operation's provider-neutral intent."""

    contract: str | None = None
    """Output model: ``package.module:ClassName`` or ``relative/path.py:ClassName`` (relative to this file)."""  # noqa: E501
    reasoning: Effort | None = None
    """Reasoning depth wanted."""
    output_tokens: Annotated[int, Field(gt=0)] | None = None
    """Answer budget in tokens (visible output); the reasoning budget is added on top."""
    max_tokens: Annotated[int, Field(gt=0)] | None = None
    """Hard cap in tokens on the whole completion (answer plus reasoning)."""
    sampling: dict[SamplingName, float | int | str | list[str]] = Field(default_factory=dict)
    """Sampling wanted, in the order written; only these are ever sent."""
    output: OutputDecl = OutputDecl()
    """Output enforcement ceiling and policy, or just the ceiling (``output: json``)."""
    policy: dict[PolicyKey, Literal["report", "warn", "refuse"]] = Field(default_factory=dict)
    """Action per adjustment kind (``param.dropped``) or prefix (``param.*``, ``*``)."""
    instructions: str | None = None
    """Template of the instruction message; must contain ``{schema}``."""
    models: list[ModelId] = Field(default_factory=list)
    """Model ids this stage is compiled for (lock, audit)."""
    overrides: dict[ModelId, ModelDecl] = Field(default_factory=dict)
    """Declarations for one model in this stage only; they win over models.yaml."""
    estimated_prompt_tokens: Annotated[int, Field(ge=0)] | None = None
    """Expected prompt size in tokens, used to fit the answer in the context window."""
    description: str | None = None
    """Free text for people."""

    @field_validator("contract")
    @classmethod
    def _contract_shape(cls, contract: str | None) -> str | None:
        if contract is None:
            return None
        where, colon, name = contract.rpartition(":")
        if not colon:
            raise _problem(
                f"contract {contract!r} needs ':' between module and class, as in "
                "'package.module:ClassName' or 'relative/path.py:ClassName'"
            )
        if not (where.endswith(".py") or re.fullmatch(_IDENT, where)):
            raise _problem(f"contract module {where!r} is neither a dotted module nor a .py path")
        if not re.fullmatch(_IDENT, name):
            raise _problem(f"contract class {name!r} is not a Python identifier")
        return contract

    @field_validator("instructions")
    @classmethod
    def _has_schema(cls, text: str | None) -> str | None:
        if text is not None and "{schema}" not in text:
            raise _problem("instructions must contain '{schema}' where the output schema goes")
        return text

    @field_validator("sampling")
    @classmethod
    def _values(cls, sampling: dict[str, Any]) -> dict[str, Any]:
        for name, value in sampling.items():
            _check_value(name, value, name)
            if isinstance(value, list) and not value:
                raise _problem("stop needs at least one string", name)
        return sampling

    @field_validator("models")
    @classmethod
    def _unique(cls, models: list[str]) -> list[str]:
        _no_duplicates(models)
        return models


class _ModelsDocument(_Decl):
    """models.yaml: per-model declarations that metadata cannot express."""

    models: dict[ModelKey, ModelDecl]
    """Exact model ids (``openai/gpt-4o-mini``) or globs (``anthropic/*``); exact beats glob."""


class _StagesDocument(_Decl):
    """stages.yaml: per-stage intent and per-stage, per-model declarations."""

    stages: dict[StageName, StageDecl]
    """Stage name -> intent."""


@dataclass(frozen=True)
class ModelsFile:
    """A validated models.yaml.

    Attributes:
        path: the file, as given.
        document: the raw document, for positions (``document.locate(path)``).
        models: key (exact id or glob) -> declaration, in file order.
        unset_paths: key paths (from the root, e.g. ``("models", "openai/*", "notes")``)
            whose value was ``unset``.
    """

    path: str
    document: YamlDocument
    models: Mapping[str, ModelDecl]
    unset_paths: frozenset[KeyPath]


@dataclass(frozen=True)
class StagesFile:
    """A validated stages.yaml.

    Attributes:
        path: the file, as given; relative contract paths are relative to its directory.
        document: the raw document, for positions.
        stages: stage name -> intent, in file order.
        unset_paths: key paths whose value was ``unset``.
    """

    path: str
    document: YamlDocument
    stages: Mapping[str, StageDecl]
    unset_paths: frozenset[KeyPath]


def load_models_file(path: str | Path) -> ModelsFile:
    """Load and validate a models.yaml.

    Args:
        path: the file.

    Returns:
        The validated declarations with positions and ``unset`` paths.

    Raises:
        DeclarationError: the file is unreadable, not valid YAML, or breaks the schema.
            With several problems, the message lists each on its own line.
    """
    doc, parsed, unset = _load(path, "models", _ModelsDocument)
    assert isinstance(parsed, _ModelsDocument)
    return ModelsFile(str(path), doc, parsed.models, unset)


def load_stages_file(path: str | Path) -> StagesFile:
    """Load and validate a stages.yaml.

    Args:
        path: the file.

    Returns:
        The validated stages with positions and ``unset`` paths.

    Raises:
        DeclarationError: the file is unreadable, not valid YAML, or breaks the schema.
            With several problems, the message lists each on its own line.
    """
    doc, parsed, unset = _load(path, "stages", _StagesDocument)
    assert isinstance(parsed, _StagesDocument)
    return StagesFile(str(path), doc, parsed.stages, unset)


def decl_to_layer(decl: BaseModel) -> dict[str, Any]:
    """Return a declaration's declared values as nested dicts (``None`` fields left out).

    Python values are kept (``Decimal`` prices stay ``Decimal``).

    >>> decl_to_layer(ModelDecl(limits=LimitsDecl(context_length=8192)))
    {'limits': {'context_length': 8192}}
    """
    return decl.model_dump(exclude_none=True)


def models_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (Draft 2020-12) of models.yaml, for editors.

    >>> models_json_schema()["required"]
    ['models']
    """
    return _publish(_ModelsDocument, "models.yaml")


def stages_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (Draft 2020-12) of stages.yaml, for editors.

    >>> stages_json_schema()["required"]
    ['stages']
    """
    return _publish(_StagesDocument, "stages.yaml")


def _load(
    path: str | Path, top: str, root: type[_Decl]
) -> tuple[YamlDocument, _Decl, frozenset[KeyPath]]:
    doc = load_yaml(path, top)
    unset: list[KeyPath] = []
    data = _strip_unset(doc.data, (), unset)
    problems = [p for key in unset if (p := _check_unset_key(doc, root, key)) is not None]
    try:
        parsed = root.model_validate(data)
    except ValidationError as exc:
        problems += _problems(doc, root, exc)
        parsed = None
    if problems:
        problems.sort(key=lambda p: (p.line or 0, p.column or 0))
        if len(problems) == 1:
            raise problems[0]
        first = problems[0]
        listing = "\n".join(f"  {p}" for p in problems)
        raise DeclarationError(
            f"{len(problems)} problems:\n{listing}",
            file=first.file,
            line=first.line,
            column=first.column,
        )
    assert parsed is not None
    return doc, parsed, frozenset(unset)


def _strip_unset(data: Any, path: KeyPath, found: list[KeyPath]) -> Any:
    """Copy ``data`` without its ``unset`` mapping values, appending their paths to ``found``."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if value is UNSET:
                found.append((*path, key))
            else:
                out[key] = _strip_unset(value, (*path, key), found)
        return out
    if isinstance(data, list):
        return [_strip_unset(item, (*path, i), found) for i, item in enumerate(data)]
    return data


def _check_unset_key(
    doc: YamlDocument, root: type[_Decl], path: KeyPath
) -> DeclarationError | None:
    """Check that the key of an ``unset`` entry is a valid key at its place."""
    parent = _type_at(root, path[:-1])
    key = path[-1]
    model = _model_class(parent)
    if model is not None:
        if key in model.model_fields:
            return None
        return doc.error(_unknown_key(str(key), model), path)
    args = get_args(_dict_type(parent)) if parent is not None else ()
    if len(args) == 2:
        try:
            TypeAdapter(args[0]).validate_python(key, strict=True)
        except ValidationError as exc:
            return doc.error(_message(exc.errors()[0], None), path)
    return None


def _arms(tp: Any) -> tuple[Any, ...]:
    """Union members of ``tp`` (itself when not a union), Annotated metadata dropped."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    args = get_args(tp)
    if args and get_origin(tp) not in (dict, list, Literal):
        return tuple(a for arm in args for a in _arms(arm))
    return (tp,)


def _model_class(tp: Any) -> type[BaseModel] | None:
    for arm in _arms(tp):
        if isinstance(arm, type) and issubclass(arm, BaseModel):
            return arm
    return None


def _dict_type(tp: Any) -> Any:
    return next((arm for arm in _arms(tp) if get_origin(arm) is dict), None)


def _type_at(root: Any, path: KeyPath) -> Any:
    """The declared type at ``path`` below ``root``, or ``None`` when the path leaves the schema."""
    tp = root
    for key in path:
        model = _model_class(tp)
        if model is not None and isinstance(key, str) and key in model.model_fields:
            tp = model.model_fields[key].annotation
            continue
        container = _dict_type(tp) if isinstance(key, str) else None
        if container is None and isinstance(key, int):
            container = next((a for a in _arms(tp) if get_origin(a) is list), None)
        if container is None:
            return None
        tp = get_args(container)[-1]
    return tp


def _unknown_key(key: str, model: type[BaseModel]) -> str:
    names = list(model.model_fields)
    hint = closest(key, names)
    if hint:
        return f"unknown key {key!r}; did you mean {hint[0]!r}?"
    return f"unknown key {key!r}; expected one of {', '.join(names)}"


def _data_path(data: Any, err: ErrorDetails) -> KeyPath:
    """Turn a pydantic error location into a path of keys that exist in the YAML data.

    Union member tags and validator internals are skipped; a custom error's ``at``
    and a missing key's name are appended.
    """
    path: list[str | int] = []
    node = data
    for part in err["loc"]:
        if part == "[key]":
            break
        in_dict = isinstance(node, dict) and part in node
        if not (in_dict or (isinstance(node, list) and isinstance(part, int) and part < len(node))):
            continue
        node = node[part]
        path.append(part)
    path.extend(err.get("ctx", {}).get("at", ()))
    if err["type"] == "missing":
        path.append(err["loc"][-1])
    return tuple(path)


_NOUNS: Final = {
    "int_type": "an integer", "float_type": "a number", "string_type": "a string",
    "bool_type": "true or false", "dict_type": "a mapping", "model_type": "a mapping",
    "model_attributes_type": "a mapping", "list_type": "a list", "decimal_type": "a number",
    "decimal_parsing": "a decimal number", "none_required": "null",
}  # fmt: skip
_BOUNDS: Final = {"greater_than": ("gt", ">"), "greater_than_equal": ("ge", ">="),
                  "less_than": ("lt", "<"), "less_than_equal": ("le", "<=")}  # fmt: skip


def _describe(value: Any) -> str:
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value}"


def _expected(err: ErrorDetails) -> str | None:
    """What a type or choice error wanted, as a noun phrase."""
    if err["type"] == "literal_error":
        return "one of " + ", ".join(re.findall(r"'([^']*)'", err.get("ctx", {})["expected"]))
    return _NOUNS.get(err["type"])


def _message(err: ErrorDetails, parent: Any) -> str:
    kind, got, ctx = err["type"], err["input"], err.get("ctx", {})
    if got is UNSET:
        return "'unset' is only allowed as a mapping value, not as a list item"
    if kind == "declaration":
        return str(ctx["detail"])
    if kind == "extra_forbidden":
        model = _model_class(parent)
        key = str(err["loc"][-1])
        return _unknown_key(key, model) if model else f"unknown key {key!r}"
    if kind == "missing":
        return f"missing required key {err['loc'][-1]!r}"
    if kind in _BOUNDS:
        name, sign = _BOUNDS[kind]
        return f"must be {sign} {ctx[name]}; got {_describe(got)}"
    if kind == "too_short":
        return f"needs at least {ctx['min_length']} items; got {ctx['actual_length']}"
    if kind == "string_pattern_mismatch":
        return f"{_describe(got)} does not match the pattern {ctx['pattern']}"
    expected = _expected(err)
    if expected is None:
        return f"{err['msg']}; got {_describe(got)}"
    message = f"expected {expected}; got {_describe(got)}"
    if kind == "literal_error" and isinstance(got, str):
        hint = closest(got, re.findall(r"'([^']*)'", ctx["expected"]))
        message += f" (did you mean {hint[0]!r}?)" if hint else ""
    return message


def _problems(doc: YamlDocument, root: type[_Decl], exc: ValidationError) -> list[DeclarationError]:
    """One error per offending location; alternatives of a union are merged into one."""
    groups: dict[KeyPath, list[ErrorDetails]] = {}
    for err in exc.errors():
        groups.setdefault(_data_path(doc.data, err), []).append(err)
    out: list[DeclarationError] = []
    for path, errs in groups.items():
        wanted = [_expected(e) for e in errs]
        if len(errs) > 1 and all(wanted) and errs[0]["input"] is not UNSET:
            nouns = list(dict.fromkeys(w for w in wanted if w))
            messages = [f"expected {' or '.join(nouns)}; got {_describe(errs[0]['input'])}"]
        else:
            parent = _type_at(root, path[:-1]) if path else None
            messages = list(dict.fromkeys(_message(e, parent) for e in errs))
        out.extend(doc.error(m, path) for m in messages)
    return out


_UNSET_SCHEMA: Final[dict[str, Any]] = {
    "const": "unset",
    "description": "Remove the inherited value.",
}
_ANNOTATIONS: Final = ("title", "description", "default")


def _or_unset(schema: dict[str, Any]) -> dict[str, Any]:
    notes: dict[str, Any] = {k: schema[k] for k in _ANNOTATIONS if k in schema}
    rest = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    arms = rest["anyOf"] if set(rest) == {"anyOf"} else [rest]
    return {**notes, "anyOf": [*arms, dict(_UNSET_SCHEMA)]}


def _allow_unset(node: Any) -> None:
    """In place: let every mapping value below ``node`` also be the plain scalar ``unset``."""
    if isinstance(node, list):
        for item in node:
            _allow_unset(item)
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        _allow_unset(value)
        if key == "properties":
            node[key] = {name: _or_unset(sub) for name, sub in value.items()}
        elif key == "additionalProperties" and isinstance(value, dict):
            node[key] = _or_unset(value)


@functools.cache
def _attribute_docs() -> dict[str, dict[str, str]]:
    """Class name -> field -> the docstring written under the field in this module."""
    import ast
    import inspect
    import sys

    tree = ast.parse(inspect.getsource(sys.modules[__name__]))
    docs: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, str] = {}
        for stmt, after in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                fields[stmt.target.id] = inspect.cleandoc(after.value.value)
        docs[node.name] = fields
    return docs


def _describe_fields(schema: dict[str, Any], cls_name: str) -> None:
    for branch in schema.get("anyOf", []):
        if isinstance(branch, dict):
            _describe_fields(branch, cls_name)
    for name, doc in _attribute_docs().get(cls_name, {}).items():
        prop = schema.get("properties", {}).get(name)
        if isinstance(prop, dict):
            prop.setdefault("description", doc)


def _publish(root: type[_Decl], title: str) -> dict[str, Any]:
    schema = root.model_json_schema()
    _describe_fields(schema, root.__name__)
    for name, definition in schema.get("$defs", {}).items():
        _describe_fields(definition, name)
        _allow_unset(definition)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": title}
