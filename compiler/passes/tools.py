"""The stage's own tools and the caller's media and cache markers, fit to the model.

Two passes over a draft (``docs/tools.md``):

* :func:`apply_messages` (first): media parts the model's ``input_modalities`` exclude
  are removed (``messages.part_dropped``; a stage refuses with ``policy:
  {messages.part_dropped: refuse}``; a message left with no part gets one text part
  saying what was removed, never ``content: []``), and ``cache_control`` markers over the model's
  ``prompt_cache.max_breakpoints`` are removed, the earliest kept
  (``messages.breakpoint_dropped``, one per marker);
* :func:`apply_tools` (after enforcement): each tool's input schema projected into the
  model's dialect (changes reported as ``schema.*`` at ``tools[<name>]:<pointer>``),
  ``strict`` only where the endpoints list ``structured_outputs`` and the projection has
  no blocker (else ``tools.not_strict``), ``tool_choice`` fit to the modes every
  endpoint accepts (``tools.choice_mapped``, with the lost part stated in the
  instruction message), ``parallel_tool_calls`` only where listed (``param.dropped``).
"""

from __future__ import annotations

from typing import Any

from compiler.errors import ToolError
from compiler.passes.draft import Draft
from compiler.schema.dialects import get_dialect
from compiler.tools.breakpoints import marker_paths, path_of, strip_markers
from compiler.tools.choice import choice_mode, fit_choice
from compiler.tools.media import PART_MODALITY
from compiler.tools.projection import project_tools, recursion_refusal, sent_parameters

__all__ = ["apply_messages", "apply_tools"]


def apply_messages(draft: Draft) -> None:
    """Drop media parts the model cannot read, and cache markers over its budget."""
    model = draft.model
    accepted = model.input_modalities
    if accepted is not None:
        for i, message in enumerate(draft.messages):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            kept = []
            removed: list[tuple[int, str]] = []
            for j, part in enumerate(content):
                kind = part.get("type") if isinstance(part, dict) else None
                need = PART_MODALITY.get(kind) if isinstance(kind, str) else None
                if need is None or need in accepted:
                    kept.append(part)
                else:
                    removed.append((j, need))
            if not removed:
                continue
            alone = not kept  # every part removed: a text part stands in (never [])
            for j, need in removed:
                draft.adjust("messages.part_dropped", f"messages[{i}].content[{j}]", need, None,
                             f"{model.id} takes {', '.join(accepted)} input, not {need}; the "
                             "part was removed" + (
                                 "; the message had no other part, so a text part saying what "
                                 "was removed stands in for it (content is never sent empty)"
                                 if alone else ""), model.source_of("architecture"))
                if isinstance(content[j], dict) and "cache_control" in content[j]:
                    draft.adjust("messages.breakpoint_dropped", path_of(i, j), "cache_control",
                                 None, "the marker was on a part the model cannot read, which "
                                 "was removed (messages.part_dropped); the prefix it cached is "
                                 "not marked", model.source_of("architecture"))
            if alone:
                kept = [{"type": "text", "text": _stand_in(removed, accepted)}]
            draft.messages[i] = {**message, "content": kept}
    declared = (model.tree.get("prompt_cache") or {}).get("max_breakpoints")
    if not isinstance(declared, int):
        return
    budget = declared
    markers = marker_paths(draft.messages)
    if len(markers) <= budget:
        return
    dropped = markers[budget:]
    strip_markers(draft.messages, dropped)
    evidence = model.source_of("prompt_cache.max_breakpoints")
    for i, at in dropped:
        why = ("the model ignores cache hints (prompt_cache.max_breakpoints 0)" if budget == 0
               else f"{model.id} takes at most {budget} cache breakpoints; the earliest are "
               "kept, as they cache the longest prefixes")
        draft.adjust("messages.breakpoint_dropped", path_of(i, at), "cache_control", None, why,
                     evidence)


def _stand_in(removed: list[tuple[int, str]], accepted: tuple[str, ...]) -> str:
    """The text sent in place of a message whose every part was removed."""
    counts: dict[str, int] = {}
    for _, need in removed:
        counts[need] = counts.get(need, 0) + 1
    noun = {"audio": "audio clip"}
    what = ", ".join(f"{n} {noun.get(kind, kind)}" + ("s" if n > 1 else "")
                     for kind, n in counts.items())
    return f"[{what} removed: this model reads only {', '.join(accepted)} input]"


def _accepted_modes(draft: Draft) -> frozenset[str] | None:
    published = [e.tool_choice_modes for e in draft.model.endpoints
                 if e.tool_choice_modes is not None]
    return frozenset.intersection(*published) if published else None


def apply_tools(draft: Draft) -> None:
    """Add the stage's tools, ``tool_choice`` and ``parallel_tool_calls`` to the body.

    Raises:
        ToolError: a tool's schema cannot be projected, or it is recursive and the
            dialect has no ``$ref`` (Gemini's).
    """
    intent = draft.intent
    if not intent.tools:
        return
    model = draft.model
    if not model.supports("tools"):
        draft.adjust("tools.dropped", "tools", [t.name for t in intent.tools], None,
                     f"{model.id} lists no tools parameter; the stage's tools were omitted",
                     model.parameter_evidence("tools"))
        return
    projected = project_tools(intent.tools, get_dialect(model.dialect))
    evidence = model.source_of("structured_output.dialect")

    listed_strict = model.supports("structured_outputs")
    entries: list[dict[str, Any]] = []
    dialect = get_dialect(model.dialect)
    for item in projected:
        refusal = recursion_refusal(item, dialect, model.id)
        if refusal is not None:
            raise ToolError(refusal)
    for item in projected:
        name = item.tool.name
        for change in item.projection.changes:
            draft.adjust(change.kind, f"tools[{name}]:{change.pointer or '/'}",
                         change.requested, change.applied, change.reason, evidence)
        strict = listed_strict and item.enforceable
        if not strict:
            why = ("the endpoints do not list structured_outputs" if not listed_strict else
                   f"the {item.projection.dialect} dialect cannot enforce it: "
                   + "; ".join(item.projection.blockers))
            draft.adjust("tools.not_strict", f"tools[{name}].function.strict", True, None,
                         f"{why}; the arguments are validated against the tool's schema "
                         "before invocation", model.parameter_evidence("structured_outputs"))
        entries.append(item.tool.function(sent_parameters(item.projection), strict=strict))
    draft.params["tools"] = entries
    draft.tools = projected
    if intent.tool_choice is not None:
        fit = fit_choice(intent.tool_choice, _accepted_modes(draft),
                         listed=model.supports("tool_choice"))
        if fit.mapped:
            draft.adjust("tools.choice_mapped", "tool_choice", intent.tool_choice, fit.sent,
                         "the endpoints do not accept tool_choice "
                         f"{choice_mode(intent.tool_choice)}; the nearest accepted form is sent"
                         + ("" if fit.statement is None else " and the requirement is stated "
                            "in the instruction message"),
                         model.parameter_evidence("tool_choice"))
        if fit.sent is not None:
            draft.params["tool_choice"] = fit.sent
        if fit.statement is not None:
            draft.instructions = fit.statement if draft.instructions is None else (
                f"{draft.instructions}\n\n{fit.statement}")
    if intent.parallel_tool_calls is not None:
        if model.supports("parallel_tool_calls"):
            draft.params["parallel_tool_calls"] = intent.parallel_tool_calls
        else:
            draft.adjust("param.dropped", "parallel_tool_calls", intent.parallel_tool_calls,
                         None, f"{model.id} does not list parallel_tool_calls",
                         model.parameter_evidence("parallel_tool_calls"))
