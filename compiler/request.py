"""``compile_request``: intent + contract + capabilities -> an OpenRouter request.

The passes run in a fixed order (``docs/concepts.md``): output enforcement and
schema projection -> reasoning -> token budget -> sampling -> routing -> render ->
finalise (the stage's adjustment policy). Precedence when two wants conflict:
hard limits > output enforcement > reasoning > sampling.
"""

from __future__ import annotations

import copy
import warnings
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compiler.errors import AdjustmentRefused, AdjustmentWarning
from compiler.intent import Intent
from compiler.kinds import policy_key_problem
from compiler.passes.budget import apply_budget, prompt_tokens
from compiler.passes.draft import Draft
from compiler.passes.enforcement import apply_enforcement
from compiler.passes.reasoning import apply_reasoning
from compiler.passes.routing import apply_endpoints
from compiler.passes.sampling import apply_sampling
from compiler.reply.parse import parse_reply
from compiler.report import AdjustmentReport
from compiler.schema.contract import OutputContract
from compiler.schema.projected import Projection
from registry.resolve.resolver import Registry

__all__ = ["OPENAI_SDK_PARAMETERS", "CompiledRequest", "compile_request", "default_registry"]

#: Body keys the official ``openai`` SDK's ``chat.completions.create`` takes as named
#: arguments; every other key goes in ``extra_body``.
OPENAI_SDK_PARAMETERS: frozenset[str] = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "stop",
        "response_format",
        "reasoning_effort",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "prediction",
        "web_search_options",
        "verbosity",
    }
)

_BODY_ORDER = ("response_format", "reasoning", "max_tokens", "max_completion_tokens")


@dataclass(frozen=True, slots=True)
class CompiledRequest:
    """A compiled OpenRouter chat-completions request and how it was made.

    Attributes:
        body: the JSON-ready ``POST /api/v1/chat/completions`` body.
        report: every adjustment, the enforcement rung, the metadata source.
        instructions: the message the compiler adds before the caller's messages
            (``{"role": "system", "content": ...}``), or ``None`` without a contract.
        contract: the output contract, or ``None`` for free text.
        projection: the schema shown (and, at rung ``schema``, enforced), or ``None``.
    """

    body: dict[str, Any]
    report: AdjustmentReport
    instructions: dict[str, str] | None
    contract: OutputContract | None
    projection: Projection | None

    @property
    def rung(self) -> str:
        """The enforcement reached: ``schema``, ``json``, ``prompt`` or ``none``."""
        return self.report.rung

    @property
    def shown_schema(self) -> Mapping[str, Any] | None:
        """The schema the instruction message shows the model."""
        return None if self.projection is None else self.projection.schema

    @property
    def enforced_schema(self) -> Mapping[str, Any] | None:
        """The schema the provider enforces: ``response_format.json_schema.schema`` at rung
        ``schema``, the forced tool's ``parameters`` at rung ``tool``, else ``None``."""
        fmt = self.body.get("response_format", {})
        if fmt.get("type") == "json_schema":
            schema: Mapping[str, Any] = fmt["json_schema"]["schema"]
            return schema
        if self.rung == "tool":
            params: Mapping[str, Any] = self.body["tools"][0]["function"]["parameters"]
            return params
        return None

    def parse_reply(self, text: str) -> Any:
        """Validate a reply against the original contract and return the instance.

        Args:
            text: the reply's content; at rung ``tool``, the forced call's
                ``function.arguments`` string.

        A code fence is removed only when enforcement was ``json`` or ``prompt``; a
        wrapped root is unwrapped; nulls the projection introduced become absent
        fields so the contract's defaults apply.

        Raises:
            ReplyValidationError: invalid JSON or a contract violation (JSON paths and
                messages, never the offending values).
            ValueError: the request has no output contract.
        """
        if self.contract is None or self.projection is None:
            raise ValueError("this request has no output contract; the reply is free text")
        return parse_reply(
            text, self.contract, self.projection, strip_fence=self.rung in ("json", "prompt")
        )

    def to_openai_kwargs(self) -> dict[str, Any]:
        """Split the body into ``openai`` SDK arguments plus ``extra_body``.

        Returns:
            Keyword arguments for ``client.chat.completions.create(**kwargs)``; fields
            the SDK does not name (``provider``, ``reasoning``, ``top_k``, ...) are in
            ``kwargs["extra_body"]``, so the JSON on the wire equals :attr:`body`.
        """
        body = copy.deepcopy(self.body)
        kwargs = {k: v for k, v in body.items() if k in OPENAI_SDK_PARAMETERS}
        extra = {k: v for k, v in body.items() if k not in OPENAI_SDK_PARAMETERS}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs


