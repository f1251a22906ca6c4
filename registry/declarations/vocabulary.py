"""The names and values models.yaml and stages.yaml may use, and the checks that enforce them.

The vocabularies (reasoning efforts, request and sampling parameter names, schema
dialects, routing words) and the small validators the declaration models in
:mod:`registry.declarations.models` and :mod:`registry.declarations.stages` share. A
validator refuses a value by raising :func:`problem`, which
:mod:`registry.declarations.problems` turns into a located, did-you-mean message.

>>> EFFORTS[:3]
('none', 'minimal', 'low')
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

from pydantic import AfterValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from registry.errors import closest

__all__ = [
    "EFFORTS",
    "KNOWN_DIALECTS",
    "PARAMETERS",
    "PRICE_KEYS",
    "QUANTIZATIONS",
    "SAMPLING_PARAMETERS",
    "SORTS",
    "Effort",
    "ModelId",
    "ModelKey",
    "ParameterName",
    "PolicyKey",
    "SamplingName",
    "Scalar",
    "StageName",
    "check_fixed",
    "check_value",
    "is_glob",
    "no_duplicates",
    "one_of",
    "problem",
]

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
EFFORTS: Final[tuple[str, ...]] = get_args(Effort)
"""OpenRouter's reasoning efforts, lowest first."""

_SAMPLING_KINDS: Final = {
    "temperature": "number", "top_p": "number", "top_k": "integer", "min_p": "number",
    "top_a": "number", "frequency_penalty": "number", "presence_penalty": "number",
    "repetition_penalty": "number", "seed": "integer", "stop": "stop",
}  # fmt: skip
SAMPLING_PARAMETERS: Final[tuple[str, ...]] = tuple(_SAMPLING_KINDS)
"""Sampling parameters as OpenRouter names them."""
PARAMETERS: Final[tuple[str, ...]] = (
    "temperature", "top_p", "top_k", "min_p", "top_a", "frequency_penalty", "presence_penalty",
    "repetition_penalty", "max_tokens", "max_completion_tokens", "logit_bias", "logprobs",
    "top_logprobs", "prediction", "seed", "response_format", "structured_outputs", "stop",
    "tools", "tool_choice", "parallel_tool_calls", "include_reasoning", "reasoning",
    "reasoning_effort", "web_search_options", "verbosity",
)  # fmt: skip
"""Every request parameter name OpenRouter lists in ``supported_parameters``."""
KNOWN_DIALECTS: Final[tuple[str, ...]] = ("openai-strict", "anthropic", "gemini", "json")
"""Schema dialects the output projection knows."""
QUANTIZATIONS: Final = ("int4", "int8", "fp4", "mxfp4", "nvfp4", "fp6", "fp8", "mxfp8",
                        "fp16", "bf16", "fp32", "unknown")  # fmt: skip
"""Quantizations OpenRouter's provider routing accepts."""
SORTS: Final = ("price", "throughput", "latency", "exacto")
"""Orders OpenRouter's provider routing can sort endpoints by."""
PRICE_KEYS: Final = ("prompt", "completion", "request", "image", "audio")
"""Keys of OpenRouter's ``provider.max_price``."""
_GLOB_CHARS: Final = frozenset("*?[")


def problem(message: str, *at: str | int) -> PydanticCustomError:
    """An error pydantic reports as-is; ``at`` extends its location below the field."""
    return PydanticCustomError("declaration", "{detail}", {"detail": message, "at": at})


def one_of(value: str, allowed: tuple[str, ...], what: str, *at: str | int) -> str:
    """Return ``value`` if it is in ``allowed``; else refuse it, naming the closest choice."""
    if value not in allowed:
        hint = closest(value, allowed)
        tail = f"; did you mean {hint[0]!r}?" if hint else f"; expected one of {', '.join(allowed)}"
        raise problem(f"unknown {what} {value!r}{tail}", *at)
    return value


def _sampling_name(value: str) -> str:
    return one_of(value, SAMPLING_PARAMETERS, "sampling parameter")


def _parameter_name(value: str) -> str:
    return one_of(value, PARAMETERS, "parameter")


def is_glob(key: str) -> bool:
    """Tell whether a models.yaml key is a glob (``*``, ``?`` or ``[...]``) or an exact id.

    >>> is_glob("anthropic/*"), is_glob("openai/gpt-4o-mini")
    (True, False)
    """
    return not _GLOB_CHARS.isdisjoint(key)


def _model_key(value: str) -> str:
    if not value or value != value.strip() or any(c.isspace() for c in value):
        raise problem(f"bad model key {value!r}: expected a model id or glob without spaces")
    start = value.find("[")
    while start != -1:
        end = start + 1 + (value[start + 1 : start + 2] == "!")
        end += value[end : end + 1] == "]"
        close = value.find("]", end)
        if close == -1:
            raise problem(f"bad glob {value!r}: '[' at position {start + 1} is never closed")
        start = value.find("[", close + 1)
    return value


def _model_id(value: str) -> str:
    _model_key(value)
    if is_glob(value):
        raise problem(f"expected an exact model id, not the glob {value!r}")
    return value


def _names_enum(names: tuple[str, ...]) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": list(names)})


SamplingName = Annotated[str, AfterValidator(_sampling_name), _names_enum(SAMPLING_PARAMETERS)]
ParameterName = Annotated[str, AfterValidator(_parameter_name), _names_enum(PARAMETERS)]
ModelKey = Annotated[str, AfterValidator(_model_key)]
ModelId = Annotated[str, AfterValidator(_model_id)]
StageName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
PolicyKey = Annotated[str, Field(pattern=r"^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?)$")]
Scalar = float | int | bool | str


def check_value(name: str, value: Any, *at: str | int) -> None:
    """Check a sampling value's type against what the parameter takes."""
    kind = _SAMPLING_KINDS[name]
    ok = not isinstance(value, bool) and (
        (kind == "number" and isinstance(value, int | float))
        or (kind == "integer" and isinstance(value, int))
        or (kind == "stop" and isinstance(value, str | list))
    )
    if not ok:
        want = {"number": "a number", "integer": "an integer", "stop": "a string or list"}[kind]
        raise problem(f"{name} takes {want}; got {value!r}", *at)


def check_fixed(fixed: dict[str, Any] | None) -> dict[str, Any] | None:
    """Check each value of a ``fixed`` mapping (parameter -> value) with :func:`check_value`."""
    for name, value in (fixed or {}).items():
        check_value(name, value, name)
    return fixed


def no_duplicates(items: list[str] | None, *at: str | int) -> None:
    """Refuse a repeated item; ``at`` is the list's location below the validated field."""
    seen: set[str] = set()
    for index, item in enumerate(items or ()):
        if item in seen:
            raise problem(f"{item!r} is listed twice", *at, index)
        seen.add(item)
