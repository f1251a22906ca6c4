"""Errors raised by :mod:`compiler`.

Every error the compiler raises derives from :class:`CompilerError`. Errors from
the registry (:class:`registry.RegistryError`) pass through unchanged::

    CompilerError
    ├── ContractError        a contract that cannot be imported or made a JSON Schema
    ├── ProjectionError      a schema that cannot be projected (external $ref)
    ├── PromptTooLongError   the prompt alone does not fit in the model's context_length
    ├── NoEndpointError      no endpoint of the model can serve the request (carries the table)
    ├── AdjustmentRefused    a stage policy says "refuse" for a kind (carries the report)
    ├── ReplyValidationError a reply that breaks the output contract (JSON paths, no values)
    │   └── RepairsExhaustedError  still invalid after the stage's output.retries repairs
    ├── ReplyTruncatedError  finish_reason length: the answer is missing or cut off
    ├── ReplyBlockedError    no answer to validate: the model refused, or a filter stopped it
    ├── ProviderError        the provider answered with an error (classified)
    ├── ToolError            a tool that cannot be normalised (name, schema, external $ref)
    └── ConversationError    messages that break a pre-send rule (index and rule)

:class:`Interrupted` is no compiler error: it is the ``KeyboardInterrupt`` that the
``capc`` process's SIGINT handler raises (a real Ctrl-C), which the contract-import fence
lets through while it turns a ``KeyboardInterrupt`` a contract module raises into a
:class:`ContractError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compiler.report import AdjustmentReport

__all__ = [
    "AdjustmentRefused",
    "AdjustmentWarning",
    "CompilerError",
    "ContractError",
    "ConversationError",
    "Interrupted",
    "NoEndpointError",
    "ProjectionError",
    "PromptTooLongError",
    "ProviderError",
    "RepairsExhaustedError",
    "ReplyBlockedError",
    "ReplyTruncatedError",
    "ReplyValidationError",
    "ToolError",
]


class CompilerError(Exception):
    """Root of every error raised by the compiler."""


class ContractError(CompilerError):
    """An output contract could not be loaded or converted to JSON Schema."""


class ProjectionError(CompilerError):
    """A contract's schema cannot be projected into the requested dialect.

    Raised for an external ``$ref`` (always), and for any loss of enforcement
    when the stage's output policy is ``required``.
    """


class PromptTooLongError(CompilerError):
    """The estimated prompt tokens alone reach the model's ``context_length`` (or
    exceed the endpoints' ``max_prompt_tokens``).

    Attributes:
        prompt_tokens: the estimate, in tokens.
        context_length: the limit that was exceeded, in tokens.
        limit: which limit: ``context_length`` or ``max_prompt_tokens``.
    """

    def __init__(
        self, message: str, *, prompt_tokens: int, context_length: int,
        limit: str = "context_length",
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_length = context_length
        self.limit = limit


class NoEndpointError(CompilerError):
    """No endpoint of the model can serve the request: the stage's routing, the prompt
    or the policy rules every one out.

    Attributes:
        model: the model id.
        routes: one :class:`compiler.routes.table.RouteRow` per endpoint, each with
            its ``excluded_by`` reason.
    """

    def __init__(self, message: str, *, model: str, routes: Sequence[Any]) -> None:
        super().__init__(message)
        self.model = model
        self.routes = tuple(routes)


class AdjustmentRefused(CompilerError):
    """A stage's adjustment policy is ``refuse`` for a kind that occurred.

    Attributes:
        report: the full adjustment report of the refused compilation.
        kinds: the kinds that triggered the refusal.
    """

    def __init__(self, message: str, *, report: AdjustmentReport, kinds: Sequence[str]) -> None:
        super().__init__(message)
        self.report = report
        self.kinds = tuple(kinds)


class ReplyValidationError(CompilerError):
    """A model reply that is not valid JSON or violates the output contract.

    Attributes:
        errors: ``(json_path, message)`` pairs, e.g. ``("$.items[0].qty", "Input should be
            greater than 0")``. The offending values are never included.
        usage: from ``CompiledRequest.parse_response``: the response's
            :class:`compiler.pricing.usage.Usage` (token counts only), else ``None``.
        cost: likewise its :class:`compiler.pricing.cost.UsageCost`, else ``None``.
    """

    usage: Any = None
    cost: Any = None

    def __init__(self, errors: Sequence[tuple[str, str]]) -> None:
        self.errors: tuple[tuple[str, str], ...] = tuple(errors)
        lines = "; ".join(f"{p}: {m}" for p, m in self.errors)
        super().__init__(f"reply does not satisfy the output contract: {lines}")

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"errors": [{"path": ..., "message": ...}]}`` for JSON output."""
        return {"errors": [{"path": p, "message": m} for p, m in self.errors]}


class RepairsExhaustedError(ReplyValidationError):
    """A reply is still invalid after the stage's ``output.retries`` repair turns.

    Attributes:
        errors: as for :class:`ReplyValidationError` (the last reply's, value-free).
        repairs: how many repair turns were made.
    """

    def __init__(self, errors: Sequence[tuple[str, str]], *, repairs: int) -> None:
        super().__init__(errors)
        self.repairs = repairs
        self.args = (f"{self.args[0]} (after {repairs} repair turn(s), the stage's "
                     "output.retries; raise it or choose a stronger model)",)


class ReplyTruncatedError(CompilerError):
    """The response stopped at the length limit (``finish_reason: length``) with no
    answer, or with an answer cut off before it was valid. Not a validation failure: a
    repair turn would stop at the same limit.

    Attributes:
        max_tokens: the limit the request sent, in tokens, or ``None``.
        completion_tokens: output tokens the response used (reasoning included), or ``None``.
        reasoning_tokens: of those, reasoning tokens, or ``None`` when not reported.
        answered: whether any answer text (or forced-call arguments) came back.
        usage: the response's :class:`compiler.pricing.usage.Usage`, or ``None``.
        cost: its :class:`compiler.pricing.cost.UsageCost`, or ``None``.
    """

    usage: Any = None
    cost: Any = None

    def __init__(
        self, *, max_tokens: int | None, completion_tokens: int | None,
        reasoning_tokens: int | None, answered: bool,
    ) -> None:
        self.max_tokens = max_tokens
        self.completion_tokens = completion_tokens
        self.reasoning_tokens = reasoning_tokens
        self.answered = answered
        limit = "no limit" if max_tokens is None else f"max_tokens {max_tokens}"
        used = ("reasoning used an unreported number" if reasoning_tokens is None
                else f"reasoning used {reasoning_tokens}")
        what = "the answer was cut off" if answered else "no answer came back"
        super().__init__(
            f"finish_reason length: {what}; {used} of {limit} tokens "
            f"(completion_tokens {completion_tokens}); raise max_tokens or output_tokens, "
            "or lower the stage's reasoning")


class ReplyBlockedError(CompilerError):
    """The response holds no answer to validate: the model refused (``reason``
    ``refused``: ``message.refusal`` is set, or a content part has ``type: "refusal"``) or
    a content filter stopped it (``reason`` ``filtered``: ``finish_reason:
    content_filter``). Not a validation failure: a repair turn would ask the same
    question again, so ``CompiledRequest.repair`` refuses it.

    Attributes:
        reason: ``refused`` or ``filtered``.
        finish_reason: as the response gives it, or ``None``.
        refusal: the model's refusal text, or ``None`` (kept out of ``str(error)``: it can
            quote the prompt).
        usage: the response's :class:`compiler.pricing.usage.Usage`, or ``None``.
        cost: its :class:`compiler.pricing.cost.UsageCost`, or ``None``.
    """

    usage: Any = None
    cost: Any = None

    def __init__(self, *, reason: str, finish_reason: str | None, refusal: str | None) -> None:
        self.reason = reason
        self.finish_reason = finish_reason
        self.refusal = refusal
        if reason == "refused":
            size = len(refusal or "")
            what = (f"refused: the model declined to answer (a refusal of {size} "
                    f"character{'' if size == 1 else 's'}, in .refusal; finish_reason "
                    f"{finish_reason})")
        else:
            what = "filtered: a content filter stopped the reply (finish_reason content_filter)"
        super().__init__(f"{what}; not a validation failure, so no repair turn: change "
                         "the request or the model")


class ProviderError(CompilerError):
    """The provider answered with an error instead of a reply (a streamed error, a
    response whose body is an error object, or ``finish_reason: error``).

    Attributes:
        kind: the class from :mod:`compiler.reply.classify` (``rate_limit``, ``server``, ...).
        status: the HTTP status or ``error.code``, or ``None``.
        detail: OpenRouter's ``error.message`` (and provider name), never the raw upstream text.
        usage: from ``CompiledRequest.parse_response``: the response's usage, else ``None``.
        cost: likewise its cost, else ``None``.
    """

    usage: Any = None
    cost: Any = None

    def __init__(self, message: str, *, kind: str, status: int | None, detail: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.detail = detail


class ToolError(CompilerError):
    """A tool that cannot be used: a bad or duplicate name, a schema that fails the
    Draft 2020-12 meta-schema, an external ``$ref``, a spec or JSON file that does not
    load, a malformed ``tool_choice``, or recursion a dialect cannot express.

    Attributes:
        at: where the problem is, as stages.yaml keys below the stage (``("tools", 0,
            "input_schema", "properties", "a")``, ``("tool_choice",)``); ``()`` when
            unknown. A stage's tool errors are reported at that key (file:line).
    """

    def __init__(self, message: str, *, at: Sequence[str | int] = ()) -> None:
        super().__init__(message)
        self.at: tuple[str | int, ...] = tuple(at)


class ConversationError(CompilerError):
    """The caller's messages break a pre-send rule (``docs/tools.md``, "Pre-send checks").

    Attributes:
        index: the position of the offending message in the caller's list.
        rule: a stable slug of the rule broken (``role``, ``tool_result_orphan``, ...).
    """

    def __init__(self, message: str, *, index: int, rule: str) -> None:
        super().__init__(f"messages[{index}]: {message} (rule {rule})")
        self.index = index
        self.rule = rule


class AdjustmentWarning(UserWarning):
    """Issued for each adjustment whose kind a stage's policy sets to ``warn``."""


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C the ``capc`` process received: raised by its SIGINT handler
    (:mod:`compiler.cli.interrupt`), never by the library. Not a :class:`CompilerError`:
    ``except KeyboardInterrupt`` catches it, and the contract-import fence re-raises it
    (exit 130, ``capc: interrupted``) instead of making it a :class:`ContractError`."""
