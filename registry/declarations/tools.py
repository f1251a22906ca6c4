"""What stages.yaml declares about a stage's own tools (``tools``, ``tool_choice``).

A tool is written one of three ways, exactly one per entry (``docs/tools.md``):

* ``model: package.module:ClassName`` (or ``path.py:ClassName``): a pydantic model whose
  JSON Schema is the tool's input; ``name`` defaults to the class name;
* ``input_schema``: a complete JSON Schema (Draft 2020-12) inline, a path ending in
  ``.json`` (relative to the stages.yaml directory) of a file holding one, or
  ``package.module:NAME`` naming a mapping;
* ``properties``: ordered property schemas, all required, the object closed.

The schemas are checked against the meta-schema when the compiler normalises them
(:mod:`compiler.tools.tool`), not here.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from registry.declarations.models import Decl
from registry.declarations.vocabulary import problem

__all__ = ["ToolChoiceDecl", "ToolDecl"]


class ToolDecl(Decl):
    """One tool the stage gives the model."""

    name: str | None = None
    """Tool name, at most 64 of ``[a-zA-Z0-9_-]`` (default for ``model``: the class name)."""
    description: str | None = None
    """What the tool does, shown to the model (default for ``model``: its docstring)."""
    model: str | None = None
    """A pydantic model as the input: ``package.module:ClassName`` or ``relative/path.py:ClassName``."""  # noqa: E501
    input_schema: dict[str, Any] | str | None = None
    """A complete JSON Schema (Draft 2020-12) of the input: inline, a ``.json`` file (relative to stages.yaml) or ``package.module:NAME``."""  # noqa: E501
    properties: dict[str, dict[str, Any]] | None = None
    """Ordered input properties (name -> JSON Schema); all required, no other keys."""

    @model_validator(mode="after")
    def _one_form(self) -> ToolDecl:
        given = [k for k in ("model", "input_schema", "properties") if getattr(self, k) is not None]
        if len(given) != 1:
            raise problem("a tool needs exactly one of model, input_schema or properties"
                          + (f" (it has {', '.join(given)})" if given else ""))
        if self.model is None and not self.name:
            raise problem("a tool declared by input_schema or properties needs a name", "name")
        return self


class ToolChoiceDecl(Decl):
    """``tool_choice`` naming one function: ``{function: name}``."""

    function: str = Field(min_length=1)
    """The tool the model must call."""


