"""The mutable state the compiler passes hand to each other while compiling."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compiler.kinds import KINDS
from compiler.report import Adjustment
from registry.resolve.capabilities import Provenance, ResolvedModel

if TYPE_CHECKING:
    from compiler.intent import Intent
    from compiler.schema.projected import Projection
    from compiler.tools.projection import ProjectedTool

__all__ = ["Draft"]


@dataclass
class Draft:
    """Work in progress of one compilation.

    Attributes:
        intent: what the stage asked for.
        model: the resolved capabilities.
        messages: the caller's messages (the instruction message is added at render).
        params: body parameters chosen so far (everything but model/messages/provider).
        adjustments: in the order the passes made them.
        rung: output enforcement reached (``schema``, ``json``, ``prompt``, ``none``).
        projection: the projected contract schema shown (and enforced at ``schema``).
        instructions: the instruction text added to the messages, or ``None``.
        reasoning_on: reasoning will run (sent, or mandatory).
        reasoning_budget: tokens reserved for reasoning inside ``max_tokens``.
        prompt_tokens: estimated prompt size, in tokens.
        provider_patch: ``provider`` keys the compiler sets over the declared routing.
        shown_sha256: SHA-256 of the schema shown in the instructions.
        prompt_ceiling: the largest prompt estimate (tokens) for which this compilation
            would come out the same, or ``None`` when the prompt size decided the
            result (the context limit was binding).
        enforced_sha256: SHA-256 of the schema in ``response_format``, when strict.
        answer_floor: the smallest answer in tokens the budget keeps clear of reasoning.
        tools: the stage's tools as projected and sent, in order.
        notes: assumptions the passes made because the data is silent (report notes).
        impossible: why no valid body exists for this model (the compile is refused),
            or ``None``.
    """

    intent: Intent
    model: ResolvedModel
    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    adjustments: list[Adjustment] = field(default_factory=list)
    rung: str = "none"
    projection: Projection | None = None
    instructions: str | None = None
    reasoning_on: bool = False
    reasoning_budget: int = 0
    prompt_tokens: int = 0
    provider_patch: dict[str, Any] = field(default_factory=dict)
    shown_sha256: str | None = None
    prompt_ceiling: int | None = None
    enforced_sha256: str | None = None
    answer_floor: int = 0
    tools: tuple[ProjectedTool, ...] = ()
    notes: list[str] = field(default_factory=list)
    impossible: str | None = None

    def adjust(
        self,
        kind: str,
        path: str,
        requested: Any,
        applied: Any,
        reason: str,
        evidence: Provenance | None = None,
    ) -> None:
        """Record one adjustment.

        Raises:
            ValueError: ``kind`` is not in :data:`compiler.kinds.KINDS` (a bug guard).
        """
        if kind not in KINDS:
            raise ValueError(f"unknown adjustment kind {kind!r}")
        # the report keeps its own copy of a dict or list the body also holds, so a caller
        # who edits the body (``provider.only``, ``reasoning``) does not change the report
        if type(requested) in (dict, list):
            requested = copy.deepcopy(requested)
        if type(applied) in (dict, list):
            applied = copy.deepcopy(applied)
        self.adjustments.append(Adjustment(kind, path, requested, applied, reason, evidence))
