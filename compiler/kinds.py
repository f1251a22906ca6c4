"""The vocabulary of adjustment kinds: stable dotted slugs, one line each.

Every kind the compiler can report is listed here, and only these; the compiler
rejects an unlisted kind, and ``docs/adjustments.md`` documents each (a test checks).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

__all__ = ["KINDS", "policy_key_problem"]

KINDS: Mapping[str, str] = {
    "output.downgraded": "the enforcement ceiling could not be met; a weaker rung was used",
    "output.not_strict": "a forced tool call without structured_outputs; not strict",
    "output.downgraded_after_error": "the provider refused the rung; recompiled one rung down",
    "schema.made_required_nullable": "an optional property became required and nullable",
    "schema.closed_object": "additionalProperties: false was added to an object",
    "schema.keyword_dropped": "a keyword the dialect lacks was removed and restated",
    "schema.format_dropped": "a string format the dialect lacks was removed and restated",
    "schema.default_stripped": "a default annotation was removed",
    "schema.refs_inlined": "$defs/$ref were inlined for a dialect without references",
    "schema.root_wrapped": "a non-object root was wrapped in a one-property object",
    "schema.oneof_to_anyof": "oneOf was rewritten as anyOf",
    "schema.discriminator_dropped": "the discriminator keyword was removed",
    "schema.allof_merged": "a single-branch allOf was merged into its parent",
    "schema.const_to_enum": "const was rewritten as a one-value enum",
    "reasoning.unsupported": "reasoning asked of a model without reasoning; omitted",
    "reasoning.cannot_disable": "none asked of a model whose reasoning is mandatory",
    "reasoning.effort_mapped": "the effort was mapped to the nearest accepted one",
    "reasoning.budget_clamped": "the reasoning budget was moved into its bounds",
    "reasoning.dropped": "even the minimum reasoning budget did not fit; omitted",
    "reasoning.effort_ignored": "a toggle-style model takes no effort level",
    "reasoning.effort_lowered": "the effort was lowered so its reserve fits beside the answer",
    "tokens.clamped": "max_tokens was clamped to the model's limits",
    "tokens.filled": "no answer budget set; max_tokens set to the most allowed",
    "tokens.no_length_param": "the model lists no length parameter; none sent",
    "tokens.answer_short": "max_tokens cannot hold the answer floor; the answer may be cut",
    "param.dropped": "a parameter the model does not list was omitted",
    "param.refused_while_reasoning": "a parameter refused while reasoning was omitted",
    "param.fixed": "a parameter with one accepted value was set to it",
    "param.clamped": "a value outside its range was clamped",
    "param.mutually_exclusive": "a parameter excluded by an earlier one was omitted",
    "routing.require_parameters": "provider.require_parameters was set to true",
    "routing.param_dropped": "no allowed endpoint supports the whole set; a want was dropped",
    "routing.restricted": "provider.only narrowed to endpoints that can serve the request",
    "limits.lowered": "a declaration lowers an endpoint's published limit",
    "limits.capped": "a declared limit above the endpoints' published one was capped to it",
    "route.attempt": "provider.only names the endpoints of this route-plan attempt",
    "route.attempt_differs": "a later attempt differs from the first for its endpoints",
    "route.parameters_assumed": "an endpoint lists no parameters; the model's list was assumed",
    "route.tag_ambiguous": "several endpoints publish one tag; their common capabilities used",
    "route.slug_derived": "a routing slug derived from a provider name was written",
    "route.degraded_kept": "every allowed endpoint is degraded; they were kept",
    "tools.dropped": "the endpoints list no tools parameter; the stage's tools were omitted",
    "tools.choice_mapped": "tool_choice mapped to the nearest mode the endpoints accept",
    "tools.not_strict": "a tool sent without strict: no structured_outputs, or a blocker",
    "messages.breakpoint_dropped":
        "a cache_control marker over the model's budget, or on a removed part, was removed",
    "messages.part_dropped": "a media part the model cannot read was removed",
    "model.alias": "an alias id: the declarations of its published alias_target were used",
}


def policy_key_problem(key: str) -> str | None:
    """Return why ``key`` is not a valid stage policy key, or ``None`` when it is.

    Valid keys are a kind of :data:`KINDS`, a prefix of kinds followed by ``.*``
    (``param.*``), or ``*``.

    >>> policy_key_problem("param.droped")
    "unknown adjustment kind 'param.droped'; did you mean 'param.dropped'?"
    """
    if key == "*" or key in KINDS:
        return None
    if key.endswith(".*"):
        prefix = key[:-1]
        if any(kind.startswith(prefix) for kind in KINDS):
            return None
        prefixes = sorted({kind.split(".")[0] + ".*" for kind in KINDS})
        hint = difflib.get_close_matches(key, prefixes, n=1, cutoff=0.5)
        return f"no adjustment kind starts with {prefix!r}" + (
            f"; did you mean {hint[0]!r}?" if hint else f"; prefixes are {', '.join(prefixes)}")
    hint = difflib.get_close_matches(key, list(KINDS), n=1, cutoff=0.5)
    return f"unknown adjustment kind {key!r}" + (f"; did you mean {hint[0]!r}?" if hint else
                                                 "; see docs/adjustments.md")
