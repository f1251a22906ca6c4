"""``compile_request``: intent + contract + capabilities -> an OpenRouter request.

With endpoint data (and ``coverage: full``, the default) the result is a route plan
(:mod:`compiler.routes.plan`): one body per group of endpoints that can all serve it.
Without it, or with ``coverage: first``, one body from the model-level figures
(:mod:`compiler.routes.single`), fit to the endpoints the stage's routing pins.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from compiler.compiled import CompiledRequest, Origin
from compiler.errors import NoEndpointError, ToolError
from compiler.intent import COVERAGES, RUNGS, Intent
from compiler.kinds import policy_key_problem
from compiler.memo import Memo, evolver, make_memo
from compiler.passes.budget import estimate_prompt_tokens, tools_tokens
from compiler.policy import check_refused, warn_for, warns
from compiler.pricing.book import PriceBook, price_book
from compiler.reply.repair import content_form
from compiler.report import Adjustment
from compiler.routes.plan import compile_plan
from compiler.routes.simulate import model_price_problem, single_routes
from compiler.routes.single import Single, compile_single
from compiler.routes.table import table_text
from compiler.timeouts import request_timeouts
from compiler.tools.conversation import check_conversation
from compiler.tools.media import PART_MODALITY
from registry.errors import UnsupportedModalityError
from registry.resolve.capabilities import EndpointCaps
from registry.resolve.resolver import Registry
from registry.resolve.routing import unverifiable

__all__ = ["check_stage", "compile_once", "compile_request", "default_registry", "stage_intent"]

#: dataclasses.replace, faster (compiler.memo.evolver): once per attempt of every compile
_evolve_request = evolver(CompiledRequest)

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


def stage_intent(registry: Registry, stage: str) -> Intent:
    """The :class:`~compiler.intent.Intent` of a declared stage, built once per registry
    (its contract and tools imported), before any model is looked at.

    Raises:
        UnknownStageError: ``stage`` is not declared.
        ContractError: the stage's contract does not import or has no JSON Schema.
        DeclarationError: a ``policy`` key that is no adjustment kind, or a tool that does
            not import (located in stages.yaml; ``ToolError`` without a stages file)."""
    cache = _INTENTS.setdefault(registry, {})
    found = cache.get(stage)
    if found is None:
        decl = registry.stage(stage)
        for key in decl.policy:
            problem = policy_key_problem(key)
            if problem is not None and registry.stages_file is not None:
                raise registry.stages_file.document.error(problem, ("stages", stage, "policy", key))
        try:
            found = Intent.from_stage(stage, decl, base_dir=registry.stage_dir())
        except ToolError as exc:
            if registry.stages_file is None:
                raise
            raise registry.stages_file.document.error(
                str(exc), ("stages", stage, *exc.at)) from exc
        cache[stage] = found
    return found


def compile_request(
    stage: str | Intent,
    model: str,
    messages: Sequence[Mapping[str, Any]] = (),
    *,
    registry: Registry | None = None,
    coverage: str | None = None,
) -> CompiledRequest:
    """Compile one stage for one model into an OpenRouter chat-completions request.

    Args:
        stage: a stage name declared in stages.yaml, or an :class:`Intent`.
        model: an OpenRouter model id, e.g. ``openai/gpt-4o-mini``.
        messages: the caller's chat messages; the instruction message (when the stage
            has a contract) is put before them.
        registry: metadata plus declarations; ``None`` uses :func:`default_registry`.
        coverage: ``full`` (a route plan covering every endpoint that can serve the
            model) or ``first`` (one body, the single-body behaviour of earlier
            releases); ``None`` uses the stage's ``coverage``.

    Returns:
        The first attempt's request, with the later attempts in ``attempts`` and the
        route table in ``routes``.

    Raises:
        UnknownStageError: the stage is not declared (carries close matches).
        DeclarationError: a tool of the named stage does not load or normalise, or its
            ``tool_choice`` is malformed (``stages.yaml:LINE:COL: stages.NAME.tools[0]...``;
            the :class:`ToolError` is chained).
        UnknownModelError: the model is in no metadata and not declared whole.
        ContractError: the stage's contract does not import.
        ProjectionError: the contract cannot be projected (external ``$ref``).
        PromptTooLongError: the prompt alone does not fit in the context window (of
            any endpoint).
        NoEndpointError: the routing, prompt or policy leave no endpoint (the error
            carries the route table).
        AdjustmentRefused: the stage's policy refuses an adjustment that occurred.
        UnsupportedModalityError: the model's output modalities exclude text.
        ConversationError: the messages break a pre-send rule (roles, tool calls and
            results, content parts; docs/tools.md).
        ToolError: a tool of an :class:`Intent` fails as :class:`Tool` says, or its schema
            cannot be expressed in the model's dialect (recursion without ``$ref``).
        ValueError: ``coverage`` is neither ``full`` nor ``first``.

    >>> # req = compile_request("classify", "openai/gpt-4o-mini", [{"role": "user", ...}])
    >>> # req.body["response_format"]["type"] -> "json_schema"
    """
    registry = registry if registry is not None else default_registry()
    intent = stage if isinstance(stage, Intent) else stage_intent(registry, stage)
    check_conversation(messages)
    return _compile(registry, intent, model, messages, _coverage(intent, coverage),
                    intent.stage if isinstance(stage, str) else None)


def compile_once(
    stage: str, model: str, *, registry: Registry, coverage: str | None = None
) -> CompiledRequest:
    """:func:`compile_request` of a declared stage with no messages, for a bulk compile
    that meets each pair once (an audit, a lock: :func:`compiler.artifacts.lock.
    iter_compilations`): a result the registry has memoised is used, but a new one is
    not kept, so thousands of pairs do not stay alive for reuse that does not come (nor
    push out the memo's other entries; docs/performance.md). The same result and errors.
    """
    intent = stage_intent(registry, stage)
    return _compile(registry, intent, model, (), _coverage(intent, coverage), intent.stage,
                    keep=False)


def check_stage(registry: Registry, stage: str, coverage: str | None = None) -> None:
    """Raise what any compile of ``stage`` raises, whatever the model (no pair compiled)."""
    _coverage(stage_intent(registry, stage), coverage)


def _coverage(intent: Intent, coverage: str | None) -> str:
    coverage = intent.coverage if coverage is None else coverage
    if coverage not in COVERAGES:
        raise ValueError(f"coverage must be one of {', '.join(COVERAGES)}, not {coverage!r}")
    return coverage


def _compile(
    registry: Registry, intent: Intent, model: str, messages: Sequence[Mapping[str, Any]],
    coverage: str, stage_name: str | None, *, keep: bool = True,
) -> CompiledRequest:
    memo = memo_table(registry)
    key = (id(intent), model, stage_name is not None, coverage)
    # media parts and cache markers are fit per model, so such messages are compiled anew
    plain = not any(_rewritten(m) for m in messages)
    hit = memo.get(key) if plain else None
    if hit is not None and hit.intent is intent and hit.fits(messages):
        if hit.warns:
            for report in hit.reports:
                warn_for(intent, report)
        return hit.replay(messages)
    base = registry.resolve(model, stage_name, provider=intent.provider)
    if base.output_modalities is not None and "text" not in base.output_modalities:
        raise UnsupportedModalityError(model, base.output_modalities)
    caps = registry.endpoint_caps(model) if coverage == "full" else ()
    unchecked = bool(caps) and unverifiable(caps, base.provider)
    if unchecked:
        caps = ()
    if coverage == "full" and not caps and not unchecked:
        listed = registry.endpoints(model)
        if listed is not None:  # the data says: no endpoint serves the model today
            raise NoEndpointError(f"the endpoint data lists no endpoint serving {model} "
                                  "(OpenRouter would answer 404)", model=model, routes=())
    if caps:
        plan = compile_plan(registry, intent, base, caps, stage_name, messages)
        compiled, singles, replayable = plan.compiled, plan.singles, plan.replayable
    else:
        problem = model_price_problem(base)
        if problem is not None:
            raise NoEndpointError(
                f"provider.max_price rules out {model}: {problem}; OpenRouter would answer "
                "404 (raise max_price or choose a cheaper model)", model=model, routes=())
        notes: tuple[str, ...] = ()
        if coverage == "full":
            note = (f"no endpoint data for {model}{_why_no_endpoints(registry, model)}: "
                    "the model-level figures were used, which an endpoint that serves it "
                    "may not meet")
            if unchecked:
                note = (f"the endpoint data of {model} has no tags, so which endpoint "
                        f"provider.only {list(base.provider.get('only') or [])} names "
                        "cannot be checked: the model-level figures were used")
            notes = (note,)
        single = compile_single(registry, intent, base, messages, notes)
        check_refused(intent, single.compiled.report)
        if base.routing_restricted and not base.endpoints:
            rows = single_routes(model, registry.endpoint_caps(model), single.compiled,
                                 base.provider)
            table = table_text(rows)
            raise NoEndpointError(f"the provider routing leaves no endpoint of {model}: "
                                  f"{table}", model=model, routes=rows)
        if base.endpoints:
            single = _with_routes(single, registry.endpoint_caps(model), base.provider)
        compiled, singles, replayable = single.compiled, (single,), True
    compiled = _loop_ready(compiled, registry, intent, model, coverage, stage_name)
    for attempt in compiled.plan:
        warn_for(intent, attempt.report)
    ceilings = [s.prompt_ceiling for s in singles]
    if keep and plain and replayable and all(c is not None for c in ceilings):
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        # per attempt, the estimate of the instruction message and the tool definitions
        # (tokens): the part of the prompt that is not the caller's
        shown = [estimate_prompt_tokens([] if s.instructions_text is None else
                                        [{"content": s.instructions_text}])
                 + tools_tokens(s.compiled.body.get("tools")) for s in singles]
        made = make_memo(intent, compiled, shown, [c for c in ceilings if c is not None],
                         any(warns(intent, a.report) for a in compiled.plan))
        if made is not None:
            memo[key] = made
    return compiled


class _Source:
    """The compile a request came from, for its :class:`Origin`: the prices and the
    downgrade are bound methods of this one object (two closures and their cells were
    eight objects more per memoised compile)."""

    __slots__ = ("coverage", "intent", "model", "registry", "stage_name")

    def __init__(self, registry: Registry, intent: Intent, model: str, coverage: str,
                 stage_name: str | None) -> None:
        self.registry, self.intent, self.model = registry, intent, model
        self.coverage, self.stage_name = coverage, stage_name

    def __copy__(self) -> _Source:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Source:
        # a copy of a request (copy.deepcopy, dataclasses.asdict) shares where it came
        # from, as it shared the closures this object replaced: never the registry copied
        return self

    def prices(self) -> PriceBook:
        return price_book(self.registry, self.model, self.stage_name)

    def downgrade(self, request: CompiledRequest, rung: str) -> CompiledRequest | None:
        intent = self.intent
        if intent.output_policy != "auto" or rung not in RUNGS[:-1]:
            return None
        lower = RUNGS[RUNGS.index(rung) + 1]
        provider = dict(intent.provider or {})
        if request.endpoints:
            provider.update(only=list(request.endpoints), allow_fallbacks=False)
        sent = request.body.get("messages", [])
        turns = request.repair_turns  # recompiled from the caller's messages, then put back
        messages = sent[1 if request.instructions else 0:len(sent) - len(turns)]
        again = _compile(self.registry, replace(intent, ceiling=lower, provider=provider or None),
                         self.model, messages, self.coverage, self.stage_name)
        note = Adjustment(
            kind="output.downgraded_after_error", path="response_format", requested=rung,
            applied=again.rung, reason=f"the provider answered that rung {rung} is not "
            f"supported; recompiled with ceiling {lower}")
        return _with_repairs(_with_adjustment(again, note), request)

    def origin(self) -> Origin:
        return Origin(prices=self.prices, downgrade=self.downgrade)


def _loop_ready(
    compiled: CompiledRequest, registry: Registry, intent: Intent, model: str, coverage: str,
    stage_name: str | None,
) -> CompiledRequest:
    """Give every attempt its timeouts, repair bound and origin (prices, downgrade)."""
    origin = _Source(registry, intent, model, coverage, stage_name).origin()
    # attempt i carries attempts i+1... (the same objects), as compile_plan made them
    later: tuple[CompiledRequest, ...] = ()
    for attempt in reversed(compiled.plan):
        total, idle = request_timeouts(attempt.body, intent.reasoning, intent.timeout_seconds,
                                       intent.stream_idle_seconds)
        later = (_evolve_request(attempt, attempts=later, timeout_seconds=total,
                                 stream_idle_seconds=idle, retries=intent.retries,
                                 origin=origin),
                 *later)
    return later[0]


def _with_adjustment(compiled: CompiledRequest, note: Adjustment) -> CompiledRequest:
    later: tuple[CompiledRequest, ...] = ()
    for attempt in reversed(compiled.plan):
        report = attempt.report
        later = (replace(attempt, attempts=later,
                         report=replace(report, adjustments=(*report.adjustments, note))),
                 *later)
    return later[0]


def _with_repairs(compiled: CompiledRequest, before: CompiledRequest) -> CompiledRequest:
    """Carry the repair turns made before a downgrade (and their count: the bound on
    repairs counts across downgrades) into every attempt of the downgraded request."""
    if not before.repairs and not before.repair_turns:
        return compiled

    def carry(attempt: CompiledRequest) -> CompiledRequest:
        # Below rung tool there is no forced tool for a tool-form turn to answer.
        turns = tuple(before.repair_turns if attempt.rung == "tool"
                      else content_form(before.repair_turns))
        body = {**attempt.body, "messages": [*attempt.body.get("messages", []),
                                             *(dict(t) for t in turns)]}
        return replace(attempt, body=body, repairs=before.repairs, repair_turns=turns,
                       attempts=tuple(carry(a) for a in attempt.attempts))

    return carry(compiled)


def _rewritten(message: Mapping[str, Any]) -> bool:
    """Whether the passes may rewrite ``message`` (a media part or a cache marker)."""
    if "cache_control" in message:
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(p, Mapping) and (p.get("type") in PART_MODALITY or "cache_control" in p)
        for p in content)


def _with_routes(
    single: Single, caps: tuple[EndpointCaps, ...], stage_provider: Mapping[str, Any]
) -> Single:
    """Attach the route table of a single body; refuse a body no endpoint can take.

    Raises:
        NoEndpointError: every endpoint is excluded.
    """
    compiled = single.compiled
    rows = single_routes(compiled.report.model, caps, compiled, stage_provider)
    if not any(r.attempt == 0 for r in rows):
        table = table_text(rows)
        raise NoEndpointError(
            f"no endpoint of {compiled.report.model} can take this body: {table}",
            model=compiled.report.model, routes=rows)
    served = tuple(r.endpoint for r in rows if r.attempt == 0)
    return replace(single, compiled=replace(compiled, routes=rows, endpoints=served))


#: The attribute of a registry that holds its memoised compilations (see memo_table).
_TABLE = "_compiler_request_memo"


def memo_table(registry: Registry) -> dict[tuple[int, str, bool, str], Memo]:
    """The memoised compilations of ``registry`` by (intent, model, named stage,
    coverage), bounded by ``_MEMO_SIZE``.

    Kept on the registry itself, so they go when it goes: a memo reaches its registry
    (each request's origin prices and downgrades with it), so a module-level table, even
    one keyed by weak references, would keep every registry alive for the life of the
    process. A copy of a registry (``copy.copy``) starts a table of its own.
    """
    owned = vars(registry)
    found = owned.get(_TABLE)
    # the owner by weak reference: a strong one would make every registry a cycle that
    # only the cyclic collector frees, even with nothing memoised
    if found is None or found[0]() is not registry:
        found = owned[_TABLE] = (weakref.ref(registry), {})
    table: dict[tuple[int, str, bool, str], Memo] = found[1]
    return table


_MEMO_SIZE = 4096


def _why_no_endpoints(registry: Registry, model: str) -> str:
    """`` (fetch failed (...))``: the reason the registry noted when the endpoints
    could not be had, or ``""`` when it noted none (no fetching, an endpoints file)."""
    prefix = f"endpoints of {model}: "
    for note in reversed(registry.notes):
        if note.startswith(prefix):
            return f" ({note.removeprefix(prefix).split('; none used')[0]})"
    return ""
