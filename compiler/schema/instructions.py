"""The instruction text that shows the model the projected schema.

The wording is ours and never varies by model: the only variable part is the
schema, inserted as :attr:`~compiler.schema.projected.Projection.schema_json`, the same
text whose parsed form is enforced. :func:`extract_shown_schema` parses the
schema back out of rendered text, so the compiler can check that what is shown
equals what is enforced instead of trusting it.
"""

from __future__ import annotations

import json
from typing import Any

from compiler.errors import ProjectionError
from compiler.schema.projected import Projection

__all__ = ["DEFAULT_TEMPLATE", "PLACEHOLDER", "extract_shown_schema", "render_instructions"]

PLACEHOLDER = "{schema}"
"""Where a template receives the schema text; it must occur exactly once."""

DEFAULT_TEMPLATE = (
    "Reply with exactly one JSON value that satisfies this JSON Schema:\n"
    "{schema}\n"
    "Send the JSON and nothing else: no explanation before or after it, and no "
    "Markdown code fence around it."
)
"""The built-in instruction; a stage may replace it with its own (containing ``{schema}``)."""


def _split(template: str | None) -> tuple[str, str]:
    chosen = DEFAULT_TEMPLATE if template is None else template
    if chosen.count(PLACEHOLDER) != 1:
        raise ProjectionError(
            f"an instruction template must contain {PLACEHOLDER} exactly once "
            f"(found {chosen.count(PLACEHOLDER)})"
        )
    before, _, after = chosen.partition(PLACEHOLDER)
    return before, after


def render_instructions(projection: Projection, template: str | None = None) -> str:
    """Render the instruction text for ``projection``.

    Args:
        projection: the projection whose ``schema_json`` is shown.
        template: text with one ``{schema}`` placeholder; ``None`` uses
            :data:`DEFAULT_TEMPLATE`. Other braces are left alone.

    Returns:
        The template with ``{schema}`` replaced by ``projection.schema_json``.

    Raises:
        ProjectionError: the template does not contain ``{schema}`` exactly once.
    """
    before, after = _split(template)
    return before + projection.schema_json + after


def extract_shown_schema(text: str, template: str | None = None) -> dict[str, Any]:
    """Parse the schema back out of text rendered by :func:`render_instructions`.

    Args:
        text: the rendered instructions (possibly inside a longer message).
        template: the template used to render them; ``None`` = :data:`DEFAULT_TEMPLATE`.

    Returns:
        The schema exactly as the text shows it, parsed as JSON.

    Raises:
        ProjectionError: the template is invalid, or the text does not hold the
            template's words around one JSON object.

    >>> extract_shown_schema("Schema: {\\"type\\": \\"object\\"}!", "Schema: {schema}!")
    {'type': 'object'}
    """
    before, after = _split(template)
    start = text.find(before)
    if start < 0:
        raise ProjectionError("the instruction text does not contain the template's words")
    try:
        schema, end = json.JSONDecoder().raw_decode(text, start + len(before))
    except json.JSONDecodeError as exc:
        raise ProjectionError(
            f"the instruction text does not show a JSON schema where the template puts it: {exc}"
        ) from exc
    if not isinstance(schema, dict) or not text.startswith(after, end):
        raise ProjectionError("the instruction text does not match its template around the schema")
    return schema