_DEFAULT: dict[str, Registry] = {}
_INTENTS: weakref.WeakKeyDictionary[Registry, dict[str, Intent]] = weakref.WeakKeyDictionary()


def default_registry() -> Registry:
    """Return the registry of the current directory: ``models.yaml`` and ``stages.yaml``
    when present, and the bundled seed catalog as metadata. Loaded once per process."""
    cwd = str(Path.cwd())
    found = _DEFAULT.get(cwd)
    if found is None:
        models, stages = Path("models.yaml"), Path("stages.yaml")
        found = Registry.load(
            models=models if models.is_file() else None,
            stages=stages if stages.is_file() else None,
        )
        _DEFAULT[cwd] = found
    return found


def _intent(registry: Registry, stage: str) -> Intent:
    cache = _INTENTS.setdefault(registry, {})
    found = cache.get(stage)
    if found is None:
        decl = registry.stage(stage)
        for key in decl.policy:
            problem = policy_key_problem(key)
            if problem is not None and registry.stages_file is not None:
                raise registry.stages_file.document.error(problem, ("stages", stage, "policy", key))
        found = Intent.from_stage(stage, decl, base_dir=registry.stage_dir())
        cache[stage] = found
    return found


def _policy_for(policy: Mapping[str, str], kind: str) -> str:
    if kind in policy:
        return policy[kind]
    parts = kind.split(".")
    for i in range(len(parts) - 1, 0, -1):
        action = policy.get(".".join(parts[:i]) + ".*")
        if action is not None:
            return action
    return policy.get("*", "report")


def compile_request(
    stage: str | Intent,
    model: str,
    messages: Sequence[Mapping[str, Any]] = (),
    *,
    registry: Registry | None = None,
) -> CompiledRequest:
    """Compile one stage for one model into an OpenRouter chat-completions request.

    Args:
        stage: a stage name declared in stages.yaml, or an :class:`Intent`.
        model: an OpenRouter model id, e.g. ``openai/gpt-4o-mini``.
        messages: the caller's chat messages; the instruction message (when the stage
            has a contract) is put before them.
        registry: metadata plus declarations; ``None`` uses :func:`default_registry`.

    Returns:
        The request body, the adjustment report, and a reply parser.

    Raises:
        UnknownStageError: the stage is not declared (carries close matches).
        UnknownModelError: the model is in no metadata and not declared whole.
        ContractError: the stage's contract does not import.
        ProjectionError: the contract cannot be projected (external ``$ref``).
        PromptTooLongError: the prompt alone does not fit in the context window.
        AdjustmentRefused: the stage's policy refuses an adjustment that occurred.

    >>> # req = compile_request("classify", "openai/gpt-4o-mini", [{"role": "user", ...}])
    >>> # req.body["response_format"]["type"] -> "json_schema"
    """
    registry = registry if registry is not None else default_registry()
    intent = stage if isinstance(stage, Intent) else _intent(registry, stage)
    memo = _MEMO.setdefault(registry, {})
    key = (id(intent), model, isinstance(stage, str))
    hit = memo.get(key)
    if hit is not None and hit.intent is intent:
        estimate = prompt_tokens(hit.instructions_text, messages, intent.estimated_prompt_tokens)
        if estimate <= hit.prompt_ceiling:
            _finalise(intent, hit.compiled.report)
            return hit.replay(messages)
    resolved = registry.resolve(
        model, intent.stage if isinstance(stage, str) else None, provider=intent.provider
    )
    draft = Draft(intent=intent, model=resolved, messages=[dict(m) for m in messages])
    apply_enforcement(draft)
    apply_reasoning(draft)
    apply_budget(draft)
    apply_sampling(draft)
    apply_endpoints(draft)
    body = _render(draft)
    report = AdjustmentReport(
        stage=intent.stage,
        model=resolved.id,
        metadata=registry.catalog.describe()
        if not resolved.declared_only
        else "declared in models.yaml (absent from metadata)",
        rung=draft.rung,
        adjustments=tuple(draft.adjustments),
        shown_sha256=draft.shown_sha256,
        enforced_sha256=draft.enforced_sha256 if draft.rung in ("schema", "tool") else None,
        notes=tuple(n for n in (registry.catalog.note,) if n),
    )
    _finalise(intent, report)
    instructions = (
        None if draft.instructions is None else {"role": "system", "content": draft.instructions}
    )
    compiled = CompiledRequest(
        body=body,
        report=report,
        instructions=instructions,
        contract=intent.contract,
        projection=draft.projection,
    )
    if draft.prompt_ceiling is not None:
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        kept = {name: _copy_shallow(value) for name, value in body.items()}  # callers may edit
        memo[key] = _Memo(intent, replace(compiled, body=kept), draft.instructions,
                          draft.prompt_ceiling)
    return compiled


