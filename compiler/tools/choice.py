"""``tool_choice`` per endpoint: the caller's mode, or the nearest one the endpoints take.

OpenRouter publishes per endpoint which ``tool_choice`` modes it accepts
(``supports_tool_choice: {auto, none, required, function}``, in
``GET /api/v1/models/{id}/endpoints``; see ``../shared/data/openrouter/SOURCES.md``).
A mode an endpoint does not accept is mapped to the nearest weaker one it does, and the
lost part is stated in the instruction message so the model still reads it:

=============== =============================================================
asked           sent instead (first accepted)
=============== =============================================================
``{function}``  ``required`` (only that tool is named in the text), ``auto``, omitted
``required``    ``auto``, omitted (default ``auto``); the text asks for a call
``auto``        omitted (the default while tools are sent)
``none``        omitted; the text asks for no call
=============== =============================================================

Without ``tool_choice`` in the endpoints' ``supported_parameters`` the key is omitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MODES", "ChoiceFit", "choice_mode", "fit_choice"]

#: The ``tool_choice`` modes, as ``supports_tool_choice`` names them.
MODES: tuple[str, ...] = ("auto", "none", "required", "function")

_FALLBACK: Mapping[str, tuple[str, ...]] = {
    "function": ("function", "required", "auto"),
    "required": ("required", "auto"),
    "auto": ("auto",),
    "none": ("none",),
}


def choice_mode(choice: Any) -> str | None:
    """The mode of a ``tool_choice`` value (``{"type": "function", ...}`` is
    ``function``), or ``None`` for a missing or unknown value."""
    if isinstance(choice, Mapping):
        return "function"
    return choice if isinstance(choice, str) and choice in MODES else None


@dataclass(frozen=True, slots=True)
class ChoiceFit:
    """What to send for one asked ``tool_choice``.

    Attributes:
        sent: the ``tool_choice`` value to send, or ``None`` to omit the key.
        mapped: the asked mode was not accepted (report it).
        statement: a sentence for the instruction message carrying what was lost, or
            ``None``.
    """

    sent: Any
    mapped: bool
    statement: str | None


def _value(mode: str, function: str | None) -> Any:
    if mode == "function":
        return {"type": "function", "function": {"name": function}}
    return mode


def _statement(asked: str, sent: str | None, function: str | None) -> str | None:
    if asked == "function" and sent != "function":
        return (f"You must call the tool {function} in this turn; do not answer without "
                "calling it.")
    if asked == "required" and sent not in ("required", "function"):
        return "You must call one of the tools in this turn; do not answer without a call."
    if asked == "none" and sent != "none":
        return "Do not call any tool in this turn; answer directly."
    return None


def fit_choice(
    asked: Any, accepted: Iterable[str] | None, *, listed: bool
) -> ChoiceFit:
    """The nearest accepted form of ``asked`` (see the module docstring).

    Args:
        asked: the caller's ``tool_choice``: ``auto``, ``none``, ``required`` or
            ``{"type": "function", "function": {"name": ...}}``.
        accepted: the modes every endpoint of the attempt accepts, ``None`` when no
            endpoint publishes ``supports_tool_choice`` (every mode is assumed).
        listed: ``tool_choice`` is in the endpoints' ``supported_parameters``.

    Raises:
        ValueError: ``asked`` is not a ``tool_choice`` value.
    """
    mode = choice_mode(asked)
    if mode is None:
        raise ValueError(f"tool_choice {asked!r} is not auto, none, required or "
                         "{'type': 'function', 'function': {'name': ...}}")
    function = asked["function"]["name"] if mode == "function" else None
    ok = set(MODES if accepted is None else accepted) if listed else set()
    for candidate in _FALLBACK[mode]:
        if candidate in ok:
            sent = _value(candidate, function)
            return ChoiceFit(sent, candidate != mode, _statement(mode, candidate, function))
    # nothing accepted: omit the key; the default while tools are sent is auto
    return ChoiceFit(None, mode != "auto", _statement(mode, None, function))
