"""What stages.yaml declares: one pipeline operation's intent, and the file of them.

Like :mod:`registry.declarations.models`, every class forbids unknown keys, never
coerces types and is frozen; the docstring under each field documents it in the
published JSON Schema.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from registry.declarations.models import Decl, ModelDecl
from registry.declarations.tools import ToolChoiceDecl, ToolDecl
from registry.declarations.vocabulary import (
    Effort,
    ModelId,
    PolicyKey,
    SamplingName,
    StageName,
    check_value,
    no_duplicates,
    problem,
)

__all__ = ["OutputDecl", "StageDecl", "StagesDocument"]

_IDENTIFIER: Final = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
"""A dotted Python name, as in ``package.module`` or ``ClassName``."""


class OutputDecl(Decl):
    """How strictly the output's form is enforced. A bare string sets only the ceiling."""

    ceiling: Literal["schema", "json", "prompt"] = "schema"
    """Strongest enforcement wanted: strict JSON Schema, JSON mode with the schema shown, or the schema shown only."""  # noqa: E501
    policy: Literal["auto", "required", "compatibility"] = "auto"
    """``auto`` uses the nearest supported enforcement and reports it; ``required`` refuses; ``compatibility`` always uses JSON mode with the schema shown (at most ``json``)."""  # noqa: E501
    retries: Annotated[int, Field(ge=0, le=10)] = 1
    """Repair turns an invalid reply gets (the validation errors, never values, go back to the model); ``0`` for none."""  # noqa: E501

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"ceiling": data} if isinstance(data, str) else data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        full = handler(core_schema)
        return {"anyOf": [{"enum": ["schema", "json", "prompt"]}, full]}


class StageDecl(Decl):
    """One pipeline operation's provider-neutral intent."""

    contract: str | None = None
    """Output model: ``package.module:ClassName`` or ``relative/path.py:ClassName`` (relative to this file)."""  # noqa: E501
    reasoning: Effort | None = None
    """Reasoning depth wanted."""
    output_tokens: Annotated[int, Field(gt=0)] | None = None
    """Answer budget in tokens (visible output); the reasoning budget is added on top."""
    max_tokens: Annotated[int, Field(gt=0)] | None = None
    """Hard cap in tokens on the whole completion (answer plus reasoning)."""
    min_output_tokens: Annotated[int, Field(gt=0)] | None = None
    """Smallest answer in tokens reasoning may leave (default: ``output_tokens``); reasoning is lowered or dropped to keep it."""  # noqa: E501
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
    coverage: Literal["full", "first"] = "full"
    """``full``: one attempt per group of endpoints, covering every endpoint that can serve the model; ``first``: one body from the model-level figures."""  # noqa: E501
    timeout_seconds: Annotated[float, Field(gt=0)] | None = None
    """Total timeout of one model request in seconds (default: derived from max_tokens and the reasoning level)."""  # noqa: E501
    stream_idle_seconds: Annotated[float, Field(gt=0)] | None = None
    """How long a streamed reply may stay silent, in seconds, before the request is abandoned (default: by reasoning level)."""  # noqa: E501
    estimated_prompt_tokens: Annotated[int, Field(ge=0)] | None = None
    """Expected prompt size in tokens, used to fit the answer in the context window."""
    description: str | None = None
    """Free text for people."""
    tools: list[ToolDecl] = Field(default_factory=list)
    """The stage's own tools, in order (see docs/tools.md)."""
    tool_choice: Literal["auto", "none", "required"] | ToolChoiceDecl | None = None
    """``auto``, ``none``, ``required`` or ``{function: name}``; mapped per endpoint to the nearest accepted mode."""  # noqa: E501
    parallel_tool_calls: bool | None = None
    """Whether the model may call several tools in one turn; sent only where listed."""

    @field_validator("contract")
    @classmethod
    def _contract_shape(cls, contract: str | None) -> str | None:
        if contract is None:
            return None
        where, colon, name = contract.rpartition(":")
        if not colon:
            raise problem(
                f"contract {contract!r} needs ':' between module and class, as in "
                "'package.module:ClassName' or 'relative/path.py:ClassName'"
            )
        if not (where.endswith(".py") or re.fullmatch(_IDENTIFIER, where)):
            raise problem(f"contract module {where!r} is neither a dotted module nor a .py path")
        if not re.fullmatch(_IDENTIFIER, name):
            raise problem(f"contract class {name!r} is not a Python identifier")
        return contract

    @field_validator("instructions")
    @classmethod
    def _has_schema(cls, text: str | None) -> str | None:
        if text is not None and "{schema}" not in text:
            raise problem("instructions must contain '{schema}' where the output schema goes")
        if text is not None and text.count("{schema}") > 1:
            raise problem(
                "instructions contain '{schema}' more than once; keep one, where the output "
                "schema goes"
            )
        return text

    @model_validator(mode="after")
    def _cap_holds_the_answer(self) -> StageDecl:
        if (
            self.max_tokens is not None
            and self.output_tokens is not None
            and self.max_tokens < self.output_tokens
        ):
            raise problem(
                f"max_tokens ({self.max_tokens}) is below output_tokens ({self.output_tokens}): "
                "the cap covers the answer plus reasoning; raise max_tokens or lower "
                "output_tokens",
                "max_tokens",
            )
        return self

    @field_validator("sampling")
    @classmethod
    def _values(cls, sampling: dict[str, Any]) -> dict[str, Any]:
        for name, value in sampling.items():
            check_value(name, value, name)
            if isinstance(value, list) and not value:
                raise problem("stop needs at least one string", name)
        return sampling

    @model_validator(mode="after")
    def _floor_within_answer(self) -> StageDecl:
        if (self.min_output_tokens is not None and self.output_tokens is not None
                and self.min_output_tokens > self.output_tokens):
            raise problem(f"min_output_tokens {self.min_output_tokens} exceeds output_tokens "
                          f"{self.output_tokens}; the floor is part of the answer budget",
                          "min_output_tokens")
        return self

    @model_validator(mode="after")
    def _idle_within_total(self) -> StageDecl:
        if (self.timeout_seconds is not None and self.stream_idle_seconds is not None
                and self.stream_idle_seconds > self.timeout_seconds):
            raise problem(f"stream_idle_seconds {self.stream_idle_seconds} exceeds "
                          f"timeout_seconds {self.timeout_seconds}; the idle timeout is part of "
                          "the total", "stream_idle_seconds")
        return self

    @model_validator(mode="after")
    def _tools_named_once(self) -> StageDecl:
        first: dict[str, int] = {}
        for index, tool in enumerate(self.tools):
            if not tool.name:
                continue
            if tool.name in first:
                raise problem(f"tools[{index}] is named {tool.name!r}, as tools[{first[tool.name]}]"
                              " is; tool names must be unique", "tools", index, "name")
            first[tool.name] = index
        if self.tool_choice is not None and not self.tools:
            raise problem("tool_choice needs tools", "tool_choice")
        return self

    @field_validator("models")
    @classmethod
    def _unique(cls, models: list[str]) -> list[str]:
        no_duplicates(models)
        return models


class StagesDocument(Decl):
    """stages.yaml: per-stage intent and per-stage, per-model declarations."""

    stages: dict[StageName, StageDecl]
    """Stage name -> intent."""