@dataclass(frozen=True, slots=True)
class _Memo:
    """A compilation that holds for every prompt up to ``prompt_ceiling`` tokens.

    The compiler is deterministic and the caller's messages reach the result only
    through the prompt estimate, so while the context limit is not binding a new call
    with other messages differs only in ``body["messages"]``.
    """

    intent: Intent
    compiled: CompiledRequest
    instructions_text: str | None
    prompt_ceiling: int

    def replay(self, messages: Sequence[Mapping[str, Any]]) -> CompiledRequest:
        """Return the memoised request with ``messages`` in place of the original ones."""
        old = self.compiled
        sent = [dict(m) for m in messages]
        if old.instructions is not None:
            sent.insert(0, dict(old.instructions))
        body: dict[str, Any] = {"model": old.body["model"], "messages": sent}
        for name, value in old.body.items():
            if name not in body:
                body[name] = _copy_shallow(value)
        return CompiledRequest(body=body, report=old.report, instructions=old.instructions,
                               contract=old.contract, projection=old.projection)


def _copy_shallow(value: Any) -> Any:
    """Copy the top two levels of a body value (the schema inside stays shared, read-only)."""
    if isinstance(value, dict):
        return {k: dict(v) if isinstance(v, dict) else v for k, v in value.items()}
    if isinstance(value, list):
        return [dict(v) if isinstance(v, dict) else v for v in value]
    return value


#: Per registry, memoised compilations by (intent, model); bounded by _MEMO_SIZE.
_MEMO: weakref.WeakKeyDictionary[Registry, dict[tuple[int, str, bool], _Memo]] = (
    weakref.WeakKeyDictionary()
)
_MEMO_SIZE = 4096


def _render(draft: Draft) -> dict[str, Any]:
    messages = list(draft.messages)
    if draft.instructions is not None:
        messages.insert(0, {"role": "system", "content": draft.instructions})
    body: dict[str, Any] = {"model": draft.model.id, "messages": messages}
    for key in _BODY_ORDER:
        if key in draft.params:
            body[key] = draft.params[key]
    for key, value in draft.params.items():
        body.setdefault(key, value)
    provider = {**draft.model.provider, **draft.provider_patch}
    relies = [k for k in body if k not in ("model", "messages")]
    if relies and provider.get("require_parameters") is not True:
        draft.adjust(
            "routing.require_parameters",
            "provider.require_parameters",
            provider.get("require_parameters"),
            True,
            "the body relies on optional parameters ("
            + ", ".join(relies)
            + "); OpenRouter must route only to endpoints that support them all",
            draft.model.source_of("provider.require_parameters"),
        )
        provider["require_parameters"] = True
    if provider:
        body["provider"] = provider
    return body


def _finalise(intent: Intent, report: AdjustmentReport) -> None:
    if not intent.policy and intent.output_policy != "required":
        return  # everything is "report"
    policy = dict(intent.policy)
    if intent.output_policy == "required":
        policy.setdefault("output.downgraded", "refuse")
    refused = []
    for adjustment in report.adjustments:
        action = _policy_for(policy, adjustment.kind)
        if action == "refuse":
            refused.append(adjustment.kind)
        elif action == "warn":
            warnings.warn(
                f"{report.stage}/{report.model}: {adjustment.kind} at {adjustment.path}: "
                f"{adjustment.reason}",
                AdjustmentWarning,
                stacklevel=3,
            )
    if refused:
        raise AdjustmentRefused(
            f"stage {report.stage!r} refuses {', '.join(sorted(set(refused)))} for {report.model}",
            report=report,
            kinds=refused,
        )
