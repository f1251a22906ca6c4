"""capability-compiler's compiler: intent + contract + capabilities -> an OpenRouter request.

Public API::

    compile_request(stage, model, messages, *, registry) -> CompiledRequest
    CompiledRequest.body / .report / .parse_reply(text) / .to_openai_kwargs()
"""

from compiler.contract import OutputContract
from compiler.errors import (
    AdjustmentRefused,
    AdjustmentWarning,
    CompilerError,
    ContractError,
    ProjectionError,
    PromptTooLongError,
    ReplyValidationError,
)
from compiler.intent import Intent
from compiler.report import Adjustment, AdjustmentReport
from compiler.request import CompiledRequest, compile_request, default_registry

__all__ = [
    "Adjustment",
    "AdjustmentRefused",
    "AdjustmentReport",
    "AdjustmentWarning",
    "CompiledRequest",
    "CompilerError",
    "ContractError",
    "Intent",
    "OutputContract",
    "ProjectionError",
    "PromptTooLongError",
    "ReplyValidationError",
    "compile_request",
    "default_registry",
]
