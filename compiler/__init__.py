"""capability-compiler's compiler: intent + contract + capabilities -> an OpenRouter request.

Public API::

    compile_request(stage, model, messages, *, registry) -> CompiledRequest
    CompiledRequest.body / .report / .parse_reply(text) / .to_openai_kwargs()
    CompiledRequest.parse_response(response) / .repair(messages, error) / .after_error(status, body)
    Intent(stage, tools=(Tool.from_model(M), ...), tool_choice=...) -> a stage with tools
    CompiledRequest.parse_tool_calls(message) -> (ToolCall, ...)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compiler.compiled import CompiledRequest, ErrorVerdict
    from compiler.errors import (
        AdjustmentRefused,
        AdjustmentWarning,
        CompilerError,
        ContractError,
        ConversationError,
        NoEndpointError,
        ProjectionError,
        PromptTooLongError,
        ProviderError,
        RepairsExhaustedError,
        ReplyBlockedError,
        ReplyTruncatedError,
        ReplyValidationError,
        ToolError,
    )
    from compiler.intent import Intent
    from compiler.pricing.cost import UsageCost
    from compiler.pricing.usage import Usage
    from compiler.reply.outcome import ParsedResponse
    from compiler.report import Adjustment, AdjustmentReport
    from compiler.request import compile_request, default_registry
    from compiler.routes.table import RouteRow
    from compiler.schema.contract import OutputContract
    from compiler.tools.calls import ToolCall
    from compiler.tools.tool import Tool

#: public name -> the module that defines it; imported on first use (PEP 562), so
#: ``import compiler`` stays cheap for callers that need only part of the API.
_EXPORTS: dict[str, str] = {
    "Adjustment": "compiler.report",
    "AdjustmentRefused": "compiler.errors",
    "AdjustmentReport": "compiler.report",
    "AdjustmentWarning": "compiler.errors",
    "CompiledRequest": "compiler.compiled",
    "CompilerError": "compiler.errors",
    "ContractError": "compiler.errors",
    "ConversationError": "compiler.errors",
    "NoEndpointError": "compiler.errors",
    "RouteRow": "compiler.routes.table",
    "Intent": "compiler.intent",
    "OutputContract": "compiler.schema.contract",
    "ProjectionError": "compiler.errors",
    "PromptTooLongError": "compiler.errors",
    "ReplyValidationError": "compiler.errors",
    "Tool": "compiler.tools.tool",
    "ToolCall": "compiler.tools.calls",
    "ToolError": "compiler.errors",
    "compile_request": "compiler.request",
    "default_registry": "compiler.request",
    "ErrorVerdict": "compiler.compiled",
    "ParsedResponse": "compiler.reply.outcome",
    "ProviderError": "compiler.errors",
    "RepairsExhaustedError": "compiler.errors",
    "ReplyBlockedError": "compiler.errors",
    "ReplyTruncatedError": "compiler.errors",
    "Usage": "compiler.pricing.usage",
    "UsageCost": "compiler.pricing.cost",
}

__all__ = [
    "Adjustment",
    "AdjustmentRefused",
    "AdjustmentReport",
    "AdjustmentWarning",
    "CompiledRequest",
    "CompilerError",
    "ContractError",
    "ConversationError",
    "ErrorVerdict",
    "Intent",
    "NoEndpointError",
    "OutputContract",
    "ParsedResponse",
    "ProjectionError",
    "PromptTooLongError",
    "ProviderError",
    "RepairsExhaustedError",
    "ReplyBlockedError",
    "ReplyTruncatedError",
    "ReplyValidationError",
    "RouteRow",
    "Tool",
    "ToolCall",
    "ToolError",
    "Usage",
    "UsageCost",
    "compile_request",
    "default_registry",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
