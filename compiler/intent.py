"""Provider-neutral intent of one stage, as the compiler reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.errors import ToolError
from compiler.schema.contract import OutputContract, load_contract
from compiler.tools.tool import Tool, check_tools, tool_from_decl

if TYPE_CHECKING:
    from registry.declarations.stages import StageDecl

__all__ = ["CEILINGS", "COVERAGES", "RUNGS", "Intent"]

#: Output enforcement rungs, strongest first: strict JSON Schema, JSON mode with the
#: schema shown, schema shown in the prompt only.
CEILINGS: tuple[str, ...] = ("schema", "json", "prompt")

#: The enforcement ladder, strongest first: strict JSON Schema, a forced single tool
#: call, JSON mode with the schema shown, the schema shown only. A ``schema`` ceiling
#: may end on any rung; a ``json`` ceiling on ``json`` or ``prompt``.
RUNGS: tuple[str, ...] = ("schema", "tool", "json", "prompt")

#: Route-plan coverage: ``full`` compiles an attempt for every endpoint that can serve
#: the model; ``first`` compiles one body from the model-level figures (the behaviour
#: before route plans).
COVERAGES: tuple[str, ...] = ("full", "first")


@dataclass(frozen=True, slots=True)
class Intent:
    """What one pipeline operation needs, never naming a model or an API parameter.

    Attributes:
        stage: the stage name (used in reports).
        contract: the output contract, or ``None`` for free text.
        reasoning: requested effort (``none`` .. ``max``), or ``None`` to leave the
            model's default untouched.
        output_tokens: the answer budget in tokens (visible output), or ``None``.
        sampling: ``(parameter, value)`` pairs in declaration order.
        ceiling: strongest enforcement wanted: ``schema``, ``json`` or ``prompt``.
        output_policy: ``auto`` (nearest supported, reported), ``required`` (refuse
            when the ceiling cannot be met) or ``compatibility`` (JSON mode with the
            schema shown whatever the model supports: the ceiling is at most ``json``).
        policy: adjustment kind (or ``prefix.*``) -> ``report``, ``warn`` or ``refuse``.
        instructions: template of the instruction message (must contain ``{schema}``),
            or ``None`` for the built-in wording.
        estimated_prompt_tokens: the caller's estimate of its own prompt, in tokens.
        max_tokens: hard cap on the whole completion (answer plus reasoning), in
            tokens; the reasoning budget shrinks first to fit under it.
        provider: OpenRouter ``provider`` routing set by the caller; wins over the
            declared routing (e.g. to pin one endpoint).
        coverage: ``full`` (default: a route plan over every endpoint) or ``first``
            (one body from the model-level figures), see :data:`COVERAGES`.
        min_output_tokens: the smallest answer in tokens that reasoning may leave
            (default: ``output_tokens``).
        retries: how many repair turns an invalid reply gets (``output.retries``).
        timeout_seconds: the whole request's timeout in seconds, or ``None`` to derive
            it (:mod:`compiler.timeouts`).
        stream_idle_seconds: how long a stream may stay silent, in seconds, or ``None``
            to derive it.
        tools: the stage's own tools, in order (``docs/tools.md``); names are unique.
        tool_choice: ``auto``, ``none``, ``required``, ``{"type": "function",
            "function": {"name": ...}}``, or ``None`` (not sent; the provider default).
        parallel_tool_calls: sent (only where the endpoints list it) unless ``None``.
    """

    stage: str
    contract: OutputContract | None = None
    reasoning: str | None = None
    output_tokens: int | None = None
    sampling: tuple[tuple[str, Any], ...] = ()
    ceiling: str = "schema"
    output_policy: str = "auto"
    policy: Mapping[str, str] = field(default_factory=dict)
    instructions: str | None = None
    estimated_prompt_tokens: int | None = None
    max_tokens: int | None = None
    provider: Mapping[str, Any] | None = None
    coverage: str = "full"
    min_output_tokens: int | None = None
    retries: int = 1
    timeout_seconds: float | None = None
    stream_idle_seconds: float | None = None
    tools: tuple[Tool, ...] = ()
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None

    def __post_init__(self) -> None:
        check_tools(self.tools, () if self.contract is None or not self.tools
                    else (self.contract.name,))
        named = self.tool_choice.get("function", {}).get("name") if isinstance(
            self.tool_choice, Mapping) else None
        if named is not None and named not in {t.name for t in self.tools}:
            raise ToolError(f"tool_choice names {named!r}, which is not a tool of stage "
                            f"{self.stage!r}")

    @property
    def effective_ceiling(self) -> str:
        """The ceiling the compiler aims at: :attr:`ceiling`, lowered to ``json`` under
        the ``compatibility`` policy."""
        if self.output_policy == "compatibility" and self.ceiling == "schema":
            return "json"
        return self.ceiling

    @classmethod
    def from_stage(cls, name: str, decl: StageDecl, *, base_dir: Path) -> Intent:
        """Build the intent of a declared stage, importing its contract.

        Args:
            name: the stage name.
            decl: the stage's stages.yaml declaration.
            base_dir: directory that relative contract paths start from.

        Raises:
            ContractError: the contract does not import or has no JSON Schema.
            ToolError: a tool does not import or fails normalisation.
        """
        contract = (
            None if decl.contract is None else load_contract(decl.contract, base_dir=base_dir)
        )
        tools = tuple(tool_from_decl(t, base_dir=base_dir) for t in decl.tools)
        choice: Any = decl.tool_choice
        if choice is not None and not isinstance(choice, str):
            choice = {"type": "function", "function": {"name": choice.function}}
        return cls(
            stage=name,
            contract=contract,
            reasoning=decl.reasoning,
            output_tokens=decl.output_tokens,
            sampling=tuple(decl.sampling.items()),
            ceiling=decl.output.ceiling,
            output_policy=decl.output.policy,
            policy=dict(decl.policy),
            instructions=decl.instructions,
            estimated_prompt_tokens=decl.estimated_prompt_tokens,
            max_tokens=decl.max_tokens,
            coverage=decl.coverage,
            min_output_tokens=decl.min_output_tokens,
            retries=decl.output.retries,
            timeout_seconds=decl.timeout_seconds,
            stream_idle_seconds=decl.stream_idle_seconds,
            tools=tools,
            tool_choice=choice,
            parallel_tool_calls=decl.parallel_tool_calls,
        )
