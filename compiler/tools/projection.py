"""Each caller tool's input schema projected into the model's dialect.

The same engine and dialect tables as the output contract
(:func:`compiler.schema.projection.project`, ``docs/contracts.md``): a tool is strict
(``function.strict: true``) only where every endpoint of the attempt lists
``structured_outputs`` and its projection has no blocker; otherwise it is sent in the
strongest form the dialect accepts (the projection, blockers dropped) without
``strict``, and the host still validates the arguments against the tool's own schema
(:mod:`compiler.tools.calls`). Every change is reported with the tool's name and a JSON
Pointer into its schema.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compiler.errors import CompilerError, ProjectionError, ToolError
from compiler.schema.dialects import Dialect
from compiler.schema.frozen_json import canonical_sha256, freeze_json
from compiler.schema.projected import Projection
from compiler.schema.projection import project
from compiler.tools.tool import Tool

__all__ = ["ProjectedTool", "project_tools", "recursion_refusal", "sent_parameters"]


@dataclass(frozen=True)
class ProjectedTool:
    """One tool projected for one dialect.

    Attributes:
        tool: the normalised tool.
        projection: its input schema projected (``projection.blockers`` empty means
            the dialect can enforce it).
        sha256: SHA-256 of the ``parameters`` sent (compact JSON, sorted keys); equal to
            ``projection.sha256`` (shown == enforced, checked when built).
    """

    tool: Tool
    projection: Projection
    sha256: str

    @property
    def enforceable(self) -> bool:
        """Whether the dialect can enforce the projected schema (no blockers)."""
        return not self.projection.blockers


@functools.lru_cache(maxsize=512)
def sent_parameters(projection: Projection) -> Any:
    """The ``parameters`` a tool entry sends: the projected schema as its canonical text
    reads back, read-only (a :class:`~compiler.schema.frozen_json.FrozenDict`, shared by
    every request compiled from ``projection``)."""
    return freeze_json(json.loads(projection.schema_json))


def project_tools(tools: Sequence[Tool], dialect: Dialect) -> tuple[ProjectedTool, ...]:
    """Project every tool's input schema into ``dialect`` (cached per schema and dialect).

    Raises:
        ToolError: a tool's schema cannot be projected (names the tool; the cause is
            chained).
        CompilerError: the parameters sent differ from the projection (a bug guard).
    """
    out = []
    for tool in tools:
        if tool.contract is None:
            raise ToolError(f"tool {tool.name!r} was not built by a Tool constructor")
        try:
            projection = project(tool.contract, dialect)
        except ProjectionError as exc:
            raise ToolError(f"tool {tool.name!r}: {exc}") from exc
        if projection.wrapped_root is not None:
            raise ToolError(f"tool {tool.name!r}: the input schema's root must be an object")
        sent = json.loads(projection.schema_json)
        digest = canonical_sha256(sent)
        if digest != projection.sha256:
            raise CompilerError(f"internal error: tool {tool.name!r}: the parameters sent "
                                "differ from the projected schema")
        out.append(ProjectedTool(tool, projection, digest))
    return tuple(out)


def _refs(node: Any, at: str = "") -> list[str]:
    """JSON Pointers of every ``$ref`` left in a projected schema."""
    found: list[str] = []
    if isinstance(node, dict):
        if "$ref" in node:
            found.append(at + "/$ref")
        for key, value in node.items():
            found += _refs(value, f"{at}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _refs(value, f"{at}/{i}")
    return found


def recursion_refusal(item: ProjectedTool, dialect: Dialect, model: str) -> str | None:
    """Why ``item`` cannot be sent to ``model`` at all: its projection still refers to
    itself (``$ref``) and ``dialect`` has none (Gemini's); ``None`` when it can. Used by
    the compile and by ``capc check``, so both refuse the same tools."""
    if dialect.supports_ref:
        return None
    refs = _refs(json.loads(item.projection.schema_json))
    if not refs:
        return None
    return (f"tool {item.tool.name!r}: the schema is recursive ({refs[0]} refers back to its "
            f"own definition) and the {dialect.name} dialect of {model} has no $ref, so no "
            "form of the tool can be sent; bound the recursion (nest a fixed number of "
            "levels) or use a model whose dialect keeps $ref")
