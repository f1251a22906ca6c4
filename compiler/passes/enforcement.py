"""Output enforcement: choose the strongest rung the model supports, project the schema.

The ladder, strongest first (https://openrouter.ai/docs/guides/features/structured-outputs):

* ``schema``: ``response_format: {type: json_schema, json_schema: {strict: true}}``,
  needs ``response_format`` and ``structured_outputs`` in ``supported_parameters``
  and a projection without blockers in the model's dialect;
* ``tool``: a forced single tool call whose ``parameters`` are the schema projected
  for the model's dialect, as for ``schema`` (needs ``tools`` and ``tool_choice`` and a
  projection without blockers, and is skipped while the model reasons on a provider
  that forbids forced tools while thinking, ``structured_output.
  forced_tool_with_reasoning: false``, and skipped when the stage sends its own
  tools: the forced call would forbid calling them, ``docs/tools.md``); ``strict:
  true`` on the function, and an ``enforced_sha256`` in the report, only where the
  serving endpoints list ``structured_outputs`` (otherwise ``output.not_strict``); the
  reply is the call's ``arguments``;
* ``json``: ``response_format: {type: json_object}`` (needs ``response_format``),
  with the schema shown in the messages;
* ``prompt``: the schema shown in the messages only.

Whatever the rung, the instruction message is rendered from the very schema object
that is enforced (or, below ``schema``, the one used for display), and the shown
schema is parsed back out of the text and compared with the enforced one.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from compiler.errors import CompilerError
from compiler.intent import RUNGS
from compiler.kinds import KINDS
from compiler.passes.draft import Draft
from compiler.report import Adjustment
from compiler.schema.dialects import DIALECTS, get_dialect
from compiler.schema.frozen_json import canonical_sha256, freeze_json
from compiler.schema.instructions import extract_shown_schema, render_instructions
from compiler.schema.projected import Projection
from compiler.schema.projection import project
from registry.resolve.capabilities import Provenance

__all__ = ["apply_enforcement", "schema_sha256"]


def schema_sha256(schema: Any) -> str:
    """Return the hex SHA-256 of ``schema`` as compact JSON with sorted keys."""
    return canonical_sha256(schema)


def _will_reason(draft: Draft) -> bool:
    """Whether the model will reason: asked for (not ``none``) and supported, or mandatory."""
    caps = draft.model.reasoning
    if not caps.supported:
        return False
    return not caps.can_disable or draft.intent.reasoning not in (None, "none")


def _reachable(draft: Draft, strict: Projection | None) -> tuple[str, str]:
    """Return ``(rung, why_not_stronger)`` for the model, under the stage ceiling."""
    model = draft.model
    ladder = RUNGS[RUNGS.index(draft.intent.effective_ceiling):]
    reasons = []
    for rung in ladder:
        if rung == "schema":
            missing = [
                p for p in ("response_format", "structured_outputs") if not model.supports(p)
            ]
            if missing:
                reasons.append(f"schema needs {' and '.join(missing)} in supported_parameters")
                continue
            if strict is not None and strict.blockers:
                reasons.append(
                    f"the {strict.dialect} dialect cannot enforce this contract: "
                    + "; ".join(strict.blockers)
                )
                continue
            return rung, "; ".join(reasons)
        if rung == "tool":
            if draft.intent.tools:
                reasons.append("the stage sends its own tools, and a forced output tool would "
                               "forbid calling them")
                continue
            missing = [p for p in ("tools", "tool_choice") if not model.supports(p)]
            if missing:
                reasons.append(f"a forced tool call needs {' and '.join(missing)}")
                continue
            if strict is not None and strict.blockers:
                reasons.append(
                    f"a tool's parameters take the {strict.dialect} dialect too, which cannot "
                    "express this contract"
                )
                continue
            if _will_reason(draft) and not model.forced_tool_with_reasoning:
                reasons.append("the provider forbids a forced tool call while the model reasons")
                continue
            return rung, "; ".join(reasons)
        if rung == "json":
            if not model.supports("response_format"):
                reasons.append("json mode needs response_format in supported_parameters")
                continue
            return rung, "; ".join(reasons)
        return rung, "; ".join(reasons)
    return "prompt", "; ".join(reasons)


def apply_enforcement(draft: Draft) -> None:
    """Choose the rung, project the contract, add ``response_format`` and the instructions.

    Raises:
        ProjectionError: the contract has an external ``$ref``, or the dialect is unknown.
        CompilerError: the shown schema differs from the enforced one (a bug guard).
    """
    contract = draft.intent.contract
    if contract is None:
        draft.rung = "none"
        return
    model = draft.model
    ceiling = draft.intent.effective_ceiling
    wants_strict = ceiling == "schema"
    strict = project(contract, get_dialect(model.dialect)) if wants_strict else None
    rung, why = _reachable(draft, strict)
    evidence_strict = model.supports("structured_outputs")
    draft.rung = rung
    if rung != ceiling:
        draft.adjust(
            "output.downgraded",
            "response_format",
            ceiling,
            rung,
            f"nearest supported enforcement is {rung}: {why}",
            model.parameter_evidence("structured_outputs" if wants_strict else "response_format"),
        )
    tool_strict = rung == "tool" and evidence_strict
    projection = (
        strict
        if rung in ("schema", "tool") and strict is not None
        else project(contract, DIALECTS["json"])
    )
    draft.projection = projection
    evidence = model.source_of("structured_output.dialect") if projection is strict else None
    draft.adjustments.extend(_schema_adjustments(projection, evidence))
    text, schema, digest = _rendered(projection, draft.intent.instructions)
    draft.instructions = text
    draft.shown_sha256 = digest
    if rung == "schema":
        draft.params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": contract.name, "strict": True, "schema": schema},
        }
        draft.enforced_sha256 = digest
    elif rung == "tool":
        function: dict[str, Any] = {
            "name": contract.name,
            "description": "Return the result: call this function once, with arguments that "
            "satisfy its parameters schema.",
            "parameters": schema,
        }
        if tool_strict:
            function["strict"] = True
            draft.enforced_sha256 = digest
        else:
            draft.adjust(
                "output.not_strict",
                "tools[0].function.strict",
                True,
                None,
                "the serving endpoints do not list structured_outputs, so the forced call's "
                "arguments are not guaranteed to match the schema; the reply is still "
                "validated against the contract",
                model.parameter_evidence("structured_outputs"),
            )
        draft.params["tools"] = [{"type": "function", "function": function}]
        draft.params["tool_choice"] = {"type": "function", "function": {"name": contract.name}}
    elif rung == "json":
        draft.params["response_format"] = {"type": "json_object"}


@functools.lru_cache(maxsize=1024)
def _schema_adjustments(
    projection: Projection, evidence: Provenance | None
) -> tuple[Adjustment, ...]:
    """The report rows of a projection's schema changes (immutable, so built once).

    Raises:
        ValueError: a change kind is not in :data:`compiler.kinds.KINDS` (a bug guard).
    """
    unknown = {c.kind for c in projection.changes} - set(KINDS)
    if unknown:
        raise ValueError(f"unknown adjustment kinds {sorted(unknown)}")
    return tuple(
        Adjustment(
            change.kind,
            "schema:" + (change.pointer or "/"),
            change.requested,
            change.applied,
            change.reason,
            evidence,
        )
        for change in projection.changes
    )


@functools.lru_cache(maxsize=512)
def _rendered(projection: Projection, template: str | None) -> tuple[str, Any, str]:
    """Render the instructions for a projection once, and prove shown == enforced.

    The schema is parsed back out of the rendered text and compared with the schema
    that ``response_format`` carries (``json.loads(projection.schema_json)``); both are
    hashed. Cached per (projection, template): the result never changes, so the hot
    path pays for neither the rendering nor the proof again. The returned schema is
    shared between requests, so it is read-only (:func:`freeze_json`; a caller edits a
    ``copy.deepcopy`` of it).

    Returns:
        ``(instruction text, enforced schema, SHA-256 of both)``.

    Raises:
        CompilerError: the shown schema differs from the enforced one (a bug guard).
    """
    text = render_instructions(projection, template)
    shown = extract_shown_schema(text, template)
    enforced = json.loads(projection.schema_json)
    shown_digest, enforced_digest = canonical_sha256(shown), canonical_sha256(enforced)
    if shown != enforced or shown_digest != enforced_digest:
        raise CompilerError("internal error: the schema shown differs from the one enforced")
    return text, freeze_json(enforced), enforced_digest
