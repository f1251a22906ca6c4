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

__all__ = ["CEILINGS", "CHOICE_MODES", "COVERAGES", "RUNGS", "Intent"]

#: Output enforcement rungs, strongest first: strict JSON Schema, JSON mode with the
#: schema shown, schema shown in the prompt only.
CEILINGS: tuple[str, ...] = ("schema", "json", "prompt")

#: The enforcement ladder, strongest first: strict JSON Schema, a forced single tool
#: call, JSON mode with the schema shown, the schema shown only. A ``schema`` ceiling
#: may end on any rung; a ``json`` ceiling on ``json`` or ``prompt``.
RUNGS: tuple[str, ...] = ("schema", "tool", "json", "prompt")

#: The ``tool_choice`` strings; a mapping names one function (``docs/tools.md``).
CHOICE_MODES: tuple[str, ...] = ("auto", "none", "required")

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
        _check_choice(self.stage, self.tool_choice, [t.name for t in self.tools])

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
            ToolError: a tool does not import or fails normalisation, or ``tool_choice``
                names no tool; ``at`` holds the stage's key (``("tools", 0, "name")``).
        """
        contract = (
            None if decl.contract is None else load_contract(decl.contract, base_dir=base_dir)
        )
        tools = []
        for index, entry in enumerate(decl.tools):
            try:
                tools.append(tool_from_decl(entry, base_dir=base_dir))
            except ToolError as exc:
                raise ToolError(str(exc), at=("tools", index, *exc.at)) from exc
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
            tools=tuple(tools),
            tool_choice=choice,
            parallel_tool_calls=decl.parallel_tool_calls,
        )


def _check_choice(stage: str, choice: Any, names: list[str]) -> None:
    """Refuse a ``tool_choice`` that is not ``auto``, ``none``, ``required`` or
    ``{"type": "function", "function": {"name": <one of the tools>}}``, or one without
    tools.

    Raises:
        ToolError: naming the stage's tool names (``at``: ``("tool_choice",)``).
    """
    if choice is None:
        return
    tools = ", ".join(repr(n) for n in names) if names else "none"
    if not names:
        raise ToolError(f"stage {stage!r}: tool_choice {choice!r} needs tools, and the "
                        "stage has none; declare tools or remove tool_choice",
                        at=("tool_choice",))
    if isinstance(choice, str):
        if choice in CHOICE_MODES:
            return
        raise ToolError(f"stage {stage!r}: tool_choice {choice!r} is not one of "
                        f"{', '.join(CHOICE_MODES)} or {{'type': 'function', 'function': "
                        f"{{'name': ...}}}} naming one of the tools ({tools})",
                        at=("tool_choice",))
    function = choice.get("function") if isinstance(choice, Mapping) else None
    named = function.get("name") if isinstance(function, Mapping) else None
    if (not isinstance(choice, Mapping) or choice.get("type", "function") != "function"
            or not isinstance(named, str) or set(choice) - {"type", "function"}):
        raise ToolError(f"stage {stage!r}: tool_choice {choice!r} is malformed: use "
                        f"{', '.join(CHOICE_MODES)} or {{'type': 'function', 'function': "
                        f"{{'name': NAME}}}} with NAME one of the tools ({tools})",
                        at=("tool_choice",))
    if named not in names:
        raise ToolError(f"stage {stage!r}: tool_choice names the function {named!r}, which "
                        f"is not one of the stage's tools ({tools})",
                        at=("tool_choice", "function"))
