"""Prompt-cache breakpoints: ``cache_control`` markers counted against a model's budget.

Anthropic accepts at most four cache breakpoints per request
(https://docs.claude.com/en/docs/build-with-claude/prompt-caching); a fifth is a 400.
The budget is declared per model in models.yaml (``prompt_cache.max_breakpoints``).
Over budget, the earliest markers are kept (an earlier breakpoint caches a longer
prefix) and each later one is removed; a budget of ``0`` (a model that ignores cache
hints) removes them all. Without a declaration the markers are sent as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["marker_paths", "path_of", "strip_markers"]


def marker_paths(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int | None]]:
    """Every ``cache_control`` marker in order: ``(message index, part index)``, the part
    index ``None`` for a marker on the message itself."""
    found: list[tuple[int, int | None]] = []
    for i, message in enumerate(messages):
        if "cache_control" in message:
            found.append((i, None))
        content = message.get("content")
        for j, part in enumerate(content if isinstance(content, list) else ()):
            if isinstance(part, Mapping) and "cache_control" in part:
                found.append((i, j))
    return found


def strip_markers(
    messages: list[dict[str, Any]], drop: Sequence[tuple[int, int | None]]
) -> None:
    """Remove the markers at ``drop`` from ``messages`` in place (changed messages and
    content lists are copied first, so the caller's objects are untouched)."""
    for i, j in drop:
        message = dict(messages[i])
        if j is None:
            message.pop("cache_control", None)
        else:
            parts = list(message["content"])
            part = dict(parts[j])
            part.pop("cache_control", None)
            parts[j] = part
            message["content"] = parts
        messages[i] = message


def path_of(i: int, j: int | None) -> str:
    """The report path of a marker."""
    return f"messages[{i}].cache_control" if j is None else (
        f"messages[{i}].content[{j}].cache_control")
